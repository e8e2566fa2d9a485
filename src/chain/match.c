/* The matcher (chain.h, rf_chain_match): the verified graph -> a chain of row-local stages.
 *
 * It walks the live nodes (those the output depends on) forward from the input in the
 * graph's topological order. Each node that reads a row-owned value must start one of the
 * patterns below; the pattern's nodes are consumed and its output becomes a chain value.
 *   linear   MatMul(v, W) [+ Add(b)], Gemm(v, W[, C]) (transA 0; transB, alpha, beta folded)
 *   norm     LayerNormalization / RMSNormalization over the last axis; the decomposed forms
 *            ReduceMean(v) -> Sub -> Pow 2 | Mul(d, d) -> ReduceMean -> Add eps -> Sqrt ->
 *            Div | Reciprocal + Mul  (LayerNorm) and Pow 2 | Mul(v, v) -> ReduceMean -> Add
 *            eps -> Sqrt -> Reciprocal + Mul | Div, or Pow(., -0.5) + Mul  (RMSNorm), each
 *            followed by an optional Mul by a per-feature gamma and (LayerNorm) Add of beta
 *   act      a closed region of elementwise nodes reading one value and scalar constants
 *            (nn.GELU, the erf and tanh GELU formulas, x * sigmoid(x), ...): the region's
 *            function is evaluated at 1,605 points in [-40, 40] and must equal relu,
 *            gelu_erf, gelu_tanh, silu, sigmoid, tanh, softplus, exp, sin, mish,
 *            leaky_relu or elu (alpha the LeakyRelu or Elu node's) or the identity within
 *            1e-6 (1 + |x|) (far below fp16's resolution) and contain the op that defines
 *            it (Relu; Erf or Gelu; Tanh or Gelu(tanh); Sigmoid or Exp; Softplus, or Log
 *            and Exp; Exp; Sin); Greater and Where make piecewise forms (nn.Softplus's
 *            threshold)
 *   add, mul Add / Mul of two row-owned values (mul is folded by rf_chain_fuse)
 * Internal values of a pattern may not be read outside it. Anything else is refused naming
 * the node and the stage kind rowfuse lacks.
 *
 * Rows: the row dim of the contract is dim 0 of X. An input [B, T, C] is flattened to B*T
 * rows: every value of the chain must have X's leading dims, and each pattern acts on the
 * last axis alone (a 2-D W, reductions and normalizations over the last axis, constants
 * that broadcast only along it), so each token's output depends on that token alone.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chain/chain.h"
#include "graph/shape_internal.h"

typedef struct rf_matcher {
    const rf_graph_t *g;
    const rf_contract_t *ct;
    rf_chain_t *c;
    rf_allocator_t a;
    int n_nodes, n_values;
    int *vmap;           /* graph value -> chain value (-1: none) */
    int *uses;           /* reads by live nodes, +1 for the graph output */
    unsigned char *live; /* per node */
    unsigned char *done; /* per node: consumed by a pattern */
    int x, y;
    rf_shape_t lead; /* X's leading dims (all but the last) */
} rf_matcher_t;

/* ---- small helpers ---- */

static const rf_node_t *nd(const rf_matcher_t *m, int k) {
    return rf_graph_node(m->g, k);
}

static const rf_value_t *vl(const rf_matcher_t *m, int v) {
    return rf_graph_value(m->g, v);
}

static int in_of(const rf_node_t *n, int i) {
    return i < n->n_inputs ? n->inputs[i] : -1;
}

static int mapped(const rf_matcher_t *m, int v) {
    return v >= 0 && m->vmap[v] >= 0;
}

static int64_t width_of(const rf_matcher_t *m, int v) {
    const rf_value_t *x = vl(m, v);
    return x->shape.rank ? x->shape.dims[x->shape.rank - 1] : 1;
}

static rf_status_t refuse(const rf_matcher_t *m, int k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static rf_status_t refuse(const rf_matcher_t *m, int k, const char *fmt, ...) {
    char msg[768], desc[RF_CHAIN_DESC_NODE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return RF_ERR(RF_CODE_UNSUPPORTED, "%s: %s", rf_node_describe(m->g, k, desc, sizeof desc), msg);
}

/* The only live node reading v (and reading it once), or -1. */
static int sole_reader(const rf_matcher_t *m, int v) {
    if (v < 0 || m->uses[v] != 1)
        return -1;
    for (int k = 0; k < m->n_nodes; k++) {
        if (!m->live[k] || m->done[k])
            continue;
        const rf_node_t *n = nd(m, k);
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] == v)
                return k;
    }
    return -1;
}

static int is_const(const rf_matcher_t *m, int v) {
    const rf_value_t *x = v >= 0 ? vl(m, v) : NULL;
    return x && x->is_const && x->data && x->has_shape;
}

static int const_numel(const rf_matcher_t *m, int v, int64_t *out) {
    return is_const(m, v) && rf_shape_numel(&vl(m, v)->shape, out) == RF_OK;
}

/* A constant holding one element (any rank). */
static int const_scalar(const rf_matcher_t *m, int v, double *out) {
    int64_t n;
    if (!const_numel(m, v, &n) || n != 1)
        return 0;
    *out = rf_value_get_f64(vl(m, v), 0);
    return 1;
}

/* A constant that broadcasts along the last axis of a width-n value without touching the
 * other axes: one element, or shape [..., 1, n] with every other dim 1, rank <= lead + 1. */
static int const_vector(const rf_matcher_t *m, int v, int64_t n) {
    int64_t cnt;
    if (!const_numel(m, v, &cnt))
        return 0;
    const rf_shape_t *s = &vl(m, v)->shape;
    if (s->rank > m->lead.rank + 1)
        return 0;
    if (cnt == 1)
        return 1;
    if (cnt != n || s->rank < 1 || s->dims[s->rank - 1] != n)
        return 0;
    return 1;
}

static rf_status_t read_vector(rf_matcher_t *m, int v, int64_t n, double scale, float **out) {
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(m->c, (size_t)n, out));
    int64_t cnt;
    (void)const_numel(m, v, &cnt);
    for (int64_t i = 0; i < n; i++)
        (*out)[i] = (float)(scale * rf_value_get_f64(vl(m, v), cnt == 1 ? 0 : i));
    return RF_OK;
}

