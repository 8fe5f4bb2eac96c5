#!/usr/bin/python3
"""Craft the malformed .tflite files convgate's reader and checker must
refuse, one small file per defect, on an otherwise valid model written by
tools/tflite_writer.py, plus valid controls.

Writes tests/data/bad/tflite/ (or --out DIR):
  manifest.tsv   file, item, command, expect_exit, regex, description, with
                 files relative to tests/data/bad (read by
                 tests/scripts/bad_inputs.sh beside the ONNX manifest)
  <case>.tflite  the cases

Structural defects are written with the writer (an index out of range is
just a number); byte-level ones (offsets, vtables, lengths, terminators)
are patched into a valid file at positions found by walking it with
python3-flatbuffers' Table, so each patch hits the field it names. The
item column is the section-5 item of shared/reference/reliability.md the
case belongs to. tools/craft_bad_models.py calls this script after it
rewrites tests/data/bad, so the two sets stay together.

    /usr/bin/python3 tools/craft_bad_tflite.py [--out tests/data/bad/tflite]
"""

import argparse
import os
import shutil
import struct
import sys

import numpy as np
from flatbuffers.table import Table

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_writer import Model, Quant  # noqa: E402


def add_model(**kw):
    """y = ADD(x, w): x [1, 4] input, w [4] float constant."""
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], "FLOAT32")
    w = g.tensor("w", [4], "FLOAT32", data=kw.get("wdata", np.arange(4, dtype=np.float32)))
    y = g.tensor("y", [1, 4], "FLOAT32")
    g.op("ADD", [x, w], [y], options=("AddOptions", {"fused_activation_function": 0}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, g


def if_model(depth=1, recurse=False):
    """IF nested `depth` deep: subgraph k's IF calls k + 1 (then) and the
    last subgraph (else); with recurse, the deepest calls back into 1."""
    m = Model()
    n = depth + 2
    for k in range(n):
        g = m.subgraph("s%d" % k)
        x = g.tensor("x%d" % k, [1], "FLOAT32")
        y = g.tensor("y%d" % k, [1], "FLOAT32")
        g.inputs, g.outputs = [x], [y]
        if k <= depth:
            c = g.tensor("c%d" % k, [], "BOOL", data=np.array(True))
            then = k + 1 if k < depth else (1 if recurse else n - 1)
            g.op("IF", [c, x], [y], options=("IfOptions", {"then_subgraph_index": then,
                                                           "else_subgraph_index": n - 1}))
        else:
            g.op("ABS", [x], [y])
    return m


# ---- walking a written file ------------------------------------------------


def u32(b, p):
    return struct.unpack_from("<I", b, p)[0]


class Walk:
    """Positions of fields in a FlatBuffer (absolute offsets)."""

    def __init__(self, data):
        self.b = bytearray(data)

    def table(self, pos):
        return Table(self.b, pos)

    def root(self):
        return self.table(u32(self.b, 0))

    def field(self, t, fid):
        o = t.Offset(4 + 2 * fid)
        if not o:
            raise KeyError("field %d absent" % fid)
        return t.Pos + o

    def deref(self, pos):
        return pos + u32(self.b, pos)

    def vector(self, t, fid):
        """(position of the length, count)."""
        v = self.deref(self.field(t, fid))
        return v, u32(self.b, v)

    def vec_table(self, t, fid, i):
        v, _ = self.vector(t, fid)
        return self.table(self.deref(v + 4 + 4 * i))

    def put32(self, pos, value):
        struct.pack_into("<I", self.b, pos, value & 0xffffffff)

    # Model fields: 2 subgraphs; SubGraph: 0 tensors, 3 operators;
    # Tensor: 0 shape, 3 name; Operator: 3 builtin_options_type.
    def subgraph(self, i=0):
        return self.vec_table(self.root(), 2, i)

    def tensor(self, i, sub=0):
        return self.vec_table(self.subgraph(sub), 0, i)

    def operator(self, i, sub=0):
        return self.vec_table(self.subgraph(sub), 3, i)


# ---- the cases -------------------------------------------------------------


class Crafter:
    def __init__(self, out):
        self.out = out
        self.rows = []

    def add(self, name, data, item, command, expect, regex, description):
        path = os.path.join(self.out, name + ".tflite")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(bytes(data))
        self.rows.append(("tflite/%s.tflite" % name, str(item), command, str(expect), regex,
                          description))

    def finish(self):
        with open(os.path.join(self.out, "manifest.tsv"), "w") as f:
            f.write("# Crafted bad .tflite files, written by tools/craft_bad_tflite.py: change "
                    "cases there and rerun it.\n# Columns as in ../manifest.tsv; files are "
                    "relative to tests/data/bad.\n")
            f.write("file\titem\tcommand\texpect_exit\tregex\tdescription\n")
            for row in self.rows:
                f.write("\t".join(row) + "\n")


def controls(c):
    m, _ = add_model()
    c.add("good_add", m.serialize(), "ok", "check", 0, "-",
          "valid control: y = ADD(x, w), a SignatureDef")
    c.add("good_if_nest_30", if_model(30).serialize(), "ok", "check", 0, "-",
          "valid control: IF nested 30 deep (under the cap of 32)")
    m = Model()
    g = m.subgraph("main")
    w = g.tensor("w", [4], "FLOAT32", data=np.arange(4, dtype=np.float32))
    g.inputs, g.outputs = [], [w]
    m.signature("serving_default")
    c.add("good_no_operators", m.serialize(), "ok", "run", 0, "output 'w'",
          "valid control: no operators, the output a constant (the lowering once passed "
          "qsort a null array of origins: UBSan)")


def framing(c):
    m, _ = add_model()
    good = m.serialize()
    c.add("truncated_half", good[:len(good) // 2], 13, "inspect", 2,
          "past the end|remain|outside",
          "a valid model cut in half: offsets point past the end")
    c.add("header_only", good[:8], 13, "inspect", 2, "past the end",
          "only the root offset and the TFL3 identifier")

    w = Walk(good)
    w.put32(0, len(good) + 100)
    c.add("root_offset_out_of_range", w.b, 8, "inspect", 2, "past the end",
          "the root table offset points 100 bytes past the end of the file")

    w = Walk(good)
    root = w.root()
    sub_field = w.field(root, 2)
    w.put32(sub_field, 0x7ffffff0 - sub_field)
    c.add("subgraphs_offset_out_of_range", w.b, 8, "inspect", 2, "past the end",
          "Model.subgraphs points almost 2 GiB past the end of the file")

    w = Walk(good)
    w.put32(w.field(w.root(), 2), 0)
    c.add("offset_points_to_itself", w.b, 8, "inspect", 2, "point at itself",
          "Model.subgraphs is a uoffset of 0: it would point at itself (a one-step loop)")

    w = Walk(good)
    w.put32(0, u32(w.b, 0) + 2)
    c.add("root_misaligned", w.b, 13, "inspect", 2, "aligned",
          "the root table starts at an offset that is not 4-byte aligned")


def vtables(c):
    m, _ = add_model()
    good = m.serialize()
    w = Walk(good)
    w.put32(w.root().Pos, 0)
    c.add("vtable_self", w.b, 13, "inspect", 2, "own vtable",
          "cyclic vtable: the root table's soffset is 0, so it is its own vtable (size 0)")

    w = Walk(good)
    t = w.tensor(1)
    w.put32(t.Pos, 0x80000000)
    c.add("vtable_out_of_range", w.b, 8, "inspect", 2, "vtable",
          "tensor 1's soffset puts its vtable 2 GiB away, outside the file")

    w = Walk(good)
    t = w.tensor(0)
    vt = t.Pos - struct.unpack_from("<i", w.b, t.Pos)[0]
    struct.pack_into("<H", w.b, vt + 4, 0x7ff0)  # field 0 (shape) far past the table
    c.add("field_outside_table", w.b, 13, "inspect", 2, "outside the table",
          "tensor 0's vtable puts its shape field at byte 32752 of a small table "
          "(overlapping whatever follows)")


def vectors(c):
    m, _ = add_model()
    good = m.serialize()
    w = Walk(good)
    v, _ = w.vector(w.tensor(0), 0)
    w.put32(v, 0x3fffffff)
    c.add("huge_shape_vector", w.b, 23, "inspect", 2, "claims [0-9]+ elements",
          "tensor 0's shape claims 2^30 - 1 dims (4 GiB) in a file of under 1 KiB")

    w = Walk(good)
    v, _ = w.vector(w.subgraph(), 0)
    w.put32(v, 0x20000000)
    c.add("huge_tensor_vector", w.b, 23, "inspect", 2, "claims [0-9]+ elements",
          "the tensors vector claims 2^29 entries (2 GiB of offsets)")

    w = Walk(good)
    name = w.deref(w.field(w.tensor(2), 3))
    length = u32(w.b, name)
    w.b[name + 4 + length] = ord("!")  # overwrite the NUL terminator
    c.add("string_unterminated", w.b, 13, "inspect", 2, "NUL terminator",
          "tensor 2's name has its NUL terminator overwritten")

    # Shared-table expansion: the subgraph's tensors vector is replaced by
    # 1000 offsets to one tensor whose shape has 2048 dims. uoffsets point
    # forward only, so the new vector goes at the end, followed by a copy of
    # the whole file (offsets inside it are relative and stay valid), whose
    # tensor every entry names.
    m = Model()
    g = m.subgraph("main")
    g.tensor("x", [1] * 2048, "FLOAT32")
    data = m.serialize()
    w = Walk(data)
    target = w.deref(w.vector(w.subgraph(), 0)[0] + 4)
    n = 1000
    w.b += b"\0" * ((-len(w.b)) % 16)
    newv = len(w.b)
    w.b += struct.pack("<I", n) + b"\0" * (4 * n)
    w.b += b"\0" * ((-len(w.b)) % 16)
    copy_target = len(w.b) + target
    w.b += data
    for i in range(n):
        elem = newv + 4 + 4 * i
        w.put32(elem, copy_target - elem)
    field = w.field(w.subgraph(), 0)
    w.put32(field, newv - field)
    c.add("shared_tensor_expansion", w.b, 31, "inspect", 2, "shared to expand",
          "1000 tensors share one table whose shape has 2048 dims: a %d KiB file that would "
          "decode to 8 MiB (legal sharing, refused by the decode budget)" % (len(w.b) // 1024))


def indexes(c):
    m, g = add_model()
    g.operators[0].opcode_index = 7
    c.add("opcode_index_out_of_range", m.serialize(), 28, "inspect", 2, "opcode_index is 7",
          "operator 0's opcode_index is 7; the model has one operator code")

    m, g = add_model()
    g.operators[0].inputs[1] = 99
    c.add("tensor_index_out_of_range", m.serialize(), 28, "inspect", 2,
          "tensor 99, but the subgraph has 3 tensors",
          "operator 0's input 1 is tensor 99 of 3")

    m, g = add_model()
    g.operators[0].outputs[0] = -5
    c.add("tensor_index_negative", m.serialize(), 28, "inspect", 2, "tensor -5",
          "operator 0's output is tensor -5 (only -1, an omitted optional tensor, is allowed)")

    m, g = add_model()
    g.outputs = [10]
    m.signatures = []
    c.add("subgraph_output_out_of_range", m.serialize(), 28, "inspect", 2, "tensor 10",
          "the subgraph's output is tensor 10 of 3")

    m, g = add_model()
    g.tensors[1].buffer = 42
    c.add("buffer_index_out_of_range", m.serialize(), 28, "inspect", 2,
          "buffer 42, but the model has 2 buffers", "tensor w names buffer 42 of 2")

    m, g = add_model()
    m.signatures = [("serving_default", 0, [("x", 50)], [("y", 2)])]
    c.add("signature_tensor_out_of_range", m.serialize(), 28, "inspect", 2, "tensor 50",
          "the signature's input 'x' is tensor 50 of 3")

    m = if_model(1)
    m.subgraphs[0].operators[0].options[1]["then_subgraph_index"] = 9
    c.add("if_subgraph_out_of_range", m.serialize(), 28, "inspect", 2, "names subgraph 9",
          "IF names subgraph 9 as its then branch; the model has 3")


def unions(c):
    m, g = add_model()
    g.operators[0].raw_options_type = 200
    c.add("options_type_bad", m.serialize(), 22, "inspect", 2,
          "not a member of union BuiltinOptions",
          "builtin_options_type is 200; union BuiltinOptions has 126 members")

    m, g = add_model()
    g.tensors[0].quant = Quant(0.5, 0)
    data = m.serialize()
    w = Walk(data)
    q = w.table(w.deref(w.field(w.tensor(0), 4)))
    # details_type (id 4) is not written by the writer: point the vtable's
    # quantized_dimension slot (id 6) and the type slot at the int field.
    vt = q.Pos - struct.unpack_from("<i", w.b, q.Pos)[0]
    qd_slot = struct.unpack_from("<H", w.b, vt + 4 + 2 * 6)[0]
    struct.pack_into("<H", w.b, vt + 4 + 2 * 4, qd_slot)
    struct.pack_into("<i", w.b, q.Pos + qd_slot, 9)
    c.add("quantization_details_type_bad", w.b, 22, "inspect", 2, "QuantizationDetails",
          "tensor x's QuantizationParameters.details_type is 9; the union has 3 members")


def nesting(c):
    c.add("if_nest_40", if_model(40).serialize(), 15, "inspect", 2, "deeper than 32",
          "IF nested 40 deep (subgraph k calls k + 1)")
    c.add("if_recursion", if_model(3, recurse=True).serialize(), 15, "inspect", 2, "cycle",
          "subgraph 3's IF calls subgraph 1 again: 1 -> 2 -> 3 -> 1 would recurse forever")

    m = Model()
    for k in range(2):
        g = m.subgraph("w%d" % k)
        x = g.tensor("x", [1], "FLOAT32")
        y = g.tensor("y", [1], "FLOAT32")
        g.op("WHILE", [x], [y], options=("WhileOptions", {"cond_subgraph_index": 1 - k,
                                                          "body_subgraph_index": 1 - k}))
        g.inputs, g.outputs = [x], [y]
    c.add("while_mutual_recursion", m.serialize(), 15, "inspect", 2, "cycle",
          "subgraph 0's WHILE runs subgraph 1, whose WHILE runs subgraph 0")


def checks(c):
    """Loadable files the checker must fail (exit 1)."""
    m, _ = add_model(wdata=np.arange(3, dtype=np.float32))
    c.add("buffer_size_short", m.serialize(), 24, "check", 1,
          "buffer 1 holds 12 bytes, but shape \\[4\\] of float32 needs 16",
          "w is [4] float32 but its buffer holds 3 floats")

    m, g = add_model()
    g.tensors[1].shape = [4, 1000000000]
    c.add("buffer_size_huge_shape", m.serialize(), 24, "check", 1,
          "holds 16 bytes, but shape \\[4, 1000000000\\]",
          "w claims 4e9 floats (16 GB) over a 16-byte buffer")

    m, g = add_model()
    t = g.tensor("t", [1, 4], "FLOAT32")
    g.operators[0].inputs[1] = t
    g.op("RELU", [0], [t])
    c.add("used_before_produced", m.serialize(), 18, "check", 1,
          "read before operator #1 writes it",
          "ADD reads t, which the RELU stored after it writes")

    m, g = add_model()
    t = g.tensor("orphan", [1, 4], "FLOAT32")
    g.outputs = [2, t]
    m.signatures = []
    c.add("output_never_produced", m.serialize(), 18, "check", 1,
          "subgraph output 1 is never produced", "the second subgraph output has no producer")

    m, _ = add_model()
    m.version = 2
    c.add("schema_version_2", m.serialize(), 17, "check", 1, "schema version 2",
          "Model.version 2 (TFLite reads 3 only)")

    m, g = add_model()
    g.tensors[0].shape = [-1, 4]
    c.add("negative_static_dim", m.serialize(), 23, "check", 1, "dim 0 = -1",
          "the static shape of x has -1 (unknown dims belong in shape_signature)")

    m, g = add_model()
    g.tensors[2].type = "INT8"
    g.tensors[2].quant = Quant([0.1, 0.2], [0])
    c.add("quantization_counts", m.serialize(), 22, "check", 1, "2 scales but 1 zero points",
          "y has two scales and one zero point")

    m, g = add_model()
    m.opcodes[0] = (250, 1, None)
    c.add("unknown_builtin", m.serialize(), 20, "check", 1, "builtin code 250",
          "operator code 250 is not in BuiltinOperator")

    m = if_model(1)
    m.subgraphs[2].inputs = []
    c.add("if_branch_arity", m.serialize(), 32, "check", 1,
          "else subgraph 2 's2' takes 0 inputs",
          "the IF's else branch takes no input where the IF passes one")


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "bad", "tflite"))
    args = ap.parse_args(argv)
    out = os.path.normpath(args.out)
    if os.path.isdir(out):
        if os.listdir(out) and not os.path.exists(os.path.join(out, "manifest.tsv")):
            sys.exit("craft_bad_tflite: %s is not empty and has no manifest.tsv; refusing to "
                     "replace it" % out)
        shutil.rmtree(out)
    os.makedirs(out)
    c = Crafter(out)
    controls(c)
    framing(c)
    vtables(c)
    vectors(c)
    indexes(c)
    unions(c)
    nesting(c)
    checks(c)
    c.finish()
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print("craft_bad_tflite: %d cases, %d bytes in %s" % (len(c.rows), total, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
