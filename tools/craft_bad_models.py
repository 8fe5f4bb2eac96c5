#!/usr/bin/python3
"""Craft the hostile and malformed ONNX files convgate's loader and checker
must refuse, one small file per case of shared/reference/reliability.md
section 5 (items 1-25 and 32), plus a few valid controls.

Writes tests/data/bad/ (or --out DIR):
  manifest.tsv  file, item, command, expect_exit, regex, description
                (read by tests/scripts/bad_inputs.sh)
  links.tsv     kind, link, target: symlinks and hard links the test
                recreates in its scratch copy (git keeps symlinks, but a
                checkout with core.symlinks=false does not, and git cannot
                store hard links at all)
  *.onnx and external-data files, in subfolders where a case needs them.

Built with python3-onnx's helpers where they allow the defect, and with a
small raw protobuf encoder (below) where they do not: deep nesting,
truncation, lengths that claim more bytes than remain.

Design rules for the cases:
  - every external-data target exists and has the right size, so a loader
    that forgets a path rule loads the file (exit 0) and the test fails,
    instead of failing by luck on "no such file";
  - each file carries one defect, on an otherwise valid model, so the
    expected message can name it.

    /usr/bin/python3 tools/craft_bad_models.py [--out tests/data/bad]
"""

import argparse
import os
import shutil
import struct
import sys

import onnx
from onnx import TensorProto, helper

OPSET = 17
IR = 8

# ---------------------------------------------------------------------------
# Raw protobuf encoding: just enough to write what the helpers refuse.


def varint(n):
    """Base-128 varint of a non-negative n (n may exceed 64 bits on purpose)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def ld(field, payload):
    """A length-delimited field: key, length, bytes."""
    return key(field, 2) + varint(len(payload)) + payload


def vi(field, value):
    """A varint field; negative values as 10-byte two's complement (int64)."""
    if value < 0:
        value &= (1 << 64) - 1
    return key(field, 0) + varint(value)


# Field numbers from onnx.proto (only the ones used raw below).
MODEL_IR_VERSION, MODEL_GRAPH = 1, 7
GRAPH_INPUT = 11
VALUEINFO_NAME, VALUEINFO_TYPE = 1, 2
TYPE_TENSOR, TYPE_SEQUENCE = 1, 4
TENSORTYPE_ELEM = 1
SEQUENCE_ELEM = 1

# ---------------------------------------------------------------------------
# Building blocks: a minimal valid model that each case perturbs.

FOUR = [1.0, 2.0, 3.0, 4.0]
FOUR_BYTES = struct.pack("<4f", *FOUR)


def vinfo(name, dims=(4,), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(dims))


def make(graph, ir=IR, opsets=(("", OPSET),), functions=()):
    m = helper.make_model(graph, producer_name="convgate-craft",
                          opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir
    if functions:
        m.functions.extend(functions)
    return m


def relu_model():
    """X[4] -> Relu -> Y[4]: the valid baseline."""
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                          "relu", [vinfo("X")], [vinfo("Y")])
    return make(g)


def add_model(init, extra_nodes=(), graph_name="add"):
    """Y = X + W with W an initializer (the tensor under test)."""
    g = helper.make_graph(list(extra_nodes) + [helper.make_node("Add", ["X", init.name], ["Y"], name="add")],
                          graph_name, [vinfo("X")], [vinfo("Y")], initializer=[init])
    return make(g)


def ext_tensor(location, name="W", dims=(4,), **keys):
    """A float tensor whose data lives in an external file.

    keys become extra external_data entries in the given order; offset and
    length are strings, as in the format, so that bad ones can be written.
    """
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)] + list(keys.items())
    for k, v in entries:
        e = t.external_data.add()
        e.key = k
        e.value = str(v)
    return t


def ext_model(location, **keys):
    return add_model(ext_tensor(location, **keys))


def raw_tensor(name="W", dims=(4,), raw=FOUR_BYTES, dtype=TensorProto.FLOAT):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


# ---------------------------------------------------------------------------
# The output: files plus manifest rows.


class Crafter:
    def __init__(self, out):
        self.out = out
        self.rows = []
        self.links = []

    def path(self, rel):
        p = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def write(self, rel, data):
        if isinstance(data, onnx.ModelProto):
            data = data.SerializeToString()
        with open(self.path(rel), "wb") as f:
            f.write(data)

    def case(self, rel, item, command, expect_exit, regex, description, data=None):
        assert "\t" not in regex and "\t" not in description
        if data is not None:
            self.write(rel, data)
        self.rows.append((rel, str(item), command, str(expect_exit), regex, description))

    def symlink(self, link, target):
        """Symlink made now (committed) and again by the test (links.tsv)."""
        p = self.path(link)
        if os.path.lexists(p):
            os.remove(p)
        os.symlink(target, p)
        self.links.append(("symlink", link, target))

    def hardlink(self, link, target):
        """Hard link: only the test can make it (git stores none)."""
        self.links.append(("hardlink", link, target))

    def finish(self):
        with open(os.path.join(self.out, "manifest.tsv"), "w") as f:
            f.write("# Crafted bad inputs, written by tools/craft_bad_models.py: change cases there and rerun it.\n"
                    "# file: path under tests/data/bad ('stdin:PATH' = fed on standard input as '-';\n"
                    "#   'gen:NAME' = generated by bad_inputs.sh; '-' = no file); item: reliability.md\n"
                    "#   section 5 item ('ok' = valid control); command: convgate subcommand or 'skip';\n"
                    "# expect_exit: 0 ok, 1 checker found problems, 2 could not load;\n"
                    "# regex: POSIX ERE ('-': none) matched case-insensitively against the output, with the file\n"
                    "#   path removed first.\n")
            f.write("file\titem\tcommand\texpect_exit\tregex\tdescription\n")
            for r in self.rows:
                f.write("\t".join(r) + "\n")
        with open(os.path.join(self.out, "links.tsv"), "w") as f:
            f.write("# Links bad_inputs.sh (re)creates in its scratch copy: kind, link, target.\n"
                    "# symlink targets are relative to the link's folder; hardlink targets to tests/data/bad.\n")
            for r in self.links:
                f.write("\t".join(r) + "\n")