static int all_equal(const float *x, int64_t n, float val) {
    for (int64_t i = 0; i < n; i++)
        if (x[i] != val)
            return 0;
    return 1;
}

/* Is v a row-owned value of X's leading dims with `width` features? */
static int row_shaped(const rf_matcher_t *m, int v, int64_t width) {
    const rf_shape_t *s = &vl(m, v)->shape;
    if (s->rank != m->lead.rank + 1 || s->dims[s->rank - 1] != width)
        return 0;
    for (int i = 0; i < m->lead.rank; i++)
        if (s->dims[i] != m->lead.dims[i])
            return 0;
    return 1;
}

/* Is node n a reduction of v over its last axis alone, keeping dims? */
static int reduce_last(const rf_matcher_t *m, const rf_node_t *n, int v) {
    if (n->op != RF_OP_REDUCE_MEAN || in_of(n, 0) != v || rf_node_attr_int(n, "keepdims", 1) == 0)
        return 0;
    unsigned mask;
    int noop, rank = vl(m, v)->shape.rank;
    rf_status_t st = rf_shape_reduce_axes(m->g, n, rank, &mask, &noop);
    if (st) {
        rf_status_free(st);
        return 0;
    }
    return !noop && mask == (1u << (rank - 1));
}

/* Adds the chain value for graph value v (produced by stage st) and marks it mapped. */
static rf_status_t new_stage(rf_matcher_t *m, rf_chain_op_t op, int out_value, int node,
                             rf_chain_stage_t **out) {
    int64_t w = width_of(m, out_value);
    if (!row_shaped(m, out_value, w)) {
        char s1[128], s2[128];
        return refuse(m, node,
                      "its output '%s' %s does not keep the input's leading dims %s with the "
                      "features last; a block's stages act on the last axis alone",
                      vl(m, out_value)->name,
                      rf_shape_format(&vl(m, out_value)->shape, s1, sizeof s1),
                      rf_shape_format(&m->lead, s2, sizeof s2));
    }
    if (rf_contract_row_state(m->ct, out_value) != RF_ROW_OWNED)
        return refuse(m, node, "its output '%s' is not row-owned in the verified contract",
                      vl(m, out_value)->name);
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_add_stage(m->c, op, w, out));
    (*out)->node = node;
    m->vmap[out_value] = (*out)->dst;
    return RF_OK;
}

/* ---- linear ---- */

/* MatMul(v, W) [+ b] or Gemm(v, W[, C]) at node k. *out_matched = 0: not a linear. */
/* The node that alone reads `out`, when it is `op` of `out` and a constant of a scalar or n
 * values that keeps the row shape: its index and the constant's value (*out_const); -1
 * otherwise. */
static int const_partner(const rf_matcher_t *m, int out, rf_op_t op, int64_t n, int *out_const) {
    int j = sole_reader(m, out);
    const rf_node_t *q = j >= 0 ? nd(m, j) : NULL;
    if (!q || q->op != op || q->n_inputs != 2)
        return -1;
    int other = q->inputs[0] == out ? q->inputs[1] : q->inputs[0];
    if (mapped(m, other) || !const_vector(m, other, n) || !row_shaped(m, q->outputs[0], n))
        return -1;
    *out_const = other;
    return j;
}

/* Node j (a const_partner of *io_out) folded into stage st: st's value is now j's output. */
static void take_over(rf_matcher_t *m, const rf_chain_stage_t *st, int j, int *io_out) {
    m->done[j] = 1;
    m->vmap[*io_out] = -1;
    *io_out = nd(m, j)->outputs[0];
    m->vmap[*io_out] = st->dst;
}

/* A following Add of a constant vector is the bias of a linear that has none. */
static rf_status_t absorb_bias(rf_matcher_t *m, rf_chain_stage_t *st, int *io_out) {
    int v, j = st->b ? -1 : const_partner(m, *io_out, RF_OP_ADD, st->n, &v);
    if (j < 0)
        return RF_OK;
    float *bias;
    RF_RETURN_IF_ERROR_PLAIN(read_vector(m, v, st->n, 1.0, &bias));
    st->b = bias;
    take_over(m, st, j, io_out);
    return RF_OK;
}

/* A linear's output read only by a Mul with a per-feature constant (a scalar or n values:
 * LayerScale's gamma, a constant scale) is that linear with the scale folded into W's
 * columns and the bias, each product rounded to fp32 once (as GEMM's alpha is); a
 * following Add of a constant vector is then its bias. */
static rf_status_t absorb_scale(rf_matcher_t *m, rf_chain_stage_t *st, int *io_out) {
    int64_t kk = st->k, nn = st->n;
    int v, j = const_partner(m, *io_out, RF_OP_MUL, nn, &v);
    if (j < 0)
        return RF_OK;
    float *g, *w = (float *)st->w, *b = NULL;
    RF_RETURN_IF_ERROR_PLAIN(read_vector(m, v, nn, 1.0, &g));
    for (int64_t i = 0; i < kk; i++)
        for (int64_t c = 0; c < nn; c++)
            w[i * nn + c] = (float)((double)w[i * nn + c] * (double)g[c]);
    if (st->b) {
        RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(m->c, (size_t)nn, &b));
        for (int64_t c = 0; c < nn; c++)
            b[c] = (float)((double)st->b[c] * (double)g[c]);
        st->b = b;
    }
    take_over(m, st, j, io_out);
    return absorb_bias(m, st, io_out); /* (x W) * g + b */
}

