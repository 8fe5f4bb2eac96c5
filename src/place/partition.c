/*
 * The partitioner: which nodes each target takes, grouped into partitions,
 * and the tensors that cross between them and the CPU.
 *
 * Targets are asked in priority order. In its round a target sees every
 * node no earlier target kept; it groups the nodes it supports, in
 * topological order, into connected groups: a node joins the partition(s)
 * of its producers unless that would close a cycle in the partition graph
 * (graph whose vertices are partitions and single CPU/unclaimed nodes), in
 * which case it starts a new partition. Cycle test: the merged unit X gets
 * a cycle exactly when some vertex outside X both depends on X and feeds
 * it, so we search backwards from X's outside producers, expanding whole
 * partitions (a partition runs as one unit: whatever feeds any of its nodes
 * feeds all of it), and refuse the merge if the search comes back into X.
 * Every unit carries a level that grows along each edge of the partition
 * graph (longest path at the start of a round, lifted as partitions grow),
 * so the search skips every unit at or below X's lowest level: on real
 * models it touches a handful of nodes, and 10,000 nodes assign in ~10 ms
 * (tests/unit/test_partition.c prints the figures).
 *
 * After grouping, the target's rules apply: stop ops (the op and everything
 * downstream never form part of this target's partitions), no_single_ops,
 * min_nodes, max_partitions. Dropped nodes return to the pool for the next
 * target. Splitting a partition back into single nodes cannot create a
 * cycle, so the invariant (acyclic partition graph) holds after every step.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/partition.h"
#include "core/assert.h"
#include "ir/graph_index.h"
#include "ir/walk.h"

#define PT_NONE CG_IX_NONE
#define PT_REASON_MAX 512

/* --- small containers ---------------------------------------------------------- */

typedef struct pt_vec {
    size_t *v;
    size_t n, cap;
} pt_vec;

/* Appends x; false when out of memory. */
static bool pt_vec_push(pt_vec *a, size_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *a->v)
            return false;
        size_t *nv = realloc(a->v, cap * sizeof *nv);
        if (!nv)
            return false;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

static char *pt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static const char *pt_label(const cg_graph *g, size_t i, char *buf, size_t len)
{
    return cg_assign_node_label(g, i, buf, len);
}

/* --- assignment state ------------------------------------------------------------- */

/* A partition while it forms. `ext` lists nodes outside it that read its
 * nodes (may hold stale entries: nodes that joined since; compacted when
 * walked). `level` orders the partition graph, see pt_levels. */
typedef struct pt_part {
    int target;
    bool alive;
    pt_vec nodes;
    pt_vec ext;
    size_t level;
} pt_part;

typedef struct pt_drop {
    size_t node;
    int target;
    char *rule;
} pt_drop;

typedef struct pt_state {
    const cg_model *model;
    const cg_type_env *types;
    cg_graph_index gr;
    const cg_target *const *targets;
    size_t ntargets;
    int *unit;           /* per node: partition index or -1 (a single node) */
    pt_part *parts;
    size_t nparts, capparts;
    int *refused_by;     /* per node: first target that refused it, or -1 */
    char **refusal;      /* its reason */
    pt_drop *drops;
    size_t ndrops, capdrops;
    /* cycle-search scratch: a vertex is visited when its mark equals epoch */
    unsigned *node_mark, *part_mark;
    unsigned epoch;
    pt_vec stack;
    /* levels of single nodes (partitions keep theirs); scratch for pt_levels */
    size_t *level;
    size_t *indeg_node, *indeg_part;
} pt_state;

/* Starts a new partition for target t holding node v; -1 when out of memory. */
static int pt_part_new(pt_state *st, int t, size_t v)
{
    if (st->nparts == st->capparts) {
        size_t cap = st->capparts ? st->capparts * 2 : 16;
        if (cap > (size_t)INT_MAX || cap > SIZE_MAX / sizeof *st->parts)
            return -1;
        pt_part *np = realloc(st->parts, cap * sizeof *np);
        unsigned *pm = realloc(st->part_mark, cap * sizeof *pm);
        size_t *pi = realloc(st->indeg_part, cap * sizeof *pi);
        if (np)
            st->parts = np;
        if (pi)
            st->indeg_part = pi;
        if (pm) {
            st->part_mark = pm;
            for (size_t i = st->capparts; i < cap; i++)
                pm[i] = 0;
        }
        if (!np || !pm || !pi)
            return -1;
        st->capparts = cap;
    }
    pt_part *p = &st->parts[st->nparts];
    memset(p, 0, sizeof *p);
    p->target = t;
    p->alive = true;
    p->level = st->level[v];
    st->unit[v] = (int)st->nparts++;
    if (!pt_vec_push(&p->nodes, v))
        return -1;
    for (size_t r = st->gr.succ_off[v]; r < st->gr.succ_off[v + 1]; r++)
        if (!pt_vec_push(&p->ext, st->gr.succ[r]))
            return -1;
    return st->unit[v];
}

/* Records that target t dropped node v by `rule`; false when out of memory. */
static bool pt_drop_add(pt_state *st, size_t v, int t, const char *rule)
{
    if (st->ndrops == st->capdrops) {
        size_t cap = st->capdrops ? st->capdrops * 2 : 16;
        if (cap > SIZE_MAX / sizeof *st->drops)
            return false;
        pt_drop *nd = realloc(st->drops, cap * sizeof *nd);
        if (!nd)
            return false;
        st->drops = nd;
        st->capdrops = cap;
    }
    char *r = pt_strdup(rule);
    if (!r)
        return false;
    st->drops[st->ndrops].node = v;
    st->drops[st->ndrops].target = t;
    st->drops[st->ndrops].rule = r;
    st->ndrops++;
    return true;
}

