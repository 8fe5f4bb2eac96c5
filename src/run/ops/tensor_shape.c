/*
 * Kernels that change a tensor's shape or layout without arithmetic on its
 * values: Identity, Reshape, Shape, Size, Flatten, Squeeze, Unsqueeze,
 * Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
 * SpaceToDepth, CenterCropPad. Each describes its output as a view of the
 * input (strides or per-dim index maps) and lets tensor_util.c move the
 * bytes, so every dtype (strings included) goes through the same code.
 */
#include <stdlib.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

/* --- Identity --------------------------------------------------------------- */

cg_status cg_op_identity(cg_kernel_ctx *k)
{
    const cg_value *in = k->input_count > 0 ? k->inputs[0] : NULL;
    if (!in)
        return cg_kernel_fail(k, CG_INVALID, "input 0 is missing");
    if (in->kind == CG_VALUE_TENSOR)
        return cg_tens_output_copy(k, 0, &in->tensor, in->tensor.rank, in->tensor.dims,
                                   NULL);
    /* Sequences and optionals: deep copy, then move the copy's contents into
     * the output value the executor handed us. */
    cg_value *out, *copy;
    cg_status st = cg_kernel_output_value(k, 0, &out);
    if (st != CG_OK)
        return st;
    st = cg_value_clone(k, in, &copy);
    if (st != CG_OK)
        return st;
    *out = *copy;
    copy->tensor.data = NULL;
    copy->items = NULL;
    copy->item_count = 0;
    cg_value_free(copy);
    return CG_OK;
}

/* --- Reshape, Shape, Size, Flatten ----------------------------------------- */

cg_status cg_op_reshape(cg_kernel_ctx *k)
{
    const cg_tensor *data, *shape_t;
    int64_t shape[CG_MAX_RANK], dims[CG_MAX_RANK];
    size_t n = 0;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    if (k->since < 5) {
        const int64_t *a = cg_attr_ints(k, "shape", &n);
        if (n > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "shape has %zu dims, at most %d", n,
                                  CG_MAX_RANK);
        if (n)
            memcpy(shape, a, n * sizeof *a);
    } else {
        if ((st = cg_kernel_require(k, 1, &shape_t)) != CG_OK)
            return st;
        if ((st = cg_tens_read_ints(k, shape_t, "shape", shape, CG_MAX_RANK, &n)) != CG_OK)
            return st;
    }
    bool allowzero = k->since >= 14 && cg_attr_int(k, "allowzero", 0) != 0;
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if ((int)i >= data->rank)
                return cg_kernel_fail(k, CG_INVALID,
                                      "shape[%zu] = 0 copies a dim the rank-%d input lacks", i,
                                      data->rank);
            v = data->dims[i];
        }
        if (v == -1) {
            if (infer >= 0)
                return cg_kernel_fail(k, CG_INVALID, "shape has more than one -1");
            infer = (int)i;
            continue;
        }
        if (v < 0)
            return cg_kernel_fail(k, CG_INVALID, "shape[%zu] = %lld is negative", i,
                                  (long long)v);
        if (v != 0 && known > INT64_MAX / v)
            return cg_kernel_fail(k, CG_INVALID, "shape overflows int64");
        known *= v;
        dims[i] = v;
    }
    if (infer >= 0) {
        if (known == 0)
            return cg_kernel_fail(k, CG_INVALID,
                                  "cannot infer the -1 dim when the other dims hold zero");
        if (data->numel % known != 0)
            return cg_kernel_fail(k, CG_INVALID, "cannot reshape %lld elements with -1 into "
                                  "a multiple of %lld", (long long)data->numel,
                                  (long long)known);
        dims[infer] = data->numel / known;
    } else if (known != data->numel) {
        return cg_kernel_fail(k, CG_INVALID, "cannot reshape %lld elements into %lld",
                              (long long)data->numel, (long long)known);
    }
    return cg_tens_output_copy(k, 0, data, (int)n, dims, NULL);
}

cg_status cg_op_shape(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int64_t r = data->rank, start = 0, end = r;
    if (k->since >= 15) {
        start = cg_attr_int(k, "start", 0);
        end = cg_attr_int(k, "end", r);
    }
    int64_t len = cg_shape_slice(r, start, end, &start);
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 1, &len, &out)) != CG_OK)
        return st;
    for (int64_t i = 0; i < len; i++)
        ((int64_t *)out->data)[i] = data->dims[start + i];
    return CG_OK;
}

