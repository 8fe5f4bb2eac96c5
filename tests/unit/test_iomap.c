/* The I/O map of source against converted (convgate/iomap.h) on the CNN
 * fixture and its ONNX twin, with shapes rewritten in memory for the cases
 * the fixtures lack: a shape both layouts fit (refused across formats,
 * identity within one, decided by a --map rule), a rank mismatch, a shape
 * neither fits; rules naming unknown tensors; values converted there and
 * back (the identity) and between integer types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/iomap.h"
#include "convgate/model.h"
#include "convgate/tensor.h"
#include "convgate/tflite.h"
#include "testlib.h"


#define DATA CG_SOURCE_DIR "/tests/data/tflite/"

static cg_model *load(const char *path)
{
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_model_load_any(path, NULL, &m, &err) == CG_OK, "%s: %s", path, err.msg);
    return m;
}

/* Rewrites the static dims of graph input 0. */
static void set_dims(cg_model *m, const int64_t *dims, size_t rank)
{
    cg_shape *sh = m->graph->inputs[0].type->shape;
    EXPECT(sh && sh->rank >= rank, "input 0 has room for %zu dims", rank);
    if (!sh || sh->rank < rank)
        return;
    for (size_t d = 0; d < rank; d++) {
        sh->dims[d].value = dims[d];
        sh->dims[d].has_value = true;
        sh->dims[d].param = NULL;
    }
    sh->rank = rank;
}

static cg_status build(cg_model *a, cg_model *b, const char *rule, cg_io_map *m, cg_error *err)
{
    cg_io_rule r;
    cg_status st;
    size_t n = 0;
    cg_error_clear(err);
    if (rule) {
        if ((st = cg_io_rule_parse(rule, &r, err)) != CG_OK)
            return st;
        n = 1;
    }
    st = cg_io_map_build(a, b, n ? &r : NULL, n, m, err);
    if (n)
        cg_io_rule_free(&r);
    return st;
}

int main(void)
{
    cg_model *onnx = load(DATA "twins/cnn.onnx"), *tfl = load(DATA "models/cnn.tflite");
    cg_model *onnx2 = load(DATA "twins/cnn_wrong.onnx");
    if (!onnx || !tfl || !onnx2)
        return 1;
    cg_io_map m;
    cg_error err;

    /* the fixtures as they are: NCHW -> NHWC by name */
    EXPECT(build(onnx, tfl, NULL, &m, &err) == CG_OK, "%s", err.msg);
    EXPECT(m.input_count == 1 && m.inputs[0].permuted && m.inputs[0].perm[1] == 2 &&
               m.inputs[0].perm[3] == 1 && strcmp(m.inputs[0].by, "name") == 0,
           "input pair: permuted %d by %s", m.inputs[0].permuted, m.inputs[0].by);
    EXPECT(m.output_count == 1 && !m.outputs[0].permuted, "output pair");

    /* values there and back: the identity; int64 -> int32 converts */
    cg_tensor x, y, z;
    int64_t dims[4] = {1, 3, 2, 2};
    EXPECT(cg_tensor_alloc(&x, CG_DTYPE_INT64, 4, dims, 0, &err) == CG_OK, "%s", err.msg);
    for (int64_t i = 0; i < x.numel; i++)
        ((int64_t *)x.data)[i] = i * 7 - 20;
    EXPECT(cg_io_convert(&m.inputs[0], true, &x, CG_DTYPE_INT32, &y, &err) == CG_OK, "%s",
           err.msg);
    EXPECT(y.dtype == CG_DTYPE_INT32 && y.dims[1] == 2 && y.dims[3] == 3, "NHWC int32 [1,2,2,3]");
    /* element (c=1, h=0, w=1) of NCHW is (h=0, w=1, c=1) of NHWC */
    EXPECT(((int32_t *)y.data)[0 * 6 + 1 * 3 + 1] == ((int64_t *)x.data)[1 * 4 + 0 * 2 + 1],
           "transposed element");
    EXPECT(cg_io_convert(&m.inputs[0], false, &y, CG_DTYPE_INT64, &z, &err) == CG_OK, "%s",
           err.msg);
    EXPECT(z.numel == x.numel && memcmp(z.data, x.data, (size_t)x.numel * 8) == 0,
           "there and back is the identity");
    cg_tensor_release(&x);
    cg_tensor_release(&y);
    cg_tensor_release(&z);
    cg_io_map_free(&m);

    /* a shape both layouts fit */
    static const int64_t cube[4] = {1, 2, 2, 2};
    set_dims(onnx, cube, 4);
    set_dims(tfl, cube, 4);
    set_dims(onnx2, cube, 4);
    EXPECT(build(onnx, tfl, NULL, &m, &err) == CG_USAGE && strstr(err.msg, "fit both") &&
               strstr(err.msg, "--map x=x:none"),
           "ambiguous across formats: %s", err.msg);
    EXPECT(build(onnx, onnx2, NULL, &m, &err) == CG_OK && !m.inputs[0].permuted,
           "ambiguous within one format: identity (%s)", err.msg);
    cg_io_map_free(&m);
    EXPECT(build(onnx, tfl, "x=:nhwc", &m, &err) == CG_OK && m.inputs[0].permuted &&
               strcmp(m.inputs[0].layout, "NCHW -> NHWC") == 0,
           "a rule decides: %s", err.msg);
    cg_io_map_free(&m);
    EXPECT(build(onnx, tfl, "x=x:none", &m, &err) == CG_OK && !m.inputs[0].permuted,
           "a rule decides: %s", err.msg);
    cg_io_map_free(&m);

    /* a shape neither layout fits; a rank mismatch */
    static const int64_t other[4] = {1, 5, 6, 7}, flat[2] = {1, 8};
    set_dims(tfl, other, 4);
    EXPECT(build(onnx, tfl, NULL, &m, &err) == CG_USAGE && strstr(err.msg, "match neither"),
           "no fit: %s", err.msg);
    set_dims(tfl, flat, 2);
    EXPECT(build(onnx, tfl, NULL, &m, &err) == CG_USAGE && strstr(err.msg, "different ranks"),
           "ranks: %s", err.msg);

    /* rules */
    EXPECT(build(onnx, onnx2, "nope=x", &m, &err) == CG_USAGE &&
               strstr(err.msg, "the source has no input or output 'nope'"),
           "unknown source name: %s", err.msg);
    EXPECT(build(onnx, onnx2, "x=nope", &m, &err) == CG_USAGE &&
               strstr(err.msg, "the converted model has no input 'nope'"),
           "unknown converted name: %s", err.msg);
    cg_io_rule r;
    EXPECT(cg_io_rule_parse("x:0=y:0", &r, &err) == CG_OK && strcmp(r.a, "x:0") == 0 &&
               strcmp(r.b, "y:0") == 0 && !r.has_layout,
           "names with ':' keep it (%s -> %s)", r.a, r.b);
    cg_io_rule_free(&r);
    EXPECT(cg_io_rule_parse("x=y:0,2,1", &r, &err) == CG_OK && r.has_layout && r.rank == 3 &&
               r.perm[1] == 2,
           "a permutation");
    cg_io_rule_free(&r);
    EXPECT(cg_io_rule_parse("xy", &r, &err) == CG_USAGE, "no '='");
    EXPECT(cg_io_rule_parse("x=y:1,1", &r, &err) == CG_USAGE, "not a permutation");

    cg_model_free(onnx);
    cg_model_free(onnx2);
    cg_model_free(tfl);
    return test_done("test_iomap");
}
