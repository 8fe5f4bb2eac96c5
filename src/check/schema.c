/*
 * The operator schema table behind include/convgate/schema.h.
 *
 * Three row arrays, each sorted by (domain, name, since_version) in strcmp
 * order: cg_schema_gen_rows (schema_table.inc, generated from onnx 1.12,
 * opsets up to 17), cg_schema_extra_rows (schema_extra.inc, hand-written
 * opset 18-21 rows) and cg_schema_tflite_rows (schema_tflite.inc, the
 * convgate domain of lowered .tflite models). Lookups binary-search both and take the newest row not
 * above the requested opset, so no merged copy (and no mutable global state)
 * is needed. The table is read-only data; every function here is pure and
 * thread-safe. test_check_schema verifies both arrays are sorted and that no
 * (domain, name, since_version) appears twice.
 */
#include <stdint.h>
#include <string.h>

#include "convgate/schema.h"
#include "ir/walk.h"

#include "schema_table.inc"
#include "schema_extra.inc"
#include "schema_tflite.inc"

#define GEN_COUNT (sizeof cg_schema_gen_rows / sizeof cg_schema_gen_rows[0])
#define EXTRA_COUNT (sizeof cg_schema_extra_rows / sizeof cg_schema_extra_rows[0])
#define TFLITE_COUNT (sizeof cg_schema_tflite_rows / sizeof cg_schema_tflite_rows[0])

/* "" and "ai.onnx" both name the default domain; rows store "". */
static const char *canonical_domain(const char *domain)
{
    return cg_domain_is_default(domain) ? "" : domain;
}

/* Orders a row against (domain, name): <0, 0, >0 like strcmp. */
static int row_cmp(const cg_schema *row, const char *domain, const char *name)
{
    int c = strcmp(row->domain, domain);
    if (c != 0)
        return c;
    return strcmp(row->name, name);
}

/* Index of the first row of (domain, name) in rows[0..n), or n if absent. */
static size_t first_row(const cg_schema *rows, size_t n, const char *domain, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (row_cmp(&rows[mid], domain, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && row_cmp(&rows[lo], domain, name) == 0)
        return lo;
    return n;
}

/* The newest row of (domain, name) with since_version <= opset in one array. */
static const cg_schema *find_in(const cg_schema *rows, size_t n, const char *domain,
                                const char *name, int64_t opset)
{
    const cg_schema *best = NULL;
    for (size_t i = first_row(rows, n, domain, name); i < n; i++) {
        if (row_cmp(&rows[i], domain, name) != 0 || rows[i].since_version > opset)
            break;
        best = &rows[i];
    }
    return best;
}

const cg_schema *cg_schema_find(const char *domain, const char *op_type, int64_t opset_version)
{
    if (op_type == NULL || opset_version < 1)
        return NULL;
    domain = canonical_domain(domain);
    const cg_schema *gen = find_in(cg_schema_gen_rows, GEN_COUNT, domain, op_type, opset_version);
    const cg_schema *extra =
        find_in(cg_schema_extra_rows, EXTRA_COUNT, domain, op_type, opset_version);
    if (gen == NULL && extra == NULL)
        return find_in(cg_schema_tflite_rows, TFLITE_COUNT, domain, op_type, opset_version);
    if (gen == NULL)
        return extra;
    if (extra == NULL)
        return gen;
    return extra->since_version > gen->since_version ? extra : gen;
}

bool cg_schema_known_op(const char *domain, const char *op_type)
{
    if (op_type == NULL)
        return false;
    domain = canonical_domain(domain);
    return first_row(cg_schema_gen_rows, GEN_COUNT, domain, op_type) < GEN_COUNT ||
           first_row(cg_schema_extra_rows, EXTRA_COUNT, domain, op_type) < EXTRA_COUNT ||
           first_row(cg_schema_tflite_rows, TFLITE_COUNT, domain, op_type) < TFLITE_COUNT;
}

bool cg_schema_known_domain(const char *domain)
{
    return cg_schema_max_opset(domain) > 0;
}

int cg_schema_max_opset(const char *domain)
{
    domain = canonical_domain(domain);
    int max = 0;
    for (size_t i = 0; i < cg_schema_count(); i++) {
        const cg_schema *s = cg_schema_at(i);
        if (strcmp(s->domain, domain) == 0 && s->since_version > max)
            max = s->since_version;
    }
    return max;
}

const cg_schema_attr *cg_schema_find_attr(const cg_schema *s, const char *name)
{
    if (s == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < s->attr_count; i++)
        if (strcmp(s->attrs[i].name, name) == 0)
            return &s->attrs[i];
    return NULL;
}

size_t cg_schema_count(void)
{
    return GEN_COUNT + EXTRA_COUNT + TFLITE_COUNT;
}

/* Generated rows first, then the hand-written ones, then the TFLite domain. */
const cg_schema *cg_schema_at(size_t i)
{
    if (i < GEN_COUNT)
        return &cg_schema_gen_rows[i];
    if (i - GEN_COUNT < EXTRA_COUNT)
        return &cg_schema_extra_rows[i - GEN_COUNT];
    if (i - GEN_COUNT - EXTRA_COUNT < TFLITE_COUNT)
        return &cg_schema_tflite_rows[i - GEN_COUNT - EXTRA_COUNT];
    return NULL;
}