cg_status cg_op_size(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 0, NULL, &out)) != CG_OK)
        return st;
    *(int64_t *)out->data = data->numel;
    return CG_OK;
}

cg_status cg_op_flatten(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int64_t axis = cg_attr_int(k, "axis", 1);
    if (axis < -(int64_t)data->rank || axis > data->rank)
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)axis, data->rank);
    if (axis < 0)
        axis += data->rank;
    int64_t dims[2];
    /* bounded by numel when there are elements; an empty input with huge
     * other dims can have an output shape that int64 cannot hold */
    if (!cg_shape_numel((int)axis, data->dims, &dims[0]) ||
        !cg_shape_numel(data->rank - (int)axis, data->dims + axis, &dims[1]))
        return cg_kernel_fail(k, CG_LIMIT, "the flattened shape of an input of rank %d "
                              "overflows int64", data->rank);
    return cg_tens_output_copy(k, 0, data, 2, dims, NULL);
}

/* --- Squeeze, Unsqueeze ----------------------------------------------------- */

/* Axes from the attribute (before opset 13) or input 1 (13+); *present says
 * whether any were given. */
static cg_status read_axes(cg_kernel_ctx *k, int64_t since_input, size_t input, int64_t *axes,
                           size_t max, size_t *n, bool *present)
{
    *n = 0;
    *present = false;
    if (k->since < since_input) {
        const int64_t *a = cg_attr_ints(k, "axes", n);
        *present = cg_kernel_attr(k, "axes") != NULL;
        if (*n > max)
            return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries, at most %zu", *n, max);
        if (*n)
            memcpy(axes, a, *n * sizeof *a);
        return CG_OK;
    }
    const cg_tensor *t = cg_kernel_input(k, input);
    if (!t)
        return CG_OK;
    *present = true;
    return cg_tens_read_ints(k, t, "axes", axes, max, n);
}

cg_status cg_op_squeeze(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    int64_t axes[CG_MAX_RANK], dims[CG_MAX_RANK];
    size_t n;
    bool present;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    if ((st = read_axes(k, 13, 1, axes, CG_MAX_RANK, &n, &present)) != CG_OK)
        return st;
    if ((st = cg_tens_normalize_axes(k, axes, n, data->rank, axes)) != CG_OK)
        return st;
    bool drop[CG_MAX_RANK] = {false};
    for (size_t i = 0; i < n; i++) {
        if (data->dims[axes[i]] != 1)
            return cg_kernel_fail(k, CG_INVALID, "cannot squeeze axis %lld of size %lld",
                                  (long long)axes[i], (long long)data->dims[axes[i]]);
        drop[axes[i]] = true;
    }
    int r = 0;
    for (int d = 0; d < data->rank; d++) {
        if (n == 0 ? data->dims[d] == 1 : drop[d])
            continue;
        dims[r++] = data->dims[d];
    }
    return cg_tens_output_copy(k, 0, data, r, dims, NULL);
}

