/* CPU reference: elementwise ops. Unary functions (Relu, Gelu, Sigmoid, Tanh, Erf, Sqrt,
 * Reciprocal, Neg, Exp, Log, Abs), binary arithmetic with numpy broadcasting (Add, Sub, Mul,
 * Div, Pow) and Cast.
 *
 * All arithmetic is in double; the MIXED roundings of results are applied by the driver.
 * Cast to f32 or f64 is the identity in FP64 mode (the graph's fp32 is read as double) and
 * rounds to fp32 in MIXED mode through the driver; Cast to f16 or bf16 rounds to that format
 * (nearest even) in both modes, since a model that casts to fp16 computes with the rounded
 * value; casts to integer types truncate toward zero and to bool test against zero.
 */
#include <math.h>
#include <string.h>

#include "ref/ref_internal.h"

static double rf_ref_gelu_erf(double x) {
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); /* 1/sqrt(2) */
}

static double rf_ref_gelu_tanh(double x) {
    const double k = 0.79788456080286535588; /* sqrt(2/pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

rf_status_t rf_ref_unary(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "X", &x));
    int gelu_tanh = 0;
    if (node->op == RF_OP_GELU) {
        const rf_attr_t *a = rf_node_attr(node, "approximate");
        if (a && a->type == RF_ATTR_STRING && a->s && strcmp(a->s, "tanh") == 0)
            gelu_tanh = 1;
        else if (a && !(a->type == RF_ATTR_STRING && a->s && strcmp(a->s, "none") == 0))
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "attribute approximate must be \"none\" or \"tanh\"");
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    if (!y)
        return RF_OK;
    const double *in = x->data;
    int64_t n = x->numel;
    switch (node->op) {
    case RF_OP_RELU:
        for (int64_t e = 0; e < n; e++)
            y[e] = in[e] < 0.0 ? 0.0 : in[e]; /* NaN passes through */
        break;
    case RF_OP_GELU:
        for (int64_t e = 0; e < n; e++)
            y[e] = gelu_tanh ? rf_ref_gelu_tanh(in[e]) : rf_ref_gelu_erf(in[e]);
        break;
    case RF_OP_SIGMOID:
        for (int64_t e = 0; e < n; e++)
            y[e] = in[e] >= 0.0 ? 1.0 / (1.0 + exp(-in[e])) : exp(in[e]) / (1.0 + exp(in[e]));
        break;
    case RF_OP_TANH:
        for (int64_t e = 0; e < n; e++)
            y[e] = tanh(in[e]);
        break;
    case RF_OP_ERF:
        for (int64_t e = 0; e < n; e++)
            y[e] = erf(in[e]);
        break;
    case RF_OP_SQRT:
        for (int64_t e = 0; e < n; e++)
            y[e] = sqrt(in[e]);
        break;
    case RF_OP_RECIPROCAL:
        for (int64_t e = 0; e < n; e++)
            y[e] = 1.0 / in[e];
        break;
    case RF_OP_NEG:
        for (int64_t e = 0; e < n; e++)
            y[e] = -in[e];
        break;
    case RF_OP_EXP:
        for (int64_t e = 0; e < n; e++)
            y[e] = exp(in[e]);
        break;
    case RF_OP_LOG:
        for (int64_t e = 0; e < n; e++)
            y[e] = log(in[e]);
        break;
    case RF_OP_ABS:
        for (int64_t e = 0; e < n; e++)
            y[e] = fabs(in[e]);
        break;
    case RF_OP_SIN:
        for (int64_t e = 0; e < n; e++)
            y[e] = sin(in[e]);
        break;
    case RF_OP_LEAKY_RELU: {
        double alpha = rf_node_attr_float(node, "alpha", 0.01);
        for (int64_t e = 0; e < n; e++)
            y[e] = in[e] < 0.0 ? alpha * in[e] : in[e];
        break;
    }
    case RF_OP_ELU: {
        double alpha = rf_node_attr_float(node, "alpha", 1.0);
        for (int64_t e = 0; e < n; e++)
            y[e] = in[e] < 0.0 ? alpha * expm1(in[e]) : in[e];
        break;
    }
    case RF_OP_MISH: /* x tanh(softplus(x)) */
        for (int64_t e = 0; e < n; e++)
            y[e] = in[e] * tanh((in[e] > 0.0 ? in[e] : 0.0) + log1p(exp(-fabs(in[e]))));
        break;
    case RF_OP_SOFTPLUS: /* ln(exp(x) + 1), without overflow */
        for (int64_t e = 0; e < n; e++)
            y[e] = (in[e] > 0.0 ? in[e] : 0.0) + log1p(exp(-fabs(in[e])));
        break;
    default:
        return RF_ERR(RF_CODE_INTERNAL, "op '%s' is not unary", rf_op_name(node->op));
    }
    return RF_OK;
}

static int rf_ref_is_int_dtype(rf_dtype_t dt) {
    return dt == RF_DTYPE_I64 || dt == RF_DTYPE_I32 || dt == RF_DTYPE_I8 || dt == RF_DTYPE_U8 ||
           dt == RF_DTYPE_BOOL;
}

