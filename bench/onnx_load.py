#!/usr/bin/python3
"""Median time of python3-onnx's onnx.load per model: the reference parser
convgate's own load time is set against in bench_load.sh.

onnx.load parses the whole protobuf (weights included) into Python objects;
it does not check the model.  Each model is loaded once untimed first so the
page cache is warm, as for the other tools in the table.

    /usr/bin/python3 bench/onnx_load.py [--runs N] [--json] MODEL...
"""

import argparse
import json
import os
import statistics
import sys
import time

import onnx


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true",
                    help="one JSON object per model instead of a text line")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    failed = 0
    for path in args.models:
        try:
            onnx.load(path)  # warm-up: page cache and Python's allocator
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                model = onnx.load(path)
                times.append((time.perf_counter() - t0) * 1000.0)
                del model
        except Exception as exc:  # report and carry on with the next model
            sys.stderr.write("onnx_load: %s: %s\n" % (path, exc))
            failed += 1
            continue
        ms = statistics.median(times)
        if args.json:
            print(json.dumps({"model": path, "onnx": onnx.__version__,
                              "load_ms": ms, "runs": args.runs}))
        else:
            print("%s: onnx.load %.2f ms (median of %d, onnx %s)"
                  % (os.path.basename(path), ms, args.runs, onnx.__version__))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
