/* CPU reference interpreter, driver part (rowfuse/ref.h): converts the inputs and constants
 * to double buffers, runs the nodes in order through the op kernels, applies the mixed
 * precision roundings, frees each intermediate after its last use and copies the outputs
 * out. Also the small helpers the kernels share (ref_internal.h).
 *
 * Every buffer comes from the caller's allocator and every path frees what it took, so a
 * run under an allocator that fails the k-th allocation returns OUT_OF_MEMORY and leaks
 * nothing (tests/unit/test_ref.c checks this for every k).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ref/ref_internal.h"

/* ---- rounding ---- */

/* Rounds x to a binary format with `mant` stored mantissa bits, minimum normal exponent
 * emin and largest finite value max_finite, round to nearest even. Scaling by powers of two
 * is exact, so rint() on the scaled value rounds exactly once; a result above max_finite
 * means IEEE overflow to infinity. */
static double rf_ref_round_format(double x, int mant, int emin, double max_finite) {
    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    double a = fabs(x);
    int e;
    (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
    int exp = e - 1 < emin ? emin : e - 1;
    double r = ldexp(rint(ldexp(a, mant - exp)), exp - mant);
    if (r > max_finite)
        r = INFINITY;
    return copysign(r, x);
}

/* fp16 and fp32 use the shared helpers of tensor.h; bf16 (only for Cast) is local. */
double rf_ref_round_f16(double x) {
    return rf_round_f16(x);
}

double rf_ref_round_f32(double x) {
    return rf_round_f32(x);
}

double rf_ref_round_bf16(double x) {
    return rf_ref_round_format(x, 7, -126, ldexp(255.0, 120));
}

/* ---- helpers shared by the kernels ---- */

const rf_ref_buf_t *rf_ref_input(const rf_ref_ctx_t *ctx, const rf_node_t *node, int i) {
    if (i >= node->n_inputs || node->inputs[i] < 0)
        return NULL;
    return &ctx->bufs[node->inputs[i]];
}

rf_status_t rf_ref_input_required(const rf_ref_ctx_t *ctx, const rf_node_t *node, int i,
                                  const char *what, const rf_ref_buf_t **out_buf) {
    *out_buf = rf_ref_input(ctx, node, i);
    if (!*out_buf)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "input %d (%s) is missing", i, what);
    return RF_OK;
}

rf_status_t rf_ref_output(rf_ref_ctx_t *ctx, const rf_node_t *node, int i, const rf_shape_t *shape,
                          double **out_data) {
    *out_data = NULL;
    if (i >= node->n_outputs || node->outputs[i] < 0)
        return RF_OK;
    int v = node->outputs[i];
    const rf_value_t *value = rf_graph_value(ctx->graph, v);
    char got[160], want[160];
    if (value->has_shape && !rf_shape_equal(&value->shape, shape))
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "output %d '%s' computes to shape %s but the graph declares %s", i,
                      value->name, rf_shape_format(shape, got, sizeof got),
                      rf_shape_format(&value->shape, want, sizeof want));
    if (ctx->bufs[v].data)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "output %d '%s' is produced twice", i, value->name);
    int64_t numel;
    RF_RETURN_IF_ERROR(rf_shape_numel(shape, &numel), "output %d '%s'", i, value->name);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(ctx->allocator, (size_t)(numel ? numel : 1),
                                             sizeof(double), value->name, &p));
    ctx->bufs[v].shape = *shape;
    ctx->bufs[v].numel = numel;
    ctx->bufs[v].data = p;
    *out_data = p;
    return RF_OK;
}

rf_status_t rf_ref_scratch(rf_ref_ctx_t *ctx, int64_t n, const char *what, double **out_data) {
    void *p;
    *out_data = NULL;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc_zeroed(ctx->allocator, (size_t)(n > 0 ? n : 1), sizeof(double), what, &p));
    *out_data = p;
    return RF_OK;
}