# ---------------------------------------------------------------------------
# Cases.

# Where a case is caught: the loader (inspect exits 2) parses, bounds and resolves
# external data eagerly but reads tensor contents lazily, so defects inside a
# tensor (dims, data sizes) and the ONNX rules are the checker's (check exits 1).
LOAD, CHECK = ("inspect", 2), ("check", 1)


def controls(c):
    c.case("good/relu.onnx", "ok", "check", 0, "-", "valid control: X -> Relu -> Y",
           relu_model())
    c.write("good/ext_valid/weights.bin", FOUR_BYTES)
    c.case("good/ext_valid/model.onnx", "ok", "check", 0, "-",
           "valid control: initializer W in weights.bin beside the model (offset 0, length 16)",
           ext_model("weights.bin", offset=0, length=16))
    c.case("good/if_nest_30.onnx", "ok", "check", 0, "-",
           "valid control: If nested 30 deep (under ORT's cap of 32)", if_nest_model(30))


def external_paths(c):
    # The shared target: 16 bytes, a float[4], reached by the traversals.
    c.write("secret.bin", FOUR_BYTES)
    c.case("ext_abs/posix.onnx", 1, *LOAD, "absolute",
           "external location '/etc/passwd' (absolute; the file exists and is long enough)",
           ext_model("/etc/passwd", offset=0, length=16))
    c.case("ext_abs/drive_letter.onnx", 1, *LOAD, "absolute|drive",
           "external location 'C:\\\\weights.bin' (Windows drive letter)",
           ext_model("C:\\weights.bin"))
    c.case("ext_abs/drive_letter_slash.onnx", 1, *LOAD, "absolute|drive",
           "external location 'c:/weights.bin' (drive letter, forward slash)",
           ext_model("c:/weights.bin"))
    c.case("ext_abs/unc.onnx", 1, *LOAD, "absolute|UNC|drive|backslash",
           "external location '\\\\\\\\server\\\\share\\\\w.bin' (UNC path)",
           ext_model("\\\\server\\share\\w.bin"))

    c.write("ext_dotdot/sub/weights.bin", FOUR_BYTES)  # so that sub/ exists
    c.case("ext_dotdot/leading.onnx", 2, *LOAD, r"\.\.|outside|escape|travers",
           "external location '../secret.bin' (leading .., target exists) [CVE-2022-25882]",
           ext_model("../secret.bin"))
    c.case("ext_dotdot/middle.onnx", 2, *LOAD, r"\.\.|outside|escape|travers",
           "external location 'sub/../../secret.bin' (.. after a real folder, target exists) [CVE-2024-27318]",
           ext_model("sub/../../secret.bin"))
    c.case("ext_dotdot/dot_slash.onnx", 2, *LOAD, r"\.\.|outside|escape|travers",
           "external location './../secret.bin'", ext_model("./../secret.bin"))
    c.case("ext_dotdot/backslash.onnx", 2, *LOAD, r"\.\.|outside|escape|travers",
           "external location 'sub\\\\..\\\\..\\\\secret.bin' (Windows separators)",
           ext_model("sub\\..\\..\\secret.bin"))
    c.case("ext_dotdot/inner_harmless.onnx", 2, *LOAD, r"\.\.|outside|escape|travers",
           "external location 'sub/../weights.bin': stays inside, but '..' anywhere is refused",
           ext_model("sub/../weights.bin"))

    c.symlink("ext_symlink_file/weights.bin", "../secret.bin")
    c.case("ext_symlink_file/model.onnx", 3, *LOAD, "symlink|symbolic link",
           "external location 'weights.bin' is a symlink (to ../secret.bin) [CVE-2026-27489]",
           ext_model("weights.bin"))
    c.write("shared_data/weights.bin", FOUR_BYTES)
    c.symlink("ext_symlink_dir/data", "../shared_data")
    c.case("ext_symlink_dir/model.onnx", 4, *LOAD, "symlink|symbolic link",
           "external location 'data/weights.bin' where data/ is a symlink to ../shared_data [CVE-2026-34447]",
           ext_model("data/weights.bin"))
    c.hardlink("ext_hardlink/weights.bin", "secret.bin")
    c.case("ext_hardlink/model.onnx", 5, *LOAD, "hard link|link count|nlink",
           "external location 'weights.bin' is a hard link (link count 2, made at test time) [CVE-2026-34446]",
           ext_model("weights.bin"))
    c.case("-", 6, "skip", 2, "-",
           "file swapped between check and open: not a static file; covered in the loader "
           "(src/load/extdata.c) by opening each path component with openat(O_NOFOLLOW) relative to "
           "the already-open parent and making every check (regular file, link count) on the opened "
           "descriptor, so there is no window between check and use [GHSA-q56x-g2fj-4rj6]")


