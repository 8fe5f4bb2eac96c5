/* Shape and reduction kernels: what the ONNX backend data does not exercise.
 * Error paths (out-of-range indices, bad axes, oversized outputs) must fail
 * with a status and a message naming the node and the bad value; tie order
 * of TopK, all four Unique outputs, Slice clamping with negative steps,
 * exact int64 reductions and the empty-set identities are checked against
 * hand-computed answers. Each case is a one-node model built in memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "run/exec.h"
#include "testlib.h"

/* A one-node case and what its run returned. */
typedef struct one_node {
    test_case c;
    cg_named_value *outs;
    size_t out_count;
    cg_error err;
} one_node;

static void node_init(one_node *t, const char *op, int64_t opset, size_t nin, size_t nout)
{
    memset(t, 0, sizeof *t);
    t->c.op = op;
    t->c.opset = opset;
    t->c.nin = nin;
    t->c.nout = nout;
}

static void node_attr(one_node *t, cg_attr a) { t->c.attrs[t->c.nattr++] = a; }

static void set_input(one_node *t, size_t i, cg_dtype dt, int rank, const int64_t *dims,
                      const void *data)
{
    t->c.in[i] = test_tensor(dt, rank, dims, NULL);
    memcpy(t->c.in[i]->data, data, cg_tensor_bytes(t->c.in[i]));
}

/* Runs the node; returns the run's status (init failures count too). */
static cg_status node_run(one_node *t, size_t max_alloc)
{
    t->c.max_alloc = max_alloc;
    return test_case_run(&t->c, &t->outs, &t->out_count, &t->err);
}

static void node_free(one_node *t)
{
    test_case_free(&t->c);
    if (t->outs)
        cg_runtime_free_outputs(t->outs, t->out_count);
}

static const cg_tensor *out_tensor(one_node *t, size_t i)
{
    return i < t->out_count ? &t->outs[i].value->tensor : NULL;
}

static bool ints_equal(const cg_tensor *x, const int64_t *want, int64_t n)
{
    if (!x || x->numel != n)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (cg_tensor_get_i64(x, i) != want[i])
            return false;
    return true;
}

/* Expects failure with `status` and a message naming the node and `needle`. */
static void expect_failure(one_node *t, cg_status got, cg_status status, const char *needle,
                           const char *what)
{
    EXPECT(got == status, "%s: status %s, want %s (%s)", what, cg_status_name(got),
           cg_status_name(status), t->err.msg);
    EXPECT(strstr(t->err.msg, TEST_NODE_NAME) != NULL, "%s: message lacks the node name: %s",
           what, t->err.msg);
    EXPECT(strstr(t->err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle,
           t->err.msg);
}

/* --- error paths ------------------------------------------------------------------ */

static void test_gather_index_range(void)
{
    one_node t;
    const float data[3] = {1, 2, 3};
    const int64_t d3 = 3, d2 = 2;
    const int64_t ok_idx[2] = {-3, 2}, bad_idx[2] = {0, 7}, neg_idx[2] = {-4, 0};

    node_init(&t, "Gather", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d3, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &d2, ok_idx);
    cg_status st = node_run(&t, 0);
    EXPECT(st == CG_OK, "gather -3,2: %s", t.err.msg);
    const cg_tensor *y = out_tensor(&t, 0);
    EXPECT(y && y->numel == 2 && ((float *)y->data)[0] == 1 && ((float *)y->data)[1] == 3,
           "gather wraps -3 to 0");
    node_free(&t);

    node_init(&t, "Gather", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d3, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &d2, bad_idx);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "7", "gather index 7");
    node_free(&t);

    node_init(&t, "Gather", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d3, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &d2, neg_idx);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "-4", "gather index -4");
    node_free(&t);
}

/* Empty data whose other dims are huge (a file may say [2, 2^40, 2^40, 0]):
 * a fuzzer found Gather multiplying those dims into an overflow. No tensor
 * may have non-zero dims whose product overflows int64, empty or not (as
 * in ONNX Runtime), so no kernel meets one; a Gather whose output would be
 * one is refused when the output is sized, and an empty output whose dims
 * fit is still made. */
