#!/usr/bin/env bash
# The include graph against the layering of docs/ARCHITECTURE.md: a file
# may include headers of its own stage and of earlier stages only,
#
#   core -> load -> ir -> check -> tflite -> run -> io -> target -> lower -> delegate
#        -> runner -> place -> cost -> verify -> rewrite -> report -> bind -> cli
#
# Files are placed by folder (src/<stage>/, cli/); public headers
# (include/convgate/*.h) by the stage that implements them (table below).
# A public header must not include jansson (or any header outside the C
# library and convgate/), and every function it declares carries CG_API
# (the shared library exports nothing else), plus CG_NODISCARD when it
# returns cg_status (include/convgate/api.h). Every new public header, and every new folder
# under src/, must be placed here, so the check cannot pass by omission.
# Exceptions are listed with their reason; keep them few. Outside src/run,
# the runtime's internal headers (run/*.h) are included only by the files
# run_internals lists, each with its reason.
#
#   layering.sh CONVGATE_BINARY SOURCE_DIR
set -eu
src=${2:?usage: layering.sh CONVGATE_BINARY SOURCE_DIR}
exec /usr/bin/python3 - "$src" <<'PY'
import os, re, sys

root = sys.argv[1]
order = ["core", "load", "ir", "check", "tflite", "run", "io", "target", "lower", "delegate",
         "runner", "place", "cost", "verify", "rewrite", "report", "bind", "cli"]
rank = {s: i for i, s in enumerate(order)}

# public header -> the stage that implements it
public = {
    "api.h": "core", "status.h": "core", "dtype.h": "core", "dtype.def": "core",
    "tensor.h": "core", "progress.h": "core", "budget.h": "core",
    "model.h": "load",
    "schema.h": "check", "check.h": "check",
    "tflite.h": "tflite", "tflite_builtin.def": "tflite", "tflite_type.def": "tflite",
    "tflite_options.def": "tflite", "tflite_options2.def": "tflite",
    "runtime.h": "run",
    "tensor_io.h": "io", "samples.h": "io",
    "target.h": "target",
    "lower.h": "lower",
    "partition.h": "place", "assign.h": "place",
    "cost.h": "cost", "profile.h": "cost",
    "compare.h": "verify", "golden.h": "verify", "bisect.h": "verify", "gate.h": "verify",
    "targetpath.h": "verify", "parity.h": "verify", "conformance.h": "verify",
    "noise.h": "verify", "iomap.h": "verify", "against.h": "verify", "samplerun.h": "verify",
    "runner.h": "runner",
    "rewrite.h": "rewrite",
    "inspect.h": "report",
    "bind.h": "bind",
}

# (including file prefix, included header) -> why it is allowed
exceptions = {
    # The runtime executes partitions of an assignment on executing targets:
    # it needs the target vtable and the assignment's types, not their code.
    ("src/run/", "convgate/target.h"): "the runtime calls executing targets' compile/run",
    ("src/run/", "convgate/partition.h"): "the runtime schedules an assignment's partitions",
}
used = set()

# The runtime's own headers (src/run/*.h: frames, kernels, plans) are its
# internals: the tensor and value types every stage shares are public
# (convgate/tensor.h), so a file outside src/run includes run/*.h only
# for what only the runtime has, listed here with the reason.
run_internals = {
    "src/lower/lgraph.c": "constant folding reads sparse initializers as the runtime does",
    "src/lower/ort_basic.c": "constant folding reads sparse initializers as the runtime does",
    "src/delegate/xnnpack/xnnpack_lower.c":
        "the delegate reads initializers and broadcasts shapes as the runtime does",
    "src/delegate/xnnpack/xnnpack_target.c":
        "an executing target: its messages format shapes as the runtime's do",
}
run_used = set()

c_library = {"assert.h", "ctype.h", "errno.h", "float.h", "inttypes.h", "limits.h", "math.h",
             "stdalign.h", "stdarg.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h",
             "stdlib.h", "string.h", "time.h", "stdnoreturn.h"}

