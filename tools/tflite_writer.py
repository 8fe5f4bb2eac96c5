#!/usr/bin/python3
"""A small .tflite writer for convgate's test fixtures and crafted bad files.

Built on Debian's python3-flatbuffers (the FlatBuffers Builder; no generated
code): tables are written field by field with the ids of LiteRT's
schema.fbs (google-ai-edge/LiteRT@f67457790c9c:tflite/converter/schema/
schema.fbs). Operator codes, tensor types and options union indexes are read
from the generated include/convgate/tflite_*.def, the same tables the C
reader is compiled from, so the two cannot disagree.

    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], "FLOAT32")
    w = g.tensor("w", [4], "FLOAT32", data=np.ones(4, np.float32))
    y = g.tensor("y", [1, 4], "FLOAT32")
    g.op("ADD", [x, w], [y], options=("AddOptions", {"fused_activation_function": 0}))
    g.inputs, g.outputs = [x], [y]
    open("add.tflite", "wb").write(m.serialize())

The writer checks nothing on purpose: tools/craft_bad_tflite.py uses it to
write what the reader must refuse.
"""

import os
import re
import struct

import flatbuffers
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEF_DIR = os.path.join(HERE, "..", "include", "convgate")


def _read_def(name):
    """[(a, b)] rows of an X(a, b) .def file."""
    rows = []
    with open(os.path.join(DEF_DIR, name)) as f:
        for line in f:
            m = re.match(r"X\((\w+), (\w+)\)", line)
            if m:
                rows.append((m.group(1), m.group(2)))
    return rows


BUILTIN = {name: int(value) for name, value in _read_def("tflite_builtin.def")}
TENSOR_TYPE = {name: int(value) for name, value in _read_def("tflite_type.def")}
OPTIONS_INDEX = {name: int(index) for index, name in _read_def("tflite_options.def")}

NUMPY_OF = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32, "UINT8": np.uint8,
            "INT64": np.int64, "BOOL": np.bool_, "INT16": np.int16, "INT8": np.int8,
            "FLOAT64": np.float64, "UINT32": np.uint32, "UINT16": np.uint16,
            "UINT64": np.uint64}

# Options tables: field name -> (field id, kind). Kinds: i8 (byte and
# byte enums), bool, i32, u32, f32, ints ([int]). Ids from schema.fbs.
OPTIONS_FIELDS = {
    "Conv2DOptions": {"padding": (0, "i8"), "stride_w": (1, "i32"), "stride_h": (2, "i32"),
                      "fused_activation_function": (3, "i8"), "dilation_w_factor": (4, "i32"),
                      "dilation_h_factor": (5, "i32"), "quantized_bias_type": (6, "i8")},
    "DepthwiseConv2DOptions": {"padding": (0, "i8"), "stride_w": (1, "i32"),
                               "stride_h": (2, "i32"), "depth_multiplier": (3, "i32"),
                               "fused_activation_function": (4, "i8"),
                               "dilation_w_factor": (5, "i32"),
                               "dilation_h_factor": (6, "i32")},
    "Pool2DOptions": {"padding": (0, "i8"), "stride_w": (1, "i32"), "stride_h": (2, "i32"),
                      "filter_width": (3, "i32"), "filter_height": (4, "i32"),
                      "fused_activation_function": (5, "i8")},
    "FullyConnectedOptions": {"fused_activation_function": (0, "i8"),
                              "weights_format": (1, "i8"), "keep_num_dims": (2, "bool"),
                              "asymmetric_quantize_inputs": (3, "bool")},
    "TransposeConvOptions": {"padding": (0, "i8"), "stride_w": (1, "i32"),
                             "stride_h": (2, "i32"), "fused_activation_function": (3, "i8")},
    "SoftmaxOptions": {"beta": (0, "f32")},
    "ConcatenationOptions": {"axis": (0, "i32"), "fused_activation_function": (1, "i8")},
    "AddOptions": {"fused_activation_function": (0, "i8"), "pot_scale_int16": (1, "bool")},
    "SubOptions": {"fused_activation_function": (0, "i8"), "pot_scale_int16": (1, "bool")},
    "MulOptions": {"fused_activation_function": (0, "i8")},
    "DivOptions": {"fused_activation_function": (0, "i8")},
    "ReshapeOptions": {"new_shape": (0, "ints")},
    "SqueezeOptions": {"squeeze_dims": (0, "ints")},
    "GatherOptions": {"axis": (0, "i32"), "batch_dims": (1, "i32")},
    "ReducerOptions": {"keep_dims": (0, "bool")},
    "StridedSliceOptions": {"begin_mask": (0, "i32"), "end_mask": (1, "i32"),
                            "ellipsis_mask": (2, "i32"), "new_axis_mask": (3, "i32"),
                            "shrink_axis_mask": (4, "i32"), "offset": (5, "bool")},
    "ResizeBilinearOptions": {"align_corners": (2, "bool"), "half_pixel_centers": (3, "bool")},
    "ResizeNearestNeighborOptions": {"align_corners": (0, "bool"),
                                     "half_pixel_centers": (1, "bool")},
    "BatchMatMulOptions": {"adj_x": (0, "bool"), "adj_y": (1, "bool"),
                           "asymmetric_quantize_inputs": (2, "bool")},
    "IfOptions": {"then_subgraph_index": (0, "i32"), "else_subgraph_index": (1, "i32")},
    "WhileOptions": {"cond_subgraph_index": (0, "i32"), "body_subgraph_index": (1, "i32")},
    "LeakyReluOptions": {"alpha": (0, "f32")},
    "PackOptions": {"values_count": (0, "i32"), "axis": (1, "i32")},
    "GeluOptions": {"approximate": (0, "bool")},
    "TransposeOptions": {}, "PadOptions": {}, "SliceOptions": {}, "GatherNdOptions": {},
    "ExpandDimsOptions": {}, "SquaredDifferenceOptions": {}, "QuantizeOptions": {},
    "DequantizeOptions": {}, "MaximumMinimumOptions": {}, "ExpOptions": {},
    "LogSoftmaxOptions": {}, "HardSwishOptions": {}, "AbsOptions": {}, "NegOptions": {},
    "SquareOptions": {}, "CosOptions": {}, "PowOptions": {}, "LessOptions": {},
    "RankOptions": {}, "ShapeOptions": {}, "TileOptions": {}, "PadV2Options": {},
}


