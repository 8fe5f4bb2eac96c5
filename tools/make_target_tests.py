#!/usr/bin/python3
"""Writes the test data of tests/unit/test_profile*.c to tests/data/profiles/.

  profiles/rules.json, limits.json   test profiles: one op per rule kind
  profiles/bad/*.json                malformed profiles (each rejected with file + JSON path)
  profiles/dup/*.json                two profiles with the same name
  profiles/models/*.onnx             tiny models: in each, node 'n' breaks exactly one
                                     rule of the test profile (or, for *_ok, none)

Run with the system python that has onnx (/usr/bin/python3 tools/make_target_tests.py).
The output is committed; rerun after changing this script.
"""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "profiles")
F32, F16, I64, I32 = TP.FLOAT, TP.FLOAT16, TP.INT64, TP.INT32

SOURCES = [{"repo": "convgate/tests", "path": "tools/make_target_tests.py", "revision": "test"}]


def base(name, **extra):
    p = {"format_version": 1, "name": name, "runtime": "test runtime " + name, "version": "0",
         "sources": SOURCES, "fallback": "cpu",
         "precision": {"compute": "fp32", "accumulate": "fp32"}, "partition": {},
         "not_modelled": ["everything: test profile"], "ops": {}}
    p.update(extra)
    return p


RULES = base("rules", ops={
    "Sigmoid": {"since": 14, "until": 19},
    "Sum": {"max_inputs": 2},
    "Concat": {"min_inputs": 2},
    "Split": {"min_outputs": 2, "max_outputs": 2},
    "Sub": {"max_runtime_inputs": 1},
    "MatMul": {"inputs": [{"index": 0, "dtypes": ["float32"]}]},
    "Conv": {"inputs": [{"index": 0, "max_rank": 4}]},
    "Softmax": {"inputs": [{"index": 0, "ranks": [2, 4]}]},
    "Flatten": {"inputs": [{"index": 0, "min_rank": 2}]},
    "Gather": {"inputs": [{"index": 1, "const": True, "when": {"input": 1, "dtypes": ["int64"]},
                           "note": "indices const if not int32"}]},
    "Gemm": {"inputs": [{"index": 0, "const": False}],
             "attributes": [{"name": "transA", "equals": 0}]},
    "Clip": {"inputs": [{"index": 1, "present": True}]},
    "Transpose": {"inputs": [{"index": 0, "not_graph_input": True}]},
    "Unsqueeze": {"outputs": [{"index": 0, "max_rank": 3}]},
    "Resize": {"attributes": [
        {"name": "mode", "in": ["nearest", "linear"]},
        {"name": "coordinate_transformation_mode", "in": ["asymmetric"],
         "when": {"attribute": "mode", "in": ["nearest"]}}]},
    "LeakyRelu": {"attributes": [{"name": "alpha", "min": 0, "max": 1}]},
    "ArgMax": {"attributes": [{"name": "select_last_index", "absent_or_equals": 0}]},
    "Shape": {"attributes": [{"name": "end", "absent": True}]},
    "AveragePool": {"attributes": [{"name": "pads", "all_equal": True}]},
    "LogSoftmax": {"attributes": [{"name": "axis", "last_axis_of_input": 0}]},
    "Elu": {"attributes": [{"name": "alpha", "required": True}]},
    "HardSigmoid": {"attributes": [{"name": "alpha", "equals": 0.5}]},
    "Mul": {"broadcast": "none"},
    "Add": {"broadcast": "tflite_gpu"},
    "Relu": {"attributes": [{"name": "nothing", "absent": True}]},
    "Identity": {"inputs": [{"index": 0, "dtypes": ["float32"],
                             "when": {"input": 0, "ranks": [2]}}]},
    "Neg": {"inputs": [{"index": 0, "max_rank": 1, "when": {"opset_at_least": 14}}]},
})

