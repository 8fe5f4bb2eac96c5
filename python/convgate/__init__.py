"""convgate from Python: gate a converted model, with numpy in and out.

A binding over libconvgate (ctypes, the standard library; numpy for the
arrays). Each method runs the command the CLI runs and returns its report
as a dict shaped like the command's --json result (docs/json.md), rendered
by the same C code; arrays come back as numpy arrays on the report.

    import convgate
    m = convgate.load("examples/rmsnorm_fp16.onnx")
    r = m.gate(target="litert-gpu", inputs="examples/rmsnorm_fp16_inputs")
    r["verdict"], r["reason"]
    r.tensors["first_divergent/reference"]     # numpy arrays

Options are the CLI's, as keyword arguments (docs/python.md): target,
profiles, dim={"batch": 1}, seed, range={"*": (lo, hi)}, random, inputs
(a folder), golden, atol, rtol, accumulate, require_full, min_coverage,
no_time, assume_supported, watch,
triage. A command that cannot run raises ConvgateError; a gate that fails
is a report (report.exit_code 1), as for the CLI.
"""
import ctypes
import ctypes.util
import json
import os

import numpy as np

__all__ = ["load", "Model", "Report", "ConvgateError", "library_path"]

_MAX_RANK = 16
_ERROR_MSG_MAX = 1024

# numpy dtype -> ONNX TensorProto code (include/convgate/dtype.def)
_ONNX_CODE = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
    np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
    np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
    np.dtype(np.complex64): 14, np.dtype(np.complex128): 15,
}
_NUMPY_DTYPE = {code: dt for dt, code in _ONNX_CODE.items()}


class ConvgateError(Exception):
    """A command that could not run: the message is the envelope's errors;
    .envelope holds the whole --json envelope."""

    def __init__(self, message, envelope=None):
        super().__init__(message)
        self.envelope = envelope


class Report(dict):
    """A command's result: the dict of its --json "result", plus
    .status ("ok", "fail"), .exit_code (0 or 1), .warnings (messages),
    .envelope (the whole envelope) and .tensors ({name: numpy array}:
    "outputs/NAME", "watch/NAME", "first_divergent/reference",
    "first_divergent/target", "sample/NAME")."""

    def __init__(self, envelope, tensors):
        super().__init__(envelope.get("result") or {})
        self.envelope = envelope
        self.status = envelope.get("status")
        self.exit_code = envelope.get("exit_code")
        self.warnings = [w.get("message") for w in envelope.get("warnings", [])]
        self.tensors = tensors

    @property
    def outputs(self):
        """run: the outputs as {name: numpy array}, in graph-output order."""
        return {k[len("outputs/"):]: v for k, v in self.tensors.items() if k.startswith("outputs/")}

    @property
    def watched(self):
        """run with watch=[...]: the intermediate tensors asked for."""
        return {k[len("watch/"):]: v for k, v in self.tensors.items() if k.startswith("watch/")}


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * _ERROR_MSG_MAX)]


class _Tensor(ctypes.Structure):
    _fields_ = [("sample", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("bytes", ctypes.c_size_t)]


def _candidates():
    env = os.environ.get("CONVGATE_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # written by cmake --install: the library relative to this package
        from . import _installed
        yield os.path.normpath(os.path.join(here, _installed.LIBRARY))
    except ImportError:
        pass
    # a source checkout: python/convgate -> build/
    yield os.path.normpath(os.path.join(here, "..", "..", "build", "libconvgate.so"))
    found = ctypes.util.find_library("convgate")
    if found:
        yield found


def library_path():
    """The libconvgate this package loads: $CONVGATE_LIB, else the one
    installed beside it, else a source checkout's build/, else the system's."""
    for path in _candidates():
        if os.path.sep not in path or os.path.exists(path):
            return path
    raise ConvgateError("libconvgate not found: set CONVGATE_LIB to libconvgate.so "
                        "(a build's build/libconvgate.so, or the installed one)")


_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    lib.cg_model_load_any.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_Error)]
    lib.cg_model_load_any.restype = ctypes.c_int
    lib.cg_model_free.argtypes = [ctypes.c_void_p]
    lib.cg_model_free.restype = None
    lib.cg_bind_call.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.POINTER(_Tensor), ctypes.c_size_t]
    lib.cg_bind_call.restype = ctypes.c_void_p
    lib.cg_bind_result_json.argtypes = [ctypes.c_void_p]
    lib.cg_bind_result_json.restype = ctypes.c_char_p
    lib.cg_bind_result_exit_code.argtypes = [ctypes.c_void_p]
    lib.cg_bind_result_exit_code.restype = ctypes.c_int
    lib.cg_bind_result_tensor_count.argtypes = [ctypes.c_void_p]
    lib.cg_bind_result_tensor_count.restype = ctypes.c_size_t
    lib.cg_bind_result_tensor.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_size_t)]
    lib.cg_bind_result_tensor.restype = ctypes.c_bool
    lib.cg_bind_result_free.argtypes = [ctypes.c_void_p]
    lib.cg_bind_result_free.restype = None
    _lib = lib
    return lib


def _text(s):
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s


def _options(kwargs):
    """Keyword arguments to the JSON options (None means: not given)."""
    opts = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if key == "range" and isinstance(value, dict):
            value = {k: [float(v[0]), float(v[1])] for k, v in value.items()}
        elif key == "range":
            value = {"*": [float(value[0]), float(value[1])]}
        elif key == "target" and not isinstance(value, str):
            value = list(value)
        opts[key] = value
    return json.dumps(opts)


