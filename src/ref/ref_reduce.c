/* CPU reference: ops that reduce over axes. ReduceMean/ReduceSum/ReduceMax (axes from the
 * attribute of older opsets or the second input of opset 18, keepdims,
 * noop_with_empty_axes), LayerNormalization (axis, epsilon, Scale and B broadcast to the
 * normalised shape, optional Mean and InvStdDev outputs), RMSNormalization (axis, epsilon,
 * Scale) and Softmax (opset 13 semantics:
 * one axis, default -1). Everything in double; the max is subtracted before exp.
 */
#include <math.h>
#include <string.h>

#include "ref/ref_internal.h"

/* The max over an empty set (ONNX): minus infinity where the type has it, else the type's
 * lowest value (false for bool). */
static double rf_ref_dtype_lowest(rf_dtype_t dt) {
    switch (dt) {
    case RF_DTYPE_I64:
        return -9223372036854775808.0;
    case RF_DTYPE_I32:
        return -2147483648.0;
    case RF_DTYPE_I8:
        return -128.0;
    case RF_DTYPE_U8:
    case RF_DTYPE_BOOL:
        return 0.0;
    default:
        return -INFINITY;
    }
}

rf_status_t rf_ref_reduce(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "data", &x));
    int64_t axes[RF_MAX_RANK];
    int n_axes, given;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_int_list(ctx, node, 1, "axes", axes, &n_axes, &given));
    int keepdims = rf_node_attr_int(node, "keepdims", 1) != 0;
    int noop = rf_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    int rank = x->shape.rank;
    if (n_axes == 0 && noop)
        return rf_ref_identity(ctx, node);

    int reduced[RF_MAX_RANK] = {0};
    if (n_axes == 0) {
        for (int d = 0; d < rank; d++)
            reduced[d] = 1;
    }
    for (int i = 0; i < n_axes; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_axis(axes[i], rank, "reduction axis", &ax));
        if (reduced[ax])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "reduction axis %d is given twice", ax);
        reduced[ax] = 1;
    }
    /* keep: the input shape with reduced dims set to 1 (used for the offsets). */
    rf_shape_t keep = x->shape, os = {.rank = 0};
    int64_t count = 1;
    for (int d = 0; d < rank; d++) {
        if (reduced[d]) {
            count *= x->shape.dims[d];
            keep.dims[d] = 1;
            if (keepdims)
                os.dims[os.rank++] = 1;
        } else {
            os.dims[os.rank++] = x->shape.dims[d];
        }
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;
    int64_t n_out = 1;
    for (int d = 0; d < os.rank; d++)
        n_out *= os.dims[d];
    int is_max = node->op == RF_OP_REDUCE_MAX;
    const rf_value_t *xv = rf_graph_value(ctx->graph, node->inputs[0]);
    double lowest = rf_ref_dtype_lowest(xv ? xv->dtype : RF_DTYPE_F64);
    for (int64_t e = 0; e < n_out; e++)
        y[e] = is_max ? lowest : 0.0;

    int64_t sk[RF_MAX_RANK], idx[RF_MAX_RANK] = {0};
    rf_ref_broadcast_strides(&keep, &x->shape, sk);
    int64_t off = 0;
    for (int64_t e = 0; e < x->numel; e++) {
        double v = x->data[e];
        if (is_max) {
            if (v > y[off] || isnan(v))
                y[off] = isnan(y[off]) ? y[off] : v;
        } else {
            y[off] += v;
        }
        for (int d = rank - 1; d >= 0; d--) {
            idx[d]++;
            off += sk[d];
            if (idx[d] < x->shape.dims[d])
                break;
            off -= sk[d] * x->shape.dims[d];
            idx[d] = 0;
        }
    }
    if (node->op == RF_OP_REDUCE_MEAN)
        for (int64_t e = 0; e < n_out; e++)
            y[e] /= (double)count;
    return RF_OK;
}

/* Expands a parameter p (broadcastable to shape ns) into dst[numel(ns)]. */
static rf_status_t rf_ref_expand_param(const rf_ref_buf_t *p, const rf_shape_t *ns,
                                       const char *what, double *dst) {
    rf_shape_t bs;
    char s1[160], s2[160];
    RF_RETURN_IF_ERROR(rf_ref_broadcast_shape(&p->shape, ns, &bs), "%s", what);
    if (!rf_shape_equal(&bs, ns))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s of shape %s does not broadcast to %s", what,
                      rf_shape_format(&p->shape, s1, sizeof s1),
                      rf_shape_format(ns, s2, sizeof s2));
    int64_t st[RF_MAX_RANK], idx[RF_MAX_RANK] = {0}, off = 0, n = 1;
    rf_ref_broadcast_strides(&p->shape, ns, st);
    for (int d = 0; d < ns->rank; d++)
        n *= ns->dims[d];
    for (int64_t e = 0; e < n; e++) {
        dst[e] = p->data[off];
        for (int d = ns->rank - 1; d >= 0; d--) {
            idx[d]++;
            off += st[d];
            if (idx[d] < ns->dims[d])
                break;
            off -= st[d] * ns->dims[d];
            idx[d] = 0;
        }
    }
    return RF_OK;
}

