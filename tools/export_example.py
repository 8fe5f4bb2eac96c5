#!/usr/bin/python3
"""Export the bundled example model: a small CNN classifier.

Writes examples/tiny_cnn.onnx (opset 17) and, for later verification,
examples/tiny_cnn_inputs/{image_N.npy,logits_N.npy}: inputs and the logits
PyTorch computed for them.  Weights come from torch.manual_seed, so a rerun
gives the same numbers; the BatchNorm running statistics are randomised as
well so that BatchNormalization does real work instead of being an identity.

The model keeps its BatchNormalization nodes (exported with
TrainingMode.PRESERVE on a model in eval mode) rather than letting the
exporter fold them into the convolutions, because the point of the example
is to exercise conv/bn/relu/pool/linear in the runtime.

Run with the system interpreter, which has torch and onnx:
    /usr/bin/python3 tools/export_example.py [--out-dir examples]
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn

OPSET = 17
SEED = 20240517
INPUT_HW = 64
NUM_CLASSES = 10


class TinyCnn(nn.Module):
    """Four conv/bn/relu stages, three max-pools, global average pool, linear."""

    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        widths = [3, 16, 32, 64, 96]
        layers = []
        for i in range(4):
            layers += [
                nn.Conv2d(widths[i], widths[i + 1], 3, padding=1, bias=False),
                nn.BatchNorm2d(widths[i + 1]),
                nn.ReLU(inplace=False),
            ]
            if i < 3:
                layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(widths[-1], num_classes)

    def forward(self, image):
        x = self.features(image)
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def build_model():
    torch.manual_seed(SEED)
    model = TinyCnn()
    # Non-trivial BN statistics, drawn from the same seeded generator.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "examples"))
    args = ap.parse_args()

    out_dir = os.path.normpath(args.out_dir)
    in_dir = os.path.join(out_dir, "tiny_cnn_inputs")
    os.makedirs(in_dir, exist_ok=True)
    model_path = os.path.join(out_dir, "tiny_cnn.onnx")

    model = build_model()
    dummy = torch.zeros(1, 3, INPUT_HW, INPUT_HW)
    torch.onnx.export(
        model, (dummy,), model_path,
        input_names=["image"], output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=OPSET,
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
    )

    # Inputs: a batch of 1 and a batch of 2, from their own seeded generator
    # so they do not depend on how many weights the model drew.
    gen = torch.Generator().manual_seed(SEED + 1)
    for idx, batch in enumerate((1, 2)):
        image = torch.randn(batch, 3, INPUT_HW, INPUT_HW, generator=gen)
        with torch.no_grad():
            logits = model(image)
        np.save(os.path.join(in_dir, "image_%d.npy" % idx),
                image.numpy().astype(np.float32))
        np.save(os.path.join(in_dir, "logits_%d.npy" % idx),
                logits.numpy().astype(np.float32))

    # Sanity: the file is a valid ONNX model with the expected contract.
    import onnx
    m = onnx.load(model_path)
    onnx.checker.check_model(m)
    ops = sorted({n.op_type for n in m.graph.node})
    n_params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print("%s: %d bytes, %d parameters, ops: %s"
          % (model_path, os.path.getsize(model_path), n_params, " ".join(ops)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