class Quant:
    """QuantizationParameters: scale/zero_point per tensor or per axis."""

    def __init__(self, scale, zero_point, quantized_dimension=0, qmin=None, qmax=None):
        self.scale = np.atleast_1d(np.asarray(scale, np.float32))
        self.zero_point = np.atleast_1d(np.asarray(zero_point, np.int64))
        self.quantized_dimension = quantized_dimension
        self.min = qmin
        self.max = qmax


class Tensor:
    def __init__(self, name, shape, ttype, buffer=0, quant=None, shape_signature=None,
                 is_variable=False, has_rank=None):
        self.name = name
        self.shape = list(shape)
        self.type = ttype
        self.buffer = buffer
        self.quant = quant
        self.shape_signature = shape_signature
        self.is_variable = is_variable
        self.has_rank = has_rank


class Operator:
    def __init__(self, opcode_index, inputs, outputs, options=None, custom_options=None,
                 raw_options_type=None):
        self.opcode_index = opcode_index
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.options = options                    # (OptionsName, {field: value})
        self.custom_options = custom_options      # bytes
        self.raw_options_type = raw_options_type  # force builtin_options_type (bad files)


class Subgraph:
    def __init__(self, model, name):
        self.model = model
        self.name = name
        self.tensors = []
        self.operators = []
        self.inputs = []
        self.outputs = []

    def tensor(self, name, shape, ttype="FLOAT32", data=None, quant=None, shape_signature=None,
               buffer=None, is_variable=False):
        """Adds a tensor; `data` (numpy array or bytes) becomes a constant buffer."""
        if buffer is None:
            buffer = 0
            if data is not None:
                if isinstance(data, np.ndarray):
                    data = np.ascontiguousarray(data.astype(NUMPY_OF[ttype])).tobytes()
                buffer = self.model.buffer(data)
        self.tensors.append(Tensor(name, shape, ttype, buffer, quant, shape_signature,
                                   is_variable))
        return len(self.tensors) - 1

    def op(self, builtin, inputs, outputs, options=None, version=1, custom_code=None,
           custom_options=None):
        index = self.model.opcode(builtin, version, custom_code)
        self.operators.append(Operator(index, inputs, outputs, options, custom_options))
        return len(self.operators) - 1