def external_keys(c):
    c.write("ext_keys/weights.bin", FOUR_BYTES)
    c.case("ext_keys/unknown_key.onnx", 7, *LOAD, "unknown|key",
           "external_data has key 'mode' besides location/offset/length [CVE-2026-34445]",
           ext_model("weights.bin", offset=0, length=16, mode="0777"))
    c.case("ext_keys/negative_length.onnx", 7, *LOAD, "negative|length",
           "external_data length '-1' (read-everything trick)",
           ext_model("weights.bin", offset=0, length=-1))
    c.case("ext_keys/negative_offset.onnx", 7, *LOAD, "negative|offset",
           "external_data offset '-4'", ext_model("weights.bin", offset=-4, length=16))
    c.case("ext_keys/nonnumeric_offset.onnx", 7, *LOAD, "offset|numeric|integer|number",
           "external_data offset '0x0' (not a decimal integer)",
           ext_model("weights.bin", offset="0x0", length=16))
    c.case("ext_keys/trailing_garbage_length.onnx", 7, *LOAD, "length|numeric|integer|number",
           "external_data length '16abc'", ext_model("weights.bin", offset=0, length="16abc"))
    c.case("ext_keys/empty_length.onnx", 7, *LOAD, "length|numeric|integer|number|empty",
           "external_data length ''", ext_model("weights.bin", offset=0, length=""))
    c.case("ext_keys/duplicate_key.onnx", 7, *LOAD, "duplicate|twice|more than once|location",
           "external_data with two 'location' keys (weights.bin, then ../secret.bin)",
           add_model(_dup_location_tensor()))
    c.case("ext_keys/no_location.onnx", 7, *LOAD, "location",
           "data_location EXTERNAL without a location key", add_model(_no_location_tensor()))


def _dup_location_tensor():
    t = ext_tensor("weights.bin", offset=0, length=16)
    e = t.external_data.add()
    e.key = "location"
    e.value = "../secret.bin"
    return t


def _no_location_tensor():
    t = ext_tensor("weights.bin", offset=0, length=16)
    del t.external_data[0]
    return t


def external_ranges(c):
    c.write("ext_range/weights.bin", FOUR_BYTES)
    c.case("ext_range/past_end.onnx", 8, *LOAD, "past (the )?end|out of range|beyond|exceeds|larger than",
           "offset 8 + length 16 > file size 16", ext_model("weights.bin", offset=8, length=16))
    c.case("ext_range/offset_past_end.onnx", 8, *LOAD, "past (the )?end|out of range|beyond|exceeds|larger than",
           "offset 64 > file size 16 (length 16)", ext_model("weights.bin", offset=64, length=16))
    c.case("ext_range/int64_wrap.onnx", 8, *LOAD, "overflow|past (the )?end|out of range|beyond|exceeds|too large",
           "offset 9223372036854775800 + length 16 overflows int64",
           ext_model("weights.bin", offset=9223372036854775800, length=16))
    c.case("ext_range/uint64_wrap.onnx", 8, *LOAD,
           "overflow|past (the )?end|out of range|beyond|exceeds|too large|not a non-negative integer",
           "offset 2^64-8 + length 16 wraps to 8 in uint64 (passes a naive check) [openvino#34070]",
           ext_model("weights.bin", offset=18446744073709551608, length=16))
    c.case("ext_range/huge_length.onnx", 8, *LOAD, "past (the )?end|out of range|beyond|exceeds|too large|length",
           "length 2^62 (a huge allocation if trusted)",
           ext_model("weights.bin", offset=0, length=4611686018427387904))


def external_sizes(c):
    c.write("ext_size/weights16.bin", FOUR_BYTES)
    c.write("ext_size/weights20.bin", FOUR_BYTES + b"\0\0\0\0")
    c.case("ext_size/length_short.onnx", 9, *LOAD, "length|size|bytes|expected",
           "float[4] needs 16 bytes, external length says 12",
           ext_model("weights16.bin", offset=0, length=12))
    c.case("ext_size/length_not_multiple.onnx", 9, *LOAD, "length|size|bytes|expected|multiple",
           "float[4] with external length 15 (not a multiple of 4)",
           ext_model("weights16.bin", offset=0, length=15))
    c.case("ext_size/implicit_length.onnx", 9, *LOAD, "length|size|bytes|expected",
           "no length key: the rest of the file is 20 bytes, float[4] needs 16",
           ext_model("weights20.bin"))


def external_other_tensors(c):
    # Constant's value tensor: the path rules must reach attribute tensors too.
    value = ext_tensor("../secret.bin", name="const_value")
    const = helper.make_node("Constant", [], ["C"], name="const", value=value)
    g = helper.make_graph([const, helper.make_node("Add", ["X", "C"], ["Y"], name="add")],
                          "ext_constant", [vinfo("X")], [vinfo("Y")])
    c.case("ext_constant/model.onnx", 10, *LOAD, r"\.\.|outside|escape|travers",
           "Constant 'value' tensor with external location '../secret.bin'", make(g))

    # Sparse initializer whose values tensor is external.
    values = ext_tensor("../secret.bin", name="S")
    indices = helper.make_tensor("S_indices", TensorProto.INT64, [4], [0, 2, 4, 6])
    sparse = helper.make_sparse_tensor(values, indices, [8])
    g = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"], name="id")],
                          "ext_sparse", [vinfo("X")], [vinfo("Y")])
    g.sparse_initializer.append(sparse)
    c.case("ext_sparse/model.onnx", 10, *LOAD, r"\.\.|outside|escape|travers",
           "sparse_initializer whose values are external at '../secret.bin'", make(g))

    # An initializer inside an If branch.
    then_g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["T"], name="then_add")],
                               "then", [], [vinfo("T")],
                               initializer=[ext_tensor("/etc/passwd", offset=0, length=16)])
    else_g = helper.make_graph([helper.make_node("Identity", ["X"], ["E"], name="else_id")],
                               "else", [], [vinfo("E")])
    node = helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "ext_subgraph", [vinfo("X"), vinfo("cond", (), TensorProto.BOOL)],
                          [vinfo("Y")])
    c.case("ext_subgraph/model.onnx", 10, *LOAD, "absolute",
           "initializer inside If.then_branch with external location '/etc/passwd'", make(g))


