/* The unit tests' harness, model builder and one-node runner (testlib.h). */
#include <stdarg.h>
#include <stdlib.h>

#include "convgate/golden.h"
#include "convgate/tensor_io.h"
#include "core/arena.h"
#include "testlib.h"

int test_failures;
static int test_skips;

void test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("SKIPPED: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    test_skips++;
}

int test_done(const char *name)
{
    if (test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
        return 1;
    }
    if (test_skips) {
        printf("%s: passed, %d part(s) skipped\n", name, test_skips);
        return 77;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

_Noreturn void test_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FATAL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* --- tensors and values ------------------------------------------------------ */

cg_tensor *test_tensor(cg_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    cg_tensor *t = calloc(1, sizeof *t);
    cg_error err;
    cg_error_clear(&err);
    if (!t || cg_tensor_alloc(t, dt, rank, dims, 0, &err) != CG_OK)
        test_fatal("tensor alloc failed: %s", err.msg);
    for (int64_t i = 0; vals && i < t->numel; i++)
        cg_tensor_set_f64(t, i, vals[i]);
    return t;
}

void test_tensor_free(cg_tensor *t)
{
    if (!t)
        return;
    cg_tensor_release(t);
    free(t);
}

cg_tensor test_view(cg_dtype dt, int rank, const int64_t *dims, void *data)
{
    cg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    t.numel = 1;
    for (int d = 0; d < rank; d++) {
        t.dims[d] = dims[d];
        t.numel *= dims[d];
    }
    t.data = data;
    return t;
}

cg_value *test_value(cg_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    cg_value *v = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (cg_value_alloc_tensor(dt, rank, dims, &v, &err) != CG_OK)
        test_fatal("value alloc failed: %s", err.msg);
    for (int64_t i = 0; vals && i < v->tensor.numel; i++)
        cg_tensor_set_f64(&v->tensor, i, vals[i]);
    return v;
}

/* --- files ------------------------------------------------------------------------ */

cg_model *test_load_model(const char *path)
{
    char full[4096];
    if (path[0] != '/')
        snprintf(full, sizeof full, "%s/%s", CG_SOURCE_DIR, path);
    else
        snprintf(full, sizeof full, "%s", path);
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    if (cg_model_load(full, NULL, &m, &err) != CG_OK) {
        fprintf(stderr, "cannot load %s: %s\n", full, err.msg);
        test_failures++;
        return NULL;
    }
    return m;
}

cg_value *test_load_npy(const char *path)
{
    cg_error err;
    cg_error_clear(&err);
    cg_tensor t;
    cg_value *v = NULL;
    memset(&t, 0, sizeof t);
    if (cg_npy_load(path, CG_IO_DEFAULT_MAX_BYTES, &t, &err) != CG_OK ||
        cg_value_from_tensor(&t, &v, &err) != CG_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err.msg);
        test_failures++;
        cg_tensor_release(&t);
        return NULL;
    }
    return v;
}

bool test_zoo_superseded(const char *path, const char *file)
{
    char list[1024], line[512], hex[CG_SHA256_HEX];
    snprintf(list, sizeof list, "%s/bench/zoo.superseded", CG_SOURCE_DIR);
    FILE *f = fopen(list, "r");
    if (!f)
        return false;
    bool hashed = false, found = false;
    size_t flen = strlen(file);
    while (!found && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || strncmp(line, file, flen) != 0 || line[flen] != '\t')
            continue;
        cg_error err;
        uint64_t bytes = 0;
        if (!hashed && cg_sha256_file(path, hex, &bytes, &err) != CG_OK)
            break;
        hashed = true;
        found = strncmp(line + flen + 1, hex, CG_SHA256_HEX - 1) == 0;
    }
    fclose(f);
    if (found)
        printf("%-34s a superseded export (bench/zoo.superseded): skipped; tools/fetch_zoo.sh "
               "exports it again\n", file);
    return found;
}

const cg_lower_removed *test_removed(const cg_lowered *l, const char *node)
{
    for (size_t i = 0; i < l->removed_count; i++)
        if (strcmp(l->removed[i].name, node) == 0)
            return &l->removed[i];
    return NULL;
}

/* --- models built in memory --------------------------------------------------- */

static void *test_alloc(cg_model *m, size_t count, size_t size)
{
    void *p = cg_arena_calloc(m->arena, count ? count : 1, size);
    if (!p)
        test_fatal("out of memory building a test model");
    return p;
}

