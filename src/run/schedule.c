/*
 * The main graph's schedule with an assignment: executing partitions
 * compiled once at init and run as one unit each, reference steps between
 * them, units in topological order (earliest model position first), and
 * liveness counted in schedule positions.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "run/exec.h"

/* --- schedule with an assignment ------------------------------------------------ */

void cg_schedule_free(cg_runtime *rt)
{
    for (size_t i = 0; i < rt->part_count; i++) {
        cg_rt_partition *rp = &rt->parts[i];
        if (rp->state)
            rp->target->vt->release(rp->state);
        free(rp->in_slots);
        free(rp->out_slots);
        free(rp->out_nodes);
        free(rp->ins);
        free(rp->outs);
    }
    free(rt->parts);
    for (size_t u = 0; u < rt->unit_count; u++)
        free(rt->units[u].release);
    free(rt->units);
    free(rt->slot_first);
    free(rt->slot_last);
    rt->parts = NULL;
    rt->units = NULL;
    rt->slot_first = rt->slot_last = NULL;
    rt->part_count = rt->unit_count = 0;
}

/* Main-graph slots node i reads: its inputs and its subgraphs' captures. */
static size_t step_reads(const cg_plan *p, size_t i, int32_t *out)
{
    const cg_step *st = &p->steps[i];
    size_t n = 0;
    for (size_t k = 0; k < st->node->input_count; k++)
        if (st->in[k].up == 0 && st->in[k].slot >= 0)
            out[n++] = st->in[k].slot;
    for (size_t k = 0; k < st->sub_count; k++)
        for (size_t c = 0; c < st->subs[k].plan->capture_count; c++) {
            int32_t s = cg_plan_slot(p, st->subs[k].plan->captures[c]);
            if (s >= 0)
                out[n++] = s;
        }
    return n;
}

static size_t step_read_bound(const cg_plan *p, size_t i)
{
    const cg_step *st = &p->steps[i];
    size_t n = st->node->input_count;
    for (size_t k = 0; k < st->sub_count; k++)
        n += st->subs[k].plan->capture_count;
    return n;
}

/* Min-heap of unit indices keyed by their first node. */
static void heap_push(int32_t *h, size_t *n, const cg_rt_unit *units, int32_t u)
{
    size_t i = (*n)++;
    h[i] = u;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (units[h[parent]].first_node <= units[h[i]].first_node)
            break;
        int32_t t = h[parent];
        h[parent] = h[i];
        h[i] = t;
        i = parent;
    }
}

static int32_t heap_pop(int32_t *h, size_t *n, const cg_rt_unit *units)
{
    int32_t top = h[0];
    h[0] = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && units[h[l]].first_node < units[h[m]].first_node)
            m = l;
        if (r < *n && units[h[r]].first_node < units[h[m]].first_node)
            m = r;
        if (m == i)
            break;
        int32_t t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
    return top;
}