static rf_status_t match_linear(rf_matcher_t *m, int k, int *out_matched) {
    const rf_node_t *n = nd(m, k);
    *out_matched = 0;
    if (n->op != RF_OP_MATMUL && n->op != RF_OP_GEMM)
        return RF_OK;
    int a = in_of(n, 0), b = in_of(n, 1);
    if (!mapped(m, a)) {
        if (mapped(m, b))
            return refuse(m, k,
                          "the row-owned value '%s' is the right operand; a linear stage is "
                          "x @ W with x row-owned and W a constant",
                          vl(m, b)->name);
        return RF_OK;
    }
    if (mapped(m, b) || !is_const(m, b))
        return refuse(m, k,
                      "a product of '%s' with the %s '%s' is not a stage rowfuse compiles "
                      "(a linear stage multiplies by a constant weight, an initializer)",
                      vl(m, a)->name, mapped(m, b) ? "row-owned value" : "computed value",
                      vl(m, b)->name);
    const rf_value_t *wv = vl(m, b);
    if (wv->shape.rank != 2)
        return refuse(m, k, "the weight '%s' has rank %d; a linear stage needs a 2-D W", wv->name,
                      wv->shape.rank);
    int tb = n->op == RF_OP_GEMM && rf_node_attr_int(n, "transB", 0) != 0;
    double alpha = n->op == RF_OP_GEMM ? rf_node_attr_float(n, "alpha", 1.0) : 1.0;
    double beta = n->op == RF_OP_GEMM ? rf_node_attr_float(n, "beta", 1.0) : 1.0;
    if (n->op == RF_OP_GEMM && rf_node_attr_int(n, "transA", 0) != 0)
        return refuse(m, k, "transA contracts over the rows; a linear stage needs transA = 0");
    int64_t kk = wv->shape.dims[tb ? 1 : 0], nn = wv->shape.dims[tb ? 0 : 1];
    if (kk != m->c->values[m->vmap[a]].width)
        return refuse(m, k, "W '%s' has %lld input features, its input '%s' has %lld", wv->name,
                      (long long)kk, vl(m, a)->name, (long long)m->c->values[m->vmap[a]].width);
    int out = n->outputs[0];
    rf_chain_stage_t *st;
    RF_RETURN_IF_ERROR_PLAIN(new_stage(m, RF_CHAIN_LINEAR, out, k, &st));
    st->src = m->vmap[a];
    st->k = kk;
    st->n = nn;
    float *w;
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(m->c, (size_t)(kk * nn), &w));
    for (int64_t i = 0; i < kk; i++)
        for (int64_t j = 0; j < nn; j++)
            w[i * nn + j] = (float)(alpha * rf_value_get_f64(wv, tb ? j * kk + i : i * nn + j));
    st->w = w;
    int cb = n->op == RF_OP_GEMM ? in_of(n, 2) : -1;
    if (cb >= 0) {
        if (!const_vector(m, cb, nn))
            return refuse(m, k, "the bias C '%s' is not a constant vector of %lld features",
                          vl(m, cb)->name, (long long)nn);
        float *bias;
        RF_RETURN_IF_ERROR_PLAIN(read_vector(m, cb, nn, beta, &bias));
        st->b = bias;
    }
    RF_RETURN_IF_ERROR_PLAIN(absorb_bias(m, st, &out));
    RF_RETURN_IF_ERROR_PLAIN(absorb_scale(m, st, &out));
    m->done[k] = 1;
    *out_matched = 1;
    return RF_OK;
}

/* ---- norms ---- */

static int is_pow_const(const rf_matcher_t *m, const rf_node_t *n, int base, double exponent) {
    double e;
    return n->op == RF_OP_POW && in_of(n, 0) == base && const_scalar(m, in_of(n, 1), &e) &&
           e == exponent;
}

/* Does node j square value v (Pow(v, 2) or Mul(v, v))? */
static int squares(const rf_matcher_t *m, const rf_node_t *n, int v) {
    return is_pow_const(m, n, v, 2.0) ||
           (n->op == RF_OP_MUL && n->n_inputs == 2 && n->inputs[0] == v && n->inputs[1] == v);
}

/* Add(s, eps) with a scalar constant eps, either order; returns eps through out. */
static int adds_eps(const rf_matcher_t *m, const rf_node_t *n, int s, double *eps) {
    if (n->op != RF_OP_ADD || n->n_inputs != 2)
        return 0;
    if (n->inputs[0] == s && const_scalar(m, n->inputs[1], eps))
        return 1;
    return n->inputs[1] == s && const_scalar(m, n->inputs[0], eps);
}

/* From ve = var + eps: the node dividing `num` by sqrt(ve) (Sqrt then Div(num, .),
 * Sqrt then Reciprocal then Mul, Pow(ve, -0.5) then Mul). Fills the nodes used (up to 3)
 * and returns the output value, or -1. */
static int match_rsqrt_scale(rf_matcher_t *m, int ve, int num, int *nodes, int *n_nodes) {
    int j = sole_reader(m, ve);
    if (j < 0)
        return -1;
    const rf_node_t *n = nd(m, j);
    *n_nodes = 0;
    nodes[(*n_nodes)++] = j;
    int r = -1;
    if (n->op == RF_OP_SQRT) {
        int s = n->outputs[0];
        int j2 = sole_reader(m, s);
        if (j2 < 0)
            return -1;
        const rf_node_t *n2 = nd(m, j2);
        nodes[(*n_nodes)++] = j2;
        double one;
        if (n2->op == RF_OP_DIV && in_of(n2, 0) == num && in_of(n2, 1) == s)
            return n2->outputs[0];
        if (n2->op == RF_OP_DIV && const_scalar(m, in_of(n2, 0), &one) && one == 1.0 &&
            in_of(n2, 1) == s)
            r = n2->outputs[0];
        else if (n2->op == RF_OP_RECIPROCAL)
            r = n2->outputs[0];
        else
            return -1;
    } else if (is_pow_const(m, n, ve, -0.5)) {
        r = n->outputs[0];
    } else {
        return -1;
    }
    int j3 = sole_reader(m, r);
    if (j3 < 0)
        return -1;
    const rf_node_t *n3 = nd(m, j3);
    if (n3->op != RF_OP_MUL || n3->n_inputs != 2 ||
        !((n3->inputs[0] == num && n3->inputs[1] == r) ||
          (n3->inputs[1] == num && n3->inputs[0] == r)))
        return -1;
    nodes[(*n_nodes)++] = j3;
    return n3->outputs[0];
}

