"""The Python binding (python/convgate) against the CLI and the examples.

Run by tests/scripts/python_binding.sh with CONVGATE_LIB (the build's
libconvgate.so), CONVGATE_BIN (its convgate) and CONVGATE_SOURCE (the
source tree): /usr/bin/python3 -m unittest discover python/tests
"""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import convgate

SRC = os.environ.get("CONVGATE_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("CONVGATE_BIN", os.path.join(SRC, "build", "convgate"))
EX = os.path.join(SRC, "examples")
CNN = os.path.join(EX, "tiny_cnn.onnx")
RMS = os.path.join(EX, "rmsnorm_fp16.onnx")


def cli_json(*args):
    """The CLI's --json envelope for the same command."""
    extra = ["--json", "-"] if args[0] == "gate" else ["--json"]  # gate --json takes FILE|-
    p = subprocess.run([BIN, *args, *extra], capture_output=True, text=True)
    return json.loads(p.stdout)


TFL = os.path.join(SRC, "tests", "data", "tflite", "models")
TFL_CNN = os.path.join(TFL, "cnn.tflite")


class TfliteModels(unittest.TestCase):
    """A .tflite loads as the CLI loads it (#10): inspect and check read the
    file, assign judges its own operators, run executes its lowering."""

    def test_inspect_and_check_are_the_clis(self):
        with convgate.load(TFL_CNN) as m:
            ins = m.inspect()
            chk = m.check()
        self.assertEqual(dict(ins), cli_json("inspect", TFL_CNN)["result"])
        self.assertEqual(dict(chk), cli_json("check", TFL_CNN)["result"])
        self.assertEqual(chk.exit_code, 0)

    def test_assign_counts_tflite_operators(self):
        with convgate.load(TFL_CNN) as m:
            r = m.assign(target="litert-gpu", no_time=True)
            with self.assertRaises(convgate.ConvgateError):
                m.assign(target="litert-gpu", dim={"N": 2})
        self.assertEqual(dict(r), cli_json("assign", TFL_CNN, "--target", "litert-gpu")["result"])
        self.assertEqual(r["nodes_total"], 6)  # the file's 6 operators, not its lowering
        self.assertEqual(r["nodes_on_target"], 6)

    def test_run_matches_litert(self):
        x = np.load(os.path.join(TFL, "cnn", "input_0.npy"))
        want = np.load(os.path.join(TFL, "cnn", "litert_0.npy"))  # LiteRT.js's output
        with convgate.load(TFL_CNN) as m:
            r = m.run({"x": x})
        got = r.outputs["probs"]
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))