def writer_and_bytes(c):
    c.case("-", 11, "skip", 2, "-",
           "writer output escaping the directory: not a file to load; tests/scripts/roundtrip.sh checks "
           "that 'convgate save --external-data' refuses '../x', absolute paths, subfolders and '..' "
           "and writes nothing outside the output folder [CVE-2025-51480]")
    c.case("stdin:good/ext_valid/model.onnx", 12, *LOAD, "base dir|base folder|external",
           "the valid external-data model read from standard input ('-'): no folder to resolve "
           "'weights.bin' against, so it must not be read from the working directory [ort#27430]")


def protobuf_framing(c):
    base = add_model(raw_tensor(dims=(64,), raw=struct.pack("<64f", *range(64)))).SerializeToString()
    c.case("proto/truncated.onnx", 13, *LOAD, "truncat|past (the )?end|unexpected end|end of (file|input|data)",
           "a valid model cut in the middle of an initializer's raw_data", base[: len(base) - 100])
    c.case("proto/truncated_in_varint.onnx", 13, *LOAD,
           "truncat|past (the )?end|unexpected end|end of (file|input|data)|varint",
           "ends inside a varint (ir_version key, then 0x80)", vi(MODEL_IR_VERSION, IR) + b"\x3a\x80")
    c.case("proto/length_overrun.onnx", 13, *LOAD, "truncat|past (the )?end|exceeds|beyond|remain|too large",
           "graph field claims 2147483647 bytes, 8 remain",
           vi(MODEL_IR_VERSION, IR) + key(MODEL_GRAPH, 2) + varint(0x7FFFFFFF) + b"\x0a\x01g" + b"\0" * 5)
    c.case("proto/length_4gb.onnx", 13, *LOAD, "truncat|past (the )?end|exceeds|beyond|remain|too large|2 ?GB",
           "graph field claims 2^32+16 bytes (wraps to 16 in 32 bits), 16 remain",
           vi(MODEL_IR_VERSION, IR) + key(MODEL_GRAPH, 2) + varint((1 << 32) + 16) + b"\x0a\x01g" + b"\0" * 13)
    c.case("proto/length_varint_2e64.onnx", 13, *LOAD,
           "truncat|past (the )?end|exceeds|beyond|remain|too large|overflow|varint",
           "graph field length 2^64-1 (a 10-byte varint): overflows any pointer addition",
           vi(MODEL_IR_VERSION, IR) + key(MODEL_GRAPH, 2) + varint((1 << 64) - 1) + b"\x0a\x01g")
    c.case("proto/varint_11_bytes.onnx", 13, *LOAD, "varint|malformed|invalid|overflow",
           "an 11-byte varint (more than 64 bits)", key(MODEL_IR_VERSION, 0) + b"\x80" * 10 + b"\x01")
    inner = ld(1, b"g") + key(1, 2) + varint(100)  # GraphProto.node claims 100 bytes...
    c.case("proto/nested_overrun.onnx", 13, *LOAD,
           "truncat|past (the )?end|exceeds|beyond|remain|enclosing|overrun",
           "a node claims 100 bytes inside a graph of 6 bytes; 200 bytes follow in the file "
           "(only the enclosing message's end may bound it)",
           vi(MODEL_IR_VERSION, IR) + key(MODEL_GRAPH, 2) + varint(len(inner)) + inner + b"\x08\x01" * 100)
    c.case("proto/wire_type_7.onnx", 13, *LOAD, "wire|malformed|invalid",
           "a field with wire type 7 (undefined)", vi(MODEL_IR_VERSION, IR) + key(9, 7) + b"\0")
    c.case("proto/field_zero.onnx", 13, *LOAD, "field|malformed|invalid",
           "a field number 0 (reserved)", vi(MODEL_IR_VERSION, IR) + key(0, 0) + b"\x01")
    c.case("gen:proto/huge_2gb.onnx", 13, *LOAD, "2 ?GB|2 ?GiB|too large|larger than|size",
           "a 2 GiB + 1 byte file (sparse, made at test time; a valid model's bytes at the start)")
    c.write("proto/huge_2gb.head", relu_model().SerializeToString())


def deep_type(depth):
    """A TypeProto: sequence of sequence of ... (depth times) of float tensor."""
    t = ld(TYPE_TENSOR, vi(TENSORTYPE_ELEM, TensorProto.FLOAT))
    for _ in range(depth):
        t = ld(TYPE_SEQUENCE, ld(SEQUENCE_ELEM, t))
    return t


def model_with_graph_extra(model, extra_graph_bytes):
    """model's bytes with extra bytes appended to its GraphProto."""
    graph = model.graph.SerializeToString() + extra_graph_bytes
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.ClearField("graph")
    return m.SerializeToString() + ld(MODEL_GRAPH, graph)


def nesting(c):
    for depth, note in ((150, ""), (5000, "; a recursive parser without a limit would exhaust its stack")):
        vinfo_bytes = ld(VALUEINFO_NAME, b"S") + ld(VALUEINFO_TYPE, deep_type(depth))
        data = model_with_graph_extra(relu_model(), ld(GRAPH_INPUT, vinfo_bytes))
        c.case("nesting/type_sequence_%d.onnx" % depth, 14, *LOAD, "nest|depth|deep|recursion",
               "graph input 'S' typed sequence(sequence(...)) %d deep (protobuf's limit is 100)%s"
               % (depth, note), data)
    c.case("nesting/if_nest_40.onnx", 15, *LOAD, "nest|depth|deep|subgraph",
           "If inside If.then_branch, 40 deep (ORT caps subgraph depth at 32) [ort#32344]",
           if_nest_model(40))