def _samples(samples):
    """Arrays to (label, name, contiguous array) triples: one sample as
    {name: array}, several as a list of them or {label: {name: array}}."""
    if samples is None:
        return []
    if isinstance(samples, dict) and samples and all(isinstance(v, dict) for v in samples.values()):
        items = list(samples.items())
    elif isinstance(samples, dict):
        items = [("0", samples)]
    else:
        items = [(str(i), s) for i, s in enumerate(samples)]
    out = []
    for label, sample in items:
        for name, array in sample.items():
            a = np.ascontiguousarray(array)
            if a.dtype not in _ONNX_CODE:
                raise ConvgateError(f"input {name!r}: dtype {a.dtype} has no ONNX equivalent")
            out.append((str(label), name, a))
    return out


class Model:
    """An ONNX or .tflite model loaded by libconvgate (weights memory-mapped, not copied)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._lib = _library()
        self._handle = ctypes.c_void_p()
        err = _Error()
        # ONNX or .tflite (recognised by its "TFL3" identifier), as the CLI loads it
        if self._lib.cg_model_load_any(_text(self.path), None, ctypes.byref(self._handle),
                                       ctypes.byref(err)) != 0:
            self._handle = None
            raise ConvgateError(err.msg.decode("utf-8", "replace"))

    def close(self):
        if self._handle:
            self._lib.cg_model_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _call(self, command, samples=None, **kwargs):
        if not self._handle:
            raise ConvgateError("the model is closed")
        triples = _samples(samples)
        keep = []  # the buffers must outlive the call
        tensors = (_Tensor * max(1, len(triples)))()
        for i, (label, name, a) in enumerate(triples):
            dims = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
            keep += [label.encode(), _text(name), dims, a]
            tensors[i] = _Tensor(keep[-4], keep[-3], _ONNX_CODE[a.dtype], a.ndim, dims,
                                 a.ctypes.data_as(ctypes.c_void_p), a.nbytes)
        res = self._lib.cg_bind_call(command.encode(), self._handle, _text(self.path),
                                     _options(kwargs).encode(), tensors, len(triples))
        if not res:
            raise MemoryError("libconvgate: out of memory")
        try:
            envelope = json.loads(self._lib.cg_bind_result_json(res).decode("utf-8"))
            arrays = {}
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int32()
            dims = (ctypes.c_int64 * _MAX_RANK)()
            data, nbytes = ctypes.c_void_p(), ctypes.c_size_t()
            for i in range(self._lib.cg_bind_result_tensor_count(res)):
                self._lib.cg_bind_result_tensor(res, i, ctypes.byref(name), ctypes.byref(dtype),
                                                ctypes.byref(rank), dims, ctypes.byref(data),
                                                ctypes.byref(nbytes))
                dt = _NUMPY_DTYPE.get(dtype.value)
                if dt is None:
                    continue
                shape = tuple(dims[d] for d in range(rank.value))
                buf = ctypes.string_at(data.value, nbytes.value) if nbytes.value else b""
                arrays[name.value.decode("utf-8", "surrogateescape")] = \
                    np.frombuffer(buf, dtype=dt).reshape(shape).copy()
        finally:
            self._lib.cg_bind_result_free(res)
        if envelope["status"] == "error":
            msgs = "; ".join(e["message"] for e in envelope.get("errors", []))
            raise ConvgateError(f"convgate {command}: {msgs}", envelope)
        return Report(envelope, arrays)

    def inspect(self):
        """The contract, opsets, op inventory and largest tensors (docs/inspect-json.md)."""
        return self._call("inspect")

    def check(self):
        """The checker's problems; report.exit_code 1 when there are errors."""
        return self._call("check")

    def assign(self, target, **options):
        """Where each node runs on `target` ("a,b" or a list, priority order):
        residency, partitions, boundaries, refusals, verdict (docs/placement.md)."""
        return self._call("assign", target=target, **options)

    def run(self, inputs=None, target=None, watch=None, random=None, **options):
        """Runs the model on the reference runtime (or as `target` would):
        inputs {name: array} (missing ones random when random=True; all of
        them random when inputs is None). report.outputs holds the arrays;
        watch=["tensor"] also returns those intermediate tensors (.watched)."""
        if random is None:
            random = inputs is None and "inputs" not in options
        return self._call("run", samples=inputs, target=target, watch=watch, random=random,
                          **options)

    def compare(self, target, samples=None, **options):
        """Reference vs target path over samples ({name: array}, a list of
        them, inputs=DIR or random=N; default 4 random): per-output metrics."""
        return self._call("compare", samples=samples, target=target, **options)

    def gate(self, target, samples=None, **options):
        """The three gates (converts, runs where intended, matches) with the
        verdict; on a failure the bisection's first divergent tensor is in
        report.tensors ("first_divergent/reference", ".../target") with the
        sample it came from ("sample/NAME")."""
        return self._call("gate", samples=samples, target=target, **options)

    def bisect(self, target, inputs=None, **options):
        """The first tensor where the target path diverges, on one sample
        (inputs {name: array}, inputs=DIR, or random), its values in
        report.tensors."""
        return self._call("bisect", samples=inputs, target=target, **options)

    def dump_ref(self, output, samples=None, **options):
        """Freezes the reference's outputs on samples ({name: array}, a list
        of them, inputs=DIR or random=N; default 1 random) as a golden set in
        the folder `output` (force=True to write into a non-empty one;
        floors=False skips the noise floors), as `convgate dump-ref` does."""
        return self._call("dump-ref", samples=samples, output=output, **options)


def load(path):
    """Loads an ONNX or .tflite model: convgate.load("model.onnx"), convgate.load("m.tflite")."""
    return Model(path)
