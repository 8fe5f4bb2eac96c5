#!/usr/bin/python3
"""Test helper: are two ONNX files the same ModelProto (or TensorProto)?

Usage: pb_equal.py [--tensor] ORIGINAL COPY [ORIGINAL COPY ...]
Parses each pair with python3-onnx and compares the messages (==, which
covers every field) and their deterministic serializations (which also
covers unknown fields). Prints one line per differing pair and exits 1 if
any differ.
"""
import sys

import onnx


def load(path, tensor):
    msg = onnx.TensorProto() if tensor else onnx.ModelProto()
    with open(path, "rb") as f:
        msg.ParseFromString(f.read())
    return msg


def main(argv):
    tensor = False
    if argv and argv[0] == "--tensor":
        tensor = True
        argv = argv[1:]
    if len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for orig, copy in zip(argv[0::2], argv[1::2]):
        a, b = load(orig, tensor), load(copy, tensor)
        same = a == b and a.SerializeToString(deterministic=True) == b.SerializeToString(
            deterministic=True)
        if not same:
            bad += 1
            print(f"DIFFERENT {orig} -> {copy}")
    print(f"{len(argv) // 2 - bad} equal, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