def stage_of_file(rel):
    parts = rel.split("/")
    if parts[0] == "cli":
        return "cli"
    if parts[0] == "src":
        return parts[1]
    if parts[0] == "include":
        return public.get(parts[-1])
    return None

def stage_of_include(inc):
    parts = inc.split("/")
    if parts[0] == "convgate":
        return public.get(parts[-1])
    if parts[0] in rank:
        return parts[0]
    return None

problems = []
files = []
for top in ("src", "cli", "include/convgate"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        for n in sorted(names):
            if n.endswith((".c", ".h", ".inc", ".def")):
                files.append(os.path.relpath(os.path.join(dirpath, n), root))
for sub in sorted(os.listdir(os.path.join(root, "src"))):
    if os.path.isdir(os.path.join(root, "src", sub)) and sub not in rank:
        problems.append("src/%s/: a folder no stage of the layering names (add it to "
                        "tests/scripts/layering.sh and docs/ARCHITECTURE.md)" % sub)
inc_re = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
edges = 0
for rel in sorted(files):
    st = stage_of_file(rel)
    if st is not None and st not in rank:
        continue  # a folder no stage names: reported above
    if st is None:
        problems.append("%s: public header not placed in a stage (add it to the table in "
                        "tests/scripts/layering.sh)" % rel)
        continue
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = inc_re.match(line)
            if not m:
                continue
            kind, inc = m.groups()
            if rel.startswith("include/") and kind == "<" and inc not in c_library:
                problems.append("%s:%d: public header includes <%s>: public headers take "
                                "only the C library and convgate/" % (rel, lineno, inc))
                continue
            if kind == "<":
                continue
            ist = stage_of_include(inc)
            if ist == "run" and st != "run" and kind == '"' and not inc.startswith("convgate/"):
                if rel in run_internals:
                    run_used.add(rel)
                else:
                    problems.append("%s:%d: includes %s, an internal header of the runtime "
                                    "(what every stage shares is in convgate/*.h; a real need "
                                    "goes in run_internals with its reason)" % (rel, lineno, inc))
            if ist is None:
                continue  # same-folder includes (family headers, .inc, .def)
            edges += 1
            if rank[ist] <= rank[st]:
                continue
            hit = [(p, h) for (p, h) in exceptions if rel.startswith(p) and inc == h]
            if hit:
                used.update(hit)
                continue
            problems.append("%s:%d: %s (stage %s) includes %s (stage %s), a later stage"
                            % (rel, lineno, rel, st, inc, ist))
# the API macros on every public function declaration
decl = re.compile(r'^(?!typedef|static|#|extern|struct|union|enum|\}|/|\s)(.*?)\b(cg_\w+)\(')
nodiscard_exempt = {"cg_error_set"}  # returns its argument, for `return cg_error_set(...)`
declared = 0
for rel in sorted(f for f in files if f.startswith("include/") and f.endswith(".h")):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = decl.match(line)
            if not m or "(" in m.group(1):
                continue
            declared += 1
            words = m.group(1).split()
            name = m.group(2)
            if "CG_API" not in words:
                problems.append("%s:%d: public function %s lacks CG_API" % (rel, lineno, name))
            elif "cg_status" in words and "CG_NODISCARD" not in words and \
                    name not in nodiscard_exempt:
                problems.append("%s:%d: %s returns cg_status without CG_NODISCARD"
                                % (rel, lineno, name))
for (p, h), why in exceptions.items():
    if (p, h) not in used:
        problems.append("exception %s -> %s (%s) is no longer needed: remove it" % (p, h, why))
for rel, why in run_internals.items():
    if rel not in run_used:
        problems.append("run_internals lists %s (%s), which includes no run/*.h: remove it"
                        % (rel, why))
for p in problems:
    print("layering:", p)
print("layering: %d files, %d cross-stage includes and %d public functions checked, "
      "%d problem(s)" % (len(files), edges, declared, len(problems)))
sys.exit(1 if problems else 0)
PY