/* Compiles one executing partition and resolves its slots. */
static cg_status partition_prepare(cg_runtime *rt, const cg_assignment *a, size_t pi,
                                   cg_rt_partition *rp, cg_error *err)
{
    const cg_plan *p = rt->main;
    const cg_partition *part = &a->partitions[pi];
    const cg_target *t = a->targets[part->target];
    rp->id = part->id;
    rp->target = t;
    cg_partition_desc *d = &rp->desc;
    d->model = rt->model;
    d->graph = p->graph;
    d->nodes = part->nodes;
    d->node_count = part->node_count;
    d->inputs = (const char *const *)part->inputs;
    d->input_count = part->input_count;
    d->outputs = (const char *const *)part->outputs;
    d->output_count = part->output_count;
    d->types = rt->opt.types;
    d->threads = rt->opt.threads > 1 ? rt->opt.threads : 1;
    rp->in_slots = calloc(d->input_count + 1, sizeof *rp->in_slots);
    rp->out_slots = calloc(d->output_count + 1, sizeof *rp->out_slots);
    rp->out_nodes = calloc(d->output_count + 1, sizeof *rp->out_nodes);
    rp->ins = calloc(d->input_count + 1, sizeof *rp->ins);
    rp->outs = calloc(d->output_count + 1, sizeof *rp->outs);
    if (!rp->in_slots || !rp->out_slots || !rp->out_nodes || !rp->ins || !rp->outs)
        return cg_error_set(err, CG_NOMEM, "out of memory preparing partition %d", part->id);
    for (size_t i = 0; i < d->input_count; i++) {
        rp->in_slots[i] = cg_plan_slot(p, d->inputs[i]);
        if (rp->in_slots[i] < 0)
            return cg_error_set(err, CG_INVALID, "partition %d: input '%s' is not a value of "
                                "the main graph", part->id, d->inputs[i]);
    }
    for (size_t i = 0; i < d->output_count; i++) {
        int32_t s = cg_plan_slot(p, d->outputs[i]);
        if (s < 0 || p->slot_kind[s] != CG_SLOT_NODE ||
            a->partition_of[p->steps[p->slot_producer[s]].index] != part->id)
            return cg_error_set(err, CG_INVALID, "partition %d: output '%s' is not produced by "
                                "one of its nodes", part->id, d->outputs[i]);
        rp->out_slots[i] = s;
        rp->out_nodes[i] = p->steps[p->slot_producer[s]].node;
    }
    cg_status st = t->vt->compile(t, d, &rp->state, err);
    if (st != CG_OK) {
        if (err && err->status == CG_OK)
            cg_error_set(err, st, "compile failed");
        cg_error_prefix(err, "compiling partition %d (%s, %zu nodes): ", part->id, t->name,
                        d->node_count);
    }
    return st;
}

/* Initializers that only nodes of executing partitions read: the plan
 * never makes its aligned copies of them (cg_plan_defer_slot). Their
 * delegate read the model's bytes when it compiled (xnnpack_lower.c), and
 * a partition's nodes never run on the reference kernels. Any other reader
 * (a reference step, a capture of its subgraphs, a partition input, a
 * graph output) keeps the copy. Without memory for the marks every copy
 * stays, as before. */
static void defer_partition_copies(cg_runtime *rt, const int32_t *part_index, int32_t *reads)
{
    const cg_assignment *a = rt->opt.assignment;
    cg_plan *p = rt->main;
    bool *read = calloc(p->slot_count + 1, sizeof *read);
    if (!read)
        return;
    for (size_t i = 0; i < p->step_count; i++) {
        int pid = a->partition_of[i];
        if (pid >= 0 && part_index[pid] >= 0)
            continue;
        size_t nr = step_reads(p, i, reads);
        for (size_t k = 0; k < nr; k++)
            read[reads[k]] = true;
    }
    for (size_t i = 0; i < rt->part_count; i++)
        for (size_t k = 0; k < rt->parts[i].desc.input_count; k++)
            read[rt->parts[i].in_slots[k]] = true;
    for (size_t s = 0; s < p->slot_count; s++)
        if (p->slot_kind[s] == CG_SLOT_INIT && !read[s] && !p->slot_is_output[s])
            cg_plan_defer_slot(p, (int32_t)s);
    free(read);
}

/* Compiles the executing partitions of rt->opt.assignment and orders the
 * units (reference steps and partitions) topologically, earliest model
 * position first, then computes liveness in schedule positions. A
 * partition is convex (the assignment's partition graph is acyclic), so it
 * runs as one unit once all its inputs exist. */