cg_status cg_op_unsqueeze(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    int64_t axes[CG_MAX_RANK], dims[CG_MAX_RANK];
    size_t n;
    bool present;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    if ((st = read_axes(k, 13, 1, axes, CG_MAX_RANK, &n, &present)) != CG_OK)
        return st;
    if (!present)
        return cg_kernel_fail(k, CG_INVALID, "axes is required");
    int r = data->rank + (int)n;
    if (r > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds %d", r, CG_MAX_RANK);
    if ((st = cg_tens_normalize_axes(k, axes, n, r, axes)) != CG_OK)
        return st;
    bool add[CG_MAX_RANK] = {false};
    for (size_t i = 0; i < n; i++)
        add[axes[i]] = true;
    for (int d = 0, s = 0; d < r; d++)
        dims[d] = add[d] ? 1 : data->dims[s++];
    return cg_tens_output_copy(k, 0, data, r, dims, NULL);
}

/* --- Transpose --------------------------------------------------------------- */

cg_status cg_op_transpose(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_tensor *out;
    int64_t perm[CG_MAX_RANK], dims[CG_MAX_RANK], istr[CG_MAX_RANK], sstr[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int r = data->rank;
    size_t n;
    const int64_t *p = cg_attr_ints(k, "perm", &n);
    if (cg_kernel_attr(k, "perm") && n != (size_t)r)
        return cg_kernel_fail(k, CG_INVALID, "perm has %zu entries for rank %d", n, r);
    bool seen[CG_MAX_RANK] = {false};
    for (int d = 0; d < r; d++) {
        perm[d] = n ? p[d] : r - 1 - d;
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return cg_kernel_fail(k, CG_INVALID, "perm[%d] = %lld is not a permutation of "
                                  "0..%d", d, (long long)perm[d], r - 1);
        seen[perm[d]] = true;
    }
    cg_tens_strides(r, data->dims, istr);
    for (int d = 0; d < r; d++) {
        dims[d] = data->dims[perm[d]];
        sstr[d] = istr[perm[d]];
    }
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    return cg_tens_strided_copy(k, out, data, r, dims, sstr, 0);
}

/* --- Concat, Split ------------------------------------------------------------ */

cg_status cg_op_concat(cg_kernel_ctx *k)
{
    const cg_tensor *first = NULL, *t;
    cg_tensor *out;
    cg_status st;
    if (k->input_count == 0)
        return cg_kernel_fail(k, CG_INVALID, "needs at least one input");
    for (size_t i = 0; i < k->input_count; i++)
        if ((st = cg_kernel_require(k, i, &t)) != CG_OK)
            return st;
    first = cg_kernel_input(k, 0);
    int r = first->rank;
    if (r == 0)
        return cg_kernel_fail(k, CG_INVALID, "cannot concatenate scalars");
    int64_t axis;
    int64_t axis_attr = cg_attr_int(k, "axis", k->since < 4 ? 1 : INT64_MIN);
    if (axis_attr == INT64_MIN)
        return cg_kernel_fail(k, CG_INVALID, "attribute axis is required");
    if (!cg_normalize_axis(axis_attr, r, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)axis_attr, r);
    int64_t dims[CG_MAX_RANK];
    memcpy(dims, first->dims, sizeof dims);
    dims[axis] = 0;
    for (size_t i = 0; i < k->input_count; i++) {
        t = cg_kernel_input(k, i);
        if (t->dtype != first->dtype || t->rank != r)
            return cg_kernel_fail(k, CG_INVALID, "input %zu is %s rank %d, input 0 is %s rank "
                                  "%d", i, cg_dtype_name(t->dtype), t->rank,
                                  cg_dtype_name(first->dtype), r);
        for (int d = 0; d < r; d++)
            if (d != axis && t->dims[d] != first->dims[d])
                return cg_kernel_fail(k, CG_INVALID, "input %zu has dim %d = %lld, input 0 "
                                      "has %lld", i, d, (long long)t->dims[d],
                                      (long long)first->dims[d]);
        if (t->dims[axis] > INT64_MAX - dims[axis])
            return cg_kernel_fail(k, CG_INVALID, "concatenated axis overflows int64");
        dims[axis] += t->dims[axis];
    }
    if ((st = cg_kernel_output(k, 0, first->dtype, r, dims, &out)) != CG_OK)
        return st;
    int64_t outer = cg_tens_dims_prod(out, 0, (int)axis);
    int64_t inner = cg_tens_dims_prod(out, (int)axis + 1, r);
    int64_t out_chunk = dims[axis] * inner, at = 0;
    for (size_t i = 0; i < k->input_count; i++) {
        t = cg_kernel_input(k, i);
        int64_t chunk = t->dims[axis] * inner;
        for (int64_t o = 0; o < outer && chunk > 0; o++)
            if ((st = cg_tens_copy(k, out, o * out_chunk + at, t, o * chunk, chunk)) != CG_OK)
                return st;
        at += chunk;
    }
    return CG_OK;
}

cg_status cg_op_split(cg_kernel_ctx *k)
{
    const cg_tensor *data, *split_t = NULL;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int64_t axis, axis_attr = cg_attr_int(k, "axis", 0);
    if (!cg_normalize_axis(axis_attr, data->rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)axis_attr, data->rank);
    size_t nout = k->output_count;
    if (nout == 0)
        return cg_kernel_fail(k, CG_INVALID, "needs at least one output");
    int64_t *sizes = cg_kernel_scratch(k, nout * sizeof *sizes);
    if (!sizes)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    int64_t dim = data->dims[axis];
    size_t n = 0;
    const int64_t *attr_split = NULL;
    if (k->since < 13) {
        attr_split = cg_attr_ints(k, "split", &n);
        if (k->since < 2)
            split_t = cg_kernel_input(k, 1);
    } else {
        split_t = cg_kernel_input(k, 1);
    }
    if (split_t || n) {
        if (split_t) {
            if (split_t->numel != (int64_t)nout)
                return cg_kernel_fail(k, CG_INVALID, "split has %lld entries for %zu outputs",
                                      (long long)split_t->numel, nout);
            if ((st = cg_tens_read_ints(k, split_t, "split", sizes, nout, &n)) != CG_OK)
                return st;
        } else {
            if (n != nout)
                return cg_kernel_fail(k, CG_INVALID, "split has %zu entries for %zu outputs",
                                      n, nout);
            memcpy(sizes, attr_split, n * sizeof *sizes);
        }
        int64_t sum = 0;
        for (size_t i = 0; i < nout; i++) {
            if (sizes[i] < 0 || sizes[i] > dim - sum)
                return cg_kernel_fail(k, CG_INVALID, "split sizes do not add up to dim %lld "
                                      "(entry %zu = %lld)", (long long)dim, i,
                                      (long long)sizes[i]);
            sum += sizes[i];
        }
        if (sum != dim)
            return cg_kernel_fail(k, CG_INVALID, "split sizes add up to %lld, dim is %lld",
                                  (long long)sum, (long long)dim);
    } else {
        int64_t parts = (int64_t)nout;
        bool uneven = false;
        if (k->since >= 18) {
            int64_t num = cg_attr_int(k, "num_outputs", -1);
            if (num != -1 && num != parts)
                return cg_kernel_fail(k, CG_INVALID, "num_outputs %lld but %zu outputs",
                                      (long long)num, nout);
            uneven = num != -1;
        }
        if (!uneven && dim % parts != 0)
            return cg_kernel_fail(k, CG_INVALID, "dim %lld does not split into %lld equal "
                                  "parts", (long long)dim, (long long)parts);
        /* Opset 18: ceil-sized chunks, the last one takes what is left. */
        int64_t chunk = dim / parts + (dim % parts != 0);
        for (size_t i = 0; i < nout; i++) {
            int64_t left = dim - chunk * (int64_t)i;
            sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
        }
        if (uneven && chunk * (parts - 1) > dim)
            return cg_kernel_fail(k, CG_INVALID, "dim %lld cannot give %lld non-empty parts",
                                  (long long)dim, (long long)parts);
    }
    int64_t outer = cg_tens_dims_prod(data, 0, (int)axis);
    int64_t inner = cg_tens_dims_prod(data, (int)axis + 1, data->rank);
    int64_t at = 0;
    for (size_t i = 0; i < nout; i++) {
        int64_t dims[CG_MAX_RANK];
        cg_tensor *out;
        memcpy(dims, data->dims, sizeof dims);
        dims[axis] = sizes[i];
        if ((st = cg_kernel_output(k, i, data->dtype, data->rank, dims, &out)) != CG_OK)
            return st;
        int64_t chunk = sizes[i] * inner;
        for (int64_t o = 0; o < outer && chunk > 0; o++)
            if ((st = cg_tens_copy(k, out, o * chunk, data, o * dim * inner + at, chunk)) !=
                CG_OK)
                return st;
        at += chunk;
    }
    return CG_OK;
}

/* --- Slice ------------------------------------------------------------------- */

/* Clamps start/end by the Slice rules and returns the element count. */
static int64_t slice_count(int64_t dim, int64_t step, int64_t *start, int64_t *end)
{
    int64_t s = *start, e = *end;
    if (s < 0)
        s += dim; /* cannot overflow: dim >= 0 */
    if (e < 0)
        e += dim;
    if (step > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        *start = s;
        return e > s ? (e - s - 1) / step + 1 : 0;
    }
    if (dim == 0)
        return 0;
    s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
    e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    *start = s;
    if (s <= e)
        return 0;
    /* -step overflows for INT64_MIN; any step that large takes one element. */
    if (step == INT64_MIN)
        return 1;
    return (s - e - 1) / -step + 1;
}

cg_status cg_op_slice(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_tensor *out;
    int64_t starts[CG_MAX_RANK], ends[CG_MAX_RANK], axes[CG_MAX_RANK], steps[CG_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int r = data->rank;
    if (k->since < 10) {
        const int64_t *a = cg_attr_ints(k, "starts", &ns);
        if (ns > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "starts has %zu entries", ns);
        if (ns)
            memcpy(starts, a, ns * sizeof *a);
        a = cg_attr_ints(k, "ends", &ne);
        if (ne > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "ends has %zu entries", ne);
        if (ne)
            memcpy(ends, a, ne * sizeof *a);
        a = cg_attr_ints(k, "axes", &na);
        if (na > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries", na);
        if (na)
            memcpy(axes, a, na * sizeof *a);
    } else {
        const cg_tensor *t;
        if ((st = cg_kernel_require(k, 1, &t)) != CG_OK ||
            (st = cg_tens_read_ints(k, t, "starts", starts, CG_MAX_RANK, &ns)) != CG_OK)
            return st;
        if ((st = cg_kernel_require(k, 2, &t)) != CG_OK ||
            (st = cg_tens_read_ints(k, t, "ends", ends, CG_MAX_RANK, &ne)) != CG_OK)
            return st;
        if ((t = cg_kernel_input(k, 3)) &&
            (st = cg_tens_read_ints(k, t, "axes", axes, CG_MAX_RANK, &na)) != CG_OK)
            return st;
        if ((t = cg_kernel_input(k, 4)) &&
            (st = cg_tens_read_ints(k, t, "steps", steps, CG_MAX_RANK, &nst)) != CG_OK)
            return st;
        if (!t)
            nst = 0;
    }
    if (ne != ns)
        return cg_kernel_fail(k, CG_INVALID, "starts has %zu entries, ends %zu", ns, ne);
    bool have_axes = k->since < 10 ? cg_kernel_attr(k, "axes") != NULL
                                   : cg_kernel_input(k, 3) != NULL;
    if (!have_axes) {
        if (ns > (size_t)r)
            return cg_kernel_fail(k, CG_INVALID, "%zu starts for rank %d", ns, r);
        for (size_t i = 0; i < ns; i++)
            axes[i] = (int64_t)i;
        na = ns;
    }
    if (na != ns)
        return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries, starts %zu", na, ns);
    bool have_steps = k->since >= 10 && cg_kernel_input(k, 4) != NULL;
    if (have_steps && nst != ns)
        return cg_kernel_fail(k, CG_INVALID, "steps has %zu entries, starts %zu", nst, ns);
    if ((st = cg_tens_normalize_axes(k, axes, na, r, axes)) != CG_OK)
        return st;

    int64_t begin[CG_MAX_RANK], step[CG_MAX_RANK], dims[CG_MAX_RANK];
    for (int d = 0; d < r; d++) {
        begin[d] = 0;
        step[d] = 1;
        dims[d] = data->dims[d];
    }
    for (size_t i = 0; i < ns; i++) {
        int64_t a = axes[i], s = have_steps ? steps[i] : 1, b = starts[i], e = ends[i];
        if (s == 0)
            return cg_kernel_fail(k, CG_INVALID, "steps[%zu] is 0", i);
        dims[a] = slice_count(data->dims[a], s, &b, &e);
        begin[a] = b;
        step[a] = s;
    }
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    if (out->numel == 0)
        return CG_OK;
    int64_t istr[CG_MAX_RANK], sstr[CG_MAX_RANK], base = 0;
    cg_tens_strides(r, data->dims, istr);
    for (int d = 0; d < r; d++) {
        base += begin[d] * istr[d];
        /* A dim of one element never advances; keeps huge steps from overflowing. */
        sstr[d] = dims[d] > 1 ? step[d] * istr[d] : 0;
    }
    return cg_tens_strided_copy(k, out, data, r, dims, sstr, base);
}

/* --- Expand, Tile ------------------------------------------------------------- */

cg_status cg_op_expand(cg_kernel_ctx *k)
{
    const cg_tensor *data, *shape_t;
    cg_tensor *out;
    int64_t shape[CG_MAX_RANK], dims[CG_MAX_RANK], sstr[CG_MAX_RANK];
    size_t n;
    int r;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &shape_t)) != CG_OK)
        return st;
    if ((st = cg_tens_read_ints(k, shape_t, "shape", shape, CG_MAX_RANK, &n)) != CG_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        if (shape[i] < 0)
            return cg_kernel_fail(k, CG_INVALID, "shape[%zu] = %lld is negative", i,
                                  (long long)shape[i]);
    if (!cg_broadcast_shapes(data->rank, data->dims, (int)n, shape, &r, dims))
        return cg_kernel_fail(k, CG_INVALID, "input shape does not broadcast to the given "
                              "shape");
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    cg_broadcast_strides(data->rank, data->dims, r, dims, sstr);
    return cg_tens_strided_copy(k, out, data, r, dims, sstr, 0);
}

cg_status cg_op_tile(cg_kernel_ctx *k)
{
    const cg_tensor *data, *rep_t;
    cg_tensor *out;
    int64_t reps[CG_MAX_RANK], dims[CG_MAX_RANK], istr[CG_MAX_RANK];
    size_t n;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &rep_t)) != CG_OK)
        return st;
    int r = data->rank;
    if (k->since < 6) {
        /* Tile-1: inputs (tiles, axis) repeat one axis. */
        const cg_tensor *axis_t;
        int64_t tiles, axis;
        if ((st = cg_kernel_require(k, 2, &axis_t)) != CG_OK ||
            (st = cg_tens_read_scalar_int(k, rep_t, "tiles", &tiles)) != CG_OK ||
            (st = cg_tens_read_scalar_int(k, axis_t, "axis", &axis)) != CG_OK)
            return st;
        if (!cg_normalize_axis(axis, r, &axis))
            return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                                  (long long)axis, r);
        for (int d = 0; d < r; d++)
            reps[d] = d == axis ? tiles : 1;
        n = (size_t)r;
    } else if ((st = cg_tens_read_ints(k, rep_t, "repeats", reps, CG_MAX_RANK, &n)) != CG_OK) {
        return st;
    }
    if (n != (size_t)r)
        return cg_kernel_fail(k, CG_INVALID, "repeats has %zu entries for rank %d", n, r);
    /* View the output as [rep_0, dim_0, rep_1, dim_1, ...] reading the input
     * with stride 0 along the repeat dims. */
    int64_t vdims[CG_TENS_MAX_VIEW_RANK], vstr[CG_TENS_MAX_VIEW_RANK];
    cg_tens_strides(r, data->dims, istr);
    for (int d = 0; d < r; d++) {
        if (reps[d] < 0)
            return cg_kernel_fail(k, CG_INVALID, "repeats[%d] = %lld is negative", d,
                                  (long long)reps[d]);
        if (reps[d] != 0 && data->dims[d] > INT64_MAX / reps[d])
            return cg_kernel_fail(k, CG_INVALID, "tiled dim %d overflows int64", d);
        dims[d] = data->dims[d] * reps[d];
        vdims[2 * d] = reps[d];
        vstr[2 * d] = 0;
        vdims[2 * d + 1] = data->dims[d];
        vstr[2 * d + 1] = istr[d];
    }
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    return cg_tens_strided_copy(k, out, data, 2 * r, vdims, vstr, 0);
}