cg_model *test_model_new(int64_t opset)
{
    cg_model *m = calloc(1, sizeof *m);
    if (!m || !(m->arena = cg_arena_new()))
        test_fatal("out of memory building a test model");
    m->opsets = test_alloc(m, 1, sizeof *m->opsets);
    m->opsets[0].domain = "";
    m->opsets[0].version = opset;
    m->opsets[0].has_version = true;
    m->opset_count = 1;
    m->ir_version = 8;
    m->has_ir_version = true;
    return m;
}

void test_model_import(cg_model *m, const char *domain, int64_t version)
{
    cg_opset_id *ops = test_alloc(m, m->opset_count + 1, sizeof *ops);
    memcpy(ops, m->opsets, m->opset_count * sizeof *ops);
    ops[m->opset_count].domain = domain;
    ops[m->opset_count].version = version;
    ops[m->opset_count].has_version = true;
    m->opsets = ops;
    m->opset_count++;
}

cg_status test_model_run(const cg_model *m, size_t max_alloc, const cg_named_value *feeds,
                         size_t nfeed, cg_named_value **outs, size_t *nouts, cg_error *err)
{
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    if (max_alloc)
        opt.max_alloc_bytes = max_alloc;
    return test_model_run_with(m, &opt, 1, feeds, nfeed, outs, nouts, err);
}

cg_status test_model_run_with(const cg_model *m, const cg_runtime_options *opt, int runs,
                              const cg_named_value *feeds, size_t nfeed, cg_named_value **outs,
                              size_t *nouts, cg_error *err)
{
    cg_runtime *rt = NULL;
    *outs = NULL;
    *nouts = 0;
    cg_status st = cg_runtime_init(m, opt, &rt, err);
    for (int r = 0; st == CG_OK && r < (runs > 1 ? runs : 1); r++) {
        cg_runtime_free_outputs(*outs, *nouts);
        *outs = NULL;
        *nouts = 0;
        st = cg_runtime_run(rt, feeds, nfeed, outs, nouts, err);
    }
    cg_runtime_free(rt);
    return st;
}

cg_graph *test_graph_new(cg_model *m, const char *name, size_t cap)
{
    cg_graph *g = test_alloc(m, 1, sizeof *g);
    g->name = name;
    g->nodes = test_alloc(m, cap, sizeof *g->nodes);
    g->inputs = test_alloc(m, 16, sizeof *g->inputs);
    g->outputs = test_alloc(m, 16, sizeof *g->outputs);
    g->initializers = test_alloc(m, 16, sizeof *g->initializers);
    return g;
}

/* "a,,b" -> {"a", "", "b"}; "" -> none. */
static const char **test_names(cg_model *m, const char *csv, size_t *count);

cg_model *test_model_graph(int64_t opset, size_t cap, const char *ins, const char *outs)
{
    cg_model *m = test_model_new(opset);
    cg_graph *g = m->graph = test_graph_new(m, "main", cap);
    size_t n;
    const char **names = test_names(m, ins, &n);
    for (size_t i = 0; i < n; i++)
        test_graph_input(g, names[i], NULL);
    names = test_names(m, outs, &n);
    for (size_t i = 0; i < n; i++)
        test_graph_output(g, names[i], NULL);
    return m;
}

static const char **test_names(cg_model *m, const char *csv, size_t *count)
{
    size_t cap = 1;
    for (const char *p = csv ? csv : ""; *p; p++)
        cap += *p == ',';
    const char **out = test_alloc(m, cap, sizeof *out);
    *count = 0;
    if (!csv || !csv[0])
        return out;
    const char *p = csv;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        out[(*count)++] = cg_arena_strndup(m->arena, p, len);
        if (!e)
            break;
        p = e + 1;
    }
    return out;
}

cg_node *test_node(cg_model *m, cg_graph *g, const char *op, const char *name,
                   const char *ins, const char *outs)
{
    cg_node *n = &g->nodes[g->node_count++];
    n->op_type = cg_arena_strndup(m->arena, op, strlen(op));
    n->name = name ? cg_arena_strndup(m->arena, name, strlen(name)) : NULL;
    n->domain = "";
    n->inputs = test_names(m, ins, &n->input_count);
    n->outputs = test_names(m, outs, &n->output_count);
    n->attrs = test_alloc(m, 8, sizeof *n->attrs);
    return n;
}

cg_attr *test_node_attr(cg_node *n, const char *name, cg_attr_type type)
{
    if (n->attr_count == 8)
        test_fatal("node '%s': more than 8 attributes", n->name ? n->name : "");
    cg_attr *a = &n->attrs[n->attr_count++];
    *a = test_attr(name, type);
    return a;
}

