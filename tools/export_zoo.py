#!/usr/bin/python3
"""Export the torch part of the model zoo, with random weights.

Each model is built with torch.manual_seed(0) right before construction,
so its weights depend only on the torch/torchvision version, not on which
models were exported before it.  Opset 17.  Pretrained weights are never
downloaded (no network): the zoo measures loading, checking and running,
for which random weights of the real architecture are as good as trained
ones.

  torchvision classifiers   input "image" float32 [1,3,224,224], output
                            "logits"
  efficientnet_b0           the same (depthwise 3x3/5x5, SiLU, squeeze-excite)
  ssdlite320_mobilenet_v3_large
                            detector with NonMaxSuppression: input "image"
                            float32 [1,3,320,320], outputs "boxes", "scores",
                            "labels"
  lstm_gru                  2-layer LSTM (80 -> 256) then a GRU (256 -> 256)
                            and a linear head over 200 frames: input
                            "features" float32 [1,200,80], output "logits"
  transformer_s2048         4-layer nn.TransformerEncoder (d_model 256, 4
                            heads, FFN 1024) at sequence 2048: input "tokens"
                            float32 [1,2048,256], output "encoded"
  resnet18_dynquant         resnet18 rewritten as onnxruntime's dynamic
                            quantization writes convolutions: per-tensor
                            uint8 weights, DynamicQuantizeLinear on each
                            conv input, ConvInteger, Cast, Mul by the scales,
                            Add bias (the head stays float)
  resnet18_fp16         resnet18 with every float tensor (weights,
                            activations, input and output) in float16

Random weights must still give outputs with a real scale, or every
comparison of them judges nothing (#14).  Two of torchvision's inits do
not, and are corrected here, each seeded (it runs right after construction,
under the same torch.manual_seed(0)):

  vit_b_16 head             torchvision zero-initializes the classifier
                            head (weight and bias), so the logits are
                            exactly 0 on every input.  The head gets
                            nn.Linear's own default init (reset_parameters):
                            logits of scale ~1.
  BatchNorm statistics      models with depthwise convolutions
  (mobilenet_v2,            (groups == channels): torchvision's kaiming
  mobilenet_v3_small,       init in fan_out mode counts out_channels * k * k
  efficientnet_b0,          as the fan even though each output sums only
  ssdlite320...)            k * k inputs, so every depthwise conv shrinks the
                            variance by ~C/2; with BatchNorm at its default
                            running statistics (mean 0, var 1: identity in
                            eval) nothing restores it, and the logits come
                            out ~1e-9 (efficientnet_b0 ~1e-13; SSDlite's
                            class scores all tie).  Their BatchNorm running
                            statistics are calibrated instead, as training
                            would set them: CALIB_PASSES forward passes of
                            CALIB_BATCH seeded images (the parity inputs'
                            distribution: ImageNet-normalized uniform noise
                            for the classifiers, uniform [0, 1) for SSDlite,
                            which normalizes itself) with only the BatchNorm
                            layers in train mode, momentum None (a plain
                            average over the passes), under torch.no_grad().
                            The dense-conv models (resnet18/50; squeezenet1_1
                            has no BatchNorm) already give O(1)-O(100)
                            logits and keep their default statistics, and
                            so their bytes.

Measured (torch, eval, two ImageNet-normalized noise images, max |logit|),
default statistics -> calibrated: mobilenet_v2 4.1e-9 -> 0.51,
mobilenet_v3_small 2.5e-9 -> 0.038, efficientnet_b0 5.8e-14 -> 0.69;
SSDlite's 300 scores 0.0399..0.103 once calibrated; vit_b_16 0 -> 2.2;
resnet18 7.5 and resnet50 136 unchanged.

    /usr/bin/python3 tools/export_zoo.py OUT_DIR [MODEL ...]

With no MODEL, exports all of them.  Writes OUT_DIR/<model>.onnx via a
temporary file and rename, so an interrupted export leaves nothing behind.
"""

