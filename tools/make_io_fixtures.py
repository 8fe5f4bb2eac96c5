#!/usr/bin/python3
"""Writes the NumPy fixtures of tests/unit/test_io_npy.c to tests/data/io/.

Run with /usr/bin/python3 (it has numpy): tools/make_io_fixtures.py [OUTDIR].
The arrays are deterministic; test_io_npy.c hard-codes the same values, so
regenerating must give files that still pass. Malformed inputs are built by
the C test itself (by truncating and patching these files), not stored here.
"""
import os
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io")
os.makedirs(out, exist_ok=True)


def save(name, arr, version=None):
    with open(os.path.join(out, name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


save("f4_c.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
save("f8_fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3) * 0.5))
save("i4_be.npy", np.arange(-3, 3, dtype=">i4"))
save("b1.npy", np.array([True, False, True]))
save("f2.npy", np.array([1.5, -2.0, np.inf, np.nan], dtype=np.float16))
save("u8.npy", np.array([0, 2**64 - 1], dtype=np.uint64))
save("i1_scalar.npy", np.array(-7, dtype=np.int8))
save("empty_f4.npy", np.zeros((0, 3), dtype=np.float32))
save("unicode.npy", np.array(["a", "h\u00e9llo", ""]))
save("bytes.npy", np.array([b"ab", b"xyz"]))
save("c8.npy", np.array([1 + 2j, -3j], dtype=np.complex64))
save("f4_v2.npy", np.arange(4, dtype=np.float32), version=(2, 0))

np.savez(os.path.join(out, "stored.npz"),
         x=np.arange(6, dtype=np.float32).reshape(2, 3),
         y=np.array([10, -20, 30], dtype=np.int64))
np.savez_compressed(os.path.join(out, "deflated.npz"),
                    x=np.arange(6, dtype=np.float32).reshape(2, 3),
                    zeros=np.zeros(4096, dtype=np.float64),
                    s=np.array(["a", "h\u00e9llo", ""]))

# Small models for tests/scripts/cli_run.sh: symbolic dims, non-float inputs,
# and output names that must be sanitized into safe, distinct file names.
import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
i = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
b = helper.make_tensor_value_info("b", TensorProto.BOOL, [3])
names = ["Sum", "sum", "../evil", ".hidden", "a/b", "i_out", "b_out"]
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3]) for n in names[:5]]
outs += [helper.make_tensor_value_info("i_out", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("b_out", TensorProto.BOOL, [3])]
nodes = [helper.make_node("Add", ["x", "y"], ["Sum"]),
         helper.make_node("Identity", ["Sum"], ["sum"]),
         helper.make_node("Identity", ["x"], ["../evil"]),
         helper.make_node("Identity", ["y"], [".hidden"]),
         helper.make_node("Identity", ["x"], ["a/b"]),
         helper.make_node("Identity", ["i"], ["i_out"]),
         helper.make_node("Identity", ["b"], ["b_out"])]
graph = helper.make_graph(nodes, "io_cli", [x, y, i, b], outs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="make_io_fixtures")
model.ir_version = 8
onnx.save(model, os.path.join(out, "cli_model.onnx"))

np.save(os.path.join(out, "x_2x3.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
np.save(os.path.join(out, "x_2x3_f64.npy"), np.arange(6, dtype=np.float64).reshape(2, 3))
np.savez(os.path.join(out, "cli_inputs.npz"),
         x=np.ones((2, 3), dtype=np.float32), y=np.full((2, 3), 2, dtype=np.float32),
         i=np.array([4, 5], dtype=np.int64), b=np.array([True, False, True]))

# A tiny conformance suite for tests/scripts/cli_conformance.sh: one test
# that passes, one whose expected output is wrong and one without data sets
# (a SKIP); and, in a suite of its own, one that never ends (a Loop of 10^12
# iterations, to exercise the timeout).
from onnx import numpy_helper


def write_test(name, model, inputs, outputs, suite="conf_suite"):
    d = os.path.join(out, suite, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    if inputs is None:
        return
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(ds, "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for k, (n, a) in enumerate(outputs):
        with open(os.path.join(ds, "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())


def add_model():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [3])
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add", [a, b], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


va = np.array([1, 2, 3], dtype=np.float32)
vb = np.array([0.5, 0.25, -1], dtype=np.float32)
write_test("test_pass_add", add_model(), [("a", va), ("b", vb)], [("c", va + vb)])
write_test("test_fail_add", add_model(), [("a", va), ("b", vb)], [("c", va + vb + 1)])
write_test("test_nodata", add_model(), None, None)

body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
    [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [3])])
loop = helper.make_graph(
    [helper.make_node("Loop", ["trips", "cond", "v"], ["v_final"], body=body)], "slow",
    [helper.make_tensor_value_info("v", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("v_final", TensorProto.FLOAT, [3])],
    initializer=[numpy_helper.from_array(np.array(10**12, dtype=np.int64), "trips"),
                 numpy_helper.from_array(np.array(True), "cond")])
slow = helper.make_model(loop, opset_imports=[helper.make_opsetid("", 13)])
slow.ir_version = 8
write_test("test_slow_loop", slow, [("v", va)], [("v_final", va)], suite="conf_slow")