/* --- Pad, CenterCropPad ------------------------------------------------------- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

/* Source coordinate of padded coordinate c (may be outside [0, dim)). */
static int64_t pad_source(pad_mode mode, int64_t c, int64_t dim)
{
    if (c >= 0 && c < dim)
        return c;
    switch (mode) {
    case PAD_EDGE: return c < 0 ? 0 : dim - 1;
    case PAD_WRAP: {
        int64_t m = c % dim;
        return m < 0 ? m + dim : m;
    }
    case PAD_REFLECT: {
        if (dim == 1)
            return 0;
        int64_t period = 2 * (dim - 1), m = c % period;
        if (m < 0)
            m += period;
        return m < dim ? m : period - m;
    }
    default: return -1;
    }
}

cg_status cg_op_pad(cg_kernel_ctx *k)
{
    const cg_tensor *data;
    cg_tensor *out, fill_scalar, *fill = NULL;
    int64_t pads[2 * CG_MAX_RANK], axes[CG_MAX_RANK], dims[CG_MAX_RANK];
    int64_t pb[CG_MAX_RANK] = {0}, pe[CG_MAX_RANK] = {0};
    size_t np = 0, na = 0;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK)
        return st;
    int r = data->rank;
    const char *ms = cg_attr_string(k, "mode", "constant");
    pad_mode mode;
    if (strcmp(ms, "constant") == 0)
        mode = PAD_CONSTANT;
    else if (strcmp(ms, "reflect") == 0)
        mode = PAD_REFLECT;
    else if (strcmp(ms, "edge") == 0)
        mode = PAD_EDGE;
    else if (strcmp(ms, "wrap") == 0 && k->since >= 19)
        mode = PAD_WRAP;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", ms);

    if (k->since < 11) {
        const char *name = k->since < 2 ? "paddings" : "pads";
        const int64_t *a = cg_attr_ints(k, name, &np);
        if (np > 2 * CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "%s has %zu entries", name, np);
        if (np)
            memcpy(pads, a, np * sizeof *a);
        float v = cg_attr_float(k, "value", 0.0f);
        if (v != 0.0f && data->dtype != CG_DTYPE_STRING) {
            memset(&fill_scalar, 0, sizeof fill_scalar);
            fill_scalar.dtype = data->dtype;
            fill_scalar.numel = 1;
            fill_scalar.data = cg_kernel_scratch(k, 16);
            if (!fill_scalar.data)
                return cg_kernel_fail(k, CG_NOMEM, "out of memory");
            cg_tensor_set_f64(&fill_scalar, 0, v);
            fill = &fill_scalar;
        }
    } else {
        const cg_tensor *t;
        if ((st = cg_kernel_require(k, 1, &t)) != CG_OK ||
            (st = cg_tens_read_ints(k, t, "pads", pads, 2 * CG_MAX_RANK, &np)) != CG_OK)
            return st;
        if ((t = cg_kernel_input(k, 2)) && t->numel > 0) {
            if (t->dtype != data->dtype || t->numel != 1)
                return cg_kernel_fail(k, CG_INVALID, "constant_value must be one %s element",
                                      cg_dtype_name(data->dtype));
            fill = (cg_tensor *)t; /* only read */
        }
        if (k->since >= 18 && (t = cg_kernel_input(k, 3))) {
            if ((st = cg_tens_read_ints(k, t, "axes", axes, CG_MAX_RANK, &na)) != CG_OK ||
                (st = cg_tens_normalize_axes(k, axes, na, r, axes)) != CG_OK)
                return st;
        } else {
            na = (size_t)r;
            for (int d = 0; d < r; d++)
                axes[d] = d;
        }
    }
    if (k->since < 11) {
        na = (size_t)r;
        for (int d = 0; d < r; d++)
            axes[d] = d;
    }
    if (np != 2 * na)
        return cg_kernel_fail(k, CG_INVALID, "pads has %zu entries, expected %zu", np, 2 * na);
    for (size_t i = 0; i < na; i++) {
        pb[axes[i]] = pads[i];
        pe[axes[i]] = pads[i + na];
    }
    int64_t total = 0;
    size_t map_total = 0;
    for (int d = 0; d < r; d++) {
        int64_t dim = data->dims[d];
        if (pb[d] > INT64_MAX / 4 || pe[d] > INT64_MAX / 4 || pb[d] < -dim || pe[d] < -dim ||
            dim + pb[d] + pe[d] < 0)
            return cg_kernel_fail(k, CG_INVALID, "pads (%lld, %lld) invalid for dim %d of size "
                                  "%lld", (long long)pb[d], (long long)pe[d], d,
                                  (long long)dim);
        dims[d] = dim + pb[d] + pe[d];
        if (mode != PAD_CONSTANT && dim == 0 && dims[d] > 0)
            return cg_kernel_fail(k, CG_INVALID, "%s padding of empty dim %d", ms, d);
        total += dims[d];
    }
    (void)total;
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    if (out->numel == 0)
        return CG_OK;
    for (int d = 0; d < r; d++)
        map_total += (size_t)dims[d]; /* each <= numel of the allocated output */
    int64_t *maps[CG_MAX_RANK];
    int64_t *buf = cg_kernel_scratch(k, (map_total ? map_total : 1) * sizeof *buf);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int d = 0; d < r; d++) {
        maps[d] = buf;
        for (int64_t o = 0; o < dims[d]; o++)
            buf[o] = pad_source(mode, o - pb[d], data->dims[d]);
        buf += dims[d];
    }
    return cg_tens_map_copy(k, out, data, maps, fill);
}