static void test_gather_empty_huge_dims(void)
{
    const int64_t big = (int64_t)1 << 40, mid = (int64_t)1 << 20;
    int64_t n = -1;
    EXPECT(!cg_shape_numel(4, (const int64_t[]){2, big, big, 0}, &n),
           "[2, 2^40, 2^40, 0] is refused (got %lld elements)", (long long)n);
    EXPECT(cg_shape_numel(4, (const int64_t[]){2, mid, mid, 0}, &n) && n == 0,
           "[2, 2^20, 2^20, 0] is an empty shape (got %lld)", (long long)n);
    cg_tensor huge;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tensor_alloc(&huge, CG_DTYPE_FLOAT, 4, (const int64_t[]){2, big, big, 0}, 0,
                           &err) == CG_LIMIT,
           "a [2, 2^40, 2^40, 0] tensor is refused: %s", err.msg);

    /* empty data [2, 2^20, 2^20, 0], indices [1] on axis 0: empty [1, 2^20, 2^20, 0] */
    one_node t;
    const int64_t dd[4] = {2, mid, mid, 0}, d1 = 1, idx[1] = {0};
    const float none[1] = {0}; /* no element is copied from it */
    node_init(&t, "Gather", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 4, dd, none);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &d1, idx);
    cg_status st = node_run(&t, 0);
    const cg_tensor *y = st == CG_OK ? out_tensor(&t, 0) : NULL;
    EXPECT(y && y->numel == 0 && y->rank == 4 && y->dims[0] == 1 && y->dims[1] == mid &&
               y->dims[2] == mid && y->dims[3] == 0,
           "gather row 0 of an empty [2, 2^20, 2^20, 0]: an empty [1, 2^20, 2^20, 0] (%s)",
           t.err.msg);
    node_free(&t);

    /* indices [2^42, 0] on axis 1: the output [2, 2^42, 0, 2^20, 0] would have
     * non-zero dims past int64 (2^63): refused when sized, nothing overflows */
    node_init(&t, "Gather", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 4, dd, none);
    t.c.in[1] = test_tensor(CG_DTYPE_INT64, 2, (const int64_t[]){(int64_t)1 << 42, 0}, NULL);
    node_attr(&t, attr_int("axis", 1));
    st = node_run(&t, 0);
    EXPECT(st == CG_LIMIT, "gather to [2, 2^42, 0, 2^20, 0]: refused as too large (%s: %s)",
           cg_status_name(st), t.err.msg);
    node_free(&t);
}

static void test_scatter_index_range(void)
{
    one_node t;
    const float data[4] = {0, 0, 0, 0}, upd[1] = {5};
    const int64_t d4 = 4, d1 = 1, idx_dims[2] = {1, 1};
    const int64_t bad[1] = {4}, nd_bad[1] = {-5};
    const int32_t bad32[1] = {-9};

    node_init(&t, "ScatterElements", 13, 3, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d4, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &d1, bad);
    set_input(&t, 2, CG_DTYPE_FLOAT, 1, &d1, upd);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "4", "scatter_elements index 4");
    node_free(&t);

    node_init(&t, "GatherElements", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d4, data);
    set_input(&t, 1, CG_DTYPE_INT32, 1, &d1, bad32);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "-9", "gather_elements index -9");
    node_free(&t);

    node_init(&t, "ScatterND", 13, 3, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d4, data);
    set_input(&t, 1, CG_DTYPE_INT64, 2, idx_dims, nd_bad);
    set_input(&t, 2, CG_DTYPE_FLOAT, 1, &d1, upd);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "-5", "scatter_nd index -5");
    node_free(&t);

    node_init(&t, "GatherND", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d4, data);
    set_input(&t, 1, CG_DTYPE_INT64, 2, idx_dims, bad);
    expect_failure(&t, node_run(&t, 0), CG_RUNTIME, "4", "gather_nd index 4");
    node_free(&t);
}

