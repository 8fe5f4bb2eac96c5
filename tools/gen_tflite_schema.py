#!/usr/bin/python3
"""Generate the TFLite schema tables convgate's .tflite reader uses, from
LiteRT's schema.fbs (the FlatBuffers schema every .tflite file follows).

Writes, under include/convgate/ (or --out DIR):
  tflite_builtin.def   X(NAME, value)  enum BuiltinOperator, every member
  tflite_type.def      X(NAME, value)  enum TensorType
  tflite_options.def   X(index, Name)  union BuiltinOptions (index 0 = NONE)
  tflite_options2.def  X(index, Name)  union BuiltinOptions2 (StableHLO)
and src/tflite/option_fields.def: X(union, index, field id, kind, width),
one row per non-deprecated field of every options table, which the reader
uses to verify an options table field by field whether or not it decodes
it (union 1 = BuiltinOptions, 2 = BuiltinOptions2; kind SCALAR, VECTOR
(width = element size) or STRING).

The schema is not committed (it belongs to LiteRT); the pinned copy is
google-ai-edge/LiteRT@f67457790c9c2ab67347d6fe53270e8d3df20868:
tflite/converter/schema/schema.fbs (last changed in 3647910a70fe). Obtain
it from that commit and run:

    /usr/bin/python3 tools/gen_tflite_schema.py PATH/TO/schema.fbs [--out DIR]

The output is committed: building convgate never needs the schema. Only
members are added at the end of these enums and unions (the schema says so
at its top), so a newer schema only appends rows.
"""

import argparse
import os
import re
import sys

PINNED = ("google-ai-edge/LiteRT@f67457790c9c2ab67347d6fe53270e8d3df20868:"
          "tflite/converter/schema/schema.fbs")


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def block(text, kind, name):
    """The body between the braces of `kind name ... {` ... `}`."""
    m = re.search(r"\b%s\s+%s\b[^{]*\{([^}]*)\}" % (kind, re.escape(name)), text)
    if not m:
        sys.exit("gen_tflite_schema: no %s %s in the schema" % (kind, name))
    return m.group(1)


def enum_members(text, name):
    """[(NAME, value)] of an enum whose members all carry explicit values,
    or count up from the previous one as FlatBuffers does."""
    out = []
    value = -1
    for item in block(text, "enum", name).split(","):
        item = re.sub(r"\([^)]*\)", "", item).strip()  # (deprecated)
        if not item:
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(-?\d+))?", item)
        if not m:
            sys.exit("gen_tflite_schema: cannot parse enum %s member '%s'" % (name, item))
        value = int(m.group(2)) if m.group(2) is not None else value + 1
        out.append((m.group(1), value))
    values = [v for _, v in out]
    if values != sorted(values) or len(set(values)) != len(values):
        sys.exit("gen_tflite_schema: enum %s values are not strictly increasing" % name)
    return out


SCALAR_WIDTH = {"bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1, "short": 2,
                "ushort": 2, "int16": 2, "uint16": 2, "int": 4, "uint": 4, "int32": 4,
                "uint32": 4, "float": 4, "long": 8, "ulong": 8, "int64": 8, "uint64": 8,
                "double": 8}


def enum_widths(text):
    """{EnumName: width} from `enum Name : type`."""
    return {m.group(1): SCALAR_WIDTH[m.group(2)]
            for m in re.finditer(r"\benum\s+(\w+)\s*:\s*(\w+)", text)}


def table_fields(text, name, widths):
    """[(field id, kind, width)] of table `name`, deprecated fields skipped
    (flatc generates no verification for them) but counted, as field ids
    are. Options tables hold scalars, enums, strings and vectors of
    scalars or enums only; anything else stops the generator."""
    out = []
    fid = 0
    for field in block(text, "table", name).split(";"):
        field = field.strip()
        if not field:
            continue
        m = re.fullmatch(r"(\w+)\s*:\s*(\[?)(\w+)(\]?)\s*(=\s*[-\w.]+)?\s*(\(([^)]*)\))?", field)
        if not m or bool(m.group(2)) != bool(m.group(4)):
            sys.exit("gen_tflite_schema: cannot parse field '%s' of table %s" % (field, name))
        ftype, is_vec, attrs = m.group(3), bool(m.group(2)), m.group(7) or ""
        deprecated = "deprecated" in attrs
        width = SCALAR_WIDTH.get(ftype, widths.get(ftype))
        if ftype == "string":
            kind, width = "STRING", 4
        elif width is None:
            sys.exit("gen_tflite_schema: table %s field %s has type %s, not a scalar, enum or "
                     "string" % (name, m.group(1), ftype))
        else:
            kind = "VECTOR" if is_vec else "SCALAR"
        if ftype == "string" and is_vec:
            sys.exit("gen_tflite_schema: table %s field %s: [string] is not expected"
                     % (name, m.group(1)))
        if not deprecated:
            out.append((fid, kind, width))
        fid += 1
    return out


def union_members(text, name):
    """[(index, Name)]: union member i (1-based; 0 is NONE) as FlatBuffers
    numbers them, in declaration order."""
    out = []
    for item in block(text, "union", name).split(","):
        item = re.sub(r"\([^)]*\)", "", item).strip()
        if not item:
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", item):
            sys.exit("gen_tflite_schema: cannot parse union %s member '%s'" % (name, item))
        out.append((len(out) + 1, item))
    return out


HEADER = """/*
 * %s, generated by tools/gen_tflite_schema.py from
 * %s:
 * do not edit. %d rows.
 */
"""


def write(path, what, rows, fmt):
    with open(path, "w") as f:
        f.write(HEADER % (what, PINNED, len(rows)))
        for row in rows:
            f.write(fmt % row + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("schema", help="schema.fbs from the pinned LiteRT commit")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "include",
                                                  "convgate"))
    ap.add_argument("--fields-out", default=os.path.join(os.path.dirname(__file__), "..",
                                                         "src", "tflite"))
    args = ap.parse_args()
    with open(args.schema) as f:
        text = strip_comments(f.read())
    if 'file_identifier "TFL3"' not in text:
        sys.exit("gen_tflite_schema: %s has no file_identifier \"TFL3\"" % args.schema)

    ops = enum_members(text, "BuiltinOperator")
    types = enum_members(text, "TensorType")
    opts = union_members(text, "BuiltinOptions")
    opts2 = union_members(text, "BuiltinOptions2")
    widths = enum_widths(text)
    rows = []
    for union_no, members in ((1, opts), (2, opts2)):
        for index, table in members:
            for fid, kind, width in table_fields(text, table, widths):
                rows.append((union_no, index, fid, kind, width))
    write(os.path.join(args.fields_out, "option_fields.def"),
          "X(union, index, field id, kind, width): the fields of every options table",
          rows, "X(%d, %d, %d, %s, %d)")
    write(os.path.join(args.out, "tflite_builtin.def"),
          "X(NAME, value): enum BuiltinOperator", ops, "X(%s, %d)")
    write(os.path.join(args.out, "tflite_type.def"),
          "X(NAME, value): enum TensorType", types, "X(%s, %d)")
    write(os.path.join(args.out, "tflite_options.def"),
          "X(index, Name): the members of union BuiltinOptions (0 = NONE)",
          opts, "X(%d, %s)")
    write(os.path.join(args.out, "tflite_options2.def"),
          "X(index, Name): the members of union BuiltinOptions2 (0 = NONE)",
          opts2, "X(%d, %s)")
    print("gen_tflite_schema: %d builtin ops, %d tensor types, %d + %d option tables"
          % (len(ops), len(types), len(opts), len(opts2)))


if __name__ == "__main__":
    main()