def if_nest_model(depth):
    """If nodes nested through then_branch; all take cond and X from the outer scope."""
    def level(d):
        out = "Y" if d == depth else "v%d" % d
        if d == 0:
            return helper.make_node("Identity", ["X"], [out], name="leaf")
        then_g = helper.make_graph([level(d - 1)], "then%d" % d, [], [vinfo("v%d" % (d - 1))])
        else_g = helper.make_graph([helper.make_node("Identity", ["X"], ["e%d" % d], name="else%d" % d)],
                                   "else%d" % d, [], [vinfo("e%d" % d)])
        return helper.make_node("If", ["cond"], [out], name="if%d" % d,
                                then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([level(depth)], "if_nest_%d" % depth,
                          [vinfo("X"), vinfo("cond", (), TensorProto.BOOL)], [vinfo("Y")])
    return make(g)


def identity_function(name, calls=None):
    """A local function y = calls(x), or y = Identity(x)."""
    if calls:
        node = helper.make_node(calls, ["x"], ["y"], domain="local", name="call_" + calls)
    else:
        node = helper.make_node("Identity", ["x"], ["y"], name="id")
    return helper.make_function("local", name, ["x"], ["y"], [node],
                                [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])


def call_model(fname, functions):
    g = helper.make_graph([helper.make_node(fname, ["X"], ["Y"], domain="local", name="call")],
                          "functions", [vinfo("X")], [vinfo("Y")])
    return make(g, opsets=(("", OPSET), ("local", 1)), functions=functions)


def functions(c):
    c.case("func/cycle.onnx", 16, *CHECK, "cycle|recurs",
           "local function f calls g, g calls f [GHSA-7w46-vvrh-m8q5]",
           call_model("f", [identity_function("f", "g"), identity_function("g", "f")]))
    c.case("func/self_call.onnx", 16, *CHECK, "cycle|recurs",
           "local function f calls itself", call_model("f", [identity_function("f", "f")]))
    # Bare functions (a name and a domain) keep the file near 120 KB.
    many = [identity_function("f0")] + [onnx.FunctionProto(name="f%d" % i, domain="local")
                                        for i in range(1, 10000)]
    c.case("func/too_many.onnx", 16, *LOAD, "too many|functions|limit",
           "10000 local functions, 9999 of them bare (assumes a cap below 10000)", call_model("f0", many))
    c.case("func/duplicate.onnx", 16, *CHECK, "duplicate|more than once|twice|already",
           "two local functions named (local, f)",
           call_model("f", [identity_function("f"), identity_function("f")]))


def versions(c):
    m = relu_model()
    m.ClearField("ir_version")
    c.case("version/no_ir_version.onnx", 17, *CHECK, "ir_version|IR version",
           "ir_version field absent", m)
    m = relu_model()
    m.ir_version = 99
    c.case("version/ir_version_99.onnx", 17, *CHECK, "ir_version|IR version|unsupported",
           "ir_version 99 (newer than any convgate knows)", m)
    m = relu_model()
    m.ClearField("opset_import")
    c.case("version/no_opset_import.onnx", 17, *CHECK, "opset",
           "IR 8 without opset_import", m)
    m = relu_model()
    m.opset_import[0].version = 999
    c.case("version/opset_999.onnx", 17, *CHECK, "opset|unsupported|version",
           "default-domain opset 999", m)
    m = relu_model()
    m.opset_import[0].version = 0
    c.case("version/opset_0.onnx", 17, *CHECK, "opset|version",
           "default-domain opset 0", m)


def structure(c):
    nodes = [helper.make_node("Relu", ["T"], ["Y"], name="second"),
             helper.make_node("Relu", ["X"], ["T"], name="first")]
    g = helper.make_graph(nodes, "order", [vinfo("X")], [vinfo("Y")])
    c.case("graph/not_topological.onnx", 18, "check", 0, "topological order.*sorted",
           "node 'second' reads T before node 'first' produces it: acyclic, so the loader sorts "
           "it as ONNX Runtime does and the checker warns", make(g))

    nodes = [helper.make_node("Relu", ["U"], ["T"], name="a"),
             helper.make_node("Neg", ["T"], ["U"], name="b"),
             helper.make_node("Add", ["X", "T"], ["Y"], name="c")]
    g = helper.make_graph(nodes, "cycle", [vinfo("X")], [vinfo("Y")])
    c.case("graph/cycle.onnx", 18, *CHECK, "topolog|order|cycle|not (yet )?defined|undefined",
           "nodes 'a' and 'b' feed each other: a real cycle stays an error", make(g))

    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="a"),
             helper.make_node("Neg", ["X"], ["Y"], name="b")]
    g = helper.make_graph(nodes, "ssa", [vinfo("X")], [vinfo("Y")])
    c.case("graph/not_ssa.onnx", 18, *CHECK, "SSA|more than once|already|twice|duplicate",
           "nodes 'a' and 'b' both produce Y", make(g))

    nodes = [helper.make_node("Relu", ["X"], ["X"], name="a"), helper.make_node("Neg", ["X"], ["Y"], name="b")]
    g = helper.make_graph(nodes, "ssa_input", [vinfo("X")], [vinfo("Y")])
    c.case("graph/output_redefines_input.onnx", 18, *CHECK, "SSA|more than once|already|twice|duplicate",
           "node 'a' writes to graph input X", make(g))

    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")],
                          "unproduced", [vinfo("X")], [vinfo("Y"), vinfo("Z")])
    c.case("graph/output_not_produced.onnx", 18, *CHECK, "not produced|never produced|unproduced|undefined|Z",
           "graph output Z is produced by no node", make(g))

    g = helper.make_graph([helper.make_node("Add", ["X", "nowhere"], ["Y"], name="add")],
                          "undefined_input", [vinfo("X")], [vinfo("Y")])
    c.case("graph/undefined_input.onnx", 18, *CHECK, "undefined|not defined|unknown|nowhere",
           "node 'add' reads 'nowhere', which nothing defines", make(g))

    then_g = helper.make_graph([helper.make_node("Relu", ["X"], ["X"], name="then_relu")], "then", [],
                               [vinfo("X")])
    else_g = helper.make_graph([helper.make_node("Identity", ["X"], ["E"], name="else_id")], "else", [],
                               [vinfo("E")])
    g = helper.make_graph([helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then_g,
                                            else_branch=else_g)],
                          "ssa_scopes", [vinfo("X"), vinfo("cond", (), TensorProto.BOOL)], [vinfo("Y")])
    c.case("graph/subgraph_shadows_outer.onnx", 18, *CHECK, "SSA|more than once|already|twice|shadow|duplicate",
           "If.then_branch redefines outer-scope X (SSA holds across scopes)", make(g))


