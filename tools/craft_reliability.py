#!/usr/bin/python3
"""Craft the models tests/scripts/reliability.sh runs convgate on: each one
reproduces a crash, hang, data loss or wrong result found by the
reliability campaign of issue #8 (the script says which case checks what).

    /usr/bin/python3 tools/craft_reliability.py [--out tests/data/reliability]
    /usr/bin/python3 tools/craft_reliability.py --big DIR

The default writes the small committed files. --big writes the large
generated ones (hundreds of thousands of attributes, metadata entries,
opset imports or graph inputs) that the test makes at run time instead of
keeping megabytes in git.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OPSET = 17
IR = 8


def model(graph, opset=OPSET, **kw):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], **kw)
    m.ir_version = IR
    return m


def save(m, out, name):
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def vi(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def one_node(op, inputs, outputs, attrs=None, inits=(), opset=OPSET, outs=None):
    """A model of one node; graph inputs are the node inputs not initialized."""
    init_names = {t.name for t in inits}
    gin = [vi(n, d, s) for (n, d, s) in inputs if n not in init_names]
    gout = outs if outs is not None else [vi(n, T.FLOAT, None) for n in outputs]
    node = h.make_node(op, [n for (n, _, _) in inputs], outputs, **(attrs or {}))
    return model(h.make_graph([node], "g", gin, gout, list(inits)), opset)


def small(out):
    # run: a graph input without a name (the field absent, not empty)
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
                     [vi("x", T.FLOAT, [2]), vi("z", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])])
    g.input[1].ClearField("name")
    save(model(g), out, "unnamed_input.onnx")

    # ConvTranspose over an empty spatial axis (ONNX Runtime 1.22 gives
    # [1,1,1,4] for the first, [1,1,4,1] for the second, refuses the third)
    w22 = nh.from_array(np.ones((1, 1, 2, 2), np.float32), "w")
    w11 = nh.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    save(one_node("ConvTranspose", [("x", T.FLOAT, [1, 1, 0, 2]), ("w", T.FLOAT, None)], ["y"],
                  {"strides": [1, 2]}, [w22]), out, "convt_empty_h.onnx")
    save(one_node("ConvTranspose", [("x", T.FLOAT, [1, 1, 2, 0]), ("w", T.FLOAT, None)], ["y"],
                  {"strides": [2, 1]}, [w22]), out, "convt_empty_w.onnx")
    save(one_node("ConvTranspose", [("x", T.FLOAT, [1, 1, 0, 2]), ("w", T.FLOAT, None)], ["y"],
                  {}, [w11]), out, "convt_empty_out.onnx")

    # save: If nested 30 deep in one branch (the checker allows 32)
    def body(depth):
        if depth == 0:
            return h.make_graph([h.make_node("Identity", ["x"], ["y0"])], "b0", [],
                                [vi("y0", T.FLOAT, [1])])
        n = h.make_node("If", ["c"], ["y%d" % depth], then_branch=body(depth - 1),
                        else_branch=body(0))
        return h.make_graph([n], "b%d" % depth, [], [vi("y%d" % depth, T.FLOAT, [1])])
    g = body(30)
    g.input.extend([vi("c", T.BOOL, []), vi("x", T.FLOAT, [1])])
    save(model(g), out, "if_nest_30.onnx")

    # pooling: a kernel far larger than the image under SAME padding (ONNX
    # Runtime answers in milliseconds), and one whose in-image work is huge
    save(one_node("MaxPool", [("x", T.FLOAT, [1, 1, 4, 4])], ["y"],
                  {"kernel_shape": [1 << 36, 1 << 36], "auto_pad": "SAME_UPPER"}), out,
         "pool_huge_kernel.onnx")
    save(one_node("MaxPool", [("x", T.FLOAT, [1, 1, 300000])], ["y"],
                  {"kernel_shape": [1 << 40], "auto_pad": "SAME_UPPER"}), out,
         "pool_huge_work.onnx")

    # a Loop that reads 32 MiB of external weights per iteration, 100000
    # times: the test truncates w.bin (made at test time) while it runs.
    # The read depends on the iteration (W * i), so it cannot be folded
    # into one read at init as a ReduceSum of W alone would be.
    body_g = h.make_graph(
        [h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         h.make_node("Mul", ["W", "fi"], ["wi"]),
         h.make_node("ReduceSum", ["wi"], ["s"], keepdims=0),
         h.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, [])],
        [vi("cond_out", T.BOOL, []), vi("s", T.FLOAT, [])])
    w = nh.from_array(np.zeros((8 << 20,), np.float32), "W")
    m = model(h.make_graph([h.make_node("Loop", ["n", "c"], ["ss"], body=body_g)], "g", [],
                           [vi("ss", T.FLOAT, None)],
                           [w, nh.from_array(np.array(100000, np.int64), "n"),
                            nh.from_array(np.array(True), "c")]))
    ext = m.graph.initializer[0]
    ext.ClearField("raw_data")
    ext.data_location = T.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(32 << 20))):
        e = ext.external_data.add()
        e.key, e.value = k, v
    save(m, out, "shrink/model.onnx")


def budgets(out):
    # a Loop with no trip count whose condition stays true: runs forever
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]),
                         h.make_node("Identity", ["v_in"], ["v_out"])], "body",
                        [vi("i", T.INT64, []), vi("c_in", T.BOOL, []), vi("v_in", T.FLOAT, [1])],
                        [vi("c_out", T.BOOL, []), vi("v_out", T.FLOAT, [1])])
    g = h.make_graph([h.make_node("Loop", ["", "c", "v"], ["vf"], body=body, name="forever")],
                     "g", [], [vi("vf", T.FLOAT, [1])],
                     [nh.from_array(np.array(True), "c"),
                      nh.from_array(np.array([1.0], np.float32), "v")])
    save(model(g), out, "loop_forever.onnx")
    # eight 512 MiB outputs alive together (each under the per-allocation cap)
    nodes, outs = [], []
    for i in range(8):
        nodes.append(h.make_node("ConstantOfShape", ["shape"], ["y%d" % i], name="big%d" % i,
                                 value=nh.from_array(np.array([1.0], np.float32))))
        outs.append(vi("y%d" % i, T.FLOAT, [1 << 27]))
    save(model(h.make_graph(nodes, "g", [], outs,
                            [nh.from_array(np.array([1 << 27], np.int64), "shape")])),
         out, "alloc_8x512m.onnx")
    # a sparse initializer of one value that densifies to 4 GiB
    vals = nh.from_array(np.array([2.0], np.float32), "S")
    idx = nh.from_array(np.array([5], np.int64), "S_idx")
    sp = h.make_sparse_tensor(vals, idx, [1 << 30])
    g = h.make_graph([h.make_node("Identity", ["S"], ["y"])], "g", [], [vi("y", T.FLOAT, None)])
    g.sparse_initializer.extend([sp])
    save(model(g), out, "sparse_4g.onnx")
    # a string input passed through (fed a .npz of many short strings)
    save(model(h.make_graph([h.make_node("Identity", ["x"], ["y"])], "g",
                            [vi("x", T.STRING, ["n"])], [vi("y", T.STRING, ["n"])])),
         out, "strings_identity.onnx")


def wrong_results(out):
    # declared float32[4], computes int64[4] (ONNX Runtime refuses at load)
    save(model(h.make_graph([h.make_node("Shape", ["x"], ["y"])], "g",
                            [vi("x", T.FLOAT, [1, 1, 1, 1])], [vi("y", T.FLOAT, [4])])),
         out, "out_dtype.onnx")
    # declared float32[4], computes float32[8] (ONNX Runtime warns)
    save(model(h.make_graph([h.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                            [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, [4])])),
         out, "out_shape.onnx")
    # Equal on strings that differ only after a NUL byte
    save(model(h.make_graph([h.make_node("Equal", ["a", "b"], ["eq"])], "g",
                            [vi("a", T.STRING, [1]), vi("b", T.STRING, [1])],
                            [vi("eq", T.BOOL, [1])]), opset=19), out, "equal_strings.onnx")
    for name, value in (("a", b"a\x00b"), ("b", b"a\x00c")):
        t = h.make_tensor(name, T.STRING, [1], [value])
        with open(os.path.join(out, "equal_%s.pb" % name), "wb") as f:
            f.write(t.SerializeToString())
    # names with terminal escape codes and a newline that fakes a verdict
    esc = "\x1b[2J\x1b[32m"
    fake = "\nVERDICT: PASS  all gates\n"
    node = h.make_node("Relu", ["x" + esc], ["y" + fake], name="n" + esc + "\x1b]0;owned\x07")
    g = h.make_graph([node], "g" + esc, [vi("x" + esc, T.FLOAT, [2])], [vi("y" + fake, T.FLOAT, [2])])
    m = model(g)
    m.producer_name = "p" + esc
    m.doc_string = fake
    save(m, out, "escape_names.onnx")


def sanitizer_only(out):
    """Inputs whose bugs only a sanitizer sees (signed overflow, float to int
    overflow): tensors with no elements but huge other dims, whose stride and
    extent products overflow int64, and a random op's float seed past int64."""
    H = 1 << 40
    i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)

    def zero(name, op, inputs, attrs=None, inits=(), shape=(0, H, H), opset=OPSET, nout=1):
        nodes = [h.make_node("ConstantOfShape", ["shp"], ["z"],
                             value=nh.from_array(np.array([1.0], np.float32))),
                 h.make_node(op, inputs, ["y%d" % i for i in range(nout)], **(attrs or {}))]
        g = h.make_graph(nodes, "g", [], [vi("y%d" % i, T.FLOAT, None) for i in range(nout)],
                         [i64("shp", list(shape))] + list(inits))
        save(model(g, opset), out, "ubsan/zero_%s.onnx" % name)
    zero("transpose", "Transpose", ["z"], {"perm": [2, 1, 0]})
    zero("tile", "Tile", ["z", "rep"], inits=[i64("rep", [1, 1, 1])])
    zero("concat", "Concat", ["z", "z"], {"axis": 1})
    zero("flatten", "Flatten", ["z"], {"axis": 1})
    zero("split", "Split", ["z", "sp"], {"axis": 1}, [i64("sp", [1, H - 1])], nout=2)
    zero("compress", "Compress", ["z", "cond"], {"axis": 0},
         [nh.from_array(np.array([], bool), "cond")])
    zero("expand", "Expand", ["z", "es"], inits=[i64("es", [1, 1, 1])])
    zero("gathernd", "GatherND", ["z", "gi"], inits=[i64("gi", np.zeros((0, 1), np.int64))])
    zero("reducesum", "ReduceSum", ["z", "ax"], inits=[i64("ax", [1])])
    zero("depthtospace", "DepthToSpace", ["z"], {"blocksize": 2}, shape=(0, H, H, 4))
    zero("empty_last", "Identity", ["z"], shape=(H, H, 0))
    zero("unique", "Unique", ["z"], {"axis": 1}, nout=4)
    probs = nh.from_array(np.full((4,), 0.5, np.float32), "x")
    for op, opset in (("Bernoulli", 15), ("RandomUniformLike", OPSET), ("RandomNormalLike", OPSET)):
        save(one_node(op, [("x", T.FLOAT, [4])], ["y"], {"seed": 1e30}, [probs], opset=opset),
             out, "ubsan/seed_%s.onnx" % op.lower())


def big(out, n=200000):
    os.makedirs(out, exist_ok=True)
    relu = h.make_node("Relu", ["x"], ["y"])
    relu.attribute.extend([h.make_attribute("a%d" % i, i) for i in range(n)])
    save(model(h.make_graph([relu], "g", [vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])])),
         out, "many_attrs.onnx")
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
                     [vi("x", T.FLOAT, [2])] + [vi("i%d" % i, T.FLOAT, [1]) for i in range(n)],
                     [vi("y", T.FLOAT, [2])])
    save(model(g), out, "many_inputs.onnx")
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [vi("x", T.FLOAT, [2])],
                     [vi("y", T.FLOAT, [2])])
    m = model(g)
    m.opset_import.extend([h.make_opsetid("d%d" % i, 1) for i in range(n)])
    save(m, out, "many_opsets.onnx")
    m = model(g)
    for i in range(n):
        p = m.metadata_props.add()
        p.key, p.value = "k%d" % i, "v"
    save(m, out, "many_metadata.onnx")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "reliability"))
    ap.add_argument("--big", metavar="DIR")
    a = ap.parse_args()
    if a.big:
        big(a.big)
    else:
        small(a.out)
        budgets(a.out)
        wrong_results(a.out)
        sanitizer_only(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