cg_status cg_op_center_crop_pad(cg_kernel_ctx *k)
{
    const cg_tensor *data, *shape_t;
    cg_tensor *out;
    int64_t shape[CG_MAX_RANK], axes[CG_MAX_RANK], dims[CG_MAX_RANK];
    size_t ns, na;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &shape_t)) != CG_OK)
        return st;
    int r = data->rank;
    if ((st = cg_tens_read_ints(k, shape_t, "shape", shape, CG_MAX_RANK, &ns)) != CG_OK)
        return st;
    const int64_t *a = cg_attr_ints(k, "axes", &na);
    if (!cg_kernel_attr(k, "axes")) {
        na = (size_t)r;
        for (int d = 0; d < r; d++)
            axes[d] = d;
    } else {
        if (na > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries", na);
        if ((st = cg_tens_normalize_axes(k, a, na, r, axes)) != CG_OK)
            return st;
    }
    if (ns != na)
        return cg_kernel_fail(k, CG_INVALID, "shape has %zu entries for %zu axes", ns, na);
    int64_t shift[CG_MAX_RANK] = {0}; /* output coordinate o reads o + shift */
    memcpy(dims, data->dims, sizeof dims);
    for (size_t i = 0; i < na; i++) {
        int64_t d = axes[i], want = shape[i], have = data->dims[d];
        if (want < 0)
            return cg_kernel_fail(k, CG_INVALID, "shape[%zu] = %lld is negative", i,
                                  (long long)want);
        dims[d] = want;
        shift[d] = want <= have ? (have - want) / 2 : -((want - have) / 2);
    }
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    if (out->numel == 0)
        return CG_OK;
    size_t map_total = 0;
    for (int d = 0; d < r; d++)
        map_total += (size_t)dims[d];
    int64_t *maps[CG_MAX_RANK];
    int64_t *buf = cg_kernel_scratch(k, (map_total ? map_total : 1) * sizeof *buf);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int d = 0; d < r; d++) {
        maps[d] = buf;
        for (int64_t o = 0; o < dims[d]; o++) {
            int64_t c = o + shift[d];
            buf[o] = c >= 0 && c < data->dims[d] ? c : -1;
        }
        buf += dims[d];
    }
    return cg_tens_map_copy(k, out, data, maps, NULL);
}