def names_and_attrs(c):
    c.case("names/initializer_empty_name.onnx", 19, *CHECK, "empty|name",
           "an initializer with name ''",
           _graph_with_inits([raw_tensor(name="W"), raw_tensor(name="")]))
    c.case("names/initializer_duplicate.onnx", 19, *CHECK, "duplicate|more than once|twice|already",
           "two initializers named W",
           _graph_with_inits([raw_tensor(name="W"), raw_tensor(name="W", raw=FOUR_BYTES[::-1])]))
    node = helper.make_node("LeakyRelu", ["X"], ["Y"], name="leaky", alpha=0.1)
    node.attribute.append(helper.make_attribute("alpha", 0.2))
    g = helper.make_graph([node], "dup_attr", [vinfo("X")], [vinfo("Y")])
    c.case("names/attribute_duplicate.onnx", 19, *CHECK, "duplicate|more than once|twice|already",
           "node 'leaky' has attribute alpha twice (0.1, 0.2)", make(g))
    node = helper.make_node("LeakyRelu", ["X"], ["Y"], name="leaky")
    node.attribute.append(helper.make_attribute("alpha", 0.2))
    node.attribute[0].name = ""
    g = helper.make_graph([node], "empty_attr", [vinfo("X")], [vinfo("Y")])
    c.case("names/attribute_empty_name.onnx", 19, *CHECK, "empty|name",
           "node 'leaky' has an attribute named ''", make(g))


def _graph_with_inits(inits):
    g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")],
                          "inits", [vinfo("X")], [vinfo("Y")], initializer=inits)
    return make(g)


def ops(c):
    g = helper.make_graph([helper.make_node("NoSuchOp", ["X"], ["Y"], name="mystery")],
                          "unknown_op", [vinfo("X")], [vinfo("Y")])
    c.case("ops/unknown_op.onnx", 20, *CHECK, "unknown|unsupported|no schema|NoSuchOp",
           "op NoSuchOp in the default domain", make(g))
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu", domain="com.example")],
                          "unknown_domain", [vinfo("X")], [vinfo("Y")])
    c.case("ops/unimported_domain.onnx", 20, *CHECK, "domain|opset|com\\.example",
           "node in domain com.example, which opset_import does not list", make(g))
    body = helper.make_graph([helper.make_node("Identity", ["X"], ["B"], name="body_id")], "body", [],
                             [vinfo("B")])
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu", body=body)],
                          "subgraph_on_relu", [vinfo("X")], [vinfo("Y")])
    c.case("ops/subgraph_on_relu.onnx", 20, *CHECK, "subgraph|graph attribute|control.flow|attribute",
           "Relu carrying a GRAPH attribute 'body' [ort#32641]", make(g))


def arity(c):
    g = helper.make_graph([helper.make_node("Relu", ["X", "X"], ["Y"], name="relu")],
                          "too_many_in", [vinfo("X")], [vinfo("Y")])
    c.case("arity/too_many_inputs.onnx", 21, *CHECK, "input",
           "Relu with 2 inputs (schema: 1)", make(g))
    g = helper.make_graph([helper.make_node("Add", ["X"], ["Y"], name="add")],
                          "too_few_in", [vinfo("X")], [vinfo("Y")])
    c.case("arity/too_few_inputs.onnx", 21, *CHECK, "input",
           "Add with 1 input (schema: 2)", make(g))
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y", "Z"], name="relu")],
                          "too_many_out", [vinfo("X")], [vinfo("Y")])
    c.case("arity/too_many_outputs.onnx", 21, *CHECK, "output",
           "Relu with 2 outputs (schema: 1)", make(g))
    value = helper.make_tensor("v", TensorProto.FLOAT, [4], FOUR)
    g = helper.make_graph([helper.make_node("Constant", ["X"], ["C"], name="const", value=value),
                           helper.make_node("Add", ["X", "C"], ["Y"], name="add")],
                          "input_to_constant", [vinfo("X")], [vinfo("Y")])
    c.case("arity/input_to_zero_input_op.onnx", 21, *CHECK, "input",
           "Constant (no inputs in its schema) given input X [ort#32633]", make(g))