void test_node_add_attr(cg_node *n, cg_attr a)
{
    *test_node_attr(n, a.name, (cg_attr_type)a.type) = a;
}

cg_type *test_type(cg_model *m, cg_dtype dt, int rank, const int64_t *dims)
{
    cg_type *t = test_alloc(m, 1, sizeof *t);
    t->kind = CG_TYPE_TENSOR;
    t->elem_type = dt;
    t->has_elem_type = true;
    if (rank >= 0) {
        t->shape = test_alloc(m, 1, sizeof *t->shape);
        t->shape->rank = (size_t)rank;
        t->shape->dims = test_alloc(m, (size_t)rank + 1, sizeof *t->shape->dims);
        for (int i = 0; i < rank; i++) {
            t->shape->dims[i].has_value = dims[i] >= 0;
            t->shape->dims[i].value = dims[i];
            t->shape->dims[i].param = dims[i] >= 0 ? NULL : "N";
        }
    }
    return t;
}

void test_graph_input(cg_graph *g, const char *name, cg_type *t)
{
    g->inputs[g->input_count].name = name;
    g->inputs[g->input_count++].type = t;
}

void test_graph_output(cg_graph *g, const char *name, cg_type *t)
{
    g->outputs[g->output_count].name = name;
    g->outputs[g->output_count++].type = t;
}

cg_tensor_proto *test_graph_init_f32(cg_model *m, cg_graph *g, const char *name, int rank,
                                     const int64_t *dims, const float *vals)
{
    cg_tensor_proto *tp = &g->initializers[g->initializer_count++];
    int64_t n = 1;
    tp->name = name;
    tp->data_type = CG_DTYPE_FLOAT;
    tp->has_data_type = true;
    tp->rank = (size_t)rank;
    tp->dims = test_alloc(m, (size_t)rank + 1, sizeof *tp->dims);
    for (int i = 0; i < rank; i++) {
        tp->dims[i] = dims[i];
        n *= dims[i];
    }
    float *d = test_alloc(m, (size_t)n + 1, sizeof *d);
    memcpy(d, vals, (size_t)n * sizeof *d);
    tp->float_data.data = d;
    tp->float_data.count = (size_t)n;
    return tp;
}

cg_tensor_proto *test_graph_init_raw(cg_model *m, cg_graph *g, const char *name, cg_dtype dt,
                                     int rank, const int64_t *dims, const void *raw, size_t len)
{
    cg_tensor_proto *tp = &g->initializers[g->initializer_count++];
    tp->name = name;
    tp->data_type = dt;
    tp->has_data_type = true;
    tp->rank = (size_t)rank;
    tp->dims = test_alloc(m, (size_t)rank + 1, sizeof *tp->dims);
    for (int i = 0; i < rank; i++)
        tp->dims[i] = dims[i];
    tp->raw_data.data = raw;
    tp->raw_data.len = len;
    return tp;
}

/* --- one-node models ---------------------------------------------------------- */

static const char *const test_in_names[TEST_MAX_IO] = {"in0", "in1", "in2", "in3",
                                                       "in4", "in5", "in6", "in7"};
static const char *const test_out_names[TEST_MAX_IO] = {"out0", "out1", "out2", "out3",
                                                        "out4", "out5", "out6", "out7"};

cg_status test_case_run(const test_case *c, cg_named_value **outs, size_t *nouts,
                        cg_error *err)
{
    return test_case_run_with(c, NULL, 1, outs, nouts, err);
}

