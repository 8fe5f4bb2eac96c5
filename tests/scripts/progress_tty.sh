#!/usr/bin/env bash
# Progress on terminals only (convgate/progress.h, cli/progress.c), checked
# with a pseudo-terminal as stderr (python's pty module):
#  - gate (samples, then bisection's nodes), bisect, compare, profile and
#    conformance draw a progress line on a terminal: counts, elapsed time,
#    the current item, in colour;
#  - NO_COLOR keeps the line and drops the colour;
#  - --quiet, and a stderr that is a pipe, draw nothing;
#  - the report on stdout is the same either way.
# Usage: progress_tty.sh CONVGATE SOURCE_DIR
set -u
CG=${1:?convgate binary}
SRC=${2:?source dir}
exec /usr/bin/python3 - "$CG" "$SRC" <<'EOF'
import os
import pty
import subprocess
import sys

cg, src = sys.argv[1], sys.argv[2]
ex = os.path.join(src, "examples")
fails = []


def run(args, tty=True, env_extra=None):
    """Runs convgate with stderr on a pty (or a pipe); returns (rc, stdout, stderr)."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.update(env_extra or {})
    if tty:
        master, slave = pty.openpty()
        p = subprocess.Popen([cg] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=slave, env=env)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
        out = p.stdout.read()
        p.wait()
    else:
        p = subprocess.run([cg] + args, stdin=subprocess.DEVNULL, capture_output=True, env=env)
        out, err = p.stdout, p.stderr
    return p.returncode, out, err


def expect(cond, what):
    if not cond:
        fails.append(what)


CSI_CLEAR = b"\r\x1b[K"
CYAN = b"\x1b[36m"
# a GPU computing in f16: gate 3 fails and bisects
gate = ["gate", f"{ex}/rmsnorm_fp16.onnx", "--target", "litert-gpu", "--accumulate", "fp16",
        "--inputs", f"{ex}/rmsnorm_fp16_inputs"]

rc, out_tty, err = run(gate)
expect(rc == 1, f"gate on a terminal: exit {rc}, expected 1")
expect(CSI_CLEAR in err, "gate on a terminal: no progress line")
expect(b"convgate gate:" in err, "gate: the line does not name the command")
expect(b"gate 3 " in err and b"/2 samples" in err, "gate: no sample count")
expect(b"sample_" in err, "gate: the current sample is not named")
expect(b"bisect" in err and b" nodes " in err, "gate: bisection's nodes are not counted")
expect(b"s " in err and b"." in err, "gate: no elapsed time")
expect(CYAN in err, "gate: no colour on a terminal")
expect(err.rstrip(b"\r\n").endswith(CSI_CLEAR) or err.count(CSI_CLEAR) >= 2,
       "gate: the progress line is not cleared")

rc, out, err = run(gate, env_extra={"NO_COLOR": "1"})
expect(CSI_CLEAR in err, "NO_COLOR: the progress line went away")
expect(b"\x1b[3" not in err, "NO_COLOR: colour codes remain")

rc, out_quiet, err = run(gate + ["--quiet"])
expect(rc == 1, f"gate --quiet: exit {rc}")
expect(b"\x1b[" not in err and b"\r" not in err, "--quiet: a progress line was drawn")
expect(out_quiet == out_tty, "--quiet changed the report on stdout")

rc, out_pipe, err = run(gate, tty=False)
expect(b"\x1b[" not in err and b"\r" not in err, "stderr on a pipe: a progress line was drawn")
expect(out_pipe == out_tty, "the report on stdout differs with stderr on a pipe")

rc, out, err = run(["bisect", f"{ex}/rmsnorm_fp16.onnx", "--target", "litert-gpu",
                    "--accumulate", "fp16", "--inputs", f"{ex}/rmsnorm_fp16_inputs"])
expect(b"convgate bisect:" in err and b"/6 nodes" in err, "bisect: no node count")

rc, out, err = run(["compare", f"{ex}/tiny_cnn.onnx", "--target", "xnnpack", "--random", "3"])
expect(b"convgate compare:" in err and b"/3 samples" in err, "compare: no sample count")

rc, out, err = run(["profile", f"{ex}/tiny_cnn.onnx", "--target", "xnnpack", "--runs", "3"])
expect(rc == 0, f"profile: exit {rc}: {err[-300:]!r}")
expect(b"convgate profile:" in err and b"/3 rounds" in err, "profile: no round count")

data = "/usr/share/libonnx-testdata/data/node"
if os.path.isdir(data):
    rc, out, err = run(["conformance", data, "--filter", "test_relu"])
    expect(b"convgate conformance:" in err and b" tests " in err, "conformance: no test count")
    expect(b"node/test_relu" in err, "conformance: the current test is not named")
    rc, out, err = run(["conformance", data, "--filter", "test_relu", "--quiet"])
    expect(b"\x1b[" not in err, "conformance --quiet: a progress line was drawn")

for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("progress_tty: all checks passed")
EOF