def tensors(c):
    t = raw_tensor()
    t.data_type = TensorProto.UNDEFINED
    c.case("tensor/dtype_undefined.onnx", 22, *CHECK, "UNDEFINED|data.?type|dtype|type",
           "initializer W with data_type UNDEFINED (0)", add_model(t))
    t = raw_tensor()
    t.data_type = 999
    c.case("tensor/dtype_999.onnx", 22, *CHECK, "data.?type|dtype|type|999",
           "initializer W with data_type 999", add_model(t))
    t = raw_tensor()
    t.float_data.extend(FOUR)
    c.case("tensor/two_data_fields.onnx", 22, *CHECK, "data field|more than one|both|several",
           "initializer W with both raw_data and float_data", add_model(t))
    t = TensorProto()
    t.name = "S"
    t.data_type = TensorProto.STRING
    t.dims.append(2)
    t.raw_data = b"ab\0cd\0"
    g = helper.make_graph([helper.make_node("Identity", ["S"], ["Y"], name="id")], "string_raw", [],
                          [vinfo("Y", (2,), TensorProto.STRING)], initializer=[t])
    c.case("tensor/string_raw_data.onnx", 22, *CHECK, "STRING|string|raw_data",
           "STRING initializer S stored in raw_data", make(g))
    t = raw_tensor()
    t.ClearField("raw_data")
    t.int32_data.extend([1, 2, 3, 4])
    c.case("tensor/wrong_data_field.onnx", 22, *CHECK, "data field|int32_data|float_data|type",
           "FLOAT initializer W stored in int32_data", add_model(t))
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "undef_input",
                          [vinfo("X", (4,), TensorProto.UNDEFINED)], [vinfo("Y")])
    c.case("tensor/input_elem_type_undefined.onnx", 22, *CHECK, "UNDEFINED|type|elem",
           "graph input X with elem_type UNDEFINED", make(g))


def dims(c):
    t = TensorProto()
    t.name = "W"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([-1, 4])
    t.raw_data = FOUR_BYTES
    c.case("dims/negative_dim.onnx", 23, *CHECK, "negative|dim",
           "initializer W dims [-1, 4]", _graph_with_inits([t]))
    t = TensorProto()
    t.name = "W"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([1 << 32, 1 << 32])
    t.raw_data = FOUR_BYTES
    c.case("dims/count_overflow.onnx", 23, *CHECK, "overflow|too (many|large)|element",
           "initializer W dims [2^32, 2^32]: element count 2^64 overflows int64",
           _graph_with_inits([t]))
    t = TensorProto()
    t.name = "W"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([3037000500, 3037000500])
    t.raw_data = FOUR_BYTES
    c.case("dims/count_overflow_barely.onnx", 23, *CHECK, "overflow|too (many|large)|element",
           "initializer W dims [3037000500, 3037000500]: product just over 2^63",
           _graph_with_inits([t]))
    t = TensorProto()
    t.name = "W"
    t.data_type = TensorProto.DOUBLE
    t.dims.extend([1 << 61])
    t.raw_data = FOUR_BYTES
    c.case("dims/bytes_overflow.onnx", 23, *CHECK, "overflow|too (many|large)|bytes|size",
           "DOUBLE initializer W dims [2^61]: count fits, count*8 bytes overflows int64",
           _graph_with_inits([t]))
    t = TensorProto()
    t.name = "W"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([1] * 1099 + [4])
    t.raw_data = FOUR_BYTES
    c.case("dims/rank_1100.onnx", 23, *LOAD, "rank|dimensions|too many",
           "initializer W with rank 1100 (1x...x1x4) [o#8321]", _graph_with_inits([t]))
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "input_rank",
                          [vinfo("X", [1] * 1100)], [vinfo("Y")])
    c.case("dims/input_rank_1100.onnx", 23, *LOAD, "rank|dimensions|too many",
           "graph input X declared with rank 1100", make(g))
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "input_neg",
                          [vinfo("X", [-5, 4])], [vinfo("Y")])
    c.case("dims/input_negative_dim.onnx", 23, *CHECK, "negative|dim",
           "graph input X declared [-5, 4]", make(g))


def raw_sizes(c):
    c.case("raw/raw_data_short.onnx", 24, *CHECK, "raw_data|size|bytes|expected",
           "float[4] initializer with 12 bytes of raw_data", add_model(raw_tensor(raw=FOUR_BYTES[:12])))
    c.case("raw/raw_data_not_multiple.onnx", 24, *CHECK, "raw_data|size|bytes|expected|multiple",
           "float[4] initializer with 17 bytes of raw_data (not a multiple of 4) [o#8109]",
           add_model(raw_tensor(raw=FOUR_BYTES + b"\0")))
    c.case("raw/raw_data_long.onnx", 24, *CHECK, "raw_data|size|bytes|expected",
           "float[4] initializer with 20 bytes of raw_data",
           add_model(raw_tensor(raw=FOUR_BYTES + b"\0\0\0\0")))
    t = raw_tensor()
    t.ClearField("raw_data")
    t.float_data.extend(FOUR[:3])
    c.case("raw/float_data_short.onnx", 24, *CHECK, "float_data|size|elements|expected|count",
           "float[4] initializer with 3 values in float_data", add_model(t))
    t = raw_tensor(dims=(2, 3), raw=b"")
    t.ClearField("raw_data")
    c.case("raw/no_data.onnx", 24, *CHECK, "data|size|bytes|expected|empty|missing",
           "float[2,3] initializer with no data at all", _graph_with_inits([t]))


def sparse(c):
    def sparse_model(indices, nnz=3, dense=10, index_dims=None):
        values = helper.make_tensor("S", TensorProto.FLOAT, [nnz], [1.0] * nnz)
        idx = helper.make_tensor("S_indices", TensorProto.INT64, index_dims or [len(indices)], indices)
        sp = helper.make_sparse_tensor(values, idx, [dense])
        g = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"], name="id")],
                              "sparse", [vinfo("X")], [vinfo("Y")])
        g.sparse_initializer.append(sp)
        return make(g)

    c.case("good/sparse_valid.onnx", "ok", "check", 0, "-",
           "valid control: sparse_initializer S, dense [10], indices [1, 5, 7]", sparse_model([1, 5, 7]))
    c.case("sparse/unsorted.onnx", 25, *CHECK, "sort|order|increasing",
           "sparse_initializer S indices [5, 1, 7]", sparse_model([5, 1, 7]))
    c.case("sparse/duplicate_index.onnx", 25, *CHECK, "sort|order|increasing|duplicate",
           "sparse_initializer S indices [1, 5, 5]", sparse_model([1, 5, 5]))
    c.case("sparse/out_of_range.onnx", 25, *CHECK, "range|bound|exceed",
           "sparse_initializer S indices [1, 5, 10] for dense size 10", sparse_model([1, 5, 10]))
    c.case("sparse/negative_index.onnx", 25, *CHECK, "range|bound|negative",
           "sparse_initializer S indices [-1, 5, 7]", sparse_model([-1, 5, 7]))
    c.case("sparse/count_mismatch.onnx", 25, *CHECK, "count|number|NNZ|match|size|indices",
           "sparse_initializer S: 3 values, 4 indices", sparse_model([1, 2, 5, 7]))