void rf_ref_scratch_free(rf_ref_ctx_t *ctx, double *data) {
    rf_free(ctx->allocator, data);
}

int64_t rf_ref_to_i64(double x) {
    const double lim = 4611686018427387904.0; /* 2^62 */
    if (isnan(x))
        return 0;
    if (x >= lim)
        return (int64_t)1 << 62;
    if (x <= -lim)
        return -((int64_t)1 << 62);
    return (int64_t)x;
}

rf_status_t rf_ref_axis(int64_t axis, int rank, const char *what, int *out_axis) {
    *out_axis = 0;
    if (axis < -rank || axis >= rank)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s %lld is outside [-%d, %d) for rank %d", what,
                      (long long)axis, rank, rank, rank);
    *out_axis = (int)(axis < 0 ? axis + rank : axis);
    return RF_OK;
}

rf_status_t rf_ref_int_list(const rf_ref_ctx_t *ctx, const rf_node_t *node, int input,
                            const char *attr, int64_t *out_list, int *out_n, int *out_given) {
    *out_n = 0;
    *out_given = 0;
    const rf_ref_buf_t *b = input >= 0 ? rf_ref_input(ctx, node, input) : NULL;
    if (b) {
        if (b->numel > RF_MAX_RANK)
            return RF_ERR(RF_CODE_UNSUPPORTED, "input %d has %lld entries, more than %d", input,
                          (long long)b->numel, RF_MAX_RANK);
        for (int64_t k = 0; k < b->numel; k++)
            out_list[k] = rf_ref_to_i64(b->data[k]);
        *out_n = (int)b->numel;
        *out_given = 1;
        return RF_OK;
    }
    const rf_attr_t *a = attr ? rf_node_attr(node, attr) : NULL;
    if (a) {
        if (a->type != RF_ATTR_INTS && a->type != RF_ATTR_INT)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "attribute '%s' is not a list of ints", attr);
        int n = a->type == RF_ATTR_INT ? 1 : a->n;
        if (n > RF_MAX_RANK)
            return RF_ERR(RF_CODE_UNSUPPORTED, "attribute '%s' has %d entries, more than %d", attr,
                          n, RF_MAX_RANK);
        for (int k = 0; k < n; k++)
            out_list[k] = a->type == RF_ATTR_INT ? a->i : a->ints[k];
        *out_n = n;
        *out_given = 1;
    }
    return RF_OK;
}

rf_status_t rf_ref_broadcast_shape(const rf_shape_t *a, const rf_shape_t *b,
                                   rf_shape_t *out_shape) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    rf_shape_t s = {.rank = r};
    for (int k = 0; k < r; k++) {
        int ia = k - (r - a->rank), ib = k - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return RF_ERR(RF_CODE_SHAPE_ERROR, "shapes %s and %s do not broadcast (dim %d)",
                          rf_shape_format(a, sa, sizeof sa), rf_shape_format(b, sb, sizeof sb), k);
        }
        s.dims[k] = da == 1 ? db : da;
    }
    *out_shape = s;
    return RF_OK;
}

void rf_ref_strides(const rf_shape_t *shape, int64_t strides[RF_MAX_RANK]) {
    int64_t st = 1;
    for (int k = shape->rank - 1; k >= 0; k--) {
        strides[k] = st;
        st *= shape->dims[k];
    }
}

void rf_ref_broadcast_strides(const rf_shape_t *in, const rf_shape_t *out,
                              int64_t strides[RF_MAX_RANK]) {
    int64_t own[RF_MAX_RANK];
    rf_ref_strides(in, own);
    for (int k = 0; k < out->rank; k++) {
        int ik = k - (out->rank - in->rank);
        strides[k] = (ik < 0 || in->dims[ik] == 1) ? 0 : own[ik];
    }
}

/* ---- driver ---- */

