/*
 * The float64 reference mode (cg_runtime_options.float64): the oracle's
 * oracle. The model's float values (float32, float16, bfloat16) are
 * promoted to DOUBLE where they enter the runtime, so that every kernel
 * runs its double path:
 *   - initializers of every graph, converted once when the plan is built;
 *   - graph inputs, converted when a run binds them (a caller may also feed
 *     DOUBLE where the model declares a float type);
 *   - tensor attributes (Constant.value, ConstantOfShape.value) as a kernel
 *     reads them (cg_attr_tensor);
 *   - integer attributes that name a float element type (Cast.to,
 *     EyeLike.dtype, Random*.dtype, ...: the table below) as a kernel reads
 *     them (cg_attr_int);
 *   - the few kernels that make a float tensor out of nothing (Constant's
 *     value_float, DequantizeLinear before opset 19, DynamicQuantizeLinear's
 *     scale, TfIdfVectorizer) ask cg_kernel_float_dtype for the type.
 * Between those edges a kernel follows its inputs' dtype, as ONNX type
 * constraints require, so no kernel needs to know about the mode.
 *
 * Why at the edges and not by rewriting the model: the graph, its node
 * pointers and value names stay those of the model (bisection and observers
 * match values by name and node), and nothing is copied but the float
 * initializers, which have to be converted anyway.
 *
 * The guard: in this mode cg_kernel_output refuses a float32/16 output, so a
 * kernel without a double path (or an edge this file misses) fails the run
 * naming the node, never computes part of the "float64" reference in float32.
 */
#include <stdlib.h>
#include <string.h>

#include "run/fp64.h"

bool cg_fp64_promotes(cg_dtype dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_BFLOAT16;
}

cg_dtype cg_fp64_dtype(cg_dtype dt)
{
    return cg_fp64_promotes(dt) ? CG_DTYPE_DOUBLE : dt;
}

bool cg_fp64_leaks(const cg_value *v)
{
    if (!v)
        return false;
    if (v->kind == CG_VALUE_SEQUENCE ||
        (v->kind == CG_VALUE_OPTIONAL && v->has_value && v->optional_is_sequence)) {
        if (v->item_count == 0)
            return cg_fp64_promotes(v->seq_dtype);
        for (size_t i = 0; i < v->item_count; i++)
            if (cg_fp64_leaks(v->items[i]))
                return true;
        return false;
    }
    if (v->kind == CG_VALUE_OPTIONAL && !v->has_value)
        return false;
    return cg_fp64_promotes(v->tensor.dtype);
}

void cg_fp64_convert(const cg_tensor *t, double *d)
{
    if (t->dtype == CG_DTYPE_FLOAT) { /* the common case, without a dtype switch per element */
        const float *s = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = s[i];
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = cg_tensor_get_f64(t, i);
    }
}

void cg_fp64_convert_bytes(cg_dtype dt, const void *raw, int64_t n, double *d)
{
    const uint8_t *b = raw;
    if (dt == CG_DTYPE_FLOAT) {
        /* through an aligned block: a misaligned float is read by memcpy */
        float blk[256];
        for (int64_t i = 0; i < n; i += 256) {
            int64_t m = n - i < 256 ? n - i : 256;
            memcpy(blk, b + (size_t)i * sizeof(float), (size_t)m * sizeof(float));
            for (int64_t k = 0; k < m; k++)
                d[i + k] = blk[k];
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, b + (size_t)i * 2, 2);
        d[i] = dt == CG_DTYPE_FLOAT16 ? cg_fp16_to_f32(h) : cg_bf16_to_f32(h);
    }
}

/* Converts t to DOUBLE into a fresh buffer; frees the old payload unless
 * borrowed. */
static cg_status promote_tensor(cg_tensor *t, bool borrowed, cg_error *err)
{
    if (!cg_fp64_promotes(t->dtype))
        return CG_OK;
    size_t bytes;
    if (!cg_tensor_byte_size(CG_DTYPE_DOUBLE, t->numel, &bytes))
        return cg_error_set(err, CG_LIMIT, "a %s tensor of %lld elements is too large to "
                            "promote to double", cg_dtype_name(t->dtype), (long long)t->numel);
    double *d = malloc(bytes ? bytes : 1);
    if (!d)
        return cg_error_set(err, CG_NOMEM, "out of memory promoting a %s tensor of %lld "
                            "elements to double", cg_dtype_name(t->dtype), (long long)t->numel);
    cg_fp64_convert(t, d);
    if (!borrowed)
        free(t->data);
    t->data = d;
    t->dtype = CG_DTYPE_DOUBLE;
    return CG_OK;
}

cg_status cg_fp64_promote_value(cg_value *v, bool data_borrowed, cg_error *err)
{
    if (!v)
        return CG_OK;
    if (v->kind == CG_VALUE_SEQUENCE ||
        (v->kind == CG_VALUE_OPTIONAL && v->has_value && v->optional_is_sequence)) {
        for (size_t i = 0; i < v->item_count; i++) {
            cg_status st = cg_fp64_promote_value(v->items[i], false, err);
            if (st != CG_OK)
                return st;
        }
        v->seq_dtype = cg_fp64_dtype(v->seq_dtype);
        return CG_OK;
    }
    if (v->kind == CG_VALUE_OPTIONAL && !v->has_value) {
        v->seq_dtype = cg_fp64_dtype(v->seq_dtype);
        v->tensor.dtype = cg_fp64_dtype(v->tensor.dtype);
        return CG_OK;
    }
    cg_status st = promote_tensor(&v->tensor, data_borrowed, err);
    if (st == CG_OK)
        v->seq_dtype = cg_fp64_dtype(v->seq_dtype);
    return st;
}

cg_status cg_fp64_promoted_copy(const cg_value *src, cg_value **out, cg_error *err)
{
    cg_status st = cg_value_copy(src, out, err);
    if (st != CG_OK)
        return st;
    st = cg_fp64_promote_value(*out, false, err);
    if (st != CG_OK) {
        cg_value_free(*out);
        *out = NULL;
    }
    return st;
}

/* Integer attributes that hold an element type (ONNX TensorProto.DataType)
 * a float64 run must read as DOUBLE. Ops whose element-type attribute can
 * only name integers (Multinomial.dtype, QuantizeLinear.output_dtype) are
 * left out: they never name a promoted type. */
static const struct {
    const char *op, *attr;
} dtype_attrs[] = {
    {"Cast", "to"},
    {"EyeLike", "dtype"},
    {"RandomNormal", "dtype"},
    {"RandomUniform", "dtype"},
    {"RandomNormalLike", "dtype"},
    {"RandomUniformLike", "dtype"},
    {"Bernoulli", "dtype"},
    {"SequenceEmpty", "dtype"},
    {"LayerNormalization", "stash_type"},
    {"HannWindow", "output_datatype"},
    {"HammingWindow", "output_datatype"},
    {"BlackmanWindow", "output_datatype"},
    {"MelWeightMatrix", "output_datatype"},
};

int64_t cg_fp64_attr_int(const cg_node *node, const char *attr, int64_t value)
{
    if (!cg_dtype_valid(value) || !cg_fp64_promotes((cg_dtype)value) || !node->op_type)
        return value;
    if (node->domain && node->domain[0] && strcmp(node->domain, "ai.onnx") != 0)
        return value;
    for (size_t i = 0; i < sizeof dtype_attrs / sizeof dtype_attrs[0]; i++)
        if (strcmp(dtype_attrs[i].op, node->op_type) == 0 &&
            strcmp(dtype_attrs[i].attr, attr) == 0)
            return CG_DTYPE_DOUBLE;
    return value;
}