static void test_bad_attributes(void)
{
    one_node t;
    const float data[6] = {1, 2, 3, 4, 5, 6};
    const int64_t dims[2] = {2, 3};
    int64_t axes[1] = {2}, perm[2] = {0, 0};

    node_init(&t, "ReduceSum", 11, 1, 1);
    node_attr(&t, attr_ints("axes", axes, 1));
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "axis 2", "reduce axis 2 of rank 2");
    node_free(&t);

    node_init(&t, "Transpose", 13, 1, 1);
    node_attr(&t, attr_ints("perm", perm, 2));
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "perm", "transpose perm 0,0");
    node_free(&t);

    node_init(&t, "Softmax", 13, 1, 1);
    node_attr(&t, attr_int("axis", -3));
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "-3", "softmax axis -3");
    node_free(&t);

    /* Reshape with two -1 dims */
    const int64_t two = 2, shape[2] = {-1, -1};
    node_init(&t, "Reshape", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &two, shape);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "-1", "reshape -1,-1");
    node_free(&t);

    /* Split of 3 into 2 equal parts (opset 13 has no uneven split) */
    node_init(&t, "Split", 13, 1, 2);
    node_attr(&t, attr_int("axis", 1));
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "equal", "split 3 in 2");
    node_free(&t);

    /* Slice with a zero step */
    const int64_t one = 1, s0[1] = {0}, e0[1] = {2}, zero_step[1] = {0};
    node_init(&t, "Slice", 13, 5, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, s0);
    set_input(&t, 2, CG_DTYPE_INT64, 1, &one, e0);
    set_input(&t, 3, CG_DTYPE_INT64, 1, &one, s0);
    set_input(&t, 4, CG_DTYPE_INT64, 1, &one, zero_step);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "steps[0] is 0", "slice step 0");
    node_free(&t);

    const int64_t reps[2] = {1, -2};
    node_init(&t, "Tile", 13, 2, 1);
    set_input(&t, 0, CG_DTYPE_FLOAT, 2, dims, data);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &two, reps);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "-2", "tile repeat -2");
    node_free(&t);
}

static void test_constant_of_shape_limit(void)
{
    one_node t;
    const int64_t two = 2, shape[2] = {(int64_t)1 << 40, (int64_t)1 << 20};
    node_init(&t, "ConstantOfShape", 13, 1, 1);
    set_input(&t, 0, CG_DTYPE_INT64, 1, &two, shape);
    /* 2^60 floats: must be refused by the limit check, never allocated. */
    cg_status st = node_run(&t, (size_t)1 << 30);
    EXPECT(st == CG_LIMIT, "ConstantOfShape 2^60 elements: %s (%s)", cg_status_name(st),
           t.err.msg);
    EXPECT(strstr(t.err.msg, TEST_NODE_NAME) != NULL, "limit message lacks node: %s",
           t.err.msg);
    node_free(&t);

    const int64_t neg[2] = {2, -1};
    node_init(&t, "ConstantOfShape", 13, 1, 1);
    set_input(&t, 0, CG_DTYPE_INT64, 1, &two, neg);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "-1", "ConstantOfShape negative dim");
    node_free(&t);
}

/* --- semantics the backend data does not pin down ---------------------------------- */

static void test_topk_ties(void)
{
    one_node t;
    const float x[6] = {1, 3, 3, 2, 3, 1};
    const int64_t d6 = 6, one = 1, k3[1] = {3}, k2[1] = {2};

    node_init(&t, "TopK", 11, 2, 2);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d6, x);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, k3);
    EXPECT(node_run(&t, 0) == CG_OK, "topk: %s", t.err.msg);
    const int64_t want_idx[3] = {1, 2, 4};
    EXPECT(ints_equal(out_tensor(&t, 1), want_idx, 3), "topk largest ties: lower index first");
    node_free(&t);

    node_init(&t, "TopK", 11, 2, 2);
    node_attr(&t, attr_int("largest", 0));
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d6, x);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, k2);
    EXPECT(node_run(&t, 0) == CG_OK, "topk smallest: %s", t.err.msg);
    const int64_t want_small[2] = {0, 5};
    EXPECT(ints_equal(out_tensor(&t, 1), want_small, 2), "topk smallest ties");
    node_free(&t);

    const int64_t k9[1] = {9};
    node_init(&t, "TopK", 11, 2, 2);
    set_input(&t, 0, CG_DTYPE_FLOAT, 1, &d6, x);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, k9);
    expect_failure(&t, node_run(&t, 0), CG_INVALID, "9", "topk k > n");
    node_free(&t);
}

