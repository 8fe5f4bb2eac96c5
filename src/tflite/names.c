/*
 * Names and element types of the TFLite schema, and the small helpers a
 * walk over a loaded model needs. The enum tables are generated
 * (include/convgate/tflite_*.def); the per-type facts below are from
 * schema.fbs's TensorType comments and TFLite's element sizes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "convgate/tflite.h"

static const char *const builtin_names[] = {
#define X(name, value) [value] = #name,
#include "convgate/tflite_builtin.def"
#undef X
};
_Static_assert(sizeof builtin_names / sizeof builtin_names[0] == CG_TFLITE_OP_COUNT,
               "BuiltinOperator values are not contiguous from 0");

static const char *const options_names[] = {
    "NONE",
#define X(index, name) [index] = #name,
#include "convgate/tflite_options.def"
#undef X
};
_Static_assert(sizeof options_names / sizeof options_names[0] == CG_TFLITE_OPT_COUNT,
               "BuiltinOptions members are not contiguous from 1");

static const char *const options2_names[] = {
    "NONE",
#define X(index, name) [index] = #name,
#include "convgate/tflite_options2.def"
#undef X
};
_Static_assert(sizeof options2_names / sizeof options2_names[0] == CG_TFLITE_OPT2_COUNT,
               "BuiltinOptions2 members are not contiguous from 1");

/* TensorType -> convgate dtype, name and stored bits per element. Types
 * convgate's dtype table lacks keep a lower-case TFLite name. */
typedef struct type_info {
    cg_dtype dtype;
    const char *name; /* NULL: use cg_dtype_name(dtype) */
    unsigned bits;
} type_info;

static const type_info types[CG_TFLITE_TYPE_COUNT] = {
    [CG_TFLITE_TYPE_FLOAT32] = {CG_DTYPE_FLOAT, NULL, 32},
    [CG_TFLITE_TYPE_FLOAT16] = {CG_DTYPE_FLOAT16, NULL, 16},
    [CG_TFLITE_TYPE_INT32] = {CG_DTYPE_INT32, NULL, 32},
    [CG_TFLITE_TYPE_UINT8] = {CG_DTYPE_UINT8, NULL, 8},
    [CG_TFLITE_TYPE_INT64] = {CG_DTYPE_INT64, NULL, 64},
    [CG_TFLITE_TYPE_STRING] = {CG_DTYPE_STRING, NULL, 0},
    [CG_TFLITE_TYPE_BOOL] = {CG_DTYPE_BOOL, NULL, 8},
    [CG_TFLITE_TYPE_INT16] = {CG_DTYPE_INT16, NULL, 16},
    [CG_TFLITE_TYPE_COMPLEX64] = {CG_DTYPE_COMPLEX64, NULL, 64},
    [CG_TFLITE_TYPE_INT8] = {CG_DTYPE_INT8, NULL, 8},
    [CG_TFLITE_TYPE_FLOAT64] = {CG_DTYPE_DOUBLE, NULL, 64},
    [CG_TFLITE_TYPE_COMPLEX128] = {CG_DTYPE_COMPLEX128, NULL, 128},
    [CG_TFLITE_TYPE_UINT64] = {CG_DTYPE_UINT64, NULL, 64},
    [CG_TFLITE_TYPE_RESOURCE] = {CG_DTYPE_UNDEFINED, "resource", 0},
    [CG_TFLITE_TYPE_VARIANT] = {CG_DTYPE_UNDEFINED, "variant", 0},
    [CG_TFLITE_TYPE_UINT32] = {CG_DTYPE_UINT32, NULL, 32},
    [CG_TFLITE_TYPE_UINT16] = {CG_DTYPE_UINT16, NULL, 16},
    [CG_TFLITE_TYPE_INT4] = {CG_DTYPE_INT4, NULL, 4},
    [CG_TFLITE_TYPE_BFLOAT16] = {CG_DTYPE_BFLOAT16, NULL, 16},
    [CG_TFLITE_TYPE_INT2] = {CG_DTYPE_UNDEFINED, "int2", 2},
    [CG_TFLITE_TYPE_UINT4] = {CG_DTYPE_UINT4, NULL, 4},
    [CG_TFLITE_TYPE_FLOAT8_E4M3FN] = {CG_DTYPE_FLOAT8E4M3FN, NULL, 8},
    [CG_TFLITE_TYPE_FLOAT8_E5M2] = {CG_DTYPE_FLOAT8E5M2, NULL, 8},
};

