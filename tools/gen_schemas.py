#!/usr/bin/python3
"""Generate src/check/schema_table.inc from python3-onnx's operator schemas.

Walks onnx.defs.get_all_schemas_with_history() (every domain the installed
onnx registers) and writes C data for include/convgate/schema.h: per row the
formal inputs/outputs, the attributes with their typed defaults (parsed from
attr.default_value, an AttributeProto) and the type constraints, then one
row table sorted by (domain, name, since_version) so src/check/schema.c can
binary-search it. The output is committed: building convgate never needs
Python. Run with /usr/bin/python3 (the interpreter that has onnx):

    /usr/bin/python3 tools/gen_schemas.py [OUTPUT]

Ops that ONNX releases after the installed one added (opset 18-21) live in
the hand-written src/check/schema_extra.inc, not here.
"""

import os
import struct
import sys

import onnx
from onnx import AttributeProto, defs

# Facts the Python bindings of onnx 1.12 do not expose, read from the C++
# schema sources (onnx/defs/*.cc): which schemas call
# .AllowUncheckedAttributes().
ALLOWS_UNCHECKED = {("", "LayerNormalization", 17)}

ATTR_TYPE_NAMES = {
    AttributeProto.UNDEFINED: "CG_ATTR_UNDEFINED",
    AttributeProto.FLOAT: "CG_ATTR_FLOAT",
    AttributeProto.INT: "CG_ATTR_INT",
    AttributeProto.STRING: "CG_ATTR_STRING",
    AttributeProto.TENSOR: "CG_ATTR_TENSOR",
    AttributeProto.GRAPH: "CG_ATTR_GRAPH",
    AttributeProto.FLOATS: "CG_ATTR_FLOATS",
    AttributeProto.INTS: "CG_ATTR_INTS",
    AttributeProto.STRINGS: "CG_ATTR_STRINGS",
    AttributeProto.TENSORS: "CG_ATTR_TENSORS",
    AttributeProto.GRAPHS: "CG_ATTR_GRAPHS",
    AttributeProto.SPARSE_TENSOR: "CG_ATTR_SPARSE_TENSOR",
    AttributeProto.SPARSE_TENSORS: "CG_ATTR_SPARSE_TENSORS",
    AttributeProto.TYPE_PROTO: "CG_ATTR_TYPE_PROTO",
    AttributeProto.TYPE_PROTOS: "CG_ATTR_TYPE_PROTOS",
}

OPTION_NAMES = ["CG_FORMAL_SINGLE", "CG_FORMAL_OPTIONAL", "CG_FORMAL_VARIADIC"]

INT32_MAX = 2147483647