class Model:
    def __init__(self, description="convgate test fixture (tools/tflite_writer.py)"):
        self.description = description
        self.version = 3
        self.opcodes = []          # (builtin code, version, custom code)
        self.buffers = [b""]       # buffer 0: the schema's empty sentinel
        self.offset_buffers = set()  # buffer indexes stored past the FlatBuffer
        self.subgraphs = []
        self.metadata = []         # (name, buffer index)
        self.signatures = []       # (key, subgraph, [(name, tensor)], [(name, tensor)])

    def subgraph(self, name):
        self.subgraphs.append(Subgraph(self, name))
        return self.subgraphs[-1]

    def opcode(self, builtin, version=1, custom_code=None):
        code = BUILTIN[builtin] if isinstance(builtin, str) else builtin
        key = (code, version, custom_code)
        if key not in self.opcodes:
            self.opcodes.append(key)
        return self.opcodes.index(key)

    def buffer(self, data, past_flatbuffer=False):
        self.buffers.append(bytes(data))
        if past_flatbuffer:
            self.offset_buffers.add(len(self.buffers) - 1)
        return len(self.buffers) - 1

    def signature(self, key, subgraph=0, inputs=None, outputs=None):
        """A SignatureDef; by default the subgraph's inputs/outputs by tensor name."""
        g = self.subgraphs[subgraph]
        ins = inputs if inputs is not None else [(g.tensors[t].name, t) for t in g.inputs]
        outs = outputs if outputs is not None else [(g.tensors[t].name, t) for t in g.outputs]
        self.signatures.append((key, subgraph, ins, outs))

    # ---- serialization ---------------------------------------------------

    def serialize(self):
        """The .tflite bytes. Buffers marked past_flatbuffer are appended
        after the FlatBuffer (16-byte aligned) and referenced by
        Buffer.offset/size, as TFLite's exporter does for models over 2 GiB."""
        if not self.offset_buffers:
            return _Writer(self, {}).build()
        # The offsets are fixed-width fields: build once with placeholders
        # to learn the FlatBuffer's size, then again with the real offsets.
        placeholder = {i: (1 << 40, len(self.buffers[i])) for i in self.offset_buffers}
        size = len(_Writer(self, placeholder).build())
        offsets, tail, pos = {}, b"", _align(size, 16)
        for i in sorted(self.offset_buffers):
            offsets[i] = (pos, len(self.buffers[i]))
            tail += b"\0" * (pos - size - len(tail)) + self.buffers[i]
            pos = _align(pos + len(self.buffers[i]), 16)
        head = _Writer(self, offsets).build()
        assert len(head) == size
        return head + tail


def _align(n, a):
    return (n + a - 1) // a * a