static const type_info *type_at(int32_t type)
{
    return type >= 0 && type < CG_TFLITE_TYPE_COUNT ? &types[type] : NULL;
}

const char *cg_tflite_builtin_name(int32_t code)
{
    return code >= 0 && code < CG_TFLITE_OP_COUNT ? builtin_names[code] : NULL;
}

const char *cg_tflite_options_name(int type)
{
    return type >= 0 && type < CG_TFLITE_OPT_COUNT ? options_names[type] : NULL;
}

const char *cg_tflite_options2_name(int type)
{
    return type >= 0 && type < CG_TFLITE_OPT2_COUNT ? options2_names[type] : NULL;
}

const char *cg_tflite_type_name(int32_t type)
{
    const type_info *t = type_at(type);
    if (!t)
        return NULL;
    return t->name ? t->name : cg_dtype_name(t->dtype);
}

cg_dtype cg_tflite_type_dtype(int32_t type)
{
    const type_info *t = type_at(type);
    return t ? t->dtype : CG_DTYPE_UNDEFINED;
}

unsigned cg_tflite_type_bits(int32_t type)
{
    const type_info *t = type_at(type);
    return t ? t->bits : 0;
}

bool cg_tflite_detect_path(const char *path)
{
    /* a regular file only: a FIFO must not block the sniff (the loader then
     * refuses it with its reason) */
    int fd = cg_file_open_read(path, NULL, NULL);
    if (fd < 0)
        return false;
    uint8_t head[8];
    size_t got = 0;
    while (got < sizeof head) {
        ssize_t n = read(fd, head + got, sizeof head - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return cg_tflite_detect(head, got);
}

cg_bytes cg_tflite_tensor_data(const cg_tflite_model *m, const cg_tflite_tensor *t)
{
    cg_bytes none = {NULL, 0};
    if (!t || t->buffer == 0 || t->buffer >= m->buffer_count)
        return none;
    return m->buffers[t->buffer].data;
}

const char *cg_tflite_op_name(const cg_tflite_opcode *oc, char *buf, size_t n)
{
    if (oc->builtin == CG_TFLITE_OP_CUSTOM)
        return oc->custom_code ? oc->custom_code : "CUSTOM";
    const char *name = cg_tflite_builtin_name(oc->builtin);
    if (name)
        return name;
    snprintf(buf, n, "BUILTIN_%d", (int)oc->builtin);
    return buf;
}

bool cg_tflite_op_is_flex(const cg_tflite_opcode *oc)
{
    return oc->builtin == CG_TFLITE_OP_CUSTOM && oc->custom_code &&
           strncmp(oc->custom_code, "Flex", 4) == 0;
}

bool cg_tflite_shape_elements(const int32_t *shape, size_t rank, uint64_t *out)
{
    uint64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return false;
        uint64_t d = (uint64_t)shape[i];
        if (d && n > UINT64_MAX / d)
            return false;
        n *= d;
    }
    *out = n;
    return true;
}

bool cg_tflite_quantized(const cg_tflite_model *m)
{
    for (size_t s = 0; m && s < m->subgraph_count; s++)
        for (size_t i = 0; i < m->subgraphs[s].tensor_count; i++) {
            const cg_tflite_tensor *t = &m->subgraphs[s].tensors[i];
            if (t->quant && t->quant->scale_count &&
                (t->type == CG_TFLITE_TYPE_INT8 || t->type == CG_TFLITE_TYPE_UINT8 ||
                 t->type == CG_TFLITE_TYPE_INT16))
                return true;
        }
    return false;
}