/* True when node w belongs to the merge candidate X = {v} + partitions xp. */
static bool pt_in_x(const pt_state *st, size_t w, size_t v, const int *xp, size_t nx)
{
    if (w == v)
        return true;
    int u = st->unit[w];
    if (u < 0)
        return false;
    for (size_t i = 0; i < nx; i++)
        if (xp[i] == u)
            return true;
    return false;
}

static void pt_next_epoch(pt_state *st)
{
    if (st->epoch == UINT_MAX) {
        memset(st->node_mark, 0, st->gr.node_count * sizeof *st->node_mark);
        memset(st->part_mark, 0, st->capparts * sizeof *st->part_mark);
        st->epoch = 0;
    }
    st->epoch++;
}

/* The level of the unit holding node w. */
static size_t pt_level(const pt_state *st, size_t w)
{
    int u = st->unit[w];
    return u >= 0 ? st->parts[u].level : st->level[w];
}

/* Levels: a number per unit (partition or single node) that grows along
 * every edge of the partition graph. A unit at or below the lowest level
 * of X cannot depend on X, which bounds the cycle search. Computed per
 * round by Kahn's algorithm over units (longest path), then kept valid
 * as partitions grow (pt_raise). */
static cg_status pt_levels(pt_state *st, cg_error *err)
{
    const cg_graph_index *gr = &st->gr;
    size_t n = gr->node_count, done = 0;
    for (size_t p = 0; p < st->nparts; p++) {
        pt_part *part = &st->parts[p];
        st->indeg_part[p] = 0;
        part->ext.n = 0;
        if (!part->alive)
            continue;
        for (size_t k = 0; k < part->nodes.n; k++) {
            size_t m = part->nodes.v[k];
            for (size_t r = gr->succ_off[m]; r < gr->succ_off[m + 1]; r++)
                if (st->unit[gr->succ[r]] != (int)p && !pt_vec_push(&part->ext, gr->succ[r]))
                    goto nomem;
        }
    }
    for (size_t m = 0; m < n; m++) {
        st->indeg_node[m] = 0;
        st->level[m] = 0;
    }
    for (size_t m = 0; m < n; m++) {
        int u = st->unit[m];
        for (size_t r = gr->pred_off[m]; r < gr->pred_off[m + 1]; r++)
            if (u < 0)
                st->indeg_node[m]++;
            else if (st->unit[gr->pred[r]] != u)
                st->indeg_part[u]++;
    }
    /* queue entries: node m as m, partition p as n + p */
    st->stack.n = 0;
    for (size_t m = 0; m < n; m++)
        if (st->unit[m] < 0 && !st->indeg_node[m] && !pt_vec_push(&st->stack, m))
            goto nomem;
    for (size_t p = 0; p < st->nparts; p++) {
        st->parts[p].level = 0;
        if (st->parts[p].alive && !st->indeg_part[p] && !pt_vec_push(&st->stack, n + p))
            goto nomem;
    }
    while (st->stack.n) {
        size_t e = st->stack.v[--st->stack.n];
        size_t lvl = e < n ? st->level[e] : st->parts[e - n].level;
        size_t count = e < n ? 1 : st->parts[e - n].nodes.n;
        done++;
        for (size_t k = 0; k < count; k++) {
            size_t m = e < n ? e : st->parts[e - n].nodes.v[k];
            for (size_t r = gr->succ_off[m]; r < gr->succ_off[m + 1]; r++) {
                size_t s = gr->succ[r];
                int us = st->unit[s];
                if (e >= n && us == (int)(e - n))
                    continue;
                size_t *ls = us < 0 ? &st->level[s] : &st->parts[us].level;
                if (*ls < lvl + 1)
                    *ls = lvl + 1;
                size_t *deg = us < 0 ? &st->indeg_node[s] : &st->indeg_part[us];
                if (--*deg == 0 && !pt_vec_push(&st->stack, us < 0 ? s : n + (size_t)us))
                    goto nomem;
            }
        }
    }
    size_t units = 0;
    for (size_t m = 0; m < n; m++)
        units += st->unit[m] < 0;
    for (size_t p = 0; p < st->nparts; p++)
        units += st->parts[p].alive;
    if (done != units)
        return cg_error_set(err, CG_INVALID,
                            "internal error: the partition graph of '%s' has a cycle",
                            gr->graph->name ? gr->graph->name : "");
    return CG_OK;
nomem:
    return cg_error_set(err, CG_NOMEM, "out of memory ordering partitions");
}

/* Partition p's level rose: lift every unit downstream that is not above
 * it any more, so levels keep growing along every edge. In an acyclic
 * partition graph no level exceeds the number of units; a higher one means
 * the invariant broke, and stops the lift instead of looping. */
static cg_status pt_raise(pt_state *st, int p, cg_error *err)
{
    const cg_graph_index *gr = &st->gr;
    size_t bound = gr->node_count + st->nparts;
    st->stack.n = 0;
    if (!pt_vec_push(&st->stack, gr->node_count + (size_t)p))
        goto nomem;
    while (st->stack.n) {
        size_t e = st->stack.v[--st->stack.n];
        if (e < gr->node_count) {
            size_t lvl = st->level[e];
            for (size_t r = gr->succ_off[e]; r < gr->succ_off[e + 1]; r++) {
                size_t s = gr->succ[r];
                int us = st->unit[s];
                size_t *ls = us < 0 ? &st->level[s] : &st->parts[us].level;
                if (*ls <= lvl) {
                    *ls = lvl + 1;
                    if (*ls > bound)
                        goto cycle;
                    if (!pt_vec_push(&st->stack, us < 0 ? s : gr->node_count + (size_t)us))
                        goto nomem;
                }
            }
            continue;
        }
        int u = (int)(e - gr->node_count);
        pt_part *part = &st->parts[u];
        size_t keep = 0;
        for (size_t k = 0; k < part->ext.n; k++) {
            size_t s = part->ext.v[k];
            int us = st->unit[s];
            if (us == u)
                continue; /* joined since: drop the stale entry */
            part->ext.v[keep++] = s;
            size_t *ls = us < 0 ? &st->level[s] : &st->parts[us].level;
            if (*ls <= part->level) {
                *ls = part->level + 1;
                if (*ls > bound)
                    goto cycle;
                if (!pt_vec_push(&st->stack, us < 0 ? s : gr->node_count + (size_t)us))
                    goto nomem;
            }
        }
        part->ext.n = keep;
    }
    return CG_OK;
nomem:
    return cg_error_set(err, CG_NOMEM, "out of memory ordering partitions");
cycle:
    return cg_error_set(err, CG_INVALID,
                        "internal error: the partition graph of '%s' has a cycle",
                        gr->graph->name ? gr->graph->name : "");
}