# target parameters, condition lists, constant values, dims-of-input
PARAMS = base("params", parameters={
    "level": {"default": 3, "min": 1, "max": 5, "note": "test level"}},
    ops={
    "Softmax": {"requires": {"parameter": "level", "min": 2},
                "inputs": [{"index": 0, "ranks": [2],
                            "when": [{"opset_at_least": 13}, {"parameter": "level", "max": 3}]}]},
    "Clip": {"inputs": [{"index": 1, "values": [0, -1]},
                        {"index": 2, "values": [6], "when": {"input": 1, "value_in": [0]}}]},
    "AveragePool": {"attributes": [{"name": "kernel_shape",
                                    "equals_dims_of": {"input": 0, "from": 2}}]},
})

LIMITS = base("limits", layout="nhwc", crossing={"fixed_us": 7.5, "bandwidth_gbps": 3},
              limits={
    "max_rank": 4, "max_dim": {"value": 100, "note": "test max dim"},
    "dynamic_shapes": False, "zero_sized_dims": False,
    "dtypes": ["float32", "int64"], "dtypes_scope": "first_input",
    "mixed_input_dtypes": False, "subgraphs": False},
    ops={"Relu": {}, "Identity": {}, "Shape": {}, "Pow": {}, "If": {},
         "Resize": {"zero_sized_inputs_ok": [1]}})

BAD = {
    "bad_json.json": '{"format_version": 1, "name": "x",\n  "oops"\n}\n',
    "unknown_key.json": base("bad", ops={"Conv": {"inputs": [{"index": 0, "max_rnak": 4}]}}),
    "wrong_type.json": base("bad", ops={"Conv": {"inputs": [{"index": 0, "max_rank": "4"}]}}),
    "bad_dtype.json": base("bad", limits={"dtypes": {"value": ["float33"]},
                                          "dtypes_scope": "first_input"}),
    "no_sources.json": {k: v for k, v in base("bad").items() if k != "sources"},
    "format2.json": base("bad", format_version=2),
    "bad_fallback.json": base("bad", fallback="gpu"),
    "dup_op.json": base("bad", ops={"Relu": {}, "ai.onnx:Relu": {}}),
    "bad_when.json": base("bad", ops={"Gemm": {"attributes": [
        {"name": "transB", "equals": 1, "when": {"input": 1}}]}}),
    "bad_name.json": base("Bad Name"),
    "no_rule.json": base("bad", ops={"Conv": {"attributes": [{"name": "group"}]}}),
    "top_unknown.json": base("bad", colour="blue"),
    "bad_range.json": base("bad", ops={"LeakyRelu": {"attributes": [
        {"name": "alpha", "min": 2, "max": 1}]}}),
    "bad_layout.json": base("bad", layout="hwc"),
    "bad_crossing.json": base("bad", crossing={"fixed_us": 20}),
    "bad_bandwidth.json": base("bad", crossing={"fixed_us": 20, "bandwidth_gbps": 0}),
    "bad_param.json": base("bad", ops={"Relu": {"requires": {"parameter": "api", "min": 2}}}),
    "bad_param_default.json": base("bad", parameters={
        "api": {"default": 9, "min": 1, "max": 5}}),
    "bad_preprocess.json": base("bad", preprocess="magic"),
    # device classes: two, one per accumulation, on fp16 compute only
    "bad_classes_one.json": base("bad", precision={
        "compute": "fp16", "accumulate": "fp32",
        "device_classes": [{"name": "F16", "accumulate": "fp16", "source": "test"}]}),
    "bad_classes_twice.json": base("bad", precision={
        "compute": "fp16", "accumulate": "fp32",
        "device_classes": [{"name": "a", "accumulate": "fp32", "source": "test"},
                           {"name": "b", "accumulate": "fp32", "source": "test"}]}),
    "bad_classes_fp32.json": base("bad", precision={
        "compute": "fp32", "accumulate": "fp32",
        "device_classes": [{"name": "a", "accumulate": "fp16", "source": "test"},
                           {"name": "b", "accumulate": "fp32", "source": "test"}]}),
}


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def save(name, nodes, inputs, outputs, inits=(), opset=17, value_info=()):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits),
                     value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="make_target_tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ROOT, "models", name + ".onnx"))


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def unary(name, op, shape, elem=F32, opset=17, out_shape=None, **attrs):
    save(name, [h.make_node(op, ["x"], ["y"], name="n", **attrs)], [vi("x", elem, shape)],
         [vi("y", elem, shape if out_shape is None else out_shape)], opset=opset)


