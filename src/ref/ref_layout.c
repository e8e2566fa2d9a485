/* CPU reference: ops that move data without arithmetic. Identity, Constant, Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Expand, Slice, Concat and Gather, with ONNX
 * semantics (opset 13+ takes axes/shapes as inputs; the attributes of older opsets are
 * read when the input is absent). Index-like inputs (shapes, axes, starts, indices) are
 * read from their double buffers; every index is range-checked and a bad one is an error.
 */
#include <string.h>

#include "ref/ref_internal.h"

rf_status_t rf_ref_identity(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input", &x));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    if (y && x->numel)
        memcpy(y, x->data, (size_t)x->numel * sizeof(double));
    return RF_OK;
}

rf_status_t rf_ref_constant(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    double *y;
    const rf_attr_t *a;
    if ((a = rf_node_attr(node, "value")) && a->type == RF_ATTR_TENSOR) {
        const rf_value_t *v = rf_graph_value(ctx->graph, a->tensor);
        int64_t numel;
        if (!v || !v->is_const || !v->has_shape)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "attribute 'value' is not a constant");
        RF_RETURN_IF_ERROR(rf_shape_numel(&v->shape, &numel), "attribute 'value'");
        if ((uint64_t)numel * rf_dtype_size(v->dtype) != v->nbytes || (numel && !v->data))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "attribute 'value' has %zu bytes of data, "
                          "which does not match its shape",
                          v->nbytes);
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &v->shape, &y));
        for (int64_t e = 0; y && e < numel; e++)
            y[e] = rf_value_get_f64(v, e);
        return RF_OK;
    }
    if (((a = rf_node_attr(node, "value_float")) && a->type == RF_ATTR_FLOAT) ||
        ((a = rf_node_attr(node, "value_int")) && a->type == RF_ATTR_INT)) {
        rf_shape_t s = {.rank = 0};
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &s, &y));
        if (y)
            y[0] = a->type == RF_ATTR_FLOAT ? a->f : (double)a->i;
        return RF_OK;
    }
    if (((a = rf_node_attr(node, "value_floats")) && a->type == RF_ATTR_FLOATS) ||
        ((a = rf_node_attr(node, "value_ints")) && a->type == RF_ATTR_INTS)) {
        rf_shape_t s = {.rank = 1, .dims = {a->n}};
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &s, &y));
        for (int e = 0; y && e < a->n; e++)
            y[e] = a->type == RF_ATTR_FLOATS ? a->floats[e] : (double)a->ints[e];
        return RF_OK;
    }
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "Constant needs a 'value' tensor or value_float(s)/value_int(s) attribute");
}

/* Output 0 = input 0 with a new shape of the same element count. */
static rf_status_t rf_ref_copy_as(rf_ref_ctx_t *ctx, const rf_node_t *node, const rf_ref_buf_t *x,
                                  const rf_shape_t *os) {
    int64_t n;
    char s1[160], s2[160];
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(os, &n));
    if (n != x->numel)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot reshape %s (%lld elements) to %s",
                      rf_shape_format(&x->shape, s1, sizeof s1), (long long)x->numel,
                      rf_shape_format(os, s2, sizeof s2));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, os, &y));
    if (y && n)
        memcpy(y, x->data, (size_t)n * sizeof(double));
    return RF_OK;
}

rf_status_t rf_ref_reshape(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int64_t dims[RF_MAX_RANK];
    int n, given;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, "shape", dims, &n, &given));
    if (!given)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Reshape has no target shape");
    int allowzero = rf_node_attr_int(node, "allowzero", 0) != 0;
    rf_shape_t os = {.rank = n};
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < n; d++) {
        int64_t v = dims[d];
        if (v == 0 && !allowzero) {
            if (d >= x->shape.rank)
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "target dim %d is 0 (copy) but the input has rank %d", d,
                              x->shape.rank);
            v = x->shape.dims[d];
        }
        if (v == -1) {
            if (infer >= 0)
                return RF_ERR(RF_CODE_SHAPE_ERROR, "target shape has more than one -1");
            infer = d;
            v = 1;
        } else if (v < 0) {
            return RF_ERR(RF_CODE_SHAPE_ERROR, "target dim %d is %lld", d, (long long)v);
        }
        os.dims[d] = v;
        if (d != infer)
            known *= v;
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known != 0)
            return RF_ERR(RF_CODE_SHAPE_ERROR,
                          "cannot infer the -1 dim: %lld elements over a known product of %lld",
                          (long long)x->numel, (long long)known);
        os.dims[infer] = x->numel / known;
    }
    return rf_ref_copy_as(ctx, node, x, &os);
}