rf_status_t rf_ref_binary(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *a, *b;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "A", &a));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "B", &b));
    rf_shape_t os;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_broadcast_shape(&a->shape, &b->shape, &os));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;
    int int_div = 0;
    if (node->op == RF_OP_DIV && node->n_outputs > 0 && node->outputs[0] >= 0)
        int_div = rf_ref_is_int_dtype(rf_graph_value(ctx->graph, node->outputs[0])->dtype);

    int64_t sa[RF_MAX_RANK], sb[RF_MAX_RANK], idx[RF_MAX_RANK] = {0};
    rf_ref_broadcast_strides(&a->shape, &os, sa);
    rf_ref_broadcast_strides(&b->shape, &os, sb);
    int64_t n = 1;
    for (int d = 0; d < os.rank; d++)
        n *= os.dims[d];
    int64_t oa = 0, ob = 0;
    for (int64_t e = 0; e < n; e++) {
        double u = a->data[oa], v = b->data[ob], r;
        switch (node->op) {
        case RF_OP_ADD:
            r = u + v;
            break;
        case RF_OP_SUB:
            r = u - v;
            break;
        case RF_OP_MUL:
            r = u * v;
            break;
        case RF_OP_DIV:
            if (int_div && v == 0.0)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "integer division by zero");
            r = int_div ? trunc(u / v) : u / v;
            break;
        case RF_OP_POW:
            r = pow(u, v);
            break;
        case RF_OP_GREATER:
            r = u > v ? 1.0 : 0.0;
            break;
        default:
            return RF_ERR(RF_CODE_INTERNAL, "op '%s' is not binary", rf_op_name(node->op));
        }
        y[e] = r;
        for (int d = os.rank - 1; d >= 0; d--) {
            idx[d]++;
            oa += sa[d];
            ob += sb[d];
            if (idx[d] < os.dims[d])
                break;
            oa -= sa[d] * os.dims[d];
            ob -= sb[d] * os.dims[d];
            idx[d] = 0;
        }
    }
    return RF_OK;
}

rf_status_t rf_ref_where(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *k, *a, *b;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "condition", &k));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 1, "X", &a));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 2, "Y", &b));
    rf_shape_t ab, os;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_broadcast_shape(&a->shape, &b->shape, &ab));
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_broadcast_shape(&k->shape, &ab, &os));
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &os, &y));
    if (!y)
        return RF_OK;
    int64_t sk[RF_MAX_RANK], sa[RF_MAX_RANK], sb[RF_MAX_RANK], idx[RF_MAX_RANK] = {0};
    rf_ref_broadcast_strides(&k->shape, &os, sk);
    rf_ref_broadcast_strides(&a->shape, &os, sa);
    rf_ref_broadcast_strides(&b->shape, &os, sb);
    int64_t n = 1, ok_ = 0, oa = 0, ob = 0;
    for (int d = 0; d < os.rank; d++)
        n *= os.dims[d];
    for (int64_t e = 0; e < n; e++) {
        y[e] = k->data[ok_] != 0.0 ? a->data[oa] : b->data[ob];
        for (int d = os.rank - 1; d >= 0; d--) {
            idx[d]++;
            ok_ += sk[d];
            oa += sa[d];
            ob += sb[d];
            if (idx[d] < os.dims[d])
                break;
            ok_ -= sk[d] * os.dims[d];
            oa -= sa[d] * os.dims[d];
            ob -= sb[d] * os.dims[d];
            idx[d] = 0;
        }
    }
    return RF_OK;
}

/* ONNX TensorProto.DataType codes used by Cast's 'to'. */
enum {
    RF_ONNX_FLOAT = 1,
    RF_ONNX_UINT8 = 2,
    RF_ONNX_INT8 = 3,
    RF_ONNX_UINT16 = 4,
    RF_ONNX_INT16 = 5,
    RF_ONNX_INT32 = 6,
    RF_ONNX_INT64 = 7,
    RF_ONNX_BOOL = 9,
    RF_ONNX_FLOAT16 = 10,
    RF_ONNX_DOUBLE = 11,
    RF_ONNX_UINT32 = 12,
    RF_ONNX_UINT64 = 13,
    RF_ONNX_BFLOAT16 = 16,
};

rf_status_t rf_ref_cast(rf_ref_ctx_t *ctx, const rf_node_t *node) {
    const rf_ref_buf_t *x;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_input_required(ctx, node, 0, "input", &x));
    const rf_attr_t *to_attr = rf_node_attr(node, "to");
    if (!to_attr || to_attr->type != RF_ATTR_INT)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "attribute 'to' is missing or not an int");
    int64_t to = to_attr->i;
    double (*round_fn)(double) = NULL;
    int to_int = 0, to_bool = 0;
    switch (to) {
    case RF_ONNX_FLOAT:
    case RF_ONNX_DOUBLE:
        break;
    case RF_ONNX_FLOAT16:
        round_fn = rf_ref_round_f16;
        break;
    case RF_ONNX_BFLOAT16:
        round_fn = rf_ref_round_bf16;
        break;
    case RF_ONNX_UINT8:
    case RF_ONNX_INT8:
    case RF_ONNX_UINT16:
    case RF_ONNX_INT16:
    case RF_ONNX_INT32:
    case RF_ONNX_INT64:
    case RF_ONNX_UINT32:
    case RF_ONNX_UINT64:
        to_int = 1;
        break;
    case RF_ONNX_BOOL:
        to_bool = 1;
        break;
    default:
        return RF_ERR(RF_CODE_UNSUPPORTED, "Cast to ONNX data type %lld is not implemented",
                      (long long)to);
    }
    double *y;
    RF_RETURN_IF_ERROR_PLAIN(rf_ref_output(ctx, node, 0, &x->shape, &y));
    if (!y)
        return RF_OK;
    for (int64_t e = 0; e < x->numel; e++) {
        double v = x->data[e];
        if (to_bool)
            v = v != 0.0;
        else if (to_int)
            v = isnan(v) ? 0.0 : trunc(v);
        else if (round_fn)
            v = round_fn(v);
        y[e] = v;
    }
    return RF_OK;
}