/* Mul by a per-feature gamma and (LayerNorm) Add of beta after a norm's output *io. */
static rf_status_t absorb_affine(rf_matcher_t *m, rf_chain_stage_t *st, int *io, int *nodes,
                                 int *n_nodes) {
    int64_t w = m->c->values[st->dst].width;
    for (int pass = 0; pass < 2; pass++) {
        int j = sole_reader(m, *io);
        const rf_node_t *n = j >= 0 ? nd(m, j) : NULL;
        rf_op_t want = pass == 0 ? RF_OP_MUL : RF_OP_ADD;
        if (!n || n->op != want || n->n_inputs != 2)
            continue;
        if (pass == 0 && st->gamma)
            continue;
        if (pass == 0 && !(rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_GAMMA))
            continue;
        if (pass == 1 && (st->beta || !(rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_BETA)))
            continue;
        int other = n->inputs[0] == *io ? n->inputs[1] : n->inputs[0];
        if (mapped(m, other) || !const_vector(m, other, w) || !row_shaped(m, n->outputs[0], w))
            continue;
        float *vec;
        RF_RETURN_IF_ERROR_PLAIN(read_vector(m, other, w, 1.0, &vec));
        if (pass == 0)
            st->gamma = vec;
        else
            st->beta = vec;
        nodes[(*n_nodes)++] = j;
        *io = n->outputs[0];
    }
    return RF_OK;
}

static rf_status_t finish_norm(rf_matcher_t *m, int k, rf_chain_norm_kind_t kind, int src,
                               double eps, int out, int *nodes, int n_nodes, int *out_matched) {
    rf_chain_stage_t *st;
    RF_RETURN_IF_ERROR_PLAIN(new_stage(m, RF_CHAIN_NORM, out, k, &st));
    st->src = m->vmap[src];
    st->norm = kind;
    st->eps = eps;
    RF_RETURN_IF_ERROR_PLAIN(absorb_affine(m, st, &out, nodes, &n_nodes));
    m->vmap[out] = st->dst;
    for (int i = 0; i < n_nodes; i++)
        m->done[nodes[i]] = 1;
    m->done[k] = 1;
    *out_matched = 1;
    return RF_OK;
}

/* Whether node n's "axis" (default -1) is the last axis of its input v; *axis and *last
 * for the refusal. */
static int on_last_axis(const rf_matcher_t *m, const rf_node_t *n, int v, long long *axis,
                        int *last) {
    *last = vl(m, v)->shape.rank - 1;
    *axis = (long long)rf_node_attr_int(n, "axis", -1);
    return *axis == -1 || *axis == *last;
}

/* The norm ops and their decomposed forms, anchored at node k. */
static rf_status_t match_norm(rf_matcher_t *m, int k, int *out_matched) {
    const rf_node_t *n = nd(m, k);
    *out_matched = 0;
    int v = in_of(n, 0);
    if (!mapped(m, v))
        return RF_OK;
    int64_t w = m->c->values[m->vmap[v]].width;
    int nodes[16], n_nodes = 0;
    long long axis;
    int last;
    if (n->op == RF_OP_SOFTMAX) {
        if (!on_last_axis(m, n, v, &axis, &last))
            return refuse(m, k,
                          "Softmax over axis %lld: a softmax stage normalizes the features (the "
                          "last axis, %d) of each row",
                          axis, last);
        rf_chain_stage_t *st;
        RF_RETURN_IF_ERROR_PLAIN(new_stage(m, RF_CHAIN_NORM, n->outputs[0], k, &st));
        st->src = m->vmap[v];
        st->norm = RF_CHAIN_SOFTMAX;
        m->done[k] = 1;
        *out_matched = 1;
        return RF_OK;
    }
    if (n->op == RF_OP_LAYER_NORM || n->op == RF_OP_RMS_NORM) {
        if (!on_last_axis(m, n, v, &axis, &last))
            return refuse(m, k,
                          "normalizes over axes %lld..%d; a norm stage normalizes over the last "
                          "axis alone",
                          axis, last);
        for (int o = 1; o < n->n_outputs; o++)
            if (m->uses[n->outputs[o]] > 0)
                return refuse(m, k,
                              "its mean or inverse deviation output is read; a norm stage "
                              "gives the normalized value alone");
        int sc = in_of(n, 1), bi = in_of(n, 2);
        if (sc < 0 || !const_vector(m, sc, w) || (bi >= 0 && !const_vector(m, bi, w)))
            return refuse(m, k, "its scale and bias must be constant vectors of %lld features",
                          (long long)w);
        rf_chain_stage_t *st;
        RF_RETURN_IF_ERROR_PLAIN(new_stage(m, RF_CHAIN_NORM, n->outputs[0], k, &st));
        st->src = m->vmap[v];
        st->norm = n->op == RF_OP_LAYER_NORM ? RF_CHAIN_LAYERNORM : RF_CHAIN_RMSNORM;
        st->eps = rf_node_attr_float(n, "epsilon", 1e-5);
        float *g, *b = NULL;
        RF_RETURN_IF_ERROR_PLAIN(read_vector(m, sc, w, 1.0, &g));
        if (bi >= 0)
            RF_RETURN_IF_ERROR_PLAIN(read_vector(m, bi, w, 1.0, &b));
        st->gamma = all_equal(g, w, 1.0f) ? NULL : g;
        st->beta = b && !all_equal(b, w, 0.0f) ? b : NULL;
        m->done[k] = 1;
        *out_matched = 1;
        return RF_OK;
    }
    double eps;
    if (reduce_last(m, n, v)) {
        /* LayerNorm: mean = ReduceMean(v); d = v - mean; var = ReduceMean(d^2). */
        int mean = n->outputs[0];
        int js = sole_reader(m, mean);
        if (js < 0)
            return RF_OK;
        const rf_node_t *sub = nd(m, js);
        if (sub->op != RF_OP_SUB || in_of(sub, 0) != v || in_of(sub, 1) != mean)
            return RF_OK;
        int d = sub->outputs[0];
        nodes[n_nodes++] = js;
        /* d is read by the square (once or twice) and by the final scale. */
        int jsq = -1;
        for (int j = js + 1; j < m->n_nodes && jsq < 0; j++)
            if (m->live[j] && !m->done[j] && squares(m, nd(m, j), d))
                jsq = j;
        if (jsq < 0)
            return RF_OK;
        int sq_reads = nd(m, jsq)->op == RF_OP_MUL ? 2 : 1;
        if (m->uses[d] != sq_reads + 1)
            return RF_OK;
        nodes[n_nodes++] = jsq;
        int jv = sole_reader(m, nd(m, jsq)->outputs[0]);
        if (jv < 0 || !reduce_last(m, nd(m, jv), nd(m, jsq)->outputs[0]))
            return RF_OK;
        nodes[n_nodes++] = jv;
        int var = nd(m, jv)->outputs[0];
        int je = sole_reader(m, var);
        if (je < 0 || !adds_eps(m, nd(m, je), var, &eps))
            return RF_OK;
        nodes[n_nodes++] = je;
        int more[3], n_more;
        int out = match_rsqrt_scale(m, nd(m, je)->outputs[0], d, more, &n_more);
        if (out < 0)
            return RF_OK;
        for (int i = 0; i < n_more; i++)
            nodes[n_nodes++] = more[i];
        return finish_norm(m, k, RF_CHAIN_LAYERNORM, v, eps, out, nodes, n_nodes, out_matched);
    }
    if (squares(m, n, v)) {
        /* RMSNorm: ms = ReduceMean(v^2); v * rsqrt(ms + eps). */
        int jv = sole_reader(m, n->outputs[0]);
        if (jv < 0 || !reduce_last(m, nd(m, jv), n->outputs[0]))
            return RF_OK;
        nodes[n_nodes++] = jv;
        int ms = nd(m, jv)->outputs[0];
        int je = sole_reader(m, ms);
        if (je < 0 || !adds_eps(m, nd(m, je), ms, &eps))
            return RF_OK;
        nodes[n_nodes++] = je;
        int more[3], n_more;
        int out = match_rsqrt_scale(m, nd(m, je)->outputs[0], v, more, &n_more);
        if (out < 0)
            return RF_OK;
        for (int i = 0; i < n_more; i++)
            nodes[n_nodes++] = more[i];
        return finish_norm(m, k, RF_CHAIN_RMSNORM, v, eps, out, nodes, n_nodes, out_matched);
    }
    return RF_OK;
}