def bodies(c):
    # Loop(M, cond, v) with body (iter, cond, v) -> (cond, v): here the body
    # declares only 2 inputs.
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"], name="c"),
                              helper.make_node("Identity", ["V0"], ["v_out"], name="v")],
                             "body", [vinfo("i", (), TensorProto.INT64), vinfo("c_in", (), TensorProto.BOOL)],
                             [vinfo("c_out", (), TensorProto.BOOL), vinfo("v_out")])
    c.case("body/loop_input_count.onnx", 32, *CHECK, "body|Loop|input",
           "Loop with one loop-carried value whose body has 2 inputs instead of 3", _loop_model(body))

    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"], name="c"),
                              helper.make_node("Add", ["v_in", "v_in"], ["v_out"], name="v")],
                             "body", [vinfo("i", (), TensorProto.INT64), vinfo("c_in", (), TensorProto.BOOL),
                                      vinfo("v_in")],
                             [vinfo("c_out", (), TensorProto.BOOL), vinfo("v_out")],
                             initializer=[raw_tensor(name="v_in")])
    c.case("body/loop_input_is_initializer.onnx", 32, *CHECK, "initializer|body|input|duplicate|SSA",
           "Loop body input v_in is also a body initializer [ort#32609]", _loop_model(body))

    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"], name="c"),
                              helper.make_node("Identity", ["v_in"], ["v_out"], name="v")],
                             "body", [vinfo("i", (), TensorProto.INT64), vinfo("c_in", (), TensorProto.BOOL),
                                      vinfo("v_in")],
                             [vinfo("c_out", (), TensorProto.BOOL)])
    c.case("body/loop_output_count.onnx", 32, *CHECK, "body|Loop|output",
           "Loop with one loop-carried value whose body returns only the condition", _loop_model(body))

    body = helper.make_graph([helper.make_node("Add", ["s_in", "s_in"], ["s_out"], name="acc"),
                              helper.make_node("Identity", ["s_in"], ["y_out"], name="y")], "scan_body",
                             [vinfo("s_in", (3,))], [vinfo("s_out", (3,)), vinfo("y_out", (3,))])
    g = helper.make_graph([helper.make_node("Scan", ["S0", "XS"], ["S", "YS"], name="scan", body=body,
                                            num_scan_inputs=1)],
                          "scan", [vinfo("S0", (3,)), vinfo("XS", (4, 3))], [vinfo("S", (3,)), vinfo("YS", (4, 3))])
    c.case("body/scan_input_count.onnx", 32, *CHECK, "body|Scan|input",
           "Scan with 1 state + 1 scan input whose body declares 1 input", make(g))

    then_g = helper.make_graph([helper.make_node("Identity", ["X"], ["T"], name="t"),
                                helper.make_node("Neg", ["X"], ["T2"], name="t2")],
                               "then", [], [vinfo("T"), vinfo("T2")])
    else_g = helper.make_graph([helper.make_node("Identity", ["X"], ["E"], name="e")], "else", [], [vinfo("E")])
    g = helper.make_graph([helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then_g,
                                            else_branch=else_g)],
                          "if_outputs", [vinfo("X"), vinfo("cond", (), TensorProto.BOOL)], [vinfo("Y")])
    c.case("body/if_branch_output_count.onnx", 32, *CHECK, "branch|If|output",
           "If with 1 output whose then_branch returns 2", make(g))


def _loop_model(body):
    node = helper.make_node("Loop", ["M", "", "V0"], ["V"], name="loop", body=body)
    g = helper.make_graph([node], "loop", [vinfo("M", (), TensorProto.INT64), vinfo("V0")], [vinfo("V")])
    return make(g)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "bad"))
    args = ap.parse_args()
    out = os.path.normpath(args.out)
    if os.path.isdir(out):
        # Stale cases must not linger beside a new manifest; but only wipe a
        # folder this script made.
        if os.listdir(out) and not os.path.exists(os.path.join(out, "manifest.tsv")):
            sys.stderr.write("craft_bad_models: %s is not empty and has no manifest.tsv; "
                             "refusing to replace it\n" % out)
            return 2
        shutil.rmtree(out)
    os.makedirs(out)

    c = Crafter(out)
    controls(c)
    external_paths(c)
    external_keys(c)
    external_ranges(c)
    external_sizes(c)
    external_other_tensors(c)
    writer_and_bytes(c)
    protobuf_framing(c)
    nesting(c)
    functions(c)
    versions(c)
    structure(c)
    names_and_attrs(c)
    ops(c)
    arity(c)
    tensors(c)
    dims(c)
    raw_sizes(c)
    sparse(c)
    bodies(c)
    c.finish()
    # The .tflite cases live in tests/data/bad/tflite, wiped above with the
    # rest: write them again.
    import craft_bad_tflite
    craft_bad_tflite.main(["--out", os.path.join(out, "tflite")])

    total = 0
    for root, _, files in os.walk(out):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    print("%s: %d cases, %d links, %d bytes" % (out, len(c.rows), len(c.links), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