class SameReportsAsTheCli(unittest.TestCase):
    """The binding renders with the CLI's code: the dicts are its --json results."""

    def test_inspect(self):
        with convgate.load(CNN) as m:
            self.assertEqual(dict(m.inspect()), cli_json("inspect", CNN)["result"])

    def test_check(self):
        with convgate.load(CNN) as m:
            r = m.check()
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(dict(r), cli_json("check", CNN)["result"])

    def test_assign_what_if(self):
        # the ranking of refused ops and --assume-supported, as the CLI's
        with convgate.load(CNN) as m:
            r = m.assign(target="ort-xnnpack", no_time=True)
            w = m.assign(target="ort-xnnpack", no_time=True,
                         assume_supported=["Relu", "Flatten"])
            with self.assertRaises(convgate.ConvgateError):
                m.assign(target="ort-xnnpack", assume_supported="Relu,,Conv")
        self.assertEqual(dict(r), cli_json("assign", CNN, "--target", "ort-xnnpack",
                                           "--no-time")["result"])
        self.assertEqual(r["what_if"][0]["op"], "Relu")
        self.assertEqual(r["what_if"][0]["cpu_after"], 2)
        self.assertEqual(dict(w), cli_json("assign", CNN, "--target", "ort-xnnpack",
                                           "--no-time", "--assume-supported",
                                           "Relu,Flatten")["result"])
        self.assertEqual(w["assumed_supported"], ["Relu", "Flatten"])
        self.assertEqual([g["op"] for g in w["what_if"]], ["GlobalAveragePool"])

    def test_assign(self):
        with convgate.load(CNN) as m:
            r = m.assign(target="litert-gpu,tflite-xnnpack", no_time=True)
        cli = cli_json("assign", CNN, "--target", "litert-gpu,tflite-xnnpack", "--no-time")
        self.assertEqual(dict(r), cli["result"])
        # batch bound to 1 (stated in "dims"); litert-gpu takes all of the
        # graph the converter emits (the lowering)
        self.assertEqual(r["dims"][0]["source"], "batch default")
        self.assertEqual(r["verdict"]["kind"], "full")

    def test_compare(self):
        inputs = os.path.join(EX, "tiny_cnn_inputs")
        with convgate.load(CNN) as m:
            r = m.compare(target="xnnpack", inputs=inputs)
        cli = cli_json("compare", CNN, "--target", "xnnpack", "--inputs", inputs)
        self.assertEqual(dict(r), cli["result"])
        self.assertTrue(r["pass"])

    def test_gate(self):
        inputs = os.path.join(EX, "rmsnorm_fp16_inputs")
        with convgate.load(RMS) as m:
            r = m.gate(target="litert-gpu", accumulate="fp16", inputs=inputs)
        cli = cli_json("gate", RMS, "--target", "litert-gpu", "--accumulate", "fp16",
                       "--inputs", inputs)["result"]
        # everything but the measured times (the share, the estimate gate 2
        # judges, and the sentence that states them)
        for key in ("time_coverage", "reference_ms", "mixed_ms", "detail"):
            r["runs_where_intended"].pop(key)
            cli["runs_where_intended"].pop(key)
        self.assertEqual(dict(r), cli)
        self.assertEqual((r["verdict"], r.exit_code, r.status), ("FAIL", 1, "fail"))

    def test_dump_ref(self):
        # the same loop as the CLI's: the same sets, files and manifest (but
        # its creation time), and the set verifies
        with tempfile.TemporaryDirectory() as d:
            for i, name in enumerate(("one", "two")):
                os.makedirs(os.path.join(d, "in", name))
                a = np.load(os.path.join(EX, "tiny_cnn_inputs", f"image_{i}.npy"))
                np.save(os.path.join(d, "in", name, "image.npy"), a)
            py_dir, cli_dir = os.path.join(d, "py"), os.path.join(d, "cli")
            with convgate.load(CNN) as m:
                r = m.dump_ref(py_dir, inputs=os.path.join(d, "in"))
            cli = cli_json("dump-ref", CNN, "--inputs", os.path.join(d, "in"), "-o", cli_dir)
            self.assertEqual(r.exit_code, 0)
            self.assertEqual(r["sets"], cli["result"]["sets"])
            self.assertEqual([s["name"] for s in r["sets"]], ["one", "two"])
            self.assertEqual(r["golden"], py_dir)
            man = []
            for g in (py_dir, cli_dir):
                with open(os.path.join(g, "manifest.json")) as f:
                    man.append(json.load(f))
                man[-1].pop("created")
            self.assertEqual(man[0], man[1])
            v = subprocess.run([BIN, "verify", CNN, "--golden", py_dir], capture_output=True)
            self.assertEqual(v.returncode, 0, v.stderr)
            with convgate.load(CNN) as m:
                with self.assertRaises(convgate.ConvgateError) as e:
                    m.dump_ref(py_dir, inputs=os.path.join(d, "in"))
            self.assertIn("--force", str(e.exception))