static int rf_ref_is_float(rf_dtype_t dt) {
    return dt == RF_DTYPE_F32 || dt == RF_DTYPE_F16 || dt == RF_DTYPE_BF16 || dt == RF_DTYPE_F64 ||
           dt == RF_DTYPE_UNDEFINED;
}

/* Converts n elements of dtype at src into dst (double). */
static void rf_ref_convert(rf_dtype_t dtype, const void *src, int64_t n, double *dst) {
    rf_value_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dtype;
    tmp.data = src;
    for (int64_t k = 0; k < n; k++)
        dst[k] = rf_value_get_f64(&tmp, k);
}

/* Materialises a constant value into its double buffer. */
static rf_status_t rf_ref_load_const(rf_ref_ctx_t *ctx, int v) {
    const rf_value_t *value = rf_graph_value(ctx->graph, v);
    rf_ref_buf_t *b = &ctx->bufs[v];
    int64_t numel;
    RF_RETURN_IF_ERROR(rf_shape_numel(&value->shape, &numel), "constant '%s'", value->name);
    size_t esize = rf_dtype_size(value->dtype);
    if (!esize || !value->has_shape || (uint64_t)numel * esize != value->nbytes ||
        (numel && !value->data))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "constant '%s' (%s) has %zu bytes of data, which does not match its "
                      "shape",
                      value->name, rf_dtype_name(value->dtype), value->nbytes);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(ctx->allocator, (size_t)(numel ? numel : 1),
                                             sizeof(double), value->name, &p));
    rf_ref_convert(value->dtype, value->data, numel, p);
    b->shape = value->shape;
    b->numel = numel;
    b->data = p;
    return RF_OK;
}

static rf_status_t rf_ref_load_input(rf_ref_ctx_t *ctx, int i, const rf_tensor_t *t) {
    int v = rf_graph_input(ctx->graph, i);
    const rf_value_t *value = rf_graph_value(ctx->graph, v);
    char got[160], want[160];
    int64_t numel;
    RF_RETURN_IF_ERROR(rf_shape_numel(&t->shape, &numel), "input %d '%s'", i, value->name);
    size_t esize = rf_dtype_size(t->dtype);
    if (!esize)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "input %d '%s' has undefined dtype", i,
                      value->name);
    if ((uint64_t)numel * esize != t->nbytes || (numel && !t->data))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "input %d '%s' of shape %s (%s) has %zu bytes, expected %llu", i, value->name,
                      rf_shape_format(&t->shape, got, sizeof got), rf_dtype_name(t->dtype),
                      t->nbytes, (unsigned long long)((uint64_t)numel * esize));
    if (value->has_shape && !rf_shape_equal(&value->shape, &t->shape))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "input %d '%s' has shape %s, the graph expects %s", i,
                      value->name, rf_shape_format(&t->shape, got, sizeof got),
                      rf_shape_format(&value->shape, want, sizeof want));
    if (ctx->bufs[v].data)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "graph input '%s' is listed twice", value->name);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(ctx->allocator, (size_t)(numel ? numel : 1),
                                             sizeof(double), value->name, &p));
    double *d = p;
    rf_ref_convert(t->dtype, t->data, numel, d);
    if (ctx->precision == RF_PRECISION_MIXED && rf_ref_is_float(value->dtype))
        for (int64_t k = 0; k < numel; k++)
            d[k] = rf_ref_round_f16(d[k]);
    ctx->bufs[v].shape = t->shape;
    ctx->bufs[v].numel = numel;
    ctx->bufs[v].data = d;
    return RF_OK;
}