def models():
    f = np.float32
    unary("not_listed", "Erf", [2, 3])
    unary("opset", "Sigmoid", [2, 3], opset=13)
    unary("opset_ok", "Sigmoid", [2, 3], opset=14)
    save("max_inputs", [h.make_node("Sum", ["a", "b", "c"], ["y"], name="n")],
         [vi(x, F32, [2]) for x in "abc"], [vi("y", F32, [2])])
    save("min_inputs", [h.make_node("Concat", ["a"], ["y"], name="n", axis=0)],
         [vi("a", F32, [2])], [vi("y", F32, [2])])
    save("max_outputs", [h.make_node("Split", ["x"], ["a", "b", "c"], name="n", axis=0)],
         [vi("x", F32, [3])], [vi(x, F32, [1]) for x in "abc"])
    save("min_outputs", [h.make_node("Split", ["x"], ["a"], name="n", axis=0)],
         [vi("x", F32, [3])], [vi("a", F32, [3])])
    save("runtime_inputs", [h.make_node("Sub", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2]), vi("b", F32, [2])], [vi("y", F32, [2])])
    save("runtime_inputs_ok", [h.make_node("Sub", ["a", "w"], ["y"], name="n")],
         [vi("a", F32, [2])], [vi("y", F32, [2])], [init("w", np.ones(2, f))])
    save("dtype", [h.make_node("MatMul", ["a", "b"], ["y"], name="n")],
         [vi("a", F16, [2, 3]), vi("b", F16, [3, 2])], [vi("y", F16, [2, 2])])
    save("max_rank", [h.make_node("Conv", ["x", "w"], ["y"], name="n")],
         [vi("x", F32, [1, 1, 2, 2, 2])], [vi("y", F32, [1, 1, 2, 2, 2])],
         [init("w", np.ones((1, 1, 1, 1, 1), f))])
    unary("ranks", "Softmax", [2, 3, 4])
    unary("min_rank", "Flatten", [4], out_shape=[1, 4], axis=0)
    save("const", [h.make_node("Gather", ["d", "i"], ["y"], name="n")],
         [vi("d", F32, [4, 2]), vi("i", I64, [3])], [vi("y", F32, [3, 2])])
    save("const_ok_int32", [h.make_node("Gather", ["d", "i"], ["y"], name="n")],
         [vi("d", F32, [4, 2]), vi("i", I32, [3])], [vi("y", F32, [3, 2])])
    save("const_ok_folded", [h.make_node("Constant", [], ["c"], name="k",
                                         value=numpy_helper.from_array(np.array([1], np.int64))),
                             h.make_node("Identity", ["c"], ["i"], name="m"),
                             h.make_node("Gather", ["d", "i"], ["y"], name="n")],
         [vi("d", F32, [4, 2])], [vi("y", F32, [1, 2])])
    save("not_const", [h.make_node("Gemm", ["a", "b"], ["y"], name="n")],
         [vi("b", F32, [3, 2])], [vi("y", F32, [2, 2])], [init("a", np.ones((2, 3), f))])
    save("present", [h.make_node("Clip", ["x", "", "hi"], ["y"], name="n")],
         [vi("x", F32, [2])], [vi("y", F32, [2])], [init("hi", np.array(1, f))])
    unary("graph_input", "Transpose", [2, 3], out_shape=[3, 2])
    unary("output_rank", "Unsqueeze", [2, 3, 4], opset=11, out_shape=[1, 2, 3, 4], axes=[0])
    for nm, mode, ctm in (("attr_in", "cubic", "half_pixel"), ("when_attr", "nearest", "half_pixel"),
                          ("when_attr_ok", "linear", "half_pixel")):
        save(nm, [h.make_node("Resize", ["x", "", "s"], ["y"], name="n", mode=mode,
                              coordinate_transformation_mode=ctm)],
             [vi("x", F32, [1, 1, 2, 2])], [vi("y", F32, [1, 1, 4, 4])],
             [init("s", np.array([1, 1, 2, 2], f))])
    unary("attr_range", "LeakyRelu", [2], alpha=2.5)
    save("attr_equals", [h.make_node("Gemm", ["a", "b"], ["y"], name="n", transA=1)],
         [vi("a", F32, [3, 2]), vi("b", F32, [3, 2])], [vi("y", F32, [2, 2])])
    save("absent_or_equals", [h.make_node("ArgMax", ["x"], ["y"], name="n", select_last_index=1)],
         [vi("x", F32, [2, 3])], [vi("y", I64, [1, 3])])
    save("absent", [h.make_node("Shape", ["x"], ["y"], name="n", end=1)],
         [vi("x", F32, [2, 3])], [vi("y", I64, [1])], opset=15)
    unary("all_equal", "AveragePool", [1, 1, 4, 4], kernel_shape=[2, 2], pads=[0, 0, 1, 1])
    unary("last_axis", "LogSoftmax", [2, 3], axis=0)
    unary("last_axis_ok", "LogSoftmax", [2, 3], axis=1)
    unary("required", "Elu", [2])
    unary("default", "HardSigmoid", [2])
    save("broadcast_none", [h.make_node("Mul", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2, 3]), vi("b", F32, [3])], [vi("y", F32, [2, 3])])
    save("broadcast_gpu", [h.make_node("Add", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2, 3, 4, 5]), vi("b", F32, [4, 5])], [vi("y", F32, [2, 3, 4, 5])])
    save("broadcast_gpu_ok", [h.make_node("Add", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [1, 3, 4, 5]), vi("b", F32, [3, 4, 5])], [vi("y", F32, [1, 3, 4, 5])])
    unary("when_ranks", "Identity", [2, 3], elem=F16)
    unary("when_ranks_ok", "Identity", [2, 3, 4], elem=F16)
    unary("when_opset", "Neg", [2, 3], opset=14)
    unary("when_opset_ok", "Neg", [2, 3], opset=13)
    # params.json and the shipped ORT EP profiles' rules
    unary("softmax_3d", "Softmax", [2, 3, 4], opset=13)
    unary("softmax_2d", "Softmax", [2, 3], opset=13)
    unary("elu", "Elu", [2, 3], opset=13)
    unary("softmax_4d_axis1", "Softmax", [1, 2, 3, 4], opset=13, axis=1)
    for nm, lo, hi in (("clip_relu6", 0, 6), ("clip_relu1", -1, 1), ("clip_0_5", 0, 5),
                       ("clip_2_6", 2, 6)):
        save(nm, [h.make_node("Clip", ["x", "lo", "hi"], ["y"], name="n")],
             [vi("x", F32, [2])], [vi("y", F32, [2])],
             [init("lo", np.array(lo, f)), init("hi", np.array(hi, f))])
    save("clip_runtime_min", [h.make_node("Clip", ["x", "lo", "hi"], ["y"], name="n")],
         [vi("x", F32, [2]), vi("lo", F32, [])], [vi("y", F32, [2])],
         [init("hi", np.array(6, f))])
    unary("clip6_relu1", "Clip", [2], opset=6, min=-1.0, max=1.0)
    unary("clip6_0_1", "Clip", [2], opset=6, min=0.0, max=1.0)
    save("matmul_2d_const", [h.make_node("MatMul", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2, 3])], [vi("y", F32, [2, 4])], [init("b", np.ones((3, 4), f))])
    save("matmul_2d_runtime", [h.make_node("MatMul", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2, 3]), vi("b", F32, [3, 4])], [vi("y", F32, [2, 4])])
    save("matmul_3d", [h.make_node("MatMul", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2, 2, 3]), vi("b", F32, [2, 3, 4])], [vi("y", F32, [2, 2, 4])])
    save("matmul_1d", [h.make_node("MatMul", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [3])], [vi("y", F32, [4])], [init("b", np.ones((3, 4), f))])
    save("unsqueeze13", [h.make_node("Unsqueeze", ["x", "axes"], ["y"], name="n")],
         [vi("x", F32, [2, 3])], [vi("y", F32, [1, 2, 3])], [init("axes", np.array([0]))],
         opset=13)
    for nm, ks in (("convtranspose_ks", [3, 3]), ("convtranspose_no_ks", None)):
        attrs = {"kernel_shape": ks} if ks else {}
        save(nm, [h.make_node("ConvTranspose", ["x", "w"], ["y"], name="n", pads=[0, 0, 0, 0],
                              **attrs)],
             [vi("x", F32, [1, 1, 4, 4])], [vi("y", F32, [1, 1, 6, 6])],
             [init("w", np.ones((1, 1, 3, 3), f))])
    save("batchnorm_4d", [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                                      name="n")],
         [vi("x", F32, [1, 2, 3, 3])], [vi("y", F32, [1, 2, 3, 3])],
         [init("s", np.ones(2, f)), init("b", np.zeros(2, f)), init("m", np.zeros(2, f)),
          init("v", np.ones(2, f))])
    # limits.json
    unary("lim_rank", "Relu", [1, 1, 1, 1, 2])
    unary("lim_dim", "Relu", [1, 200])
    save("lim_dynamic", [h.make_node("Relu", ["x"], ["r"], name="n"),
                         h.make_node("Shape", ["r"], ["s"], name="s"),
                         h.make_node("Identity", ["s"], ["y"], name="i"),
                         h.make_node("Identity", ["r"], ["z"], name="j")],
         [vi("x", F32, ["batch", 3])], [vi("y", I64, [2]), vi("z", F32, ["batch", 3])])
    unary("lim_zero", "Relu", [0, 3])
    save("lim_zero_ok", [h.make_node("Resize", ["x", "roi", "s"], ["y"], name="n")],
         [vi("x", F32, [1, 1, 2, 2])], [vi("y", F32, [1, 1, 4, 4])],
         [init("roi", np.zeros(0, f)), init("s", np.array([1, 1, 2, 2], f))])
    unary("lim_dtype", "Relu", [2], elem=F16)
    save("lim_mixed", [h.make_node("Pow", ["a", "b"], ["y"], name="n")],
         [vi("a", F32, [2]), vi("b", I64, [2])], [vi("y", F32, [2])])
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["t"], name="sub")], "then", [],
                          [vi("t", F32, [2])])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["e"], name="sub2")], "else", [],
                          [vi("e", F32, [2])])
    save("lim_subgraph", [h.make_node("If", ["c"], ["y"], name="n", then_branch=then_g,
                                      else_branch=else_g)],
         [vi("c", TP.BOOL, []), vi("x", F32, [2])], [vi("y", F32, [2])])
    # type environment
    save("env", [h.make_node("Constant", [], ["k"], name="k",
                             value=numpy_helper.from_array(np.ones(3, f))),
                 h.make_node("Add", ["k", "w"], ["kw"], name="kw"),
                 h.make_node("Add", ["x", "kw"], ["y"], name="add"),
                 h.make_node("Mul", ["y", "o"], ["z"], name="mul")],
         [vi("x", F32, ["batch", 3]), vi("o", F32, [3])], [vi("z", F32, ["batch", 3])],
         [init("w", np.ones(3, f)), init("o", np.ones(3, f))])


def main():
    os.makedirs(os.path.join(ROOT, "models"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "bad"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "dup"), exist_ok=True)

    def dump(path, obj):
        with open(os.path.join(ROOT, path), "w") as fh:
            fh.write(obj if isinstance(obj, str) else json.dumps(obj, indent=2) + "\n")

    dump("rules.json", RULES)
    dump("params.json", PARAMS)
    dump("limits.json", LIMITS)
    for name, obj in BAD.items():
        dump(os.path.join("bad", name), obj)
    dump(os.path.join("dup", "a.json"), base("same"))
    dump(os.path.join("dup", "b.json"), base("same"))
    models()


if __name__ == "__main__":
    main()