import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torchvision

OPSET = 17

# BatchNorm calibration (module docstring): passes, images per pass, seed
CALIB_PASSES = 4
CALIB_BATCH = 8
CALIB_SEED = 1234
CALIBRATED = ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
              "ssdlite320_mobilenet_v3_large")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def calibrate_batchnorm(model, forward, side, normalize):
    """Sets every BatchNorm's running mean and variance to the average
    of its batch statistics over CALIB_PASSES seeded batches of images
    side x side (uniform [0, 1), ImageNet-normalized when normalize), as
    training would have.  Only the BatchNorm layers run in train mode (no
    dropout, no detector training path); no weights change."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        raise RuntimeError("calibrate_batchnorm: no BatchNorm layer")
    gen = torch.Generator().manual_seed(CALIB_SEED)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    model.eval()
    momenta = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for _ in range(CALIB_PASSES):
            x = torch.rand(CALIB_BATCH, 3, side, side, generator=gen)
            forward((x - mean) / std if normalize else x)
    for m, momentum in zip(bns, momenta):
        m.momentum = momentum
    model.eval()


def classifier(name):
    def build():
        model = getattr(torchvision.models, name)(weights=None)
        if name == "vit_b_16":
            # torchvision zero-initializes it: logits would be 0 on every input
            model.heads.head.reset_parameters()
        if name in CALIBRATED:
            calibrate_batchnorm(model, model, 224, True)
        return model, (torch.zeros(1, 3, 224, 224),), ["image"], ["logits"]
    return build


def ssdlite():
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None)
    # the detector takes a list of images and normalizes them itself
    calibrate_batchnorm(model, lambda x: model(list(x)), 320, False)

    class Unwrap(torch.nn.Module):
        """Takes a batch tensor and returns plain tensors (the detector
        takes a list of images and returns a list of dicts)."""

        def __init__(self, det):
            super().__init__()
            self.det = det

        def forward(self, image):
            out = self.det([image[0]])[0]
            return out["boxes"], out["scores"], out["labels"]

    return (Unwrap(model), (torch.rand(1, 3, 320, 320),), ["image"],
            ["boxes", "scores", "labels"])


class LstmGru(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(80, 256, num_layers=2, batch_first=True)
        self.gru = torch.nn.GRU(256, 256, batch_first=True)
        self.head = torch.nn.Linear(256, 32)

    def forward(self, features):
        h, _ = self.lstm(features)
        h, _ = self.gru(h)
        return self.head(h)


def lstm_gru():
    return LstmGru(), (torch.rand(1, 200, 80),), ["features"], ["logits"]


def transformer():
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    return model, (torch.rand(1, 2048, 256),), ["tokens"], ["encoded"]


def torch_export(build, path):
    torch.manual_seed(0)
    model, args, ins, outs = build()
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Deliberately not under torch.no_grad(): with grad disabled,
        # nn.MultiheadAttention (vit_b_16, the transformer) takes its fused
        # fast path, aten::_native_multi_head_attention, which has no ONNX
        # export.
        torch.onnx.export(model, args, path, input_names=ins, output_names=outs,
                          opset_version=OPSET, do_constant_folding=True)


# --- rewrites of exported models ---------------------------------------------

def quantize_dynamic_convs(model):
    """Rewrites every Conv with constant weights the way onnxruntime's
    quantize_dynamic does: X -> DynamicQuantizeLinear -> ConvInteger with
    uint8 weights quantized per tensor (asymmetric, round half to even) ->
    Cast float -> Mul (x_scale * w_scale) -> Add bias."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    # the exporter shares equal initializers through Identity nodes
    for n in g.node:
        if n.op_type == "Identity" and n.input[0] in inits:
            inits[n.output[0]] = inits[n.input[0]]
    nodes = []
    new_inits = []
    for n in g.node:
        if n.op_type != "Conv" or n.input[1] not in inits:
            nodes.append(n)
            continue
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
        w_scale = np.float32((hi - lo) / 255.0 if hi > lo else 1.0)
        w_zp = np.uint8(np.clip(np.round(-lo / w_scale), 0, 255))
        w_q = np.clip(np.round(w / w_scale) + w_zp, 0, 255).astype(np.uint8)
        p = n.name.replace("/", "_").strip("_") or n.output[0]
        names = {k: p + "_" + k for k in ("xq", "xs", "xz", "wq", "ws", "wz", "acc", "accf",
                                           "scale", "scaled", "bias")}
        new_inits += [numpy_helper.from_array(w_q, names["wq"]),
                      numpy_helper.from_array(np.array(w_scale, np.float32), names["ws"]),
                      numpy_helper.from_array(np.array(w_zp, np.uint8), names["wz"])]
        nodes.append(helper.make_node("DynamicQuantizeLinear", [n.input[0]],
                                      [names["xq"], names["xs"], names["xz"]],
                                      name=p + "_quant"))
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        nodes.append(helper.make_node("ConvInteger",
                                      [names["xq"], names["wq"], names["xz"], names["wz"]],
                                      [names["acc"]], name=p + "_convint", **attrs))
        nodes.append(helper.make_node("Cast", [names["acc"]], [names["accf"]],
                                      to=TensorProto.FLOAT, name=p + "_cast"))
        nodes.append(helper.make_node("Mul", [names["xs"], names["ws"]], [names["scale"]],
                                      name=p + "_scale"))
        has_bias = len(n.input) > 2 and n.input[2]
        nodes.append(helper.make_node("Mul", [names["accf"], names["scale"]],
                                      [names["scaled"] if has_bias else n.output[0]],
                                      name=p + "_rescale"))
        if has_bias:
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float32)
            new_inits.append(numpy_helper.from_array(b.reshape(1, -1, 1, 1), names["bias"]))
            nodes.append(helper.make_node("Add", [names["scaled"], names["bias"]],
                                          [n.output[0]], name=p + "_bias"))
    # drop what only fed the float convs (the Identity copies of biases)
    live = {o.name for o in g.output}
    kept = []
    for n in reversed(nodes):
        if any(o in live for o in n.output):
            kept.append(n)
            live.update(n.input)
    nodes = kept[::-1]
    keep = [t for t in g.initializer if t.name in live]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    del g.node[:]
    g.node.extend(nodes)
    return model