static void test_unique_unsorted(void)
{
    one_node t;
    const int64_t x[7] = {4, 2, 4, 9, 2, 2, 7}, d7 = 7;
    node_init(&t, "Unique", 11, 1, 4);
    node_attr(&t, attr_int("sorted", 0));
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d7, x);
    EXPECT(node_run(&t, 0) == CG_OK, "unique: %s", t.err.msg);
    const int64_t y[4] = {4, 2, 9, 7}, first[4] = {0, 1, 3, 6}, inv[7] = {0, 1, 0, 2, 1, 1, 3},
                  cnt[4] = {2, 3, 1, 1};
    EXPECT(ints_equal(out_tensor(&t, 0), y, 4), "unique Y");
    EXPECT(ints_equal(out_tensor(&t, 1), first, 4), "unique indices");
    EXPECT(ints_equal(out_tensor(&t, 2), inv, 7), "unique inverse_indices");
    EXPECT(ints_equal(out_tensor(&t, 3), cnt, 4), "unique counts");
    node_free(&t);
}

static void test_slice_negative_step(void)
{
    one_node t;
    int64_t x[10];
    for (int i = 0; i < 10; i++)
        x[i] = i;
    /* start 20 clamps to 9; end -100 + 10 = -90 clamps to -1 (one before 0). */
    const int64_t d10 = 10, one = 1, st_[1] = {20}, en[1] = {-100}, ax[1] = {-1}, step[1] = {-3};
    node_init(&t, "Slice", 13, 5, 1);
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d10, x);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, st_);
    set_input(&t, 2, CG_DTYPE_INT64, 1, &one, en);
    set_input(&t, 3, CG_DTYPE_INT64, 1, &one, ax);
    set_input(&t, 4, CG_DTYPE_INT64, 1, &one, step);
    EXPECT(node_run(&t, 0) == CG_OK, "slice: %s", t.err.msg);
    const int64_t want[4] = {9, 6, 3, 0};
    EXPECT(ints_equal(out_tensor(&t, 0), want, 4), "slice 20:-100:-3");
    node_free(&t);

    /* step INT64_MIN takes the first element only */
    const int64_t huge[1] = {INT64_MIN}, s5[1] = {5};
    node_init(&t, "Slice", 13, 5, 1);
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d10, x);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, s5);
    set_input(&t, 2, CG_DTYPE_INT64, 1, &one, huge);
    set_input(&t, 3, CG_DTYPE_INT64, 1, &one, ax);
    set_input(&t, 4, CG_DTYPE_INT64, 1, &one, huge);
    EXPECT(node_run(&t, 0) == CG_OK, "slice huge step: %s", t.err.msg);
    EXPECT(ints_equal(out_tensor(&t, 0), s5, 1), "slice 5:MIN:MIN gives [5]");
    node_free(&t);
}