/* ---- elementwise functions ---- */

#define RF_REGION_MAX 64
#define RF_PROBES 1605

static int elementwise_op(const rf_node_t *n) {
    if (rf_op_is_unary(n->op))
        return n->n_outputs == 1;
    switch (n->op) {
    case RF_OP_GREATER:
    case RF_OP_WHERE:
    case RF_OP_IDENTITY:
    case RF_OP_ADD:
    case RF_OP_SUB:
    case RF_OP_MUL:
    case RF_OP_DIV:
    case RF_OP_POW:
        return n->n_outputs == 1;
    case RF_OP_CAST: {
        int64_t to = rf_node_attr_int(n, "to", 0);
        return to == 1 || to == 11; /* to f32 or f64: the identity on a float value */
    }
    default:
        return 0;
    }
}

static int gelu_is_tanh(const rf_node_t *n) {
    const rf_attr_t *a = rf_node_attr(n, "approximate");
    return a && a->type == RF_ATTR_STRING && a->s && strcmp(a->s, "tanh") == 0;
}

static double probe_x(int i) {
    static const double extra[5] = {-40.0, -20.0, 20.0, 40.0, 0.0};
    if (i < RF_PROBES - 5)
        return -10.0 + 20.0 * (double)i / (double)(RF_PROBES - 6);
    return extra[i - (RF_PROBES - 5)];
}

typedef struct rf_region {
    int nodes[RF_REGION_MAX]; /* in topological order; nodes[0] is the anchor */
    int n;
    int in; /* the graph value the region reads */
} rf_region_t;

/* Evaluates the nodes of the region selected by sel at x; returns the output of node `end`. */
static double region_eval(const rf_matcher_t *m, const rf_region_t *r, const unsigned char *sel,
                          int end, double x) {
    double val[RF_REGION_MAX];
    for (int i = 0; i <= end; i++) {
        if (!sel[i])
            continue;
        const rf_node_t *n = nd(m, r->nodes[i]);
        double op[3] = {0.0, 0.0, 0.0};
        for (int s = 0; s < n->n_inputs && s < 3; s++) {
            int v = n->inputs[s];
            if (v == r->in) {
                op[s] = x;
                continue;
            }
            int found = 0;
            for (int j = 0; j < i && !found; j++)
                if (sel[j] && nd(m, r->nodes[j])->outputs[0] == v) {
                    op[s] = val[j];
                    found = 1;
                }
            if (!found)
                (void)const_scalar(m, v, &op[s]);
        }
        double u = op[0], w = op[1], y;
        switch (n->op) {
        case RF_OP_RELU:
            y = u < 0.0 ? 0.0 : u;
            break;
        case RF_OP_GELU:
            y = rf_chain_fn_eval(gelu_is_tanh(n) ? RF_CHAIN_FN_GELU_TANH : RF_CHAIN_FN_GELU_ERF,
                                 0.0, u);
            break;
        case RF_OP_SIGMOID:
            y = rf_chain_fn_eval(RF_CHAIN_FN_SIGMOID, 0.0, u);
            break;
        case RF_OP_TANH:
            y = tanh(u);
            break;
        case RF_OP_ERF:
            y = erf(u);
            break;
        case RF_OP_SQRT:
            y = sqrt(u);
            break;
        case RF_OP_RECIPROCAL:
            y = 1.0 / u;
            break;
        case RF_OP_NEG:
            y = -u;
            break;
        case RF_OP_EXP:
            y = exp(u);
            break;
        case RF_OP_LOG:
            y = log(u);
            break;
        case RF_OP_ABS:
            y = fabs(u);
            break;
        case RF_OP_SOFTPLUS:
            y = rf_chain_fn_eval(RF_CHAIN_FN_SOFTPLUS, 0.0, u);
            break;
        case RF_OP_SIN:
            y = sin(u);
            break;
        case RF_OP_LEAKY_RELU:
            y = rf_chain_fn_eval(RF_CHAIN_FN_LEAKY_RELU, rf_node_attr_float(n, "alpha", 0.01), u);
            break;
        case RF_OP_ELU:
            y = rf_chain_fn_eval(RF_CHAIN_FN_ELU, rf_node_attr_float(n, "alpha", 1.0), u);
            break;
        case RF_OP_MISH:
            y = rf_chain_fn_eval(RF_CHAIN_FN_MISH, 0.0, u);
            break;
        case RF_OP_GREATER:
            y = u > w ? 1.0 : 0.0;
            break;
        case RF_OP_WHERE: /* a branch of a piecewise form (softplus's threshold) */
            y = u != 0.0 ? w : op[2];
            break;
        case RF_OP_ADD:
            y = u + w;
            break;
        case RF_OP_SUB:
            y = u - w;
            break;
        case RF_OP_MUL:
            y = u * w;
            break;
        case RF_OP_DIV:
            y = u / w;
            break;
        case RF_OP_POW:
            y = pow(u, w);
            break;
        default: /* Identity, Cast to a wider float */
            y = u;
            break;
        }
        val[i] = y;
    }
    return val[end];
}