/* Pushes the producers of node m that are not yet visited and whose level
 * is above `floor` (at or below it they cannot depend on X). While seeding,
 * producers inside X are edges within the merged unit and are skipped;
 * during the search, reaching X means X feeds something that feeds X. */
static bool pt_push_preds(pt_state *st, size_t m, size_t v, const int *xp, size_t nx,
                          size_t floor, bool seeding, bool *hit)
{
    const cg_graph_index *gr = &st->gr;
    for (size_t r = gr->pred_off[m]; r < gr->pred_off[m + 1]; r++) {
        size_t p = gr->pred[r];
        if (st->node_mark[p] == st->epoch)
            continue;
        if (pt_in_x(st, p, v, xp, nx)) {
            if (seeding)
                continue;
            *hit = true;
            return true;
        }
        if (pt_level(st, p) <= floor)
            continue;
        if (!pt_vec_push(&st->stack, p))
            return false;
    }
    return true;
}

/* Would merging {v} and partitions xp[0..nx) into one unit close a cycle?
 * Searches backwards from X's outside producers, a partition at a time,
 * for a way back into X. With one partition it is enough to start from v:
 * v has a producer in that partition, so a path from v's successors back
 * into the partition would already be a cycle. */
static cg_status pt_would_cycle(pt_state *st, size_t v, const int *xp, size_t nx, bool *cycle,
                                cg_error *err)
{
    bool hit = false;
    size_t floor = SIZE_MAX;
    for (size_t i = 0; i < nx; i++)
        if (st->parts[xp[i]].level < floor)
            floor = st->parts[xp[i]].level;
    pt_next_epoch(st);
    st->stack.n = 0;
    if (!pt_push_preds(st, v, v, xp, nx, floor, true, &hit))
        goto nomem;
    if (nx > 1)
        for (size_t i = 0; i < nx; i++) {
            const pt_part *p = &st->parts[xp[i]];
            for (size_t k = 0; k < p->nodes.n; k++)
                if (!pt_push_preds(st, p->nodes.v[k], v, xp, nx, floor, true, &hit))
                    goto nomem;
        }
    while (st->stack.n && !hit) {
        size_t w = st->stack.v[--st->stack.n];
        if (st->node_mark[w] == st->epoch)
            continue;
        st->node_mark[w] = st->epoch;
        int u = st->unit[w];
        if (u >= 0) {
            /* a partition runs as one unit: whatever feeds any of its
             * nodes comes before all of it */
            if (st->part_mark[u] == st->epoch)
                continue;
            st->part_mark[u] = st->epoch;
            const pt_part *p = &st->parts[u];
            for (size_t k = 0; k < p->nodes.n && !hit; k++)
                if (!pt_push_preds(st, p->nodes.v[k], v, xp, nx, floor, false, &hit))
                    goto nomem;
        } else if (!pt_push_preds(st, w, v, xp, nx, floor, false, &hit)) {
            goto nomem;
        }
    }
    *cycle = hit;
    return CG_OK;
nomem:
    return cg_error_set(err, CG_NOMEM, "out of memory searching for partition cycles");
}

static bool pt_op_in(const char *op, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (list[i] && op && strcmp(list[i], op) == 0)
            return true;
    return false;
}

/* Moves every node of partition `from` into `into`. */
static bool pt_part_absorb(pt_state *st, int into, int from)
{
    pt_part *dst = &st->parts[into], *src = &st->parts[from];
    for (size_t k = 0; k < src->nodes.n; k++) {
        if (!pt_vec_push(&dst->nodes, src->nodes.v[k]))
            return false;
        st->unit[src->nodes.v[k]] = into;
    }
    for (size_t k = 0; k < src->ext.n; k++)
        if (!pt_vec_push(&dst->ext, src->ext.v[k]))
            return false;
    free(src->nodes.v);
    free(src->ext.v);
    memset(&src->nodes, 0, sizeof src->nodes);
    memset(&src->ext, 0, sizeof src->ext);
    src->alive = false;
    return true;
}

/* Returns partition p's nodes to the pool, each recorded with `rule`. */
static bool pt_part_drop(pt_state *st, int p, const char *rule)
{
    pt_part *part = &st->parts[p];
    for (size_t k = 0; k < part->nodes.n; k++) {
        st->unit[part->nodes.v[k]] = -1;
        if (!pt_drop_add(st, part->nodes.v[k], part->target, rule))
            return false;
    }
    free(part->nodes.v);
    free(part->ext.v);
    memset(&part->nodes, 0, sizeof part->nodes);
    memset(&part->ext, 0, sizeof part->ext);
    part->alive = false;
    return true;
}