static rf_ref_kernel_fn rf_ref_kernel_for(rf_op_t op) {
    switch (op) {
    case RF_OP_MATMUL:
        return rf_ref_matmul;
    case RF_OP_GEMM:
        return rf_ref_gemm;
    case RF_OP_ADD:
    case RF_OP_SUB:
    case RF_OP_MUL:
    case RF_OP_DIV:
    case RF_OP_POW:
    case RF_OP_GREATER:
        return rf_ref_binary;
    case RF_OP_WHERE:
        return rf_ref_where;
    case RF_OP_CAST:
        return rf_ref_cast;
    case RF_OP_CONSTANT:
        return rf_ref_constant;
    case RF_OP_IDENTITY:
        return rf_ref_identity;
    case RF_OP_REDUCE_MEAN:
    case RF_OP_REDUCE_SUM:
    case RF_OP_REDUCE_MAX:
        return rf_ref_reduce;
    case RF_OP_LAYER_NORM:
        return rf_ref_layer_norm;
    case RF_OP_RMS_NORM:
        return rf_ref_rms_norm;
    case RF_OP_SOFTMAX:
        return rf_ref_softmax;
    case RF_OP_RESHAPE:
        return rf_ref_reshape;
    case RF_OP_TRANSPOSE:
        return rf_ref_transpose;
    case RF_OP_FLATTEN:
        return rf_ref_flatten;
    case RF_OP_SQUEEZE:
        return rf_ref_squeeze;
    case RF_OP_UNSQUEEZE:
        return rf_ref_unsqueeze;
    case RF_OP_EXPAND:
        return rf_ref_expand;
    case RF_OP_SLICE:
        return rf_ref_slice;
    case RF_OP_CONCAT:
        return rf_ref_concat;
    case RF_OP_GATHER:
        return rf_ref_gather;
    default:
        return rf_op_is_unary(op) ? rf_ref_unary : NULL;
    }
}

/* Runs node k: checks its inputs are available, calls the kernel, rounds in MIXED. */
static rf_status_t rf_ref_run_node(rf_ref_ctx_t *ctx, int k) {
    const rf_node_t *node = rf_graph_node(ctx->graph, k);
    if (node->domain && node->domain[0] && strcmp(node->domain, "ai.onnx") != 0)
        return RF_ERR(RF_CODE_UNSUPPORTED, "op domain '%s' is not implemented by the CPU reference",
                      node->domain);
    rf_ref_kernel_fn fn = rf_ref_kernel_for(node->op);
    if (!fn)
        return RF_ERR(RF_CODE_UNSUPPORTED, "op '%s' is not implemented by the CPU reference",
                      node->op_type ? node->op_type : rf_op_name(node->op));
    for (int i = 0; i < node->n_inputs; i++) {
        int v = node->inputs[i];
        if (v < 0)
            continue;
        if (v >= rf_graph_value_count(ctx->graph))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "input %d refers to value %d, out of range", i,
                          v);
        if (ctx->bufs[v].data)
            continue;
        const rf_value_t *value = rf_graph_value(ctx->graph, v);
        if (!value->is_const)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "input %d '%s' is not computed yet (missing graph input, or the "
                          "nodes are not in topological order)",
                          i, value->name);
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_load_const(ctx, v));
    }
    for (int i = 0; i < node->n_outputs; i++)
        if (node->outputs[i] >= rf_graph_value_count(ctx->graph))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "output %d refers to value %d, out of range", i,
                          node->outputs[i]);
    RF_RETURN_IF_ERROR_PLAIN(fn(ctx, node));
    for (int i = 0; i < node->n_outputs; i++) {
        int v = node->outputs[i];
        if (v < 0)
            continue;
        if (!ctx->bufs[v].data)
            return RF_ERR(RF_CODE_INTERNAL, "output %d was not computed", i);
        const rf_value_t *value = rf_graph_value(ctx->graph, v);
        if (ctx->precision == RF_PRECISION_MIXED && rf_ref_is_float(value->dtype)) {
            double *d = ctx->bufs[v].data;
            for (int64_t e = 0; e < ctx->bufs[v].numel; e++)
                d[e] = rf_ref_round_f32(d[e]);
        }
    }
    return RF_OK;
}

