/*
 * The assignment validator (cg_assignment_validate, convgate/partition.h):
 * every invariant partition.h promises, checked from the graph itself, so
 * that a partitioner bug shows up where it is made rather than as a wrong
 * schedule or a wrong boundary cost later. cg_assign runs it on its own
 * result in debug builds (CG_DEBUG); the unit tests run it on every
 * assignment they make.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "core/strmap.h"
#include "ir/graph_index.h"
#include "ir/walk.h"

typedef struct va_ctx {
    const cg_assignment *a;
    const cg_type_env *types;
    cg_graph_index ix;
    cg_error *err;
} va_ctx;

/* Constants (initializers that are not inputs, values the type environment
 * marks constant) never cross: the partitioner leaves them out. */
static bool va_const(const va_ctx *c, size_t val)
{
    unsigned f = c->ix.value_flags[val];
    if ((f & CG_IX_INIT) && !(f & CG_IX_INPUT))
        return true;
    const cg_value_type *vt = c->types ? cg_type_env_get(c->types, c->ix.value_name[val]) : NULL;
    return vt && vt->is_const;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static cg_status va_fail(va_ctx *c, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cg_error_set(c->err, CG_INVALID, "assignment of graph '%s': %s",
                        c->a->graph->name ? c->a->graph->name : "", what);
}

/* Owners and partition lists agree; each partition's nodes are listed once,
 * in topological order; partitions are numbered by their first node. */
static cg_status va_owners(va_ctx *c)
{
    const cg_assignment *a = c->a;
    size_t n = c->ix.node_count;
    size_t *seen = calloc(n + 1, sizeof *seen);
    cg_status st = CG_OK;
    if (!seen)
        return cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
    for (size_t v = 0; v < n && st == CG_OK; v++) {
        int o = a->owner[v], p = a->partition_of[v];
        if (o != CG_OWNER_CPU && (o < 0 || (size_t)o >= a->target_count))
            st = va_fail(c, "node %zu has owner %d of %zu targets", v, o, a->target_count);
        else if (p < -1 || (p >= 0 && (size_t)p >= a->partition_count))
            st = va_fail(c, "node %zu is in partition %d of %zu", v, p, a->partition_count);
        else if ((p < 0) != (o == CG_OWNER_CPU) || (p >= 0 && a->partitions[p].target != o))
            st = va_fail(c, "node %zu: owner %d but partition %d", v, o, p);
    }
    size_t last_first = 0;
    for (size_t p = 0; p < a->partition_count && st == CG_OK; p++) {
        const cg_partition *pp = &a->partitions[p];
        if (pp->id != (int)p || pp->node_count == 0) {
            st = va_fail(c, "partition %zu has id %d and %zu nodes", p, pp->id, pp->node_count);
            break;
        }
        for (size_t k = 0; k < pp->node_count && st == CG_OK; k++) {
            size_t v = pp->nodes[k];
            if (v >= n || a->partition_of[v] != (int)p)
                st = va_fail(c, "partition %zu lists node %zu, not one of its own", p, v);
            else if (k && c->ix.pos[pp->nodes[k - 1]] >= c->ix.pos[v])
                st = va_fail(c, "partition %zu lists its nodes out of topological order (node %zu "
                             "after node %zu)", p, v, pp->nodes[k - 1]);
            else
                seen[v]++;
        }
        if (st == CG_OK && p && c->ix.pos[pp->nodes[0]] <= last_first)
            st = va_fail(c, "partition %zu starts before partition %zu in topological order",
                         p, p - 1);
        if (st == CG_OK)
            last_first = c->ix.pos[pp->nodes[0]];
    }
    for (size_t v = 0; v < n && st == CG_OK; v++)
        if (seen[v] != (a->partition_of[v] >= 0))
            st = va_fail(c, "node %zu is listed by %zu partitions, its partition_of is %d",
                         v, seen[v], a->partition_of[v]);
    free(seen);
    return st;
}

/* The partition graph (partitions, and CPU nodes each on their own) has no
 * cycle: Kahn's algorithm over the node dependencies mapped to units. */
static cg_status va_acyclic(va_ctx *c)
{
    const cg_assignment *a = c->a;
    size_t n = c->ix.node_count, P = a->partition_count, U = P + n;
    size_t *indeg = calloc(U + 1, sizeof *indeg), *queue = malloc((U + 1) * sizeof *queue);
    size_t *unit_nodes_off = calloc(U + 2, sizeof *unit_nodes_off);
    size_t *unit_nodes = malloc((n + 1) * sizeof *unit_nodes);
    cg_status st = CG_OK;
    if (!indeg || !queue || !unit_nodes_off || !unit_nodes) {
        st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
        goto done;
    }
#define VA_UNIT(v) (a->partition_of[v] >= 0 ? (size_t)a->partition_of[v] : P + (v))
    /* edges counted per (consumer node, producer node): a unit's in-degree
     * counts node-level edges from other units, released one by one */
    for (size_t v = 0; v < n; v++)
        for (size_t r = c->ix.pred_off[v]; r < c->ix.pred_off[v + 1]; r++)
            if (VA_UNIT(c->ix.pred[r]) != VA_UNIT(v))
                indeg[VA_UNIT(v)]++;
    for (size_t v = 0; v < n; v++)
        unit_nodes_off[VA_UNIT(v) + 1]++;
    for (size_t u = 0; u < U; u++)
        unit_nodes_off[u + 1] += unit_nodes_off[u];
    {
        size_t *next = calloc(U + 1, sizeof *next);
        if (!next) {
            st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
            goto done;
        }
        for (size_t v = 0; v < n; v++) {
            size_t u = VA_UNIT(v);
            unit_nodes[unit_nodes_off[u] + next[u]++] = v;
        }
        free(next);
    }
    size_t head = 0, tail = 0;
    for (size_t u = 0; u < U; u++)
        if (!indeg[u] && unit_nodes_off[u + 1] > unit_nodes_off[u])
            queue[tail++] = u;
    size_t units = 0;
    for (size_t u = 0; u < U; u++)
        units += unit_nodes_off[u + 1] > unit_nodes_off[u];
    while (head < tail) {
        size_t u = queue[head++];
        for (size_t k = unit_nodes_off[u]; k < unit_nodes_off[u + 1]; k++) {
            size_t v = unit_nodes[k];
            for (size_t r = c->ix.succ_off[v]; r < c->ix.succ_off[v + 1]; r++) {
                size_t w = VA_UNIT(c->ix.succ[r]);
                if (w != u && --indeg[w] == 0)
                    queue[tail++] = w;
            }
        }
    }
#undef VA_UNIT
    if (tail != units) {
        st = va_fail(c, "the partition graph has a cycle (%zu of %zu units ordered)", tail, units);
    }
done:
    free(indeg);
    free(queue);
    free(unit_nodes_off);
    free(unit_nodes);
    return st;
}

/* Side index of node v for stamp arrays: 0 the CPU, 1 + its partition. */
static size_t va_side(const cg_assignment *a, size_t v) { return (size_t)(a->partition_of[v] + 1); }

/* Each partition's inputs and outputs: exactly the non-constant values its
 * nodes read from outside it, and the values it produces that leave it. */
static cg_status va_partition_io(va_ctx *c)
{
    const cg_assignment *a = c->a;
    const cg_graph_index *ix = &c->ix;
    size_t P = a->partition_count;
    cg_strmap *ins = calloc(P + 1, sizeof *ins), *outs = calloc(P + 1, sizeof *outs);
    size_t *want_in = calloc(P + 1, sizeof *want_in), *want_out = calloc(P + 1, sizeof *want_out);
    size_t *stamp = malloc((P + 2) * sizeof *stamp);
    cg_status st = CG_OK;
    if (!ins || !outs || !want_in || !want_out || !stamp) {
        st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
        goto done;
    }
    for (size_t p = 0; p < P && st == CG_OK; p++) {
        const cg_partition *pp = &a->partitions[p];
        for (size_t i = 0; i < pp->input_count && st == CG_OK; i++)
            if (cg_strmap_add(&ins[p], pp->inputs[i], 0) == CG_STRMAP_NONE)
                st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
            else if (ins[p].count != i + 1)
                st = va_fail(c, "partition %zu lists input '%s' twice", p, pp->inputs[i]);
        for (size_t i = 0; i < pp->output_count && st == CG_OK; i++)
            if (cg_strmap_add(&outs[p], pp->outputs[i], 0) == CG_STRMAP_NONE)
                st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
            else if (outs[p].count != i + 1)
                st = va_fail(c, "partition %zu lists output '%s' twice", p, pp->outputs[i]);
    }
    for (size_t i = 0; i < P + 2; i++)
        stamp[i] = CG_IX_NONE;
    for (size_t val = 0; val < ix->value_count && st == CG_OK; val++) {
        size_t prod = ix->producer[val];
        size_t from = prod == CG_IX_NONE ? 0 : va_side(a, prod);
        const char *name = ix->value_name[val];
        bool leaves = (ix->value_flags[val] & CG_IX_OUTPUT) != 0, konst = va_const(c, val);
        for (size_t k = ix->cons_off[val]; k < ix->cons_off[val + 1] && st == CG_OK; k++) {
            size_t to = va_side(a, ix->cons[k]);
            if (to == from)
                continue;
            leaves = true;
            if (to == 0 || konst || stamp[to] == val)
                continue;
            stamp[to] = val;
            want_in[to - 1]++;
            if (!cg_strmap_has(&ins[to - 1], name))
                st = va_fail(c, "partition %zu reads '%s' but does not list it as an input",
                             to - 1, name);
        }
        if (st == CG_OK && from > 0 && leaves) {
            want_out[from - 1]++;
            if (!cg_strmap_has(&outs[from - 1], name))
                st = va_fail(c, "'%s' leaves partition %zu but is not listed as an output", name,
                             from - 1);
        }
    }
    for (size_t p = 0; p < P && st == CG_OK; p++)
        if (want_in[p] != a->partitions[p].input_count ||
            want_out[p] != a->partitions[p].output_count)
            st = va_fail(c, "partition %zu lists %zu inputs and %zu outputs, the graph gives %zu "
                         "and %zu", p, a->partitions[p].input_count,
                         a->partitions[p].output_count, want_in[p], want_out[p]);
done:
    for (size_t p = 0; p < P && ins && outs; p++) {
        cg_strmap_free(&ins[p]);
        cg_strmap_free(&outs[p]);
    }
    free(ins);
    free(outs);
    free(want_in);
    free(want_out);
    free(stamp);
    return st;
}

typedef struct va_key {
    size_t val;
    int to;
} va_key;

static int va_key_cmp(const void *x, const void *y)
{
    const va_key *a = x, *b = y;
    if (a->val != b->val)
        return a->val < b->val ? -1 : 1;
    return (a->to > b->to) - (a->to < b->to);
}

/* Boundaries: every listed one a real crossing of a non-constant value,
 * none listed twice, and as many as the graph has. */
static cg_status va_boundaries(va_ctx *c)
{
    const cg_assignment *a = c->a;
    const cg_graph_index *ix = &c->ix;
    size_t P = a->partition_count, want = 0;
    size_t *stamp = malloc((P + 2) * sizeof *stamp);
    va_key *keys = malloc((a->boundary_count + 1) * sizeof *keys);
    cg_status st = CG_OK;
    if (!stamp || !keys) {
        st = cg_error_set(c->err, CG_NOMEM, "out of memory validating an assignment");
        goto done;
    }
    for (size_t i = 0; i < P + 2; i++)
        stamp[i] = CG_IX_NONE;
    /* the crossings: distinct consumer sides other than the producer's */
    for (size_t val = 0; val < ix->value_count; val++) {
        size_t prod = ix->producer[val];
        if (prod == CG_IX_NONE || va_const(c, val))
            continue;
        for (size_t k = ix->cons_off[val]; k < ix->cons_off[val + 1]; k++) {
            size_t to = va_side(a, ix->cons[k]);
            if (to != va_side(a, prod) && stamp[to] != val) {
                stamp[to] = val;
                want++;
            }
        }
    }
    for (size_t i = 0; i < a->boundary_count && st == CG_OK; i++) {
        const cg_boundary *b = &a->boundaries[i];
        size_t val = b->tensor ? cg_graph_index_value(ix, b->tensor) : CG_IX_NONE;
        size_t prod = val == CG_IX_NONE ? CG_IX_NONE : ix->producer[val];
        bool real = prod != CG_IX_NONE && a->partition_of[prod] == b->from_partition &&
                    b->from_partition != b->to_partition && !va_const(c, val);
        bool reaches = false;
        for (size_t k = real ? ix->cons_off[val] : 0; real && k < ix->cons_off[val + 1]; k++)
            reaches |= a->partition_of[ix->cons[k]] == b->to_partition;
        if (!real || !reaches)
            st = va_fail(c, "boundary '%s' %d -> %d is not a crossing of the graph",
                         b->tensor ? b->tensor : "(null)", b->from_partition, b->to_partition);
        keys[i].val = val;
        keys[i].to = b->to_partition;
    }
    if (st == CG_OK) {
        /* the producer fixes from: (value, to) identifies a crossing */
        qsort(keys, a->boundary_count, sizeof *keys, va_key_cmp);
        for (size_t i = 1; i < a->boundary_count && st == CG_OK; i++)
            if (keys[i].val == keys[i - 1].val && keys[i].to == keys[i - 1].to)
                st = va_fail(c, "boundary '%s' -> %d is listed twice", ix->value_name[keys[i].val],
                             keys[i].to);
    }
    if (st == CG_OK && want != a->boundary_count)
        st = va_fail(c, "%zu boundaries listed, the graph has %zu crossings", a->boundary_count,
                     want);
done:
    free(stamp);
    free(keys);
    return st;
}

cg_status cg_assignment_validate(const cg_assignment *a, const cg_type_env *types, cg_error *err)
{
    if (!a || !a->graph || (a->graph->node_count && (!a->owner || !a->partition_of)))
        return cg_error_set(err, CG_USAGE, "cg_assignment_validate: an incomplete assignment");
    va_ctx c = {a, types, {0}, err};
    cg_status st = cg_graph_index_build(a->graph, NULL, &c.ix, err);
    if (st == CG_OK)
        st = va_owners(&c);
    if (st == CG_OK)
        st = va_acyclic(&c);
    if (st == CG_OK)
        st = va_partition_io(&c);
    if (st == CG_OK)
        st = va_boundaries(&c);
    cg_graph_index_free(&c.ix);
    return st;
}