class _Writer:
    def __init__(self, model, offsets):
        self.m = model
        self.offsets = offsets
        self.b = flatbuffers.Builder(1024)
        self.b.ForceDefaults(True)  # write every field given, defaults included

    def string(self, s):
        return self.b.CreateString(s) if s is not None else None

    def ints(self, values, elem="i"):
        b = self.b
        size = struct.calcsize("<" + elem)
        b.StartVector(size, len(values), size)
        for v in reversed(list(values)):
            b.Prep(size, 0)
            b.head -= size
            struct.pack_into("<" + elem, b.Bytes, b.head, v)
        return b.EndVector(len(values))

    def bytes_vector(self, data, align=16):
        b = self.b
        b.StartVector(1, len(data), align)
        b.head -= len(data)
        b.Bytes[b.head:b.head + len(data)] = data
        return b.EndVector(len(data))

    def offsets_vector(self, items):
        b = self.b
        b.StartVector(4, len(items), 4)
        for off in reversed(items):
            b.PrependUOffsetTRelative(off)
        return b.EndVector(len(items))

    def table(self, fields):
        """fields: [(id, kind, value)] with kind i8/u8/bool/i32/u32/i64/u64/f32/off;
        every listed field is written, defaults included."""
        b = self.b
        b.StartObject(max([f[0] for f in fields], default=-1) + 1)
        widths = {"i64": 8, "u64": 8, "i32": 4, "u32": 4, "f32": 4, "off": 4, "i8": 1, "u8": 1,
                  "bool": 1}
        for fid, kind, value in sorted(fields, key=lambda f: -widths[f[1]]):
            if value is None:
                continue
            value = float(value) if kind == "f32" else bool(value) if kind == "bool" \
                else int(value)
            {"i8": b.PrependInt8Slot, "u8": b.PrependUint8Slot, "bool": b.PrependBoolSlot,
             "i32": b.PrependInt32Slot, "u32": b.PrependUint32Slot,
             "i64": b.PrependInt64Slot, "u64": b.PrependUint64Slot,
             "f32": b.PrependFloat32Slot,
             "off": b.PrependUOffsetTRelativeSlot}[kind](fid, value, value)
        return b.EndObject()

    def options(self, name, values):
        spec = OPTIONS_FIELDS[name]
        prepared = []
        for field, value in values.items():
            fid, kind = spec[field]
            if kind == "ints":
                prepared.append((fid, "off", self.ints(value)))
            else:
                prepared.append((fid, kind, value))
        return self.table(prepared)

    def quant(self, q):
        fields = []
        if q.min is not None:
            fields.append((0, "off", self.ints(np.atleast_1d(q.min), "f")))
        if q.max is not None:
            fields.append((1, "off", self.ints(np.atleast_1d(q.max), "f")))
        fields.append((2, "off", self.ints(q.scale, "f")))
        fields.append((3, "off", self.ints(q.zero_point, "q")))
        fields.append((6, "i32", q.quantized_dimension))
        return self.table(fields)

    def tensor(self, t):
        fields = [(0, "off", self.ints(t.shape)), (1, "i8", TENSOR_TYPE[t.type]),
                  (2, "u32", t.buffer), (3, "off", self.string(t.name))]
        if t.quant is not None:
            fields.append((4, "off", self.quant(t.quant)))
        if t.is_variable:
            fields.append((5, "bool", True))
        if t.shape_signature is not None:
            fields.append((7, "off", self.ints(t.shape_signature)))
        if t.has_rank is not None:
            fields.append((8, "bool", t.has_rank))
        return self.table(fields)

    def operator(self, op):
        fields = [(0, "u32", op.opcode_index), (1, "off", self.ints(op.inputs)),
                  (2, "off", self.ints(op.outputs))]
        if op.options is not None:
            name, values = op.options
            fields.append((3, "u8", op.raw_options_type or OPTIONS_INDEX[name]))
            fields.append((4, "off", self.options(name, values)))
        if op.custom_options is not None:
            fields.append((5, "off", self.bytes_vector(op.custom_options, 4)))
        return self.table(fields)

    def subgraph(self, g):
        tensors = [self.tensor(t) for t in g.tensors]
        ops = [self.operator(op) for op in g.operators]
        return self.table([(0, "off", self.offsets_vector(tensors)),
                           (1, "off", self.ints(g.inputs)), (2, "off", self.ints(g.outputs)),
                           (3, "off", self.offsets_vector(ops)),
                           (4, "off", self.string(g.name))])

    def buffer(self, i, data):
        if i in self.offsets:
            offset, size = self.offsets[i]
            return self.table([(1, "u64", offset), (2, "u64", size)])
        if not data:
            return self.table([])
        return self.table([(0, "off", self.bytes_vector(data))])

    def opcode(self, code, version, custom):
        return self.table([(0, "i8", min(code, 127)), (1, "off", self.string(custom)),
                           (2, "i32", version), (3, "i32", code)])

    def tensor_maps(self, maps):
        return self.offsets_vector([self.table([(0, "off", self.string(name)),
                                                (1, "u32", index)]) for name, index in maps])

    def build(self):
        m = self.m
        buffers = [self.buffer(i, data) for i, data in enumerate(m.buffers)]
        subgraphs = [self.subgraph(g) for g in m.subgraphs]
        opcodes = [self.opcode(*oc) for oc in m.opcodes]
        metadata = [self.table([(0, "off", self.string(name)), (1, "u32", buf)])
                    for name, buf in m.metadata]
        sigs = []
        for key, sub, ins, outs in m.signatures:
            i, o = self.tensor_maps(ins), self.tensor_maps(outs)
            sigs.append(self.table([(0, "off", i), (1, "off", o), (2, "off", self.string(key)),
                                    (4, "u32", sub)]))
        fields = [(0, "u32", m.version), (1, "off", self.offsets_vector(opcodes)),
                  (2, "off", self.offsets_vector(subgraphs)),
                  (3, "off", self.string(m.description)),
                  (4, "off", self.offsets_vector(buffers))]
        if metadata:
            fields.append((6, "off", self.offsets_vector(metadata)))
        if sigs:
            fields.append((7, "off", self.offsets_vector(sigs)))
        root = self.table(fields)
        self.b.Finish(root, file_identifier=b"TFL3")
        return bytes(self.b.Output())