rf_status_t rf_ref_flatten(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input", &x));
    int rank = x->shape.rank;
    int64_t axis = rf_node_attr_int(node, "axis", 1);
    if (axis < -rank || axis > rank)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Flatten axis %lld outside [-%d, %d]",
                      (long long)axis, rank, rank);
    if (axis < 0)
        axis += rank;
    rf_shape_t os = {.rank = 2, .dims = {1, 1}};
    for (int d = 0; d < rank; d++)
        os.dims[d < axis ? 0 : 1] *= x->shape.dims[d];
    return rf_ref_copy_as(ctx, node, x, &os);
}

rf_status_t rf_ref_squeeze(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int64_t axes[RF_MAX_RANK];
    int n, given, drop[RF_MAX_RANK] = {0};
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, "axes", axes, &n, &given));
    int rank = x->shape.rank;
    if (!given) {
        for (int d = 0; d < rank; d++)
            drop[d] = x->shape.dims[d] == 1;
    }
    for (int i = 0; i < n; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_axis(axes[i], rank, "Squeeze axis", &ax));
        if (x->shape.dims[ax] != 1)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot squeeze axis %d of size %lld", ax,
                          (long long)x->shape.dims[ax]);
        drop[ax] = 1;
    }
    rf_shape_t os = {.rank = 0};
    for (int d = 0; d < rank; d++)
        if (!drop[d])
            os.dims[os.rank++] = x->shape.dims[d];
    return rf_ref_copy_as(ctx, node, x, &os);
}

rf_status_t rf_ref_unsqueeze(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int64_t axes[RF_MAX_RANK];
    int n, given, add[RF_MAX_RANK] = {0};
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, "axes", axes, &n, &given));
    if (!given)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Unsqueeze has no axes");
    int rank = x->shape.rank + n;
    if (rank > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "Unsqueeze result rank %d exceeds %d", rank,
                      RF_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_axis(axes[i], rank, "Unsqueeze axis", &ax));
        if (add[ax])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Unsqueeze axis %d is given twice", ax);
        add[ax] = 1;
    }
    rf_shape_t os = {.rank = rank};
    for (int d = 0, k = 0; d < rank; d++)
        os.dims[d] = add[d] ? 1 : x->shape.dims[k++];
    return rf_ref_copy_as(ctx, node, x, &os);
}

/* Writes the n-element output y by walking its shape os; the input offset starts at
 * base and moves by step[d] along output dim d. */
static void rf_ref_strided_copy(const double *x, int64_t base, const int64_t *step,
                                const rf_shape_t *os, int64_t n, double *y) {
    int64_t idx[RF_MAX_RANK] = {0}, off = base;
    for (int64_t e = 0; e < n; e++) {
        y[e] = x[off];
        for (int d = os->rank - 1; d >= 0; d--) {
            idx[d]++;
            off += step[d];
            if (idx[d] < os->dims[d])
                break;
            off -= step[d] * os->dims[d];
            idx[d] = 0;
        }
    }
}

rf_status_t rf_ref_transpose(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int rank = x->shape.rank, n, given, seen[RF_MAX_RANK] = {0};
    int64_t perm[RF_MAX_RANK], st[RF_MAX_RANK], step[RF_MAX_RANK];
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, -1, "perm", perm, &n, &given));
    if (!given) {
        n = rank;
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
    }
    if (n != rank)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "perm has %d entries for rank %d", n, rank);
    for (int d = 0; d < rank; d++) {
        if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "perm is not a permutation of 0..%d", rank - 1);
        seen[perm[d]] = 1;
    }
    rf_ref_strides(&x->shape, st);
    rf_shape_t os = {.rank = rank};
    for (int d = 0; d < rank; d++) {
        os.dims[d] = x->shape.dims[perm[d]];
        step[d] = st[perm[d]];
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (y)
        rf_ref_strided_copy(x->data, 0, step, &os, x->numel, y);
    return RF_OK;
}

rf_status_t rf_ref_expand(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input", &x));
    int64_t dims[RF_MAX_RANK], step[RF_MAX_RANK];
    int n, given;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, NULL, dims, &n, &given));
    if (!given)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Expand has no shape input");
    rf_shape_t target = {.rank = n}, os;
    for (int d = 0; d < n; d++) {
        if (dims[d] < 0)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "Expand target dim %d is %lld", d,
                          (long long)dims[d]);
        target.dims[d] = dims[d];
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_broadcast_shape(&x->shape, &target, &os));
    int64_t numel;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&os, &numel));
    rf_ref_broadcast_strides(&x->shape, &os, step);
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (y)
        rf_ref_strided_copy(x->data, 0, step, &os, numel, y);
    return RF_OK;
}