static void test_exact_int64_and_empty_sets(void)
{
    one_node t;
    /* 2^53 + 1 + 1 is not representable in double: an exact sum is. */
    const int64_t big[2] = {((int64_t)1 << 53) + 1, 1}, d2 = 2;
    node_init(&t, "ReduceSum", 11, 1, 1);
    node_attr(&t, attr_int("keepdims", 0));
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d2, big);
    EXPECT(node_run(&t, 0) == CG_OK, "reduce int64: %s", t.err.msg);
    const int64_t want = ((int64_t)1 << 53) + 2;
    EXPECT(ints_equal(out_tensor(&t, 0), &want, 1), "ReduceSum int64 is exact");
    node_free(&t);

    const int64_t empty_dims[2] = {2, 0};
    const float nothing[1] = {0};
    int64_t axis1[1] = {1};
    const char *ops[4] = {"ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum"};
    const double want_f[4] = {-INFINITY, INFINITY, 1.0, 0.0};
    for (int i = 0; i < 4; i++) {
        node_init(&t, ops[i], 13, 1, 1);
        node_attr(&t, attr_ints("axes", axis1, 1));
        if (strcmp(ops[i], "ReduceSum") == 0)
            t.c.nattr = 0; /* ReduceSum-13 takes axes as an input: reduce all */
        set_input(&t, 0, CG_DTYPE_FLOAT, 2, empty_dims, nothing);
        EXPECT(node_run(&t, 0) == CG_OK, "%s empty: %s", ops[i], t.err.msg);
        const cg_tensor *y = out_tensor(&t, 0);
        EXPECT(y && y->numel >= 1 && ((float *)y->data)[0] == (float)want_f[i],
               "%s over an empty set gives %g", ops[i], want_f[i]);
        node_free(&t);
    }

    /* CumSum int64, exclusive + reverse, exact */
    const int64_t c[3] = {((int64_t)1 << 60), 3, 5}, d3 = 3, one = 1, axis0[1] = {0};
    node_init(&t, "CumSum", 14, 2, 1);
    node_attr(&t, attr_int("exclusive", 1));
    node_attr(&t, attr_int("reverse", 1));
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d3, c);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, axis0);
    EXPECT(node_run(&t, 0) == CG_OK, "cumsum: %s", t.err.msg);
    const int64_t want_c[3] = {8, 5, 0};
    EXPECT(ints_equal(out_tensor(&t, 0), want_c, 3), "CumSum exclusive reverse");
    node_free(&t);
}

static void test_onehot_out_of_range(void)
{
    /* The spec defines out-of-range OneHot indices as an all-off row. */
    one_node t;
    const int64_t ind[3] = {1, -1, 5}, d3 = 3, one = 1, depth[1] = {3}, two = 2;
    const float vals[2] = {0, 1};
    node_init(&t, "OneHot", 11, 3, 1);
    set_input(&t, 0, CG_DTYPE_INT64, 1, &d3, ind);
    set_input(&t, 1, CG_DTYPE_INT64, 1, &one, depth);
    set_input(&t, 2, CG_DTYPE_FLOAT, 1, &two, vals);
    EXPECT(node_run(&t, 0) == CG_OK, "onehot: %s", t.err.msg);
    const cg_tensor *y = out_tensor(&t, 0);
    const float want[9] = {0, 1, 0, 0, 0, 1, 0, 0, 0};
    EXPECT(y && y->numel == 9 && memcmp(y->data, want, sizeof want) == 0, "onehot rows");
    node_free(&t);
}

/* Shape's start/end (opset 15) as the kernel, the rewrite's shape folding
 * and the lowerings read them (cg_shape_slice): negative counts from the
 * end, both clamped to [0, rank], an empty slice when end <= start. */