/* --- DepthToSpace, SpaceToDepth ----------------------------------------------- */

/* Writes out = transpose(view(data, vdims), perm) for a 6-d view. */
static cg_status permuted_view(cg_kernel_ctx *k, const cg_tensor *data, const int64_t *odims,
                               const int64_t *vdims, const int *perm)
{
    cg_tensor *out;
    int64_t vstr[6], pdims[6], pstr[6];
    cg_status st = cg_kernel_output(k, 0, data->dtype, 4, odims, &out);
    if (st != CG_OK)
        return st;
    cg_tens_strides(6, vdims, vstr);
    for (int i = 0; i < 6; i++) {
        pdims[i] = vdims[perm[i]];
        pstr[i] = vstr[perm[i]];
    }
    return cg_tens_strided_copy(k, out, data, 6, pdims, pstr, 0);
}

static cg_status block_size(cg_kernel_ctx *k, const cg_tensor *data, int64_t *b)
{
    if (data->rank != 4)
        return cg_kernel_fail(k, CG_INVALID, "input must be 4-D, got rank %d", data->rank);
    *b = cg_attr_int(k, "blocksize", 0);
    if (*b <= 0 || *b > (int64_t)1 << 31)
        return cg_kernel_fail(k, CG_INVALID, "blocksize %lld must be positive",
                              (long long)*b);
    return CG_OK;
}

