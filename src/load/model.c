/*
 * Loading entry points: map the file, parse it, resolve external data.
 * A cg_model owns an arena (structure) and a chain of mappings (payloads);
 * cg_model_free releases both.
 */
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/mapfile.h"
#include "load/load_internal.h"

/* protobuf's hard limit on one serialized message */
#define CG_PROTOBUF_MAX ((size_t)2147483647u)

void cg_load_options_default(cg_load_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->max_message_depth = 100;
    opt->max_subgraph_depth = 32;
    opt->max_functions = 1000;
    opt->load_external_data = true;
}

cg_status cg_register_tensor(rd_ctx *c, cg_tensor_proto *t)
{
    if (c->tensor_count == c->tensor_cap) {
        size_t ncap = c->tensor_cap ? c->tensor_cap * 2 : 64;
        cg_tensor_proto **n = realloc(c->tensors, ncap * sizeof *n);
        if (!n)
            return cg_error_set(c->err, CG_NOMEM, "%s: out of memory", c->label);
        c->tensors = n;
        c->tensor_cap = ncap;
    }
    c->tensors[c->tensor_count++] = t;
    return CG_OK;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (!slash)
        memcpy(d, ".", 1);
    else if (n == 0) /* "/model.onnx" */
        memcpy(d, "/", (n = 1));
    else
        memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

static cg_model *model_new(void)
{
    cg_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->arena = cg_arena_new();
    if (!m->arena) {
        free(m);
        return NULL;
    }
    return m;
}

void cg_model_free(cg_model *model)
{
    if (!model)
        return;
    if (model->tflite && model->tflite_free)
        model->tflite_free(model->tflite);
    cg_arena_free(model->arena);
    cg_mappings_free(model->mappings);
    free(model->path);
    free(model->base_dir);
    free(model);
}

/* Parses bytes already owned by `m` (mapping or copy). */
static cg_status parse_into(cg_model *m, const uint8_t *data, size_t size, const char *label,
                            const cg_load_options *opt, cg_error *err)
{
    if (size > CG_PROTOBUF_MAX)
        return cg_error_set(err, CG_LIMIT,
                            "%s: %zu bytes is over protobuf's 2 GiB message limit; store the "
                            "weights as external data",
                            label, size);
    rd_ctx c;
    memset(&c, 0, sizeof c);
    c.arena = m->arena;
    c.err = err;
    c.label = label;
    c.base = data;
    if (opt)
        c.opt = *opt;
    else
        cg_load_options_default(&c.opt);
    cg_status st = cg_read_model(&c, data, size, m);
    if (st == CG_OK && c.opt.load_external_data)
        st = cg_resolve_external(&c, m);
    if (st == CG_OK)
        st = cg_sort_topological(m, err);
    free(c.tensors);
    return st;
}

/* A model holder over the file at path, mapped (at most CG_PROTOBUF_MAX
 * bytes), with its path and folder; nothing parsed yet. On failure *out
 * may hold the partial holder (cg_model_free it). */
static cg_status model_mapped(const char *path, cg_model **out, cg_error *err)
{
    cg_model *m = *out = model_new();
    if (!m)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
    cg_status st = cg_map_path_limited(path, CG_PROTOBUF_MAX, &m->mappings, err);
    if (st != CG_OK)
        return st;
    m->file_size = m->mappings->size;
    m->path = strdup(path);
    m->base_dir = dir_of(path);
    if (!m->path || !m->base_dir)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
    return CG_OK;
}

cg_status cg_model_load(const char *path, const cg_load_options *opt, cg_model **out,
                        cg_error *err)
{
    *out = NULL;
    cg_model *m = NULL;
    cg_status st = model_mapped(path, &m, err);
    if (st != CG_OK)
        goto fail;
    if (m->file_size == 0) {
        st = cg_error_set(err, CG_PARSE, "%s: empty file is not an ONNX model", path);
        goto fail;
    }
    st = parse_into(m, m->mappings->addr, m->mappings->size, path, opt, err);
    if (st != CG_OK)
        goto fail;
    *out = m;
    return CG_OK;
fail:
    cg_model_free(m);
    return st;
}

cg_status cg_model_load_bytes(const void *data, size_t size, const cg_load_options *opt,
                              cg_model **out, cg_error *err)
{
    *out = NULL;
    cg_model *m = model_new();
    if (!m)
        return cg_error_set(err, CG_NOMEM, "model bytes: out of memory");
    cg_status st = CG_OK;
    if (size == 0) {
        st = cg_error_set(err, CG_PARSE, "model bytes: empty input is not an ONNX model");
        goto fail;
    }
    uint8_t *copy = cg_arena_alloc(m->arena, size);
    if (!copy) {
        st = cg_error_set(err, CG_NOMEM, "model bytes: out of memory copying %zu bytes", size);
        goto fail;
    }
    memcpy(copy, data, size);
    m->file_size = size;
    if (opt && opt->base_dir) {
        m->base_dir = strdup(opt->base_dir);
        if (!m->base_dir) {
            st = cg_error_set(err, CG_NOMEM, "model bytes: out of memory");
            goto fail;
        }
    }
    st = parse_into(m, copy, size, "model bytes", opt, err);
    if (st != CG_OK)
        goto fail;
    *out = m;
    return CG_OK;
fail:
    cg_model_free(m);
    return st;
}

/* Parses one TensorProto from bytes the holder `m` already owns, then
 * resolves external data against m->base_dir (refused when there is none). */
static cg_status parse_tensor_into(cg_model *m, const uint8_t *data, size_t size,
                                   const char *label, cg_tensor_proto **out, cg_error *err)
{
    static const uint8_t empty[1];
    if (size > CG_PROTOBUF_MAX)
        return cg_error_set(err, CG_LIMIT, "%s: over protobuf's 2 GiB limit", label);
    cg_tensor_proto *t = cg_arena_alloc(m->arena, sizeof *t);
    if (!t)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", label);
    rd_ctx c;
    memset(&c, 0, sizeof c);
    c.arena = m->arena;
    c.err = err;
    c.label = label;
    c.base = data ? data : empty;
    cg_load_options_default(&c.opt);
    cg_status st = cg_read_tensor(&c, data ? data : empty, size, t);
    if (st == CG_OK)
        st = cg_resolve_external(&c, m);
    free(c.tensors);
    if (st == CG_OK)
        *out = t;
    return st;
}

cg_status cg_tensor_proto_load(const char *path, cg_model **holder, cg_tensor_proto **out,
                               cg_error *err)
{
    *holder = NULL;
    *out = NULL;
    cg_model *m = NULL;
    cg_status st = model_mapped(path, &m, err);
    if (st != CG_OK)
        goto fail;
    st = parse_tensor_into(m, m->mappings->addr, m->mappings->size, path, out, err);
    if (st != CG_OK)
        goto fail;
    *holder = m;
    return CG_OK;
fail:
    *out = NULL;
    cg_model_free(m);
    return st;
}

cg_status cg_tensor_proto_load_bytes(const void *data, size_t size, cg_model **holder,
                                     cg_tensor_proto **out, cg_error *err)
{
    *holder = NULL;
    *out = NULL;
    cg_model *m = model_new();
    if (!m)
        return cg_error_set(err, CG_NOMEM, "tensor bytes: out of memory");
    cg_status st = CG_OK;
    uint8_t *copy = NULL;
    if (size && size <= CG_PROTOBUF_MAX) {
        copy = cg_arena_alloc(m->arena, size);
        if (!copy) {
            st = cg_error_set(err, CG_NOMEM, "tensor bytes: out of memory");
            goto fail;
        }
        memcpy(copy, data, size);
    }
    m->file_size = size;
    st = parse_tensor_into(m, copy, size, "tensor bytes", out, err);
    if (st != CG_OK)
        goto fail;
    *holder = m;
    return CG_OK;
fail:
    *out = NULL;
    cg_model_free(m);
    return st;
}

cg_status cg_tensor_proto_numel(const cg_tensor_proto *t, int64_t *out, cg_error *err)
{
    int64_t n = 1;
    for (size_t i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (d < 0)
            return cg_error_set(err, CG_INVALID, "tensor '%s': negative dimension %lld at axis %zu",
                                t->name ? t->name : "", (long long)d, i);
        if (d != 0 && n > INT64_MAX / d)
            return cg_error_set(err, CG_INVALID,
                                "tensor '%s': element count overflows int64 at axis %zu",
                                t->name ? t->name : "", i);
        n *= d;
    }
    *out = n;
    return CG_OK;
}