static rf_status_t rf_ref_copy_output(rf_ref_ctx_t *ctx, int i, rf_tensor_t *out) {
    int v = rf_graph_output(ctx->graph, i);
    const rf_value_t *value = rf_graph_value(ctx->graph, v);
    if (!ctx->bufs[v].data && value->is_const)
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_load_const(ctx, v));
    if (!ctx->bufs[v].data)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "graph output %d '%s' is never computed", i,
                      value->name);
    const rf_ref_buf_t *b = &ctx->bufs[v];
    int fp64 = ctx->precision == RF_PRECISION_FP64;
    size_t esize = fp64 ? sizeof(double) : sizeof(float);
    void *p;
    RF_RETURN_IF_ERROR(
        rf_alloc(ctx->allocator, (size_t)(b->numel ? b->numel : 1) * esize, value->name, &p),
        "graph output %d", i);
    if (fp64) {
        if (b->numel)
            memcpy(p, b->data, (size_t)b->numel * sizeof(double));
    } else {
        float *f = p;
        for (int64_t e = 0; e < b->numel; e++)
            f[e] = (float)b->data[e];
    }
    out->dtype = fp64 ? RF_DTYPE_F64 : RF_DTYPE_F32;
    out->shape = b->shape;
    out->data = p;
    out->nbytes = (size_t)b->numel * esize;
    return RF_OK;
}

/* Loads a value given by the caller of rf_ref_run_given in place of its node's output. */
static rf_status_t rf_ref_load_given(rf_ref_ctx_t *ctx, const rf_ref_given_t *given) {
    int v = given->value;
    const rf_value_t *value = rf_graph_value(ctx->graph, v);
    const rf_tensor_t *t = given->tensor;
    char got[160], want[160];
    int64_t numel;
    if (!t)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "given value '%s' has no tensor", value->name);
    RF_RETURN_IF_ERROR(rf_shape_numel(&t->shape, &numel), "given value '%s'", value->name);
    size_t esize = rf_dtype_size(t->dtype);
    if (!esize || (uint64_t)numel * esize != t->nbytes || (numel && !t->data))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "given value '%s' of shape %s (%s) has %zu bytes, which does not match",
                      value->name, rf_shape_format(&t->shape, got, sizeof got),
                      rf_dtype_name(t->dtype), t->nbytes);
    if (value->has_shape && !rf_shape_equal(&value->shape, &t->shape))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "given value '%s' has shape %s, the graph declares %s",
                      value->name, rf_shape_format(&t->shape, got, sizeof got),
                      rf_shape_format(&value->shape, want, sizeof want));
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(ctx->allocator, (size_t)(numel ? numel : 1),
                                             sizeof(double), value->name, &p));
    rf_ref_convert(t->dtype, t->data, numel, p);
    ctx->bufs[v].shape = t->shape;
    ctx->bufs[v].numel = numel;
    ctx->bufs[v].data = p;
    return RF_OK;
}

/* Which nodes run when `is_given` values are supplied: walking back from the graph
 * outputs, a node runs when one of its outputs is needed and not given, and then its
 * inputs that are not given are needed. `needed` is scratch of one byte per value. */
static rf_status_t rf_ref_plan_given(const rf_graph_t *g, const unsigned char *is_given,
                                     unsigned char *needed, int *run) {
    int n_values = rf_graph_value_count(g), n_nodes = rf_graph_node_count(g);
    for (int i = 0; i < rf_graph_output_count(g); i++) {
        int v = rf_graph_output(g, i);
        if (v >= 0 && v < n_values)
            needed[v] = 1;
    }
    for (int k = n_nodes - 1; k >= 0; k--) {
        const rf_node_t *node = rf_graph_node(g, k);
        int want = 0, gives = -1;
        for (int i = 0; i < node->n_outputs; i++) {
            int v = node->outputs[i];
            if (v < 0 || v >= n_values)
                continue;
            if (is_given[v])
                gives = v;
            else if (needed[v])
                want = 1;
        }
        run[k] = want;
        if (!want)
            continue;
        if (gives >= 0) {
            char desc[200];
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "%s produces the given value '%s' and a value still needed; a split "
                          "point must give every needed output of a node",
                          rf_node_describe(g, k, desc, sizeof desc),
                          rf_graph_value(g, gives)->name);
        }
        for (int i = 0; i < node->n_inputs; i++) {
            int v = node->inputs[i];
            if (v >= 0 && v < n_values && !is_given[v])
                needed[v] = 1;
        }
    }
    return RF_OK;
}