class Arrays(unittest.TestCase):
    """numpy in and out."""

    def test_run_matches_pytorch(self):
        image = np.load(os.path.join(EX, "tiny_cnn_inputs", "image_0.npy"))
        want = np.load(os.path.join(EX, "tiny_cnn_inputs", "logits_0.npy"))
        with convgate.load(CNN) as m:
            r = m.run({"image": image})
        self.assertEqual(list(r.outputs), ["logits"])
        got = r.outputs["logits"]
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        self.assertEqual(r["outputs"][0]["shape"], list(want.shape))

    def test_run_on_a_target_and_watch(self):
        image = np.load(os.path.join(EX, "tiny_cnn_inputs", "image_1.npy"))
        with convgate.load(CNN) as m:
            ref = m.run({"image": image}, watch=["/features/features.2/Relu_output_0"])
            xnn = m.run({"image": image}, target="xnnpack")
        self.assertEqual(ref.watched["/features/features.2/Relu_output_0"].shape, (2, 16, 64, 64))
        self.assertTrue((ref.watched["/features/features.2/Relu_output_0"] >= 0).all())
        self.assertEqual(xnn["target"]["targets"], "xnnpack")
        np.testing.assert_allclose(xnn.outputs["logits"], ref.outputs["logits"], rtol=1e-4, atol=1e-5)

    def test_random_inputs_are_the_clis(self):
        with convgate.load(CNN) as m:
            r = m.run(seed=3)
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([BIN, "run", CNN, "--random", "--seed", "3", "-o", d], check=True,
                           capture_output=True)
            np.testing.assert_array_equal(r.outputs["logits"], np.load(os.path.join(d, "logits.npy")))

    def test_the_failing_tensor_as_arrays(self):
        x = np.load(os.path.join(EX, "rmsnorm_fp16_inputs", "sample_0", "x.npy"))
        with convgate.load(RMS) as m:
            r = m.gate(target="litert-gpu", accumulate="fp16", samples=[{"x": x}])
        self.assertEqual(r["verdict"], "FAIL")
        b = r["matches"]["bisect"]
        self.assertEqual(b["first_divergent"]["tensor"], "mean_sq")
        self.assertEqual(b["triage"], "precision breakdown")
        self.assertEqual(b["verdict"], "precision breakdown")
        self.assertIn("fp16 overflow in ReduceMean 'mean_sq'", b["verdict_reason"])
        ref = r.tensors["first_divergent/reference"]
        tgt = r.tensors["first_divergent/target"]
        self.assertEqual(ref.shape, tuple(b["first_divergent"]["shape"]))
        self.assertTrue(np.isfinite(ref).all())
        self.assertTrue(np.isinf(tgt).any())  # the fp16 sum of squares overflowed
        np.testing.assert_array_equal(r.tensors["sample/x"], x)
        # the sample reproduces it on the reference: run watching the tensor
        with convgate.load(RMS) as m:
            again = m.run({"x": r.tensors["sample/x"]}, watch=["mean_sq"])
        np.testing.assert_array_equal(again.watched["mean_sq"], ref)

    def test_bisect(self):
        x = np.load(os.path.join(EX, "rmsnorm_fp16_inputs", "sample_1", "x.npy"))
        with convgate.load(RMS) as m:
            r = m.bisect(target="litert-gpu", accumulate="fp16", inputs={"x": x})
        self.assertEqual(r.exit_code, 1)
        self.assertEqual(r["first_divergent"]["node"], "mean_sq")
        self.assertIn("first_divergent/target", r.tensors)

    def test_samples_as_a_list_and_labels(self):
        a = np.load(os.path.join(EX, "tiny_cnn_inputs", "image_0.npy"))
        b = np.load(os.path.join(EX, "tiny_cnn_inputs", "image_1.npy"))
        with convgate.load(CNN) as m:
            r = m.compare(target="xnnpack", samples={"first": {"image": a}, "second": {"image": b}})
        self.assertEqual(r["samples"], 2)
        self.assertEqual([s["set"] for s in r["outputs"][0]["per_sample"]], ["first", "second"])


class Errors(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(convgate.ConvgateError) as e:
            convgate.load(os.path.join(EX, "no_such.onnx"))
        self.assertIn("no_such.onnx", str(e.exception))

    def test_unknown_target_lists_the_known(self):
        with convgate.load(CNN) as m, self.assertRaises(convgate.ConvgateError) as e:
            m.gate(target="tpu")
        self.assertIn("no target named 'tpu'", str(e.exception))
        self.assertIn("xnnpack", str(e.exception))
        self.assertEqual(e.exception.envelope["exit_code"], 2)

    def test_a_misspelt_option_is_refused(self):
        with convgate.load(CNN) as m, self.assertRaises(convgate.ConvgateError) as e:
            m.gate(target="xnnpack", atl=1e-3)
        self.assertIn("unknown option 'atl'", str(e.exception))

    def test_wrong_dtype_names_the_input(self):
        with convgate.load(CNN) as m, self.assertRaises(convgate.ConvgateError) as e:
            m.run({"image": np.zeros((1, 3, 64, 64), dtype=np.int64)})
        self.assertIn("image", str(e.exception))

    def test_unknown_input_and_missing_input(self):
        with convgate.load(CNN) as m:
            with self.assertRaises(convgate.ConvgateError) as e:
                m.run({"img": np.zeros((1, 3, 64, 64), dtype=np.float32)})
            self.assertIn("img", str(e.exception))
            with self.assertRaises(convgate.ConvgateError) as e:
                m.run({}, random=False)
            self.assertIn("image", str(e.exception))

    def test_a_dim_the_model_does_not_have(self):
        with convgate.load(CNN) as m, self.assertRaises(convgate.ConvgateError) as e:
            m.assign(target="xnnpack", dim={"nope": 2})
        self.assertIn("nope", str(e.exception))

    def test_closed_model(self):
        m = convgate.load(CNN)
        m.close()
        with self.assertRaises(convgate.ConvgateError):
            m.inspect()


if __name__ == "__main__":
    unittest.main()