rf_status_t rf_ref_slice(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int64_t starts[RF_MAX_RANK], ends[RF_MAX_RANK], axes[RF_MAX_RANK], steps[RF_MAX_RANK];
    int ns, ne, na, nst, gs, ge, ga, gst;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, "starts", starts, &ns, &gs));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 2, "ends", ends, &ne, &ge));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 3, "axes", axes, &na, &ga));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 4, NULL, steps, &nst, &gst));
    if (!gs || !ge || ns != ne || (ga && na != ns) || (gst && nst != ns))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "starts, ends, axes and steps must be given with equal lengths");
    int rank = x->shape.rank, done[RF_MAX_RANK] = {0};
    int64_t first[RF_MAX_RANK] = {0}, stride[RF_MAX_RANK] = {0}, st[RF_MAX_RANK];
    rf_shape_t os = x->shape;
    for (int d = 0; d < rank; d++)
        stride[d] = 1;
    for (int i = 0; i < ns; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_axis(ga ? axes[i] : i, rank, "Slice axis", &ax));
        if (done[ax])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Slice axis %d is given twice", ax);
        done[ax] = 1;
        int64_t dim = x->shape.dims[ax], s = starts[i], e = ends[i], k = gst ? steps[i] : 1;
        if (k == 0)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Slice step on axis %d is 0", ax);
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        int64_t len;
        if (k > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            len = e > s ? (e - s + k - 1) / k : 0;
        } else {
            s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            len = s > e ? (s - e + (-k) - 1) / (-k) : 0;
        }
        os.dims[ax] = len;
        first[ax] = s;
        stride[ax] = k;
    }
    rf_ref_strides(&x->shape, st);
    int64_t base = 0, step[RF_MAX_RANK], numel;
    for (int d = 0; d < rank; d++) {
        base += first[d] * st[d];
        step[d] = stride[d] * st[d];
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&os, &numel));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (y && numel)
        rf_ref_strided_copy(x->data, base, step, &os, numel, y);
    return RF_OK;
}

rf_status_t rf_ref_concat(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x0;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input 0", &x0));
    const rf_attr_t *a = rf_node_attr(node, "axis");
    if (!a || a->type != RF_ATTR_INT)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Concat needs an int attribute 'axis'");
    int rank = x0->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_axis(a->i, rank, "Concat axis", &axis));
    rf_shape_t os = x0->shape;
    os.dims[axis] = 0;
    char s1[160], s2[160];
    for (int i = 0; i < node->n_inputs; i++) {
        const rf_ref_buf_t *xi;
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, i, "Concat input", &xi));
        int same = xi->shape.rank == rank;
        for (int d = 0; same && d < rank; d++)
            same = d == axis || xi->shape.dims[d] == x0->shape.dims[d];
        if (!same)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "Concat on axis %d of %s and %s: other dims differ",
                          axis, rf_shape_format(&x0->shape, s1, sizeof s1),
                          rf_shape_format(&xi->shape, s2, sizeof s2));
        os.dims[axis] += xi->shape.dims[axis];
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= os.dims[d];
    for (int d = axis + 1; d < rank; d++)
        inner *= os.dims[d];
    int64_t row = os.dims[axis] * inner, col = 0;
    for (int i = 0; i < node->n_inputs; i++) {
        const rf_ref_buf_t *xi = rf_ref_input(ctx, node, i);
        int64_t chunk = xi->shape.dims[axis] * inner;
        for (int64_t o = 0; o < outer && chunk; o++)
            memcpy(y + o * row + col, xi->data + o * chunk, (size_t)chunk * sizeof(double));
        col += chunk;
    }
    return RF_OK;
}

rf_status_t rf_ref_gather(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x, *ind;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "indices", &ind));
    int rank = x->shape.rank, axis;
    if (rank == 0)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Gather from a scalar");
    RF_RETURN_IF_ERROR_PLAIN(
        rf_ref_axis(rf_node_attr_int(node, "axis", 0), rank, "Gather axis", &axis));
    if (rank - 1 + ind->shape.rank > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "Gather result rank exceeds %d", RF_MAX_RANK);
    rf_shape_t os = {.rank = 0};
    int64_t outer = 1, inner = 1, dim = x->shape.dims[axis];
    for (int d = 0; d < axis; d++) {
        os.dims[os.rank++] = x->shape.dims[d];
        outer *= x->shape.dims[d];
    }
    for (int d = 0; d < ind->shape.rank; d++)
        os.dims[os.rank++] = ind->shape.dims[d];
    for (int d = axis + 1; d < rank; d++) {
        os.dims[os.rank++] = x->shape.dims[d];
        inner *= x->shape.dims[d];
    }
    for (int64_t t = 0; t < ind->numel; t++) {
        int64_t k = rf_ref_to_i64(ind->data[t]);
        if (k < -dim || k >= dim)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "Gather index %lld at position %lld is outside [-%lld, %lld)",
                          (long long)k, (long long)t, (long long)dim, (long long)dim);
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y || !inner)
        return RF_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t t = 0; t < ind->numel; t++) {
            int64_t k = rf_ref_to_i64(ind->data[t]);
            if (k < 0)
                k += dim;
            memcpy(y + (o * ind->numel + t) * inner, x->data + (o * dim + k) * inner,
                   (size_t)inner * sizeof(double));
        }
    return RF_OK;
}