def convert_float16(model):
    """Every float32 tensor of the graph becomes float16: initializers,
    Constant values, Cast targets, and the declared types of inputs,
    outputs and value_info."""
    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return model


def derived(base, rewrite):
    def export(path):
        with tempfile.TemporaryDirectory() as tmp:
            torch_export(TORCH[base], os.path.join(tmp, "base.onnx"))
            model = onnx.load(os.path.join(tmp, "base.onnx"))
        model = rewrite(model)
        onnx.checker.check_model(model)
        onnx.save(model, path)
    return export


TORCH = {name: classifier(name) for name in (
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "vit_b_16",
    "efficientnet_b0")}
TORCH.update({"ssdlite320_mobilenet_v3_large": ssdlite, "lstm_gru": lstm_gru,
              "transformer_s2048": transformer})

MODELS = {name: (lambda b: lambda path: torch_export(b, path))(b) for name, b in TORCH.items()}
MODELS["resnet18_dynquant"] = derived("resnet18", quantize_dynamic_convs)
MODELS["resnet18_fp16"] = derived("resnet18", convert_float16)


def export_one(name, out_dir):
    final = os.path.join(out_dir, name + ".onnx")
    partial = final + ".partial"
    MODELS[name](partial)
    os.replace(partial, final)
    print("exported %s (%d bytes)" % (final, os.path.getsize(final)))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out_dir = argv[1]
    names = argv[2:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            sys.stderr.write("export_zoo: unknown model %r (known: %s)\n"
                             % (name, ", ".join(MODELS)))
            return 2
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in names:
        export_one(name, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