const char *cg_assign_bare_reason(const cg_graph *g, size_t node, const char *reason)
{
    char label[128];
    if (node >= g->node_count || !reason)
        return reason;
    const char *op = g->nodes[node].op_type ? g->nodes[node].op_type : "";
    size_t n = strlen(op);
    cg_assign_node_label(g, node, label, sizeof label);
    /* profile reasons name an op outside ai.onnx as "domain:Op" */
    const char *dom = g->nodes[node].domain, *r = reason;
    size_t dn = dom && *dom ? strlen(dom) : 0;
    if (dn && strncmp(r, dom, dn) == 0 && r[dn] == ':')
        r += dn + 1;
    if (strncmp(r, op, n) != 0 || r[n] != ' ' || r[n + 1] != '\'')
        return reason;
    const char *p = r + n + 2;
    size_t ln = strlen(label);
    if (strncmp(p, label, ln) != 0 || strncmp(p + ln, "': ", 3) != 0)
        return reason;
    return p + ln + 3;
}

/* Records target t's refusal of node v unless an earlier target refused it. */
/* Whether target tg takes every node of control-flow node nd's subgraphs
 * (recursively, to depth 16) by the rules it judges main-graph nodes by;
 * why gets the first refusal ("subgraph 'then_branch': Op 'x': ..."). */
static bool pt_bodies_supported(const pt_state *st, const cg_target *tg, const cg_node *nd,
                                int depth, char *why, size_t cap)
{
    if (depth > 16) {
        snprintf(why, cap, "subgraphs nested deeper than 16 levels");
        return false;
    }
    for (size_t a = 0; a < nd->attr_count; a++) {
        const cg_attr *at = &nd->attrs[a];
        size_t ng = at->g ? 1 : at->graphs_count;
        for (size_t k = 0; k < ng; k++) {
            const cg_graph *b = at->g ? at->g : at->graphs[k];
            for (size_t i = 0; b && i < b->node_count; i++) {
                const cg_node *bn = &b->nodes[i];
                cg_support_query q = {st->model, b, bn,
                                      cg_model_opset(st->model, bn->domain ? bn->domain : ""),
                                      st->types};
                char r[PT_REASON_MAX / 2];
                r[0] = '\0';
                bool ok = tg->vt->supports(tg, &q, r, sizeof r) &&
                          (!cg_node_is_control_flow(bn) ||
                           pt_bodies_supported(st, tg, bn, depth + 1, r, sizeof r));
                if (!ok) {
                    r[sizeof r - 1] = '\0';
                    snprintf(why, cap, "subgraph '%s': %s '%s': %s", at->name ? at->name : "?",
                             bn->op_type ? bn->op_type : "?", bn->name ? bn->name : "?",
                             r[0] ? cg_assign_bare_reason(b, i, r) : "not supported");
                    return false;
                }
            }
        }
    }
    return true;
}

static bool pt_refuse(pt_state *st, size_t v, int t, const char *reason)
{
    if (st->refused_by[v] >= 0)
        return true;
    st->refusal[v] = pt_strdup(cg_assign_bare_reason(st->gr.graph, v, reason));
    if (!st->refusal[v])
        return false;
    st->refused_by[v] = t;
    return true;
}

/* Order for max_partitions: more nodes first, then earlier first node. */
typedef struct pt_rank {
    size_t count, first;
    int part;
} pt_rank;