/* Which function node `end` computes from the selected nodes, or -1; *out_alpha: its
 * parameter (a LeakyRelu's alpha, the first selected one's), else 0. */
static int region_identify(const rf_matcher_t *m, const rf_region_t *r, const unsigned char *sel,
                           int end, double *out_alpha) {
    int has_relu = 0, has_erf = 0, has_tanh = 0, has_sig = 0, has_sp = 0, has_log = 0;
    int has_exp = 0, has_sin = 0, has_leaky = 0, has_elu = 0, has_mish = 0;
    double alpha = 0.0;
    for (int i = 0; i <= end; i++) {
        if (!sel[i])
            continue;
        const rf_node_t *n = nd(m, r->nodes[i]);
        has_relu |= n->op == RF_OP_RELU;
        has_erf |= n->op == RF_OP_ERF || (n->op == RF_OP_GELU && !gelu_is_tanh(n));
        has_tanh |= n->op == RF_OP_TANH || (n->op == RF_OP_GELU && gelu_is_tanh(n));
        has_sig |= n->op == RF_OP_SIGMOID || n->op == RF_OP_EXP;
        has_sp |= n->op == RF_OP_SOFTPLUS;
        has_log |= n->op == RF_OP_LOG;
        has_exp |= n->op == RF_OP_EXP;
        has_sin |= n->op == RF_OP_SIN;
        has_mish |= n->op == RF_OP_MISH;
        if ((n->op == RF_OP_LEAKY_RELU || n->op == RF_OP_ELU) && !has_leaky && !has_elu) {
            has_leaky = n->op == RF_OP_LEAKY_RELU;
            has_elu = n->op == RF_OP_ELU;
            alpha = rf_node_attr_float(n, "alpha", has_elu ? 1.0 : 0.01);
        }
    }
    *out_alpha = has_leaky || has_elu ? alpha : 0.0;
    has_sp |= has_log && has_sig; /* log(1 + exp(x)) */
    /* Each function with the op that must define it. */
    const struct {
        rf_chain_fn_t fn;
        int defined;
    } cand[] = {{RF_CHAIN_FN_IDENTITY, 1},
                {RF_CHAIN_FN_RELU, has_relu},
                {RF_CHAIN_FN_GELU_ERF, has_erf},
                {RF_CHAIN_FN_GELU_TANH, has_tanh},
                {RF_CHAIN_FN_SILU, has_sig},
                {RF_CHAIN_FN_SIGMOID, has_sig},
                {RF_CHAIN_FN_TANH, has_tanh || has_sig},
                {RF_CHAIN_FN_SOFTPLUS, has_sp},
                {RF_CHAIN_FN_EXP, has_exp},
                {RF_CHAIN_FN_SIN, has_sin},
                {RF_CHAIN_FN_LEAKY_RELU, has_leaky},
                {RF_CHAIN_FN_ELU, has_elu},
                {RF_CHAIN_FN_MISH, has_mish}};
    for (size_t f = 0; f < sizeof cand / sizeof cand[0]; f++) {
        if (!cand[f].defined)
            continue;
        int ok = 1;
        for (int i = 0; i < RF_PROBES && ok; i++) {
            double x = probe_x(i), got = region_eval(m, r, sel, end, x);
            double want = rf_chain_fn_eval(cand[f].fn, alpha, x);
            if (!(fabs(got - want) <= 1e-6 * (1.0 + fabs(x))))
                ok = 0;
        }
        if (ok)
            return (int)cand[f].fn;
    }
    return -1;
}

/* Selects the region nodes node `end` depends on; returns 0 unless the anchor is among them
 * and every value they produce but end's is read by selected nodes alone. */
static int region_select(const rf_matcher_t *m, const rf_region_t *r, int end, unsigned char *sel) {
    memset(sel, 0, RF_REGION_MAX);
    sel[end] = 1;
    for (int i = end; i >= 0; i--) {
        if (!sel[i])
            continue;
        const rf_node_t *n = nd(m, r->nodes[i]);
        for (int s = 0; s < n->n_inputs; s++)
            for (int j = 0; j < i; j++)
                if (nd(m, r->nodes[j])->outputs[0] == n->inputs[s])
                    sel[j] = 1;
    }
    if (!sel[0])
        return 0;
    for (int i = 0; i < end; i++) {
        if (!sel[i])
            continue;
        int v = nd(m, r->nodes[i])->outputs[0], reads = 0;
        for (int j = 0; j <= end; j++) {
            if (!sel[j])
                continue;
            const rf_node_t *n = nd(m, r->nodes[j]);
            for (int s = 0; s < n->n_inputs; s++)
                reads += n->inputs[s] == v;
        }
        if (reads != m->uses[v])
            return 0;
    }
    return 1;
}

static int region_has_value(const rf_matcher_t *m, const rf_region_t *r, int v) {
    if (v == r->in)
        return 1;
    for (int i = 0; i < r->n; i++)
        if (nd(m, r->nodes[i])->outputs[0] == v)
            return 1;
    return 0;
}

/* A region of elementwise nodes reading the mapped value at node k's input: the largest
 * closed sub-region ending at one node whose function is identified becomes an act stage
 * (or an alias, for the identity). */