/* The run itself; ctx->bufs is allocated by the caller and freed by it. last_use[v] is the
 * last node that reads v (or INT_MAX-like n_nodes for graph outputs); run[k] says whether
 * node k runs. */
static rf_status_t rf_ref_execute(rf_ref_ctx_t *ctx, const int *last_use, const int *run,
                                  const rf_tensor_t *inputs, int n_inputs) {
    const rf_graph_t *g = ctx->graph;
    for (int i = 0; i < n_inputs; i++)
        RF_RETURN_IF_ERROR_PLAIN(rf_ref_load_input(ctx, i, &inputs[i]));
    int n_nodes = rf_graph_node_count(g);
    for (int k = 0; k < n_nodes; k++) {
        if (!run[k])
            continue;
        char desc[200];
        RF_RETURN_IF_ERROR(rf_ref_run_node(ctx, k), "%s",
                           rf_node_describe(g, k, desc, sizeof desc));
        const rf_node_t *node = rf_graph_node(g, k);
        for (int i = 0; i < node->n_inputs; i++) {
            int v = node->inputs[i];
            if (v >= 0 && last_use[v] == k && ctx->bufs[v].data) {
                rf_free(ctx->allocator, ctx->bufs[v].data);
                ctx->bufs[v].data = NULL;
            }
        }
    }
    return RF_OK;
}

/* Checks the given values and marks them in is_given (one byte per value). */
static rf_status_t rf_ref_check_given(const rf_graph_t *graph, const rf_ref_given_t *given,
                                      int n_given, unsigned char *is_given) {
    int n_values = rf_graph_value_count(graph);
    if (n_given < 0 || (n_given > 0 && !given))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_ref_run_given: %d given values", n_given);
    for (int i = 0; i < n_given; i++) {
        int v = given[i].value;
        if (v < 0 || v >= n_values)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "given value %d: index %d is out of range", i,
                          v);
        const rf_value_t *value = rf_graph_value(graph, v);
        if (value->is_const || value->producer < 0)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "given value '%s' is a %s; only values computed by a node can be given",
                          value->name, value->is_const ? "constant" : "graph input");
        if (is_given[v])
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "value '%s' is given twice", value->name);
        is_given[v] = 1;
    }
    return RF_OK;
}

/* Fills last_use (see rf_ref_execute) over the nodes that run. */
static void rf_ref_liveness(const rf_graph_t *graph, const int *run, int *last_use) {
    int n_values = rf_graph_value_count(graph), n_nodes = rf_graph_node_count(graph);
    for (int v = 0; v < n_values; v++)
        last_use[v] = -1;
    for (int k = 0; k < n_nodes; k++) {
        const rf_node_t *node = rf_graph_node(graph, k);
        for (int i = 0; run[k] && i < node->n_inputs; i++)
            if (node->inputs[i] >= 0 && node->inputs[i] < n_values)
                last_use[node->inputs[i]] = k;
    }
    for (int i = 0; i < rf_graph_output_count(graph); i++) {
        int v = rf_graph_output(graph, i);
        if (v >= 0 && v < n_values)
            last_use[v] = n_nodes; /* never freed before the outputs are copied */
    }
}

