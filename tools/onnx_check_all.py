#!/usr/bin/python3
"""Run onnx.checker.check_model (the installed onnx, 1.12 here; no
full_check) on every model.onnx under the ONNX backend test data and print
`path<TAB>ok|fail` per model, sorted by path. Used by
tests/scripts/check_vs_onnx.sh to compare `convgate check` against onnx.

    /usr/bin/python3 tools/onnx_check_all.py [--mutants DIR] [DATA_ROOT]

DATA_ROOT defaults to /usr/share/libonnx-testdata/data. All test data models
pass onnx 1.12's checker, so --mutants DIR also writes broken copies of a few
of them to DIR/<mutation>/model.onnx (one rule violated each: topological
order, SSA, unknown attribute, missing opset import, ...) and lists them too,
so that the comparison exercises the failure paths. The model is checked
by path, as `python -c "onnx.checker.check_model(path)"` would, so external
data locations are resolved against the model's directory.
"""

import glob
import os
import sys

import onnx
import onnx.checker
from onnx import TensorProto, helper

NODE = "node"


def load(root, test):
    return onnx.load(os.path.join(root, NODE, test, "model.onnx"))


def first_node(model, op):
    return next(n for n in model.graph.node if n.op_type == op)


def mutants(root):
    """Yields (name, ModelProto) pairs, each breaking one checker rule."""
    m = load(root, "test_add")
    m.ir_version = 0
    yield "no_ir_version", m

    m = load(root, "test_add")
    m.ir_version = 11
    yield "ir_version_too_new", m

    m = load(root, "test_add")
    del m.opset_import[:]
    yield "no_opset_import", m

    m = load(root, "test_add")
    m.graph.node[0].domain = "com.example.nothere"
    yield "no_opset_for_domain", m

    m = load(root, "test_add")
    m.graph.node[0].op_type = "NoSuchOp"
    yield "unknown_op", m

    m = load(root, "test_add")
    m.graph.node[0].input[0] = ""
    yield "empty_single_input", m

    m = load(root, "test_relu")
    m.graph.node[0].input.append(m.graph.node[0].input[0])
    yield "too_many_inputs", m

    m = load(root, "test_basic_conv_with_padding")
    first_node(m, "Conv").attribute.append(helper.make_attribute("bogus", 1))
    yield "unknown_attribute", m

    m = load(root, "test_basic_conv_with_padding")
    conv = first_node(m, "Conv")
    conv.attribute.append(helper.make_attribute("group", 1.0))
    yield "attribute_wrong_type", m

    m = load(root, "test_basic_conv_with_padding")
    conv = first_node(m, "Conv")
    conv.attribute.extend([helper.make_attribute("group", 1), helper.make_attribute("group", 1)])
    yield "duplicate_attribute", m

    m = load(root, "test_cast_FLOAT_to_DOUBLE")
    node = first_node(m, "Cast")
    keep = [a for a in node.attribute if a.name != "to"]
    del node.attribute[:]
    node.attribute.extend(keep)
    yield "missing_required_attribute", m

    m = load(root, "test_cast_FLOAT_to_DOUBLE")
    attr = first_node(m, "Cast").attribute[0]
    attr.f = 1.0
    yield "attribute_two_fields", m

    m = load(root, "test_celu_expanded")
    m.graph.node.reverse()
    yield "not_topological", m

    m = load(root, "test_celu_expanded")
    m.graph.node[0].input.append(m.graph.node[-1].output[0])
    yield "cycle", m

    m = load(root, "test_celu_expanded")
    m.graph.node[1].output[0] = m.graph.node[0].output[0]
    yield "not_ssa", m

    m = load(root, "test_add")
    m.graph.name = ""
    yield "empty_graph_name", m

    m = load(root, "test_add")
    m.graph.input[0].type.tensor_type.ClearField("shape")
    yield "main_input_without_shape", m

    m = load(root, "test_add")
    m.metadata_props.extend([onnx.StringStringEntryProto(key="k", value="1"),
                             onnx.StringStringEntryProto(key="k", value="2")])
    yield "duplicate_metadata_key", m

    m = load(root, "test_add")
    m.graph.initializer.extend([helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])])
    yield "duplicate_initializer", m

    m = load(root, "test_add")
    m.graph.initializer.append(helper.make_tensor("", TensorProto.FLOAT, [1], [1.0]))
    yield "empty_initializer_name", m

    m = load(root, "test_add")
    t = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    t.raw_data = b"\0" * 8
    m.graph.initializer.append(t)
    yield "tensor_two_data_fields", m

    m = load(root, "test_add")
    t = helper.make_tensor("w", TensorProto.STRING, [1], [b"x"])
    del t.string_data[:]
    t.raw_data = b"x"
    m.graph.initializer.append(t)
    yield "string_in_raw_data", m

    m = load(root, "test_add")
    t = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    t.data_type = TensorProto.UNDEFINED
    m.graph.initializer.append(t)
    yield "tensor_undefined_dtype", m

    m = load(root, "test_add")
    t = helper.make_tensor("w", TensorProto.INT64, [2], [1, 2])
    del t.int64_data[:]
    t.float_data.extend([1.0, 2.0])
    m.graph.initializer.append(t)
    yield "tensor_wrong_data_field", m

    m = load(root, "test_add")
    values = helper.make_tensor("sp", TensorProto.FLOAT, [2], [1.0, 2.0])
    indices = helper.make_tensor("sp_idx", TensorProto.INT64, [2], [3, 1])
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    yield "sparse_indices_unsorted", m

    m = load(root, "test_add")
    values = helper.make_tensor("sp", TensorProto.FLOAT, [2], [1.0, 2.0])
    indices = helper.make_tensor("sp_idx", TensorProto.INT64, [2], [1, 9])
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    yield "sparse_index_out_of_range", m

    m = load(root, "test_add")
    m.opset_import[0].version = 10
    up = helper.make_node("Upsample", ["x", "y"], ["z2"], mode="nearest")
    m.graph.node.append(up)
    yield "deprecated_op", m

    m = load(root, "test_batchnorm_example")
    bn = first_node(m, "BatchNormalization")
    bn.output.append("extra_mean")
    yield "batchnorm_output_count", m

    m = load(root, "test_loop11")
    body = first_node(m, "Loop").attribute[0].g
    body.node.reverse()
    yield "subgraph_not_topological", m

    m = load(root, "test_add")
    m.graph.node.append(helper.make_node("Relu", ["sum_undefined"], ["r"]))
    yield "input_undefined", m


def write_mutants(root, outdir):
    paths = []
    for name, model in mutants(root):
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        paths.append(path)
    return paths


def main():
    args = sys.argv[1:]
    mutant_dir = None
    if len(args) >= 2 and args[0] == "--mutants":
        mutant_dir = args[1]
        args = args[2:]
    root = args[0] if args else "/usr/share/libonnx-testdata/data"
    paths = sorted(glob.glob(os.path.join(root, "*", "*", "model.onnx")))
    if mutant_dir is not None:
        paths += write_mutants(root, mutant_dir)
    for path in paths:
        try:
            onnx.checker.check_model(path)
            verdict = "ok"
        except Exception as exc:  # ValidationError, or a parse failure
            verdict = "fail"
            if os.environ.get("CG_VERBOSE"):
                print("# %s: %s" % (path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__),
                      file=sys.stderr)
        print("%s\t%s" % (path, verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