static rf_status_t match_act(rf_matcher_t *m, int k, int *out_matched) {
    const rf_node_t *n = nd(m, k);
    *out_matched = 0;
    if (!elementwise_op(n))
        return RF_OK;
    rf_region_t r = {{0}, 0, -1};
    double sc;
    for (int s = 0; s < n->n_inputs; s++) {
        int v = n->inputs[s];
        if (mapped(m, v) && (r.in < 0 || r.in == v))
            r.in = v;
        else if (!const_scalar(m, v, &sc))
            return RF_OK; /* another row-owned value or a vector constant: not a function */
    }
    if (r.in < 0)
        return RF_OK;
    r.nodes[r.n++] = k;
    for (int j = k + 1; j < m->n_nodes && r.n < RF_REGION_MAX; j++) {
        const rf_node_t *q = nd(m, j);
        if (!m->live[j] || m->done[j] || !elementwise_op(q))
            continue;
        int inside = 0, ok = 1;
        for (int s = 0; s < q->n_inputs && ok; s++) {
            if (region_has_value(m, &r, q->inputs[s]))
                inside = 1;
            else if (!const_scalar(m, q->inputs[s], &sc))
                ok = 0;
        }
        if (ok && inside)
            r.nodes[r.n++] = j;
    }
    unsigned char sel[RF_REGION_MAX], best_sel[RF_REGION_MAX];
    int best = -1, best_fn = -1, best_size = 0;
    double best_alpha = 0.0;
    for (int end = r.n - 1; end >= 0; end--) {
        if (!region_select(m, &r, end, sel))
            continue;
        int size = 0;
        for (int i = 0; i <= end; i++)
            size += sel[i];
        if (size <= best_size)
            continue;
        double alpha;
        int fn = region_identify(m, &r, sel, end, &alpha);
        if (fn >= 0) {
            best = end;
            best_fn = fn;
            best_alpha = alpha;
            best_size = size;
            memcpy(best_sel, sel, sizeof sel);
        }
    }
    if (best < 0)
        return refuse(m, k,
                      "the elementwise function of '%s' that starts here is not one rowfuse "
                      "compiles (relu, gelu with erf or tanh, silu, sigmoid, tanh, softplus, exp, "
                      "sin, leaky relu, elu, mish); a "
                      "scale or "
                      "shift by a constant can be folded into the neighbouring linear",
                      vl(m, r.in)->name);
    int out = nd(m, r.nodes[best])->outputs[0];
    for (int i = 0; i <= best; i++)
        if (best_sel[i])
            m->done[r.nodes[i]] = 1;
    if (best_fn == RF_CHAIN_FN_IDENTITY) {
        m->vmap[out] = m->vmap[r.in];
    } else {
        rf_chain_stage_t *st;
        RF_RETURN_IF_ERROR_PLAIN(new_stage(m, RF_CHAIN_ACT, out, k, &st));
        st->src = m->vmap[r.in];
        st->fn = (rf_chain_fn_t)best_fn;
        st->alpha = (float)best_alpha;
    }
    *out_matched = 1;
    return RF_OK;
}

/* ---- add / mul of two values ---- */

static rf_status_t match_binary(rf_matcher_t *m, int k, int *out_matched) {
    const rf_node_t *n = nd(m, k);
    *out_matched = 0;
    if ((n->op != RF_OP_ADD && n->op != RF_OP_MUL) || n->n_inputs != 2 ||
        !mapped(m, n->inputs[0]) || !mapped(m, n->inputs[1]))
        return RF_OK;
    int a = n->inputs[0], b = n->inputs[1];
    int64_t w = m->c->values[m->vmap[a]].width;
    if (m->c->values[m->vmap[b]].width != w || width_of(m, n->outputs[0]) != w)
        return refuse(m, k, "its operands '%s' and '%s' have different widths", vl(m, a)->name,
                      vl(m, b)->name);
    rf_chain_stage_t *st;
    RF_RETURN_IF_ERROR_PLAIN(
        new_stage(m, n->op == RF_OP_ADD ? RF_CHAIN_ADD : RF_CHAIN_MUL, n->outputs[0], k, &st));
    st->src = m->vmap[a];
    st->src2 = m->vmap[b];
    m->done[k] = 1;
    *out_matched = 1;
    return RF_OK;
}

/* The refusal for a live node that reads a row-owned value and starts no pattern. */
static rf_status_t refuse_node(const rf_matcher_t *m, int k) {
    const rf_node_t *n = nd(m, k);
    switch (n->op) {
    case RF_OP_REDUCE_MEAN:
    case RF_OP_REDUCE_SUM:
    case RF_OP_REDUCE_MAX:
        return refuse(m, k,
                      "a reduction over features is a stage only as the statistics of a "
                      "LayerNorm or RMSNorm; this one does not complete either pattern (use "
                      "nn.LayerNorm or nn.RMSNorm, or x * rsqrt(mean(x^2) + eps))");
    case RF_OP_RESHAPE:
    case RF_OP_TRANSPOSE:
    case RF_OP_FLATTEN:
    case RF_OP_SQUEEZE:
    case RF_OP_UNSQUEEZE:
    case RF_OP_EXPAND:
    case RF_OP_SLICE:
    case RF_OP_CONCAT:
    case RF_OP_GATHER:
        return refuse(m, k,
                      "%s is a layout op; layout changes are not stages rowfuse compiles (a "
                      "block keeps its rows and acts on the last axis; do the reshape outside "
                      "the block)",
                      n->op_type);
    case RF_OP_CAST:
        return refuse(m, k,
                      "a Cast to a narrower type inside the block; rowfuse decides where values "
                      "are stored in fp16 itself (remove the cast)");
    case RF_OP_ADD:
    case RF_OP_MUL:
        return refuse(m, k,
                      "%s of a per-feature constant that is neither a linear's bias nor a "
                      "norm's gain or shift is not a stage rowfuse compiles; fold it into the "
                      "linear before it",
                      n->op_type);
    case RF_OP_SUB:
    case RF_OP_DIV:
        return refuse(m, k,
                      "%s of two values or by a per-feature constant is not a stage rowfuse "
                      "compiles",
                      n->op_type);
    default:
        return refuse(m, k, "%s here is not a stage rowfuse compiles", n->op_type);
    }
}

/* ---- driver ---- */