cg_status test_case_run_with(const test_case *c, const cg_runtime_options *opt, int runs,
                             cg_named_value **outs, size_t *nouts, cg_error *err)
{
    const char *node_in[TEST_MAX_IO];
    cg_type types[2 * TEST_MAX_IO];
    cg_value_info gin[TEST_MAX_IO], gout[TEST_MAX_IO];
    cg_named_value feeds[TEST_MAX_IO];
    size_t nfeed = 0;
    cg_status st = CG_OK;
    *outs = NULL;
    *nouts = 0;
    cg_error_clear(err);
    if (c->nin > TEST_MAX_IO || c->nout > TEST_MAX_IO || c->nattr > TEST_MAX_ATTRS)
        test_fatal("test case %s: too many inputs, outputs or attributes", c->op);
    memset(types, 0, sizeof types);
    memset(gin, 0, sizeof gin);
    memset(gout, 0, sizeof gout);
    for (size_t i = 0; i < c->nin; i++) {
        node_in[i] = c->in[i] ? test_in_names[i] : "";
        if (!c->in[i])
            continue;
        types[nfeed].kind = CG_TYPE_TENSOR;
        types[nfeed].elem_type = (int32_t)c->in[i]->dtype;
        types[nfeed].has_elem_type = true;
        gin[nfeed].name = test_in_names[i];
        gin[nfeed].type = &types[nfeed];
        cg_tensor copy;
        if ((st = cg_tensor_alloc(&copy, c->in[i]->dtype, c->in[i]->rank, c->in[i]->dims, 0,
                                  err)) != CG_OK)
            goto done;
        if (copy.dtype == CG_DTYPE_STRING) {
            for (int64_t e = 0; e < copy.numel && st == CG_OK; e++) {
                size_t len;
                const char *s = cg_tensor_string(c->in[i], e, &len);
                st = cg_tensor_set_string(&copy, e, s, len);
            }
        } else if (cg_tensor_bytes(&copy)) {
            memcpy(copy.data, c->in[i]->data, cg_tensor_bytes(&copy));
        }
        if (st != CG_OK || (st = cg_value_from_tensor(&copy, &feeds[nfeed].value, err)) != CG_OK) {
            cg_tensor_release(&copy);
            goto done;
        }
        feeds[nfeed++].name = test_in_names[i];
    }
    for (size_t i = 0; i < c->nout; i++) {
        gout[i].name = test_out_names[i];
        gout[i].type = &types[TEST_MAX_IO + i];
        types[TEST_MAX_IO + i].kind = CG_TYPE_TENSOR;
    }
    cg_node node;
    memset(&node, 0, sizeof node);
    node.name = TEST_NODE_NAME;
    node.op_type = c->op;
    node.domain = c->domain ? c->domain : "";
    node.inputs = node_in;
    node.input_count = c->nin;
    node.outputs = (const char **)test_out_names;
    node.output_count = c->nout;
    node.attrs = (cg_attr *)c->attrs;
    node.attr_count = c->nattr;
    cg_graph g;
    memset(&g, 0, sizeof g);
    g.name = "test_graph";
    g.nodes = &node;
    g.node_count = 1;
    g.inputs = gin;
    g.input_count = nfeed;
    g.outputs = gout;
    g.output_count = c->nout;
    cg_opset_id ops[2] = {{"", c->opset, true, {NULL, 0}}, {c->domain, 1, true, {NULL, 0}}};
    cg_model m;
    memset(&m, 0, sizeof m);
    m.ir_version = 8;
    m.has_ir_version = true;
    m.opsets = ops;
    m.opset_count = c->domain && c->domain[0] ? 2 : 1;
    m.graph = &g;
    cg_runtime_options dflt;
    cg_runtime_options_default(&dflt);
    if (c->max_alloc)
        dflt.max_alloc_bytes = c->max_alloc;
    st = test_model_run_with(&m, opt ? opt : &dflt, runs, feeds, nfeed, outs, nouts, err);
done:
    for (size_t i = 0; i < nfeed; i++)
        cg_value_free(feeds[i].value);
    return st;
}

void test_case_expect_fail(const test_case *c, const char *needle, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = test_case_run(c, &outs, &nouts, &err);
    EXPECT(st != CG_OK, "%s: expected a failure", what);
    if (st == CG_OK) {
        cg_runtime_free_outputs(outs, nouts);
        return;
    }
    EXPECT(strstr(err.msg, TEST_NODE_NAME) != NULL, "%s: message does not name the node: %s",
           what, err.msg);
    EXPECT(strstr(err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle, err.msg);
}

double *test_case_values(const test_case *c, size_t i, int64_t *numel, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    *numel = 0;
    cg_status st = test_case_run(c, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "%s: run failed: %s", what, err.msg);
    if (st != CG_OK)
        return NULL;
    EXPECT(i < nouts && outs[i].value->kind == CG_VALUE_TENSOR, "%s: no tensor output %zu",
           what, i);
    if (i >= nouts || outs[i].value->kind != CG_VALUE_TENSOR) {
        cg_runtime_free_outputs(outs, nouts);
        return NULL;
    }
    const cg_tensor *t = &outs[i].value->tensor;
    double *v = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
    if (!v)
        test_fatal("out of memory");
    for (int64_t e = 0; e < t->numel; e++)
        v[e] = cg_tensor_get_f64(t, e);
    *numel = t->numel;
    cg_runtime_free_outputs(outs, nouts);
    return v;
}

void test_case_free(test_case *c)
{
    for (size_t i = 0; i < c->nin; i++) {
        test_tensor_free(c->in[i]);
        c->in[i] = NULL;
    }
}
