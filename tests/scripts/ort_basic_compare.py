#!/usr/bin/env python3
"""Compares convgate's ORT-basic graph with the optimized model ONNX Runtime
1.22 writes, for tests/scripts/ort_basic.sh.

  ort_basic_compare.py WORK_DIR

WORK_DIR/models.tsv lists one model per line: NAME, then the paths of
convgate's `lower --preprocess ort-basic --json` report, of the report
(`--preprocess none`) of ORT's own optimized model, of ORT's error message
(when ORT refused the model), the exit status of `convgate check` and
`convgate assign` on ORT's model, and "zoo" or the path of the model's
`convgate inspect --json` report (a test-data model is compared only when
its inputs have static shapes).

For each model the node inventory (count and op histogram, main graph and
every graph) must be equal, except where ONNX Runtime itself changes the
graph after Level 1 in a way the ORT-basic graph (the graph *before*
partitioning) does not contain:

 - ORT's CPU EP has no kernel for some ops (HardSwish, CastLike, Bernoulli,
   ...: cpu_execution_provider.cc at v1.22.0) and replaces each such node
   left to it by its ONNX function body at partitioning. For the ops whose
   body is fixed (HardSwish -> HardSigmoid + Mul, onnx/defs/math/defs.cc;
   CastLike -> Cast, onnx/defs/tensor/defs.cc; Bernoulli ->
   RandomUniformLike + Greater + Cast, onnx/defs/generator/defs.cc) the
   expansion is applied to convgate's inventory; a model with another such
   op (a context-dependent body: NegativeLogLikelihoodLoss,
   SoftmaxCrossEntropyLoss, SequenceMap, ...) is skipped, and listed.
 - ORT's InsertCastTransformer (onnxruntime/core/optimizer/
   insert_cast_transformer.cc, run after partitioning) wraps float16 nodes
   the CPU EP has no float16 kernel for (on x86 nearly all: Conv, Relu, ...)
   in Casts to and from float. No other step before ORT writes the model
   adds Casts (Level-1 cast elimination only removes them), so a model
   whose inventory differs from ORT's only by Cast nodes ORT has in excess
   is skipped, and listed.
 - When no Level-1 transformer changes anything, ORT writes the model's
   control-flow bodies as they were read (Graph::ToGraphProto returns the
   unsynchronized proto, onnxruntime/core/graph/graph.cc:4078-4089), even
   though graph construction turned their Constant nodes into initializers
   in memory. Then (convgate's report says "edited": false) the main graphs
   must match and ORT's bodies must equal the source's.

Any other difference fails. So does a model of ORT's convgate cannot load,
check or place (exit status of `convgate check` / `convgate assign`).
"""
import collections
import json
import os
import sys

# Fixed ONNX function bodies the CPU EP inlines (see the docstring).
EXPANSIONS = {
    "HardSwish": {"HardSigmoid": 1, "Mul": 1},
    "CastLike": {"Cast": 1},
    "Bernoulli": {"RandomUniformLike": 1, "Greater": 1, "Cast": 1},
}


def load(path):
    """A convgate --json report: the envelope's result (docs/json.md)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and "command" in doc and "result" in doc:
        return doc["result"]
    return doc


def expand(ops, missing):
    out = collections.Counter(ops)
    for op, n in missing.items():
        body = EXPANSIONS[op]
        out[op] -= n
        if out[op] == 0:
            del out[op]
        for k, v in body.items():
            out[k] += v * n
    return dict(out)


def diff(a, b):
    keys = sorted(set(a) | set(b))
    return ", ".join("%s %d/%d" % (k, a.get(k, 0), b.get(k, 0)) for k in keys
                     if a.get(k, 0) != b.get(k, 0))


def only_casts_added(mine, ort):
    """True when ort has more Cast nodes than mine and every other op count
    is the same (InsertCastTransformer's doing: see the docstring)."""
    rest = lambda d: {k: v for k, v in d.items() if k != "Cast"}
    return ort.get("Cast", 0) > mine.get("Cast", 0) and rest(mine) == rest(ort)


def main():
    work = sys.argv[1]
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "models.tsv")) if l.strip()]
    equal, failed, ort_refused, inlined, body_artifact = [], [], [], [], []
    cast_inserted = []
    for name, mine_path, ort_path, ort_err, check_rc, assign_rc, kind in rows:
        if kind != "zoo":
            info = load(kind)
            if not info or not all(i["shape"] is not None and not i["dynamic"] and
                                   not i["dtype"].startswith(("sequence", "optional", "map"))
                                   for i in info["inputs"]):
                continue
        if os.path.exists(ort_err):
            ort_refused.append((name, open(ort_err).read().strip()[:160]))
            continue
        mine, theirs = load(mine_path), load(ort_path)
        if mine is None:
            failed.append((name, "convgate could not lower the model (see %s)" % mine_path))
            continue
        if theirs is None:
            failed.append((name, "convgate could not load ORT's optimized model"))
            continue
        if check_rc != "0":
            failed.append((name, "convgate check rejects ORT's optimized model (exit %s)" % check_rc))
            continue
        if assign_rc != "0":
            failed.append((name, "convgate assign fails on ORT's optimized model (exit %s)" % assign_rc))
            continue
        missing = mine.get("cpu_missing", {})
        unknown = sorted(op for op in missing if op not in EXPANSIONS)
        if unknown:
            inlined.append((name, ", ".join(unknown)))
            continue
        rt, ort = mine["runtime"], theirs["source"]
        ops = expand(rt["ops"], {k: v for k, v in missing.items()})
        main_equal = ops == ort["ops"]
        src = mine["source"]
        if not mine["edited"] and src["nodes_all_graphs"] != src["nodes"]:
            ok = main_equal and ort["ops_all_graphs"] == src["ops_all_graphs"]
            why = ("main graph: %s; bodies as read: %s" %
                   (diff(ops, ort["ops"]), diff(src["ops_all_graphs"], ort["ops_all_graphs"])))
            if ok:
                body_artifact.append(name)
        else:
            all_ops = expand(rt["ops_all_graphs"], missing)
            ok = main_equal and all_ops == ort["ops_all_graphs"]
            why = "%d/%d nodes: %s" % (rt["nodes_all_graphs"], ort["nodes_all_graphs"],
                                      diff(all_ops, ort["ops_all_graphs"]))
        if ok:
            equal.append(name)
        elif only_casts_added(ops, ort["ops"]) and only_casts_added(
                expand(rt["ops_all_graphs"], missing), ort["ops_all_graphs"]):
            cast_inserted.append((name, ort["ops"].get("Cast", 0) - ops.get("Cast", 0)))
        else:
            failed.append((name, "node inventory differs (convgate/ORT): " + why))
    print("ort_basic: %d models compared, %d equal (%d through the bodies-as-read rule), %d "
          "different; skipped: %d ORT refuses, %d with a context-dependent CPU function inlining, "
          "%d with Casts ORT inserts after partitioning"
          % (len(equal) + len(failed), len(equal), len(body_artifact), len(failed),
             len(ort_refused), len(inlined), len(cast_inserted)))
    for name, ops in inlined:
        print("  skipped %s: ORT's CPU EP inlines the ONNX function body of %s" % (name, ops))
    for name, n in cast_inserted:
        print("  skipped %s: ORT's InsertCastTransformer adds %d Casts (float16 nodes without a "
              "CPU kernel)" % (name, n))
    for name, why in failed:
        print("FAIL %s: %s" % (name, why))
    return 1 if failed or not equal else 0


if __name__ == "__main__":
    sys.exit(main())