rf_status_t rf_ref_run(rf_allocator_t allocator, const rf_graph_t *graph, rf_precision_t precision,
                       const rf_tensor_t *inputs, int n_inputs, rf_tensor_t *out_outputs,
                       int n_outputs) {
    return rf_ref_run_given(allocator, graph, precision, inputs, n_inputs, NULL, 0, out_outputs,
                            n_outputs, NULL);
}

rf_status_t rf_ref_run_given(rf_allocator_t allocator, const rf_graph_t *graph,
                             rf_precision_t precision, const rf_tensor_t *inputs, int n_inputs,
                             const rf_ref_given_t *given, int n_given, rf_tensor_t *out_outputs,
                             int n_outputs, int *out_ran) {
    if (out_outputs && n_outputs > 0)
        memset(out_outputs, 0, (size_t)n_outputs * sizeof *out_outputs);
    if (!graph)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_ref_run: graph is NULL");
    if (out_ran)
        memset(out_ran, 0, (size_t)rf_graph_node_count(graph) * sizeof *out_ran);
    if (precision != RF_PRECISION_FP64 && precision != RF_PRECISION_MIXED)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_ref_run: unknown precision %d", (int)precision);
    if (n_inputs != rf_graph_input_count(graph) || (n_inputs > 0 && !inputs))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_ref_run: the graph has %d inputs, %d were given",
                      rf_graph_input_count(graph), n_inputs);
    if (n_outputs != rf_graph_output_count(graph) || (n_outputs > 0 && !out_outputs))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_ref_run: the graph has %d outputs, room for %d was given",
                      rf_graph_output_count(graph), n_outputs);

    int n_values = rf_graph_value_count(graph), n_nodes = rf_graph_node_count(graph);
    size_t nv = (size_t)(n_values ? n_values : 1), nn = (size_t)(n_nodes ? n_nodes : 1);
    rf_ref_ctx_t ctx = {allocator, graph, precision, NULL};
    int *last_use = NULL, *run = NULL;
    unsigned char *masks = NULL; /* is_given [nv], then needed [nv] */
    void *p;
    rf_status_t st =
        rf_alloc_zeroed(allocator, nv, sizeof(rf_ref_buf_t), "reference value table", &p);
    if (st)
        return st;
    ctx.bufs = p;
    if (!(st = rf_alloc(allocator, nv * sizeof(int), "reference liveness table", &p)))
        last_use = p;
    if (!st && !(st = rf_alloc(allocator, nn * sizeof(int), "reference node plan", &p)))
        run = p;
    if (!st && !(st = rf_alloc_zeroed(allocator, 2, nv, "reference given values", &p)))
        masks = p;
    if (!st)
        st = rf_ref_check_given(graph, given, n_given, masks);
    if (!st) {
        for (int k = 0; k < n_nodes; k++)
            run[k] = 1; /* without given values every node runs, as it always did */
        if (n_given > 0)
            st = rf_ref_plan_given(graph, masks, masks + nv, run);
    }
    for (int i = 0; !st && i < n_given; i++)
        st = rf_ref_load_given(&ctx, &given[i]);
    if (!st) {
        rf_ref_liveness(graph, run, last_use);
        st = rf_ref_execute(&ctx, last_use, run, inputs, n_inputs);
    }
    for (int i = 0; !st && i < n_outputs; i++)
        st = rf_ref_copy_output(&ctx, i, &out_outputs[i]);
    if (st) {
        for (int i = 0; i < n_outputs; i++) {
            rf_free(allocator, out_outputs[i].data);
            memset(&out_outputs[i], 0, sizeof out_outputs[i]);
        }
    } else if (out_ran) {
        memcpy(out_ran, run, (size_t)n_nodes * sizeof *out_ran);
    }
    for (int v = 0; v < n_values; v++)
        rf_free(allocator, ctx.bufs[v].data);
    rf_free(allocator, ctx.bufs);
    rf_free(allocator, last_use);
    rf_free(allocator, run);
    rf_free(allocator, masks);
    return st;
}
