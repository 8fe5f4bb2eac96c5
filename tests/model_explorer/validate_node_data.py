#!/usr/bin/python3
"""Validates Model Explorer node data files against the format's documented
schema, and their keys against the model they annotate.

The schema, from Model Explorer's own sources (google-ai-edge/model-explorer):
  src/ui/src/components/visualizer/common/types.ts (at 026dc2941ae8):
    NodeDataProviderData = {[graphId: string]: NodeDataProviderGraphData}
    NodeDataProviderGraphData = {name?: string,
        results: Record<string, NodeDataProviderResultData>,
        thresholds?: ThresholdItem[], gradient?: GradientItem[],
        hideInAggregatedStatsTable?: boolean, hideInChildrenStatsTable?: boolean,
        hideAggregatedStats?: ('min'|'max'|'sum'|'avg')[],
        showExpandedSummaryOnGroupNode?: boolean,
        showLabelCountColumnsInChildrenStatsTable?: boolean}
    NodeDataProviderResultData = {value: any, bgColor?: string, textColor?: string}
    ThresholdItem = {value: number, bgColor: string, textColor?: string}
    GradientItem = {stop: number (0 to 1), bgColor?: string, textColor?: string}
      ("Only support hex form (e.g. #aabb00) or color name"; "Stops for 0
      and 1 should always be provided")
  src/server/package/src/model_explorer/node_data_builder.py: ModelNodeData
    writes {graph_id: GraphNodeData} to the file, the same shape.
A result key is "any of the output tensor names of a node" or "the node id"
(types.ts); the ONNX adapter (justinchuby/model-explorer-onnx, main.py)
makes each node's id its name and each graph's id the graph's name.

  validate_node_data.py MODEL.onnx FILE.json [--expect-key NAME=VALUE]...
Exit 0 when valid, 1 with the problems printed otherwise.
"""
import json
import re
import sys

import onnx

GRAPH_KEYS = {"name", "results", "thresholds", "gradient", "hideInAggregatedStatsTable",
              "hideInChildrenStatsTable", "hideAggregatedStats", "showExpandedSummaryOnGroupNode",
              "showLabelCountColumnsInChildrenStatsTable"}
BOOL_KEYS = {"hideInAggregatedStatsTable", "hideInChildrenStatsTable",
             "showExpandedSummaryOnGroupNode", "showLabelCountColumnsInChildrenStatsTable"}
COLOUR = re.compile(r"^(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|[a-z]+)$")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check(data, model, problems):
    graph = model.graph
    graph_id = graph.name or "main_graph"
    keys = set()
    for node in graph.node:
        if node.name:
            keys.add(node.name)
        keys.update(o for o in node.output if o)
    if not isinstance(data, dict) or not data:
        problems.append("top level: not a non-empty object of graph id -> node data")
        return
    for gid, gd in data.items():
        where = f"graph {gid!r}"
        if gid != graph_id:
            problems.append(f"{where}: not the model's graph id {graph_id!r}")
        if not isinstance(gd, dict):
            problems.append(f"{where}: not an object")
            continue
        for k in gd:
            if k not in GRAPH_KEYS:
                problems.append(f"{where}: unknown field {k!r}")
        if "name" in gd and not isinstance(gd["name"], str):
            problems.append(f"{where}: name is not a string")
        for k in BOOL_KEYS & gd.keys():
            if not isinstance(gd[k], bool):
                problems.append(f"{where}: {k} is not a boolean")
        if "hideAggregatedStats" in gd and (
                not isinstance(gd["hideAggregatedStats"], list)
                or any(s not in ("min", "max", "sum", "avg") for s in gd["hideAggregatedStats"])):
            problems.append(f"{where}: hideAggregatedStats is not a list of min/max/sum/avg")
        results = gd.get("results")
        if not isinstance(results, dict):
            problems.append(f"{where}: results missing or not an object")
            results = {}
        for key, r in results.items():
            rw = f"{where} result {key!r}"
            if key not in keys:
                problems.append(f"{rw}: neither a node name nor an output tensor of the model")
            if not isinstance(r, dict) or "value" not in r:
                problems.append(f"{rw}: not an object with a value")
                continue
            for k in r:
                if k not in ("value", "bgColor", "textColor"):
                    problems.append(f"{rw}: unknown field {k!r}")
            if r["value"] is None or isinstance(r["value"], (dict, list)):
                problems.append(f"{rw}: value is {r['value']!r}, not a number or a label")
            for k in ("bgColor", "textColor"):
                if k in r and not (isinstance(r[k], str) and COLOUR.match(r[k])):
                    problems.append(f"{rw}: {k} {r[k]!r} is not a colour")
        if "thresholds" in gd:
            th = gd["thresholds"]
            if not isinstance(th, list) or not th:
                problems.append(f"{where}: thresholds is not a non-empty list")
                th = []
            last = None
            for i, t in enumerate(th):
                tw = f"{where} threshold {i}"
                if not isinstance(t, dict) or set(t) - {"value", "bgColor", "textColor"}:
                    problems.append(f"{tw}: not {{value, bgColor, textColor?}}")
                    continue
                if not is_number(t.get("value")):
                    problems.append(f"{tw}: value is not a number")
                elif last is not None and t["value"] <= last:
                    problems.append(f"{tw}: values do not increase")
                else:
                    last = t["value"]
                if not (isinstance(t.get("bgColor"), str) and COLOUR.match(t["bgColor"])):
                    problems.append(f"{tw}: bgColor missing or not a colour")
        if "gradient" in gd:
            gr = gd["gradient"]
            stops = []
            if not isinstance(gr, list):
                problems.append(f"{where}: gradient is not a list")
                gr = []
            for i, g in enumerate(gr):
                gw = f"{where} gradient stop {i}"
                if not isinstance(g, dict) or set(g) - {"stop", "bgColor", "textColor"}:
                    problems.append(f"{gw}: not {{stop, bgColor?, textColor?}}")
                    continue
                if not is_number(g.get("stop")) or not 0 <= g["stop"] <= 1:
                    problems.append(f"{gw}: stop is not a number in [0, 1]")
                else:
                    stops.append(g["stop"])
                for k in ("bgColor", "textColor"):
                    if k in g and not (isinstance(g[k], str) and COLOUR.match(g[k])):
                        problems.append(f"{gw}: {k} is not a hex colour or a colour name")
            if 0 not in stops or 1 not in stops:
                problems.append(f"{where}: the gradient lacks the stops 0 and 1")
        for key, r in results.items():
            v = r.get("value") if isinstance(r, dict) else None
            if ("thresholds" in gd or "gradient" in gd) and not is_number(v) and "bgColor" not in r:
                problems.append(f"{where} result {key!r}: a label on a numeric scale needs its own bgColor")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    model = onnx.load(argv[1], load_external_data=False)
    problems = []

    def no_constant(c):
        raise ValueError(f"{c} is not JSON")
    try:
        with open(argv[2], encoding="utf-8") as f:
            data = json.load(f, parse_constant=no_constant)
    except (ValueError, OSError) as e:
        print(f"{argv[2]}: {e}")
        return 1
    check(data, model, problems)
    expects = argv[3:]
    while expects:
        if expects[0] != "--expect-key" or len(expects) < 2:
            print("usage: ... [--expect-key NAME=VALUE]...")
            return 2
        name, _, want = expects[1].partition("=")
        got = [gd.get("results", {}).get(name, {}).get("value") for gd in data.values()]
        if not any(str(g) == want for g in got):
            problems.append(f"result {name!r}: value {got}, expected {want}")
        expects = expects[2:]
    for p in problems:
        print(f"{argv[2]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