cg_status cg_schedule_build(cg_runtime *rt, cg_error *err)
{
    const cg_assignment *a = rt->opt.assignment;
    const cg_plan *p = rt->main;
    size_t n = p->step_count;
    cg_status st = CG_OK;
    int32_t *part_index = NULL, *unit_of = NULL, *pos = NULL, *reads = NULL, *heap = NULL;
    size_t *indeg = NULL, *eoff = NULL;
    int32_t *edges = NULL;
    size_t *rcount = NULL;
    cg_rt_unit *units = NULL;
    size_t unit_count = 0, max_reads = 1;

    if (a->model != rt->model || a->graph != p->graph || p->step_count != p->graph->node_count)
        return cg_error_set(err, CG_USAGE, "the assignment was made for another model");
    part_index = malloc((a->partition_count + 1) * sizeof *part_index);
    unit_of = malloc((n + 1) * sizeof *unit_of);
    if (!part_index || !unit_of)
        goto nomem;
    size_t exec_parts = 0;
    for (size_t i = 0; i < a->partition_count; i++) {
        const cg_partition *part = &a->partitions[i];
        bool ok = part->target >= 0 && (size_t)part->target < a->target_count;
        part_index[i] = ok && cg_target_executes(a->targets[part->target]) ? (int32_t)exec_parts++
                                                                        : -1;
        for (size_t k = 0; ok && k < part->node_count; k++)
            ok = part->nodes[k] < n && a->partition_of[part->nodes[k]] == part->id;
        if (!ok || part->id != (int)i) {
            st = cg_error_set(err, CG_USAGE, "assignment partition %zu is inconsistent (target "
                              "or node indices)", i);
            goto done;
        }
    }
    rt->parts = calloc(exec_parts + 1, sizeof *rt->parts);
    if (!rt->parts)
        goto nomem;
    for (size_t i = 0; i < a->partition_count; i++) {
        if (part_index[i] < 0)
            continue;
        cg_rt_partition *rp = &rt->parts[rt->part_count++];
        if ((st = partition_prepare(rt, a, i, rp, err)) != CG_OK)
            goto done;
    }

    /* units: one per reference node, one per executing partition */
    units = calloc(n + 1, sizeof *units);
    if (!units)
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        int pid = a->partition_of[i];
        int32_t rpi = pid >= 0 ? part_index[pid] : -1;
        unit_of[i] = -1;
        if (rpi >= 0) {
            /* partition nodes are listed in topological order: the first one
             * makes the unit, the rest join it */
            const cg_partition *part = &a->partitions[pid];
            if (part->nodes[0] != i) {
                unit_of[i] = unit_of[part->nodes[0]];
                continue;
            }
            units[unit_count].step = -1;
            units[unit_count].part = rpi;
        } else {
            units[unit_count].step = (int32_t)i;
            units[unit_count].part = -1;
        }
        units[unit_count].first_node = (int32_t)i;
        unit_of[i] = (int32_t)unit_count++;
    }
    for (size_t i = 0; i < n; i++)
        if (unit_of[i] < 0) {
            st = cg_error_set(err, CG_USAGE, "assignment partition of node %zu does not list "
                              "its nodes in topological order", i);
            goto done;
        }

    /* edges producer unit -> consumer unit (CSR), in-degrees */
    for (size_t i = 0; i < n; i++) {
        size_t b = step_read_bound(p, i);
        if (b > max_reads)
            max_reads = b;
    }
    reads = malloc(max_reads * sizeof *reads);
    indeg = calloc(unit_count + 1, sizeof *indeg);
    eoff = calloc(unit_count + 2, sizeof *eoff);
    if (!reads || !indeg || !eoff)
        goto nomem;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            size_t nr = step_reads(p, i, reads);
            for (size_t k = 0; k < nr; k++) {
                int32_t prod = p->slot_producer[reads[k]];
                if (p->slot_kind[reads[k]] != CG_SLOT_NODE || prod < 0)
                    continue;
                int32_t from = unit_of[prod], to = unit_of[i];
                if (from == to)
                    continue;
                if (pass == 0) {
                    eoff[from + 1]++;
                } else {
                    edges[eoff[from] + rcount[from]++] = to;
                    indeg[to]++;
                }
            }
        }
        if (pass == 0) {
            for (size_t u = 0; u < unit_count; u++)
                eoff[u + 1] += eoff[u];
            edges = malloc((eoff[unit_count] + 1) * sizeof *edges);
            rcount = calloc(unit_count + 1, sizeof *rcount);
            if (!edges || !rcount)
                goto nomem;
        }
    }

    /* Kahn, earliest model position first */
    heap = malloc((unit_count + 1) * sizeof *heap);
    pos = malloc((unit_count + 1) * sizeof *pos);
    rt->units = calloc(unit_count + 1, sizeof *rt->units);
    if (!heap || !pos || !rt->units)
        goto nomem;
    size_t hn = 0, placed = 0;
    for (size_t u = 0; u < unit_count; u++)
        if (!indeg[u])
            heap_push(heap, &hn, units, (int32_t)u);
    while (hn) {
        int32_t u = heap_pop(heap, &hn, units);
        pos[u] = (int32_t)placed;
        rt->units[placed++] = units[u];
        for (size_t e = eoff[u]; e < eoff[u + 1]; e++)
            if (--indeg[edges[e]] == 0)
                heap_push(heap, &hn, units, edges[e]);
    }
    rt->unit_count = placed;
    if (placed != unit_count) {
        st = cg_error_set(err, CG_USAGE, "the assignment's partitions form a cycle (%zu of %zu "
                          "steps could be ordered)", placed, unit_count);
        goto done;
    }

    /* liveness in schedule positions */
    rt->slot_first = malloc((p->slot_count + 1) * sizeof *rt->slot_first);
    rt->slot_last = malloc((p->slot_count + 1) * sizeof *rt->slot_last);
    if (!rt->slot_first || !rt->slot_last)
        goto nomem;
    for (size_t s = 0; s < p->slot_count; s++) {
        int32_t prod = p->slot_producer[s];
        bool node = p->slot_kind[s] == CG_SLOT_NODE && prod >= 0;
        rt->slot_first[s] = rt->slot_last[s] = node ? pos[unit_of[prod]] : -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t nr = step_reads(p, i, reads);
        int32_t at = pos[unit_of[i]];
        for (size_t k = 0; k < nr; k++)
            if (rt->slot_last[reads[k]] >= 0 && rt->slot_last[reads[k]] < at)
                rt->slot_last[reads[k]] = at;
    }
    for (size_t u = 0; u < unit_count; u++)
        rcount[u] = 0;
    for (size_t s = 0; s < p->slot_count; s++)
        if (rt->slot_last[s] >= 0 && !p->slot_is_output[s])
            rcount[rt->slot_last[s]]++;
    for (size_t u = 0; u < unit_count; u++) {
        if (!rcount[u])
            continue;
        rt->units[u].release = malloc(rcount[u] * sizeof *rt->units[u].release);
        if (!rt->units[u].release)
            goto nomem;
    }
    for (size_t s = 0; s < p->slot_count; s++)
        if (rt->slot_last[s] >= 0 && !p->slot_is_output[s]) {
            cg_rt_unit *un = &rt->units[rt->slot_last[s]];
            un->release[un->release_count++] = (int32_t)s;
        }
    defer_partition_copies(rt, part_index, reads);
    goto done;
nomem:
    st = cg_error_set(err, CG_NOMEM, "out of memory scheduling the assignment");
done:
    free(part_index);
    free(unit_of);
    free(pos);
    free(reads);
    free(heap);
    free(indeg);
    free(eoff);
    free(edges);
    free(rcount);
    free(units);
    return st;
}

size_t cg_runtime_partition_count(const cg_runtime *rt)
{
    return rt ? rt->part_count : 0;
}

cg_status cg_runtime_partition_info_get(const cg_runtime *rt, size_t i,
                                        cg_runtime_partition_info *out, cg_error *err)
{
    if (!rt || i >= rt->part_count)
        return cg_error_set(err, CG_USAGE, "partition %zu out of range (%zu executed)", i,
                            rt ? rt->part_count : (size_t)0);
    const cg_rt_partition *rp = &rt->parts[i];
    out->id = rp->id;
    out->target = rp->target->name;
    out->node_count = rp->desc.node_count;
    out->state = rp->state;
    out->runs = rp->runs;
    out->seconds = rp->seconds;
    out->nan_checks = rp->nan_checks;
    out->nan_restored = rp->nan_restored;
    return CG_OK;
}