static int pt_rank_cmp(const void *a, const void *b)
{
    const pt_rank *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Applies target t's partition rules to the partitions its round formed
 * (indices [first, st->nparts)). */
static cg_status pt_apply_rules(pt_state *st, int t, size_t first, cg_error *err)
{
    const cg_target *tg = st->targets[t];
    const cg_partition_rules *ru = &tg->rules;
    const cg_graph *g = st->gr.graph;
    char rule[PT_REASON_MAX];
    pt_rank *ranks = NULL;
    cg_status status = CG_OK;

    for (size_t p = first; p < st->nparts; p++) {
        pt_part *part = &st->parts[p];
        if (!part->alive)
            continue;
        if (ru->no_single_op_count) {
            bool only = true;
            for (size_t k = 0; k < part->nodes.n && only; k++)
                only = pt_op_in(g->nodes[part->nodes.v[k]].op_type, ru->no_single_ops,
                                ru->no_single_op_count);
            if (only) {
                /* name the distinct op types the partition holds */
                size_t len = (size_t)snprintf(rule, sizeof rule,
                                              "no_single_ops: a partition of only");
                for (size_t k = 0; k < part->nodes.n && len < sizeof rule; k++) {
                    /* listed in no_single_ops, so not NULL */
                    const char *op = g->nodes[part->nodes.v[k]].op_type;
                    bool seen = false;
                    for (size_t j = 0; j < k && !seen; j++)
                        seen = strcmp(g->nodes[part->nodes.v[j]].op_type, op) == 0;
                    if (!seen)
                        len += (size_t)snprintf(rule + len, sizeof rule - len, "%s %s",
                                                k ? "," : "", op);
                }
                if (len < sizeof rule)
                    snprintf(rule + len, sizeof rule - len, " (%zu node%s) is not formed",
                             part->nodes.n, part->nodes.n == 1 ? "" : "s");
                if (!pt_part_drop(st, (int)p, rule))
                    goto nomem;
                continue;
            }
        }
        if (ru->min_nodes > 1 && part->nodes.n < (size_t)ru->min_nodes) {
            snprintf(rule, sizeof rule, "min_nodes: its partition has %zu node%s, %s needs >= %d",
                     part->nodes.n, part->nodes.n == 1 ? "" : "s", tg->name, ru->min_nodes);
            if (!pt_part_drop(st, (int)p, rule))
                goto nomem;
        }
    }
    if (ru->max_partitions > 0) {
        size_t live = 0;
        ranks = malloc((st->nparts - first + 1) * sizeof *ranks);
        if (!ranks)
            goto nomem;
        for (size_t p = first; p < st->nparts; p++) {
            if (!st->parts[p].alive)
                continue;
            size_t fpos = SIZE_MAX;
            for (size_t k = 0; k < st->parts[p].nodes.n; k++)
                if (st->gr.pos[st->parts[p].nodes.v[k]] < fpos)
                    fpos = st->gr.pos[st->parts[p].nodes.v[k]];
            ranks[live].count = st->parts[p].nodes.n;
            ranks[live].first = fpos;
            ranks[live].part = (int)p;
            live++;
        }
        if (live > (size_t)ru->max_partitions) {
            qsort(ranks, live, sizeof *ranks, pt_rank_cmp);
            for (size_t r = (size_t)ru->max_partitions; r < live; r++) {
                snprintf(rule, sizeof rule,
                         "max_partitions: %s keeps its %d largest partitions; this one has "
                         "%zu node%s (the smallest kept has %zu)",
                         tg->name, ru->max_partitions, ranks[r].count,
                         ranks[r].count == 1 ? "" : "s",
                         ranks[ru->max_partitions - 1].count);
                if (!pt_part_drop(st, ranks[r].part, rule))
                    goto nomem;
            }
        }
    }
    goto done;
nomem:
    status = cg_error_set(err, CG_NOMEM, "out of memory applying %s's partition rules",
                          tg->name);
done:
    free(ranks);
    return status;
}

/* One target's round: ask, group, apply the rules. */
static cg_status pt_round(pt_state *st, int t, cg_error *err)
{
    const cg_target *tg = st->targets[t];
    const cg_graph *g = st->gr.graph;
    const cg_graph_index *gr = &st->gr;
    size_t n = gr->node_count;
    size_t first_part = st->nparts;
    size_t *stop_origin = NULL;
    int *cand = NULL;
    char reason[PT_REASON_MAX], la[128];
    cg_status status = CG_OK;

    /* stop ops: the op and everything downstream of it (topological sweep) */
    stop_origin = malloc((n ? n : 1) * sizeof *stop_origin);
    cand = malloc((n ? n : 1) * sizeof *cand);
    if (!stop_origin || !cand)
        goto nomem;
    for (size_t k = 0; k < n; k++) {
        size_t v = gr->order[k];
        stop_origin[v] = PT_NONE;
        if (tg->rules.stop_op_count &&
            pt_op_in(g->nodes[v].op_type, tg->rules.stop_ops, tg->rules.stop_op_count)) {
            stop_origin[v] = v;
            continue;
        }
        for (size_t r = gr->pred_off[v]; r < gr->pred_off[v + 1]; r++)
            if (stop_origin[gr->pred[r]] != PT_NONE) {
                stop_origin[v] = stop_origin[gr->pred[r]];
                break;
            }
    }

    if ((status = pt_levels(st, err)) != CG_OK)
        goto done;
    for (size_t k = 0; k < n; k++) {
        size_t v = gr->order[k];
        const cg_node *nd = &g->nodes[v];
        if (st->unit[v] >= 0)
            continue; /* kept by an earlier target */
        cg_support_query q = {st->model, g, nd,
                              cg_model_opset(st->model, nd->domain ? nd->domain : ""),
                              st->types};
        reason[0] = '\0';
        if (cg_node_is_control_flow(nd)) {
            /* If/Loop/Scan go to a target whose profile lists the op, with
             * their subgraphs, when every node in them passes the same
             * rules; else they stay on the CPU and their subgraphs are
             * assigned on their own */
            char why[PT_REASON_MAX - 128];
            why[0] = '\0';
            bool ok = tg->vt->supports(tg, &q, why, sizeof why) &&
                      pt_bodies_supported(st, tg, nd, 1, why, sizeof why);
            if (!ok) {
                why[sizeof why - 1] = '\0';
                snprintf(reason, sizeof reason,
                         "control flow: %s stays on the CPU (%s); its subgraphs are assigned "
                         "on their own", nd->op_type,
                         why[0] ? cg_assign_bare_reason(g, v, why) : "not supported");
                if (!pt_refuse(st, v, t, reason))
                    goto nomem;
                continue;
            }
        } else if (!tg->vt->supports(tg, &q, reason, sizeof reason)) {
            reason[sizeof reason - 1] = '\0';
            if (!pt_refuse(st, v, t, reason[0] ? reason : "not supported (no reason given)"))
                goto nomem;
            continue;
        }
        if (stop_origin[v] != PT_NONE) {
            if (stop_origin[v] == v)
                snprintf(reason, sizeof reason,
                         "stop_ops: %s is a stop op for %s: it and every node after it stay "
                         "off %s",
                         nd->op_type, tg->name, tg->name);
            else
                snprintf(reason, sizeof reason,
                         "stop_ops: depends on %s '%s', after which %s takes no nodes",
                         g->nodes[stop_origin[v]].op_type,
                         pt_label(g, stop_origin[v], la, sizeof la), tg->name);
            if (!pt_drop_add(st, v, t, reason))
                goto nomem;
            continue;
        }
        /* this round's partitions among v's producers, in producer order */
        size_t ncand = 0;
        for (size_t r = gr->pred_off[v]; r < gr->pred_off[v + 1]; r++) {
            int u = st->unit[gr->pred[r]];
            if (u < 0 || st->parts[u].target != t)
                continue;
            bool seen = false;
            for (size_t c = 0; c < ncand && !seen; c++)
                seen = cand[c] == u;
            if (!seen)
                cand[ncand++] = u;
        }
        /* greedily take each candidate that keeps the merged unit acyclic;
         * cand[0..nx) holds those taken */
        size_t nx = 0;
        for (size_t c = 0; c < ncand; c++) {
            int keep = cand[nx];
            cand[nx] = cand[c];
            bool cycle = false;
            if ((status = pt_would_cycle(st, v, cand, nx + 1, &cycle, err)) != CG_OK)
                goto done;
            if (!cycle)
                nx++;
            else
                cand[nx] = keep;
        }
        if (nx == 0) {
            if (pt_part_new(st, t, v) < 0)
                goto nomem;
            continue;
        }
        /* the merged unit sits above all it now reads: its parts and v's
         * producers outside it (v itself is above both already) */
        size_t lvl = 0, low = SIZE_MAX;
        for (size_t c = 0; c < nx; c++) {
            size_t l = st->parts[cand[c]].level;
            lvl = l > lvl ? l : lvl;
            low = l < low ? l : low;
        }
        for (size_t r = gr->pred_off[v]; r < gr->pred_off[v + 1]; r++)
            if (!pt_in_x(st, gr->pred[r], v, cand, nx) && pt_level(st, gr->pred[r]) + 1 > lvl)
                lvl = pt_level(st, gr->pred[r]) + 1;
        /* the largest absorbs the rest: each node moves O(log n) times */
        size_t big = 0;
        for (size_t c = 1; c < nx; c++)
            if (st->parts[cand[c]].nodes.n > st->parts[cand[big]].nodes.n)
                big = c;
        int into = cand[big];
        for (size_t c = 0; c < nx; c++)
            if (c != big && !pt_part_absorb(st, into, cand[c]))
                goto nomem;
        pt_part *dst = &st->parts[into];
        if (!pt_vec_push(&dst->nodes, v))
            goto nomem;
        st->unit[v] = into;
        for (size_t r = gr->succ_off[v]; r < gr->succ_off[v + 1]; r++)
            if (!pt_vec_push(&dst->ext, gr->succ[r]))
                goto nomem;
        dst->level = lvl;
        if (lvl > low && (status = pt_raise(st, into, err)) != CG_OK)
            goto done;
    }
    status = pt_apply_rules(st, t, first_part, err);
    goto done;
nomem:
    status = cg_error_set(err, CG_NOMEM, "out of memory assigning nodes to %s", tg->name);
done:
    free(stop_origin);
    free(cand);
    return status;
}

/* --- the result ---------------------------------------------------------------------- */

void cg_assignment_free(cg_assignment *a)
{
    if (!a)
        return;
    for (size_t p = 0; p < a->partition_count; p++) {
        cg_partition *pp = &a->partitions[p];
        free(pp->nodes);
        for (size_t i = 0; i < pp->input_count; i++)
            free(pp->inputs[i]);
        for (size_t i = 0; i < pp->output_count; i++)
            free(pp->outputs[i]);
        free(pp->inputs);
        free(pp->outputs);
    }
    free(a->partitions);
    for (size_t i = 0; i < a->boundary_count; i++)
        free(a->boundaries[i].tensor);
    free(a->boundaries);
    for (size_t i = 0; i < a->unsupported_count; i++)
        free(a->unsupported[i].reason);
    free(a->unsupported);
    for (size_t i = 0; i < a->dropped_count; i++)
        free(a->dropped[i].reason);
    free(a->dropped);
    free(a->owner);
    free(a->partition_of);
    free(a);
}

static int pt_size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* True for a value that carries no data across a boundary at run time:
 * an initializer (not overridable as an input) or a value computed only
 * from constants. */
static bool pt_value_const(const pt_state *st, size_t val)
{
    unsigned f = st->gr.value_flags[val];
    if ((f & CG_IX_INIT) && !(f & CG_IX_INPUT))
        return true;
    if (st->types) {
        const cg_value_type *vt = cg_type_env_get(st->types, st->gr.value_name[val]);
        if (vt && vt->is_const)
            return true;
    }
    return false;
}

static bool pt_target_fp16(const cg_target *t)
{
    return t && t->precision == CG_PRECISION_FP16;
}

/* Fills the boundary's type fields from the type environment. */
static void pt_boundary_type(const pt_state *st, cg_assignment *a, cg_boundary *b)
{
    const cg_value_type *vt = st->types ? cg_type_env_get(st->types, b->tensor) : NULL;
    if (!vt || !vt->known || vt->rank < 0 || vt->rank > CG_MAX_RANK)
        return;
    b->known = true;
    b->dtype = vt->dtype;
    b->rank = vt->rank;
    uint64_t numel = 1;
    bool ok = true;
    for (int d = 0; d < vt->rank; d++) {
        b->dims[d] = vt->dims[d];
        if (vt->dims[d] < 0 || (vt->dims[d] && numel > UINT64_MAX / (uint64_t)vt->dims[d]))
            ok = false;
        else
            numel *= (uint64_t)vt->dims[d];
    }
    size_t es = cg_dtype_size(vt->dtype);
    b->bytes = ok && es && numel <= UINT64_MAX / es ? numel * es : 0;
    const cg_target *from =
        b->from_partition >= 0 ? a->targets[a->partitions[b->from_partition].target] : NULL;
    const cg_target *to =
        b->to_partition >= 0 ? a->targets[a->partitions[b->to_partition].target] : NULL;
    b->layout_conversion = vt->rank == 4 && cg_dtype_is_float(vt->dtype) &&
                           cg_target_layout(from) != cg_target_layout(to);
    b->dtype_conversion =
        vt->dtype == CG_DTYPE_FLOAT && pt_target_fp16(from) != pt_target_fp16(to);
}

/* Appends a boundary; false when out of memory. */
static bool pt_boundary_add(const pt_state *st, cg_assignment *a, size_t *cap, size_t val,
                            int from, int to)
{
    if (a->boundary_count == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        if (nc > SIZE_MAX / sizeof *a->boundaries)
            return false;
        cg_boundary *nb = realloc(a->boundaries, nc * sizeof *nb);
        if (!nb)
            return false;
        a->boundaries = nb;
        *cap = nc;
    }
    cg_boundary *b = &a->boundaries[a->boundary_count];
    memset(b, 0, sizeof *b);
    b->tensor = pt_strdup(st->gr.value_name[val]);
    if (!b->tensor)
        return false;
    b->from_partition = from;
    b->to_partition = to;
    a->boundary_count++;
    pt_boundary_type(st, a, b);
    return true;
}

/* Builds the public result from the final state. */
static cg_status pt_finish(pt_state *st, cg_assignment *a, cg_error *err)
{
    const cg_graph_index *gr = &st->gr;
    size_t n = gr->node_count;
    size_t *stamp = NULL;
    int *renum = NULL;
    size_t capb = 0, mark = 0;

    a->owner = malloc((n ? n : 1) * sizeof *a->owner);
    a->partition_of = malloc((n ? n : 1) * sizeof *a->partition_of);
    renum = malloc((st->nparts ? st->nparts : 1) * sizeof *renum);
    stamp = malloc((gr->value_count ? gr->value_count : 1) * sizeof *stamp);
    if (!a->owner || !a->partition_of || !renum || !stamp)
        goto nomem;

    /* partitions numbered by their first node in topological order */
    size_t live = 0;
    for (size_t p = 0; p < st->nparts; p++)
        renum[p] = -1;
    for (size_t k = 0; k < n; k++) {
        int u = st->unit[gr->order[k]];
        if (u >= 0 && renum[u] < 0)
            renum[u] = (int)live++;
    }
    a->partitions = calloc(live ? live : 1, sizeof *a->partitions);
    if (!a->partitions)
        goto nomem;
    a->partition_count = live;
    for (size_t p = 0; p < st->nparts; p++) {
        if (renum[p] < 0)
            continue;
        cg_partition *cp = &a->partitions[renum[p]];
        const pt_part *pp = &st->parts[p];
        cp->id = renum[p];
        cp->target = pp->target;
        cp->nodes = malloc(pp->nodes.n * sizeof *cp->nodes);
        if (!cp->nodes)
            goto nomem;
        /* sort by topological position (merges concatenate lists) */
        for (size_t k = 0; k < pp->nodes.n; k++)
            cp->nodes[k] = gr->pos[pp->nodes.v[k]];
        qsort(cp->nodes, pp->nodes.n, sizeof *cp->nodes, pt_size_cmp);
        for (size_t k = 0; k < pp->nodes.n; k++)
            cp->nodes[k] = gr->order[cp->nodes[k]];
        cp->node_count = pp->nodes.n;
    }
    for (size_t v = 0; v < n; v++) {
        int u = st->unit[v];
        a->partition_of[v] = u >= 0 ? renum[u] : -1;
        a->owner[v] = u >= 0 ? st->parts[u].target : CG_OWNER_CPU;
    }

    /* each partition's inputs and outputs in first-use order: pass 0
     * counts, pass 1 fills; a fresh stamp per list keeps names unique */
    for (size_t i = 0; i < gr->value_count; i++)
        stamp[i] = PT_NONE;
    for (size_t p = 0; p < live; p++) {
        cg_partition *cp = &a->partitions[p];
        int id = (int)p;
        for (int pass = 0; pass < 2; pass++) {
            size_t nin = 0, nout = 0;
            mark++;
            for (size_t k = 0; k < cp->node_count; k++) {
                size_t v = cp->nodes[k];
                for (size_t r = gr->in_off[v]; r < gr->in_off[v + 1]; r++) {
                    size_t val = gr->in_val[r];
                    size_t prod = gr->producer[val];
                    if ((prod != PT_NONE && a->partition_of[prod] == id) || stamp[val] == mark ||
                        pt_value_const(st, val))
                        continue;
                    stamp[val] = mark;
                    if (pass && !(cp->inputs[cp->input_count++] = pt_strdup(gr->value_name[val])))
                        goto nomem;
                    nin++;
                }
            }
            mark++;
            for (size_t k = 0; k < cp->node_count; k++) {
                size_t v = cp->nodes[k];
                for (size_t r = gr->out_off[v]; r < gr->out_off[v + 1]; r++) {
                    size_t val = gr->out_val[r];
                    bool leaves = (gr->value_flags[val] & CG_IX_OUTPUT) != 0;
                    for (size_t c = gr->cons_off[val]; c < gr->cons_off[val + 1] && !leaves; c++)
                        leaves = a->partition_of[gr->cons[c]] != id;
                    if (!leaves || stamp[val] == mark)
                        continue;
                    stamp[val] = mark;
                    if (pass &&
                        !(cp->outputs[cp->output_count++] = pt_strdup(gr->value_name[val])))
                        goto nomem;
                    nout++;
                }
            }
            if (!pass) {
                cp->inputs = calloc(nin ? nin : 1, sizeof *cp->inputs);
                cp->outputs = calloc(nout ? nout : 1, sizeof *cp->outputs);
                if (!cp->inputs || !cp->outputs)
                    goto nomem;
            }
        }
    }

    /* boundaries: each (value, producer side, consumer side) once, in the
     * producers' topological order; the graph's own inputs and outputs are
     * the model's interface, not crossings inside it */
    for (size_t k = 0; k < n; k++) {
        size_t v = gr->order[k];
        int from = a->partition_of[v];
        for (size_t r = gr->out_off[v]; r < gr->out_off[v + 1]; r++) {
            size_t val = gr->out_val[r];
            if (pt_value_const(st, val))
                continue;
            size_t first = a->boundary_count;
            for (size_t c = gr->cons_off[val]; c < gr->cons_off[val + 1]; c++) {
                int to = a->partition_of[gr->cons[c]];
                if (to == from)
                    continue;
                bool seen = false;
                for (size_t b = first; b < a->boundary_count && !seen; b++)
                    seen = a->boundaries[b].to_partition == to;
                if (!seen && !pt_boundary_add(st, a, &capb, val, from, to))
                    goto nomem;
            }
        }
    }

    /* nodes left on the CPU: refused (first refusing target's reason) and
     * dropped by a rule (every target that dropped them) */
    size_t nun = 0, ndr = 0;
    for (size_t v = 0; v < n; v++)
        if (a->owner[v] == CG_OWNER_CPU && st->refused_by[v] >= 0)
            nun++;
    for (size_t d = 0; d < st->ndrops; d++)
        if (a->owner[st->drops[d].node] == CG_OWNER_CPU)
            ndr++;
    a->unsupported = calloc(nun ? nun : 1, sizeof *a->unsupported);
    a->dropped = calloc(ndr ? ndr : 1, sizeof *a->dropped);
    if (!a->unsupported || !a->dropped)
        goto nomem;
    for (size_t k = 0; k < n; k++) {
        size_t v = gr->order[k];
        if (a->owner[v] != CG_OWNER_CPU || st->refused_by[v] < 0)
            continue;
        cg_unsupported *u = &a->unsupported[a->unsupported_count++];
        u->node = v;
        u->target = st->refused_by[v];
        u->reason = st->refusal[v];
        st->refusal[v] = NULL; /* moved */
    }
    for (size_t d = 0; d < st->ndrops; d++) {
        if (a->owner[st->drops[d].node] != CG_OWNER_CPU)
            continue;
        cg_unsupported *u = &a->dropped[a->dropped_count++];
        u->node = st->drops[d].node;
        u->target = st->drops[d].target;
        u->reason = st->drops[d].rule;
        st->drops[d].rule = NULL; /* moved */
    }
    free(stamp);
    free(renum);
    return CG_OK;
nomem:
    free(stamp);
    free(renum);
    return cg_error_set(err, CG_NOMEM, "out of memory building the assignment");
}

static void pt_state_free(pt_state *st)
{
    for (size_t p = 0; p < st->nparts; p++) {
        free(st->parts[p].nodes.v);
        free(st->parts[p].ext.v);
    }
    free(st->parts);
    free(st->level);
    free(st->indeg_node);
    free(st->indeg_part);
    if (st->refusal)
        for (size_t v = 0; v < st->gr.node_count; v++)
            free(st->refusal[v]);
    free(st->refusal);
    free(st->refused_by);
    for (size_t d = 0; d < st->ndrops; d++)
        free(st->drops[d].rule);
    free(st->drops);
    free(st->unit);
    free(st->node_mark);
    free(st->part_mark);
    free(st->stack.v);
    cg_graph_index_free(&st->gr);
}

const char *cg_assign_node_label(const cg_graph *g, size_t node, char *buf, size_t len)
{
    return cg_graph_node_name(g, node, buf, len);
}

cg_status cg_assign_graph(const cg_model *model, const cg_graph *graph, const cg_type_env *types,
                          const cg_target *const *targets, size_t target_count,
                          cg_assignment **out, cg_error *err)
{
    pt_state st;
    cg_assignment *a = NULL;
    cg_status status;
    memset(&st, 0, sizeof st);
    if (out)
        *out = NULL;
    if (!model || !graph || !out || (target_count && !targets))
        return cg_error_set(err, CG_USAGE, "cg_assign: model, graph, targets and out are required");
    if (target_count > (size_t)INT_MAX)
        return cg_error_set(err, CG_USAGE, "cg_assign: %zu targets", target_count);
    for (size_t t = 0; t < target_count; t++)
        if (!targets[t] || !targets[t]->vt || !targets[t]->vt->supports || !targets[t]->name)
            return cg_error_set(err, CG_USAGE,
                                "cg_assign: target %zu has no name or no supports()", t);
    if ((status = cg_graph_index_build(graph, NULL, &st.gr, err)) != CG_OK)
        return status;
    size_t n = st.gr.node_count;
    st.model = model;
    st.types = types;
    st.targets = targets;
    st.ntargets = target_count;
    st.unit = malloc((n ? n : 1) * sizeof *st.unit);
    st.refused_by = malloc((n ? n : 1) * sizeof *st.refused_by);
    st.refusal = calloc(n ? n : 1, sizeof *st.refusal);
    st.node_mark = calloc(n ? n : 1, sizeof *st.node_mark);
    st.level = calloc(n ? n : 1, sizeof *st.level);
    st.indeg_node = calloc(n ? n : 1, sizeof *st.indeg_node);
    a = calloc(1, sizeof *a);
    if (!st.unit || !st.refused_by || !st.refusal || !st.node_mark || !st.level ||
        !st.indeg_node || !a) {
        status = cg_error_set(err, CG_NOMEM, "out of memory assigning graph '%s'",
                              graph->name ? graph->name : "");
        goto fail;
    }
    for (size_t v = 0; v < n; v++) {
        st.unit[v] = -1;
        st.refused_by[v] = -1;
    }
    for (size_t t = 0; t < target_count; t++)
        if ((status = pt_round(&st, (int)t, err)) != CG_OK)
            goto fail;
    a->model = model;
    a->graph = graph;
    a->targets = targets;
    a->target_count = target_count;
    if ((status = pt_finish(&st, a, err)) != CG_OK)
        goto fail;
#ifdef CG_DEBUG
    {
        /* a broken invariant here is the partitioner's bug, not the model's */
        cg_error verr;
        cg_error_clear(&verr);
        if (cg_assignment_validate(a, types, &verr) == CG_INVALID)
            cg_assert_fail(verr.msg, __FILE__, __LINE__, __func__);
    }
#endif
    pt_state_free(&st);
    *out = a;
    return CG_OK;
fail:
    cg_assignment_free(a);
    pt_state_free(&st);
    return status;
}

cg_status cg_assign(const cg_model *model, const cg_type_env *types,
                    const cg_target *const *targets, size_t target_count, cg_assignment **out,
                    cg_error *err)
{
    if (out)
        *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "cg_assign: the model has no graph");
    return cg_assign_graph(model, model->graph, types, targets, target_count, out, err);
}
