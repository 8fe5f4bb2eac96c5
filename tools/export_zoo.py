#!/usr/bin/python3
"""Export the torchvision part of the model zoo, with random weights.

Each model is built with torch.manual_seed(0) right before construction,
so its weights depend only on the torchvision version, not on which models
were exported before it.  Input "image" float32 [1,3,224,224], output
"logits", opset 17.  Pretrained weights are never downloaded (no network):
the zoo measures loading, checking and running, for which random weights
of the real architecture are as good as trained ones.

    /usr/bin/python3 tools/export_zoo.py OUT_DIR [MODEL ...]

With no MODEL, exports all of them.  Writes OUT_DIR/<model>.onnx via a
temporary file and rename, so an interrupted export leaves nothing behind.
"""

import os
import sys
import warnings

import torch
import torchvision

OPSET = 17
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
          "squeezenet1_1", "vit_b_16")


def export_one(name, out_dir):
    ctor = getattr(torchvision.models, name)
    torch.manual_seed(0)
    # weights=None: random initialisation, nothing fetched from a hub.
    model = ctor(weights=None)
    model.eval()
    dummy = torch.zeros(1, 3, 224, 224)
    final = os.path.join(out_dir, name + ".onnx")
    partial = final + ".partial"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Deliberately not under torch.no_grad(): with grad disabled,
        # nn.MultiheadAttention (vit_b_16) takes its fused fast path,
        # aten::_native_multi_head_attention, which has no ONNX export.
        torch.onnx.export(model, (dummy,), partial,
                          input_names=["image"], output_names=["logits"],
                          opset_version=OPSET, do_constant_folding=True)
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