static void test_shape_slice(void)
{
    static const struct {
        int64_t rank, start, end, first, len;
    } cases[] = {
        {4, 0, 4, 0, 4},          {4, 1, 3, 1, 2},          {4, -1, 4, 3, 1},
        {4, 0, -1, 0, 3},         {4, -10, 10, 0, 4},       {4, 3, 1, 3, 0},
        {4, 5, 9, 4, 0},          {4, -5, -6, 0, 0},        {0, 0, 0, 0, 0},
        {4, INT64_MIN, INT64_MAX, 0, 4}, {4, INT64_MAX, INT64_MIN, 4, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t first = -1;
        int64_t len = cg_shape_slice(cases[i].rank, cases[i].start, cases[i].end, &first);
        EXPECT(len == cases[i].len && first == cases[i].first,
               "rank %lld start %lld end %lld: first %lld len %lld, expected %lld %lld",
               (long long)cases[i].rank, (long long)cases[i].start, (long long)cases[i].end,
               (long long)first, (long long)len, (long long)cases[i].first,
               (long long)cases[i].len);
    }
}

/* A large Concat (125k elements out) at 1, 2 and 3 threads gives the
 * output the test computes itself, element by element, for 1-, 4- and
 * 8-byte elements, every axis (one outer block, many, inner 1) and inputs
 * of unequal sizes along the axis. (A copy split over the threads measured
 * no faster here: squeezenet1_1's 1.5 MB Concats are bound by memory.) */
static void test_concat_threads(void)
{
    const cg_dtype dts[3] = {CG_DTYPE_INT8, CG_DTYPE_FLOAT, CG_DTYPE_DOUBLE};
    const int64_t along[3] = {3, 5, 2}; /* the inputs' sizes along the axis */
    int cases = 0;
    for (int di = 0; di < 3; di++)
        for (int axis = 0; axis < 4; axis++) {
            /* 5 x 41 x 61 around the axis: 125k elements out, enough to split */
            const int64_t others[3] = {5, 41, 61};
            int64_t base[4], odims[4];
            for (int d = 0, o = 0; d < 4; d++)
                base[d] = d == axis ? 0 : others[o++];
            test_case c = {"Concat", 13, 3, 1, {NULL}, {{0}}, 0, NULL, 0};
            memcpy(odims, base, sizeof odims);
            for (int i = 0; i < 3; i++) {
                int64_t d[4];
                memcpy(d, base, sizeof d);
                d[axis] = along[i];
                odims[axis] += along[i];
                c.in[i] = test_tensor(dts[di], 4, d, NULL);
                for (int64_t e = 0; e < c.in[i]->numel; e++)
                    cg_tensor_set_f64(c.in[i], e, (double)((e * 31 + i * 7) % 97) - 48.0);
            }
            c.attrs[c.nattr++] = attr_int("axis", axis);
            int64_t numel = odims[0] * odims[1] * odims[2] * odims[3];
            int64_t inner = 1;
            for (int d = axis + 1; d < 4; d++)
                inner *= odims[d];
            double *want = malloc((size_t)numel * sizeof *want);
            if (!want)
                test_fatal("out of memory");
            /* output element e: outer block o, position a along the axis, r inside */
            for (int64_t e = 0; e < numel; e++) {
                int64_t r = e % inner, a = e / inner % odims[axis], o = e / inner / odims[axis];
                int i = 0;
                while (a >= along[i])
                    a -= along[i++];
                int64_t src = (o * along[i] + a) * inner + r;
                want[e] = cg_tensor_get_f64(c.in[i], src);
            }
            for (int threads = 1; threads <= 3; threads++) {
                cg_runtime_options opt;
                cg_runtime_options_default(&opt);
                opt.threads = threads;
                cg_named_value *outs = NULL;
                size_t nouts = 0;
                cg_error err;
                cg_status st = test_case_run_with(&c, &opt, 2, &outs, &nouts, &err);
                EXPECT(st == CG_OK && nouts == 1, "Concat %s axis %d, %d thread(s): %s",
                       cg_dtype_name(dts[di]), axis, threads, err.msg);
                if (st != CG_OK || nouts != 1)
                    continue;
                const cg_tensor *y = &outs[0].value->tensor;
                int64_t bad = 0, first = -1;
                for (int64_t e = 0; y->numel == numel && e < numel; e++)
                    if (cg_tensor_get_f64(y, e) != want[e] && bad++ == 0)
                        first = e;
                EXPECT(y->numel == numel && bad == 0, "Concat %s axis %d, %d thread(s): %lld of "
                       "%lld elements wrong, the first at %lld", cg_dtype_name(dts[di]), axis,
                       threads, (long long)bad, (long long)numel, (long long)first);
                cg_runtime_free_outputs(outs, nouts);
            }
            free(want);
            test_case_free(&c);
            cases++;
        }
    EXPECT(cases == 12, "%d Concat cases ran", cases);
}

int main(void)
{
    test_gather_index_range();
    test_gather_empty_huge_dims();
    test_scatter_index_range();
    test_bad_attributes();
    test_constant_of_shape_limit();
    test_topk_ties();
    test_unique_unsorted();
    test_slice_negative_step();
    test_exact_int64_and_empty_sets();
    test_onehot_out_of_range();
    test_shape_slice();
    test_concat_threads();
    return test_done("test_ops_shape");
}