rf_status_t rf_ref_layer_norm(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x, *scale, *bias = rf_ref_input(ctx, node, 2);
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "X", &x));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "Scale", &scale));
    int rank = x->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_ref_axis(rf_node_attr_int(node, "axis", -1), rank, "LayerNormalization axis", &axis));
    double eps = rf_node_attr_float(node, "epsilon", 1e-5);
    rf_shape_t ns = {.rank = rank - axis}, stat = x->shape;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < rank; d++) {
        if (d < axis) {
            outer *= x->shape.dims[d];
        } else {
            inner *= x->shape.dims[d];
            ns.dims[d - axis] = x->shape.dims[d];
            stat.dims[d] = 1;
        }
    }
    double *y, *mean_out, *inv_out, *sc = NULL, *bi = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 1, &stat, &mean_out));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 2, &stat, &inv_out));
    rf_status_t st = rf_ref_scratch(ctx, inner, "LayerNormalization scale", &sc);
    if (!st)
        st = rf_ref_scratch(ctx, inner, "LayerNormalization bias", &bi);
    if (!st)
        st = rf_ref_expand_param(scale, &ns, "Scale", sc);
    if (!st && bias)
        st = rf_ref_expand_param(bias, &ns, "B", bi);
    for (int64_t o = 0; !st && o < outer; o++) {
        const double *xr = x->data + o * inner;
        double s = 0.0, v = 0.0;
        for (int64_t j = 0; j < inner; j++)
            s += xr[j];
        double mean = s / (double)inner;
        for (int64_t j = 0; j < inner; j++)
            v += (xr[j] - mean) * (xr[j] - mean);
        double inv = 1.0 / sqrt(v / (double)inner + eps);
        if (y)
            for (int64_t j = 0; j < inner; j++)
                y[o * inner + j] = (xr[j] - mean) * inv * sc[j] + bi[j];
        if (mean_out)
            mean_out[o] = mean;
        if (inv_out)
            inv_out[o] = inv;
    }
    rf_ref_scratch_free(ctx, sc);
    rf_ref_scratch_free(ctx, bi);
    return st;
}

/* RMSNormalization (opset 23): y = x / sqrt(mean(x^2) + epsilon) * scale over axes
 * axis..rank-1. */
rf_status_t rf_ref_rms_norm(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x, *scale;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "X", &x));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "Scale", &scale));
    int rank = x->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_ref_axis(rf_node_attr_int(node, "axis", -1), rank, "RMSNormalization axis", &axis));
    double eps = rf_node_attr_float(node, "epsilon", 1e-5);
    rf_shape_t ns = {.rank = rank - axis};
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < rank; d++) {
        if (d < axis) {
            outer *= x->shape.dims[d];
        } else {
            inner *= x->shape.dims[d];
            ns.dims[d - axis] = x->shape.dims[d];
        }
    }
    double *y, *sc = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    if (!y)
        return RF_OK;
    rf_status_t st = rf_ref_scratch(ctx, inner, "RMSNormalization scale", &sc);
    if (!st)
        st = rf_ref_expand_param(scale, &ns, "Scale", sc);
    for (int64_t o = 0; !st && o < outer; o++) {
        const double *xr = x->data + o * inner;
        double s = 0.0;
        for (int64_t j = 0; j < inner; j++)
            s += xr[j] * xr[j];
        double inv = 1.0 / sqrt(s / (double)inner + eps);
        for (int64_t j = 0; j < inner; j++)
            y[o * inner + j] = xr[j] * inv * sc[j];
    }
    rf_ref_scratch_free(ctx, sc);
    return st;
}

rf_status_t rf_ref_softmax(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input", &x));
    int rank = x->shape.rank, axis;
    if (rank == 0)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Softmax of a scalar");
    RF_RETURN_IF_ERROR_PLAIN(
        rf_ref_axis(rf_node_attr_int(node, "axis", -1), rank, "Softmax axis", &axis));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    if (!y)
        return RF_OK;
    int64_t outer = 1, len = x->shape.dims[axis], inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->shape.dims[d];
    for (int d = axis + 1; d < rank; d++)
        inner *= x->shape.dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *xr = x->data + o * len * inner + i;
            double *yr = y + o * len * inner + i;
            double mx = -INFINITY, s = 0.0;
            for (int64_t j = 0; j < len; j++)
                mx = xr[j * inner] > mx ? xr[j * inner] : mx;
            for (int64_t j = 0; j < len; j++) {
                yr[j * inner] = exp(xr[j * inner] - mx);
                s += yr[j * inner];
            }
            for (int64_t j = 0; j < len; j++)
                yr[j * inner] /= s;
        }
    return RF_OK;
}
