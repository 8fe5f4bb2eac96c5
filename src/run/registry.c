/*
 * The kernel table built from src/run/ops.def. Each CG_KERNEL row is expanded
 * twice: into a prototype (run/ops/kernels.h, which every family file
 * includes too) and here into a table row. Lookups go through a sorted index.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "run/ops/kernels.h"
#include "run/registry.h"

static const cg_kernel_entry kernel_table[] = {
#define CG_KERNEL(domain, op, fn) {domain, op, fn},
#include "run/ops.def"
#undef CG_KERNEL
    {NULL, NULL, NULL} /* keeps the array non-empty while families are empty */
};

#define KERNEL_ROWS (sizeof kernel_table / sizeof kernel_table[0] - 1)

size_t cg_registry_count(void) { return KERNEL_ROWS; }

const cg_kernel_entry *cg_registry_at(size_t i) { return i < KERNEL_ROWS ? &kernel_table[i] : NULL; }

/* "ai.onnx" and NULL are spellings of the default domain. */
static const char *canonical_domain(const char *d)
{
    return cg_domain_is_default(d) ? "" : d;
}

static int compare_key(const char *da, const char *oa, const char *db, const char *ob)
{
    int c = strcmp(canonical_domain(da), canonical_domain(db));
    return c ? c : strcmp(oa, ob);
}

static int compare_rows(const void *a, const void *b)
{
    const cg_kernel_entry *ra = *(const cg_kernel_entry *const *)a;
    const cg_kernel_entry *rb = *(const cg_kernel_entry *const *)b;
    int c = compare_key(ra->domain, ra->op_type, rb->domain, rb->op_type);
    if (c)
        return c;
    /* stable: ops.def order decides which duplicate wins */
    return ra < rb ? -1 : ra > rb;
}

cg_status cg_registry_index_init(cg_registry_index *idx, cg_error *err)
{
    idx->count = 0;
    idx->rows = malloc((KERNEL_ROWS ? KERNEL_ROWS : 1) * sizeof *idx->rows);
    if (!idx->rows)
        return cg_error_set(err, CG_NOMEM, "kernel registry: out of memory");
    for (size_t i = 0; i < KERNEL_ROWS; i++)
        idx->rows[i] = &kernel_table[i];
    qsort(idx->rows, KERNEL_ROWS, sizeof *idx->rows, compare_rows);
    /* Drop duplicates (keep the first of each run), reporting the first one. */
    cg_status st = CG_OK;
    size_t n = 0;
    for (size_t i = 0; i < KERNEL_ROWS; i++) {
        if (n > 0 && compare_key(idx->rows[n - 1]->domain, idx->rows[n - 1]->op_type,
                                 idx->rows[i]->domain, idx->rows[i]->op_type) == 0) {
            if (st == CG_OK)
                st = cg_error_set(err, CG_INVALID, "kernel registry: op '%s' (domain '%s') is "
                                  "registered twice", idx->rows[i]->op_type,
                                  canonical_domain(idx->rows[i]->domain));
            continue;
        }
        idx->rows[n++] = idx->rows[i];
    }
    idx->count = n;
    return st;
}

void cg_registry_index_free(cg_registry_index *idx)
{
    free(idx->rows);
    idx->rows = NULL;
    idx->count = 0;
}

cg_kernel_fn cg_registry_find(const cg_registry_index *idx, const char *domain,
                              const char *op_type)
{
    if (!op_type)
        return NULL;
    size_t lo = 0, hi = idx->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const cg_kernel_entry *r = idx->rows[mid];
        int c = compare_key(domain, op_type, r->domain, r->op_type);
        if (c == 0)
            return r->fn;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