cg_status cg_op_depth_to_space(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    int64_t b = 0;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK || (st = block_size(k, x, &b)) != CG_OK)
        return st;
    int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (c % (b * b) != 0)
        return cg_kernel_fail(k, CG_INVALID, "channels %lld not divisible by blocksize^2 = %lld",
                              (long long)c, (long long)(b * b));
    if (h > INT64_MAX / b || w > INT64_MAX / b)
        return cg_kernel_fail(k, CG_INVALID, "output spatial size overflows int64");
    int64_t cc = c / (b * b), odims[4] = {n, cc, h * b, w * b};
    const char *mode = k->since >= 11 ? cg_attr_string(k, "mode", "DCR") : "DCR";
    if (strcmp(mode, "DCR") == 0) {
        const int64_t v[6] = {n, b, b, cc, h, w};
        static const int perm[6] = {0, 3, 4, 1, 5, 2};
        return permuted_view(k, x, odims, v, perm);
    }
    if (strcmp(mode, "CRD") == 0) {
        const int64_t v[6] = {n, cc, b, b, h, w};
        static const int perm[6] = {0, 1, 4, 2, 5, 3};
        return permuted_view(k, x, odims, v, perm);
    }
    return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", mode);
}

cg_status cg_op_space_to_depth(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    int64_t b = 0;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK || (st = block_size(k, x, &b)) != CG_OK)
        return st;
    int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (h % b != 0 || w % b != 0)
        return cg_kernel_fail(k, CG_INVALID, "spatial size %lldx%lld not divisible by "
                              "blocksize %lld", (long long)h, (long long)w, (long long)b);
    if (c > INT64_MAX / b / b)
        return cg_kernel_fail(k, CG_INVALID, "output channels overflow int64");
    int64_t odims[4] = {n, c * b * b, h / b, w / b};
    const int64_t v[6] = {n, c, h / b, b, w / b, b};
    static const int perm[6] = {0, 3, 5, 1, 2, 4};
    return permuted_view(k, x, odims, v, perm);
}