def c_string(value):
    """A C string literal for str or bytes, escaping everything non-printable."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        value = value.encode("utf-8")
    out = ['"']
    for byte in value:
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F and ch != "?":  # '?' avoids trigraphs
            out.append(ch)
        else:
            # Octal escapes stop after three digits, unlike \x.
            out.append("\\%03o" % byte)
    out.append('"')
    return "".join(out)


def c_float(value):
    """A C float literal that round-trips the float32 exactly."""
    value = struct.unpack("<f", struct.pack("<f", value))[0]
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("non-finite attribute default %r" % value)
    text = repr(value)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def c_int64(value):
    if value == -(2**63):
        return "INT64_MIN"
    return "INT64_C(%d)" % value


def sort_key(schema):
    # Byte-wise strcmp order, the order schema.c compares in.
    return (schema.domain.encode(), schema.name.encode(), schema.since_version)


def formal_rows(formals, min_count):
    rows = []
    fixed_before = 0
    for formal in formals:
        option = int(formal.option)
        min_arity = 0
        if option == 2:
            # Finalize(): min = (formals before the variadic) + min_arity.
            min_arity = max(min_count - fixed_before, 0)
        else:
            fixed_before += 1
        rows.append(
            "{%s, %s, %s, %s, %d}"
            % (
                c_string(formal.name),
                c_string(formal.typeStr),
                OPTION_NAMES[option],
                "true" if formal.isHomogeneous else "false",
                min_arity,
            )
        )
    return rows


def attr_row(prefix, attr, extra):
    default = attr.default_value
    has_default = default is not None and default.type != AttributeProto.UNDEFINED
    fields = {
        "i": "0",
        "f": "0.0f",
        "s": "NULL",
        "ints": "NULL",
        "ints_n": "0",
        "floats": "NULL",
        "floats_n": "0",
    }
    if has_default:
        kind = default.type
        if kind == AttributeProto.INT:
            fields["i"] = c_int64(default.i)
        elif kind == AttributeProto.FLOAT:
            fields["f"] = c_float(default.f)
        elif kind == AttributeProto.STRING:
            fields["s"] = c_string(default.s)
        elif kind == AttributeProto.INTS:
            name = "%s_%s_ints" % (prefix, len(extra))
            extra.append(
                "static const int64_t %s[] = {%s};"
                % (name, ", ".join(c_int64(v) for v in default.ints) or "0")
            )
            fields["ints"] = name
            fields["ints_n"] = str(len(default.ints))
        elif kind == AttributeProto.FLOATS:
            name = "%s_%s_floats" % (prefix, len(extra))
            extra.append(
                "static const float %s[] = {%s};"
                % (name, ", ".join(c_float(v) for v in default.floats) or "0.0f")
            )
            fields["floats"] = name
            fields["floats_n"] = str(len(default.floats))
        elif kind == AttributeProto.STRINGS:
            # cg_schema_attr has no field for a STRINGS default. onnx 1.12 has
            # one such default (RNN's activations = ["Tanh", "Tanh"]); it is
            # recorded as present, and the RNN kernel applies it itself.
            pass
        else:
            raise ValueError("unsupported default type %d for %s" % (kind, attr.name))
    return "{%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s}" % (
        c_string(attr.name),
        ATTR_TYPE_NAMES[int(attr.type)],
        "true" if attr.required else "false",
        "true" if has_default else "false",
        fields["i"],
        fields["f"],
        fields["s"],
        fields["ints"],
        fields["ints_n"],
        fields["floats"],
        fields["floats_n"],
    )


def emit(out):
    schemas = sorted(defs.get_all_schemas_with_history(), key=sort_key)
    seen = set()
    for schema in schemas:
        key = sort_key(schema)
        if key in seen:
            raise ValueError("duplicate schema row %r" % (key,))
        seen.add(key)

    out.write(
        "/*\n"
        " * Operator schema rows, generated by tools/gen_schemas.py from onnx %s\n"
        " * (onnx.defs.get_all_schemas_with_history()): do not edit.\n"
        " * %d rows sorted by (domain, name, since_version); included by\n"
        " * src/check/schema.c. Opset 18-21 rows are in schema_extra.inc.\n"
        " */\n\n" % (onnx.__version__, len(schemas))
    )
    rows = []
    for index, schema in enumerate(schemas):
        prefix = "g%d" % index
        extra = []
        body = []
        ins = formal_rows(schema.inputs, schema.min_input)
        outs = formal_rows(schema.outputs, schema.min_output)
        if ins:
            body.append("static const cg_schema_formal %s_in[] = {%s};" % (prefix, ", ".join(ins)))
        if outs:
            body.append("static const cg_schema_formal %s_out[] = {%s};" % (prefix, ", ".join(outs)))
        attrs = [attr_row(prefix, a, extra) for _, a in sorted(schema.attributes.items())]
        if attrs:
            body.append(
                "static const cg_schema_attr %s_attr[] = {\n    %s};" % (prefix, ",\n    ".join(attrs))
            )
        constraints = []
        for ci, tc in enumerate(schema.type_constraints):
            allowed_name = "%s_tc%d" % (prefix, ci)
            allowed = list(tc.allowed_type_strs)
            extra.append(
                "static const char *const %s[] = {%s};"
                % (allowed_name, ", ".join(c_string(t) for t in allowed) or "NULL")
            )
            constraints.append("{%s, %s, %d}" % (c_string(tc.type_param_str), allowed_name, len(allowed)))
        if constraints:
            body.append(
                "static const cg_type_constraint %s_tc[] = {%s};" % (prefix, ", ".join(constraints))
            )
        out.write("/* %s %s-%d */\n" % (schema.domain or "ai.onnx", schema.name, schema.since_version))
        for line in extra + body:
            out.write(line + "\n")

        def ref(name, count):
            return ("%s_%s, %d" % (prefix, name, count)) if count else "NULL, 0"

        max_in = "INT32_MAX" if schema.max_input >= INT32_MAX else str(schema.max_input)
        max_out = "INT32_MAX" if schema.max_output >= INT32_MAX else str(schema.max_output)
        unchecked = (schema.domain, schema.name, schema.since_version) in ALLOWS_UNCHECKED
        rows.append(
            "    {%s, %s, %d, %s, %d, %s, %d, %s, %s, %s, %s, %s, %s}"
            % (
                c_string(schema.domain),
                c_string(schema.name),
                schema.since_version,
                "true" if schema.deprecated else "false",
                schema.min_input,
                max_in,
                schema.min_output,
                max_out,
                ref("in", len(ins)),
                ref("out", len(outs)),
                ref("attr", len(attrs)),
                "true" if unchecked else "false",
                ref("tc", len(constraints)),
            )
        )
    out.write("\nstatic const cg_schema cg_schema_gen_rows[] = {\n")
    out.write(",\n".join(rows))
    out.write("\n};\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src", "check", "schema_table.inc")
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        emit(out)
    os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