static rf_status_t rf_match_setup(rf_matcher_t *m) {
    const rf_graph_t *g = m->g;
    int n_inputs = 0;
    m->x = -1;
    for (int i = 0; i < rf_graph_input_count(g); i++) {
        int v = rf_graph_input(g, i);
        if (vl(m, v)->is_const)
            continue;
        n_inputs++;
        if (m->x < 0)
            m->x = v;
    }
    if (n_inputs != 1 || rf_graph_output_count(g) != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "a block takes one input and gives one output; the model has %d inputs "
                      "and %d outputs",
                      n_inputs, rf_graph_output_count(g));
    m->y = rf_graph_output(g, 0);
    const rf_value_t *xv = vl(m, m->x), *yv = vl(m, m->y);
    char s1[128];
    if (xv->dtype != RF_DTYPE_F32 && xv->dtype != RF_DTYPE_F16)
        return RF_ERR(RF_CODE_UNSUPPORTED, "input '%s' is %s; a block's input is f32 or f16",
                      xv->name, rf_dtype_name(xv->dtype));
    if (yv->dtype != RF_DTYPE_F32 && yv->dtype != RF_DTYPE_F16)
        return RF_ERR(RF_CODE_UNSUPPORTED, "output '%s' is %s; a block's output is f32 or f16",
                      yv->name, rf_dtype_name(yv->dtype));
    if (xv->shape.rank < 2)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "input '%s' %s: a block's input is [rows, features] or [B, T, features]",
                      xv->name, rf_shape_format(&xv->shape, s1, sizeof s1));
    m->lead.rank = xv->shape.rank - 1;
    for (int i = 0; i < m->lead.rank; i++)
        m->lead.dims[i] = xv->shape.dims[i];
    m->n_nodes = rf_graph_node_count(g);
    m->n_values = rf_graph_value_count(g);
    void *p;
    size_t nv = (size_t)m->n_values + 1, nn = (size_t)m->n_nodes + 1;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(m->a, nv, sizeof(int), "matcher value map", &p));
    m->vmap = p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(m->a, nv, sizeof(int), "matcher uses", &p));
    m->uses = p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(m->a, 2, nn, "matcher node flags", &p));
    m->live = p;
    m->done = m->live + nn;
    for (int v = 0; v < m->n_values; v++)
        m->vmap[v] = -1;
    /* Live nodes: those the output depends on (walk back in topological order). */
    unsigned char *need = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(m->a, nv, 1, "matcher needed values", &p));
    need = p;
    need[m->y] = 1;
    for (int k = m->n_nodes - 1; k >= 0; k--) {
        const rf_node_t *n = nd(m, k);
        for (int o = 0; o < n->n_outputs && !m->live[k]; o++)
            if (n->outputs[o] >= 0 && need[n->outputs[o]])
                m->live[k] = 1;
        for (int i = 0; m->live[k] && i < n->n_inputs; i++)
            if (n->inputs[i] >= 0)
                need[n->inputs[i]] = 1;
    }
    rf_free(m->a, need);
    for (int k = 0; k < m->n_nodes; k++) {
        const rf_node_t *n = nd(m, k);
        for (int i = 0; m->live[k] && i < n->n_inputs; i++)
            if (n->inputs[i] >= 0)
                m->uses[n->inputs[i]]++;
    }
    m->uses[m->y]++;
    return RF_OK;
}

static rf_status_t rf_match_walk(rf_matcher_t *m) {
    int64_t c_in = vl(m, m->x)->shape.dims[vl(m, m->x)->shape.rank - 1];
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_create(m->a, c_in, &m->c));
    m->vmap[m->x] = 0;
    for (int k = 0; k < m->n_nodes; k++) {
        if (!m->live[k] || m->done[k])
            continue;
        const rf_node_t *n = nd(m, k);
        int reads_row = 0;
        for (int i = 0; i < n->n_inputs; i++)
            reads_row |= mapped(m, n->inputs[i]);
        if (!reads_row) {
            for (int i = 0; i < n->n_inputs; i++) {
                int v = n->inputs[i];
                if (v >= 0 && !is_const(m, v) && !mapped(m, v))
                    return refuse(m, k,
                                  "reads '%s', which is not a value of the block's chain (an "
                                  "output of a node rowfuse could not place in a stage)",
                                  vl(m, v)->name);
            }
            return refuse(m, k,
                          "computes from constants only; rowfuse reads weights as initializers "
                          "(export with the optimizer on, which folds constants)");
        }
        int matched = 0;
        RF_RETURN_IF_ERROR_PLAIN(match_linear(m, k, &matched));
        if (!matched)
            RF_RETURN_IF_ERROR_PLAIN(match_norm(m, k, &matched));
        if (!matched)
            RF_RETURN_IF_ERROR_PLAIN(match_act(m, k, &matched));
        if (!matched)
            RF_RETURN_IF_ERROR_PLAIN(match_binary(m, k, &matched));
        if (!matched)
            return refuse_node(m, k);
        for (int i = 0; i < n->n_inputs; i++) {
            int v = n->inputs[i];
            if (v >= 0 && !is_const(m, v) && !mapped(m, v))
                return refuse(m, k, "reads '%s', which is not a value of the block's chain",
                              vl(m, v)->name);
        }
    }
    if (!mapped(m, m->y) || m->vmap[m->y] == 0)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "the output '%s' is not computed by any stage from the input (the block "
                      "has no stages)",
                      vl(m, m->y)->name);
    if (m->vmap[m->y] != m->c->n_values - 1)
        return RF_ERR(RF_CODE_INTERNAL, "the output is chain value %d of %d", m->vmap[m->y],
                      m->c->n_values);
    return RF_OK;
}

rf_status_t rf_chain_match(rf_allocator_t a, const rf_graph_t *g, const rf_contract_t *ct,
                           rf_chain_t **out_chain) {
    *out_chain = NULL;
    if (!g || !ct)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_match: no graph or contract");
    rf_matcher_t m;
    memset(&m, 0, sizeof m);
    m.g = g;
    m.ct = ct;
    m.a = a;
    rf_status_t st = rf_match_setup(&m);
    if (!st)
        st = rf_match_walk(&m);
    if (!st) {
        int64_t rows = 1;
        for (int i = 0; i < m.lead.rank; i++)
            rows *= m.lead.dims[i];
        m.c->rows = rows;
        st = rf_chain_fuse(m.c, g);
    }
    if (!st)
        rf_chain_assign_dtypes(m.c);
    rf_free(a, m.vmap);
    rf_free(a, m.uses);
    rf_free(a, m.live);
    if (st) {
        rf_chain_destroy(m.c);
        return st;
    }
    *out_chain = m.c;
    return RF_OK;
}
