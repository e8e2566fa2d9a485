/* Row-ownership analysis (rowfuse/verify.h, check (c)).
 *
 * A forward dataflow over the topologically ordered nodes. The row dim is dim 0 of the
 * first graph input that is not an initializer; its extent is N. Each value is CONST (no
 * row dependency: weights, constants, anything computed only from them) or ROW_OWNED
 * (axis 0 is the row axis with extent N, and row i depends only on input row i). A node
 * with no row-owned input yields CONST outputs. Otherwise its op's rule either proves the
 * outputs ROW_OWNED, recording a human reason, or rejects the node with
 * RF_CODE_ROW_VIOLATION naming the node, the op, the shapes and the rule broken.
 *
 * The rules follow one idea: an element of output row i may read only elements of row i
 * of each row-owned input (any element of a constant). So an op may not contract, reduce,
 * normalize, scan, select, reorder, concatenate or broadcast along a row-owned axis 0,
 * and layout ops must leave axis 0 in place with extent N. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/shape_internal.h"
#include "verify/verify_internal.h"

typedef struct {
    rf_contract_t *c;
    const rf_graph_t *g;
    int k; /* current node */
    const rf_node_t *n;
    int64_t rows;
} rf_rows_t;

static int is_row(const rf_rows_t *r, int v) {
    return v >= 0 && r->c->state[v] == RF_ROW_OWNED;
}

static const rf_value_t *val(const rf_rows_t *r, int v) {
    return rf_graph_value(r->g, v);
}

static int in_v(const rf_rows_t *r, int slot) {
    return slot < r->n->n_inputs ? r->n->inputs[slot] : -1;
}

static int out_v(const rf_rows_t *r, int slot) {
    return slot < r->n->n_outputs ? r->n->outputs[slot] : -1;
}

static const char *shp(const rf_rows_t *r, int v, char *buf, size_t size) {
    return rf_shape_format(&val(r, v)->shape, buf, size);
}

static int rf_dtype_is_float(rf_dtype_t t) {
    return t == RF_DTYPE_F32 || t == RF_DTYPE_F16 || t == RF_DTYPE_BF16 || t == RF_DTYPE_F64;
}

/* "row-owned 'x'" / "constant 'w'" */
static const char *role(const rf_rows_t *r, int v, char *buf, size_t size) {
    snprintf(buf, size, "%s '%s'", is_row(r, v) ? "row-owned" : "constant", val(r, v)->name);
    return buf;
}

/* ROW_VIOLATION: "node K 'name' (Op detail, [in] -> [out]): message". The shapes listed
 * are those of the floating-point inputs (the data, not shape/axes operands). */
static rf_status_t violation(const rf_rows_t *r, const char *detail, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static rf_status_t violation(const rf_rows_t *r, const char *detail, const char *fmt, ...) {
    char msg[768], shapes[512], sbuf[128], name[300] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t used = 0;
    shapes[0] = '\0';
    for (int i = 0; i < r->n->n_inputs && used < sizeof shapes; i++) {
        int v = r->n->inputs[i];
        if (v < 0 || !rf_dtype_is_float(val(r, v)->dtype))
            continue;
        used += (size_t)snprintf(shapes + used, sizeof shapes - used, "%s%s", used ? ", " : "",
                                 shp(r, v, sbuf, sizeof sbuf));
    }
    if (r->n->n_outputs > 0 && used < sizeof shapes)
        snprintf(shapes + used, sizeof shapes - used, " -> %s",
                 shp(r, r->n->outputs[0], sbuf, sizeof sbuf));
    if (r->n->name[0])
        snprintf(name, sizeof name, " '%s'", r->n->name);
    return RF_ERR(RF_CODE_ROW_VIOLATION, "node %d%s (%s%s%s, %s): %s", r->k, name, r->n->op_type,
                  detail && detail[0] ? " " : "", detail ? detail : "", shapes, msg);
}

/* Marks every output of the node row-owned with the same reason. */
static rf_status_t own_outputs(rf_rows_t *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static rf_status_t own_outputs(rf_rows_t *r, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < r->n->n_outputs; i++) {
        r->c->state[r->n->outputs[i]] = RF_ROW_OWNED;
        RF_RETURN_IF_ERROR_PLAIN(rf_contract_set_reason(r->c, r->n->outputs[i], "%s", buf));
    }
    return RF_OK;
}

/* The first row-owned input, for reasons ("Relu of row-owned 'x'"). */
static int first_row_input(const rf_rows_t *r) {
    for (int i = 0; i < r->n->n_inputs; i++)
        if (is_row(r, r->n->inputs[i]))
            return r->n->inputs[i];
    return -1;
}

/* A row-owned operand of an elementwise op must keep its row axis on output axis 0 with
 * the same extent: same rank as the output and the same dim 0. */
static rf_status_t check_aligned(const rf_rows_t *r, int v, const rf_shape_t *out,
                                 const char *what) {
    const rf_value_t *x = val(r, v);
    char s1[128], s2[128];
    if (x->shape.rank != out->rank)
        return violation(r, "broadcast",
                         "%s row-owned '%s' %s is broadcast to %s, which moves its row axis to "
                         "output axis %d; a row-owned operand must keep its rows on axis 0",
                         what, x->name, rf_shape_format(&x->shape, s1, sizeof s1),
                         rf_shape_format(out, s2, sizeof s2), out->rank - x->shape.rank);
    if (x->shape.dims[0] != out->dims[0])
        return violation(r, "broadcast",
                         "%s row-owned '%s' %s has %lld row(s) but is broadcast to %lld, so "
                         "every output row would read the same input row; a row-owned operand "
                         "is never broadcast along rows",
                         what, x->name, rf_shape_format(&x->shape, s1, sizeof s1),
                         (long long)x->shape.dims[0], (long long)out->dims[0]);
    return RF_OK;
}

static rf_status_t rule_elementwise(rf_rows_t *r) {
    const rf_shape_t *out = &val(r, out_v(r, 0))->shape;
    for (int i = 0; i < r->n->n_inputs; i++)
        if (is_row(r, in_v(r, i)))
            RF_RETURN_IF_ERROR_PLAIN(check_aligned(r, in_v(r, i), out, "operand"));
    char b1[300], b2[300];
    if (r->n->n_inputs == 1)
        return own_outputs(r, "%s of %s", r->n->op_type, role(r, in_v(r, 0), b1, sizeof b1));
    return own_outputs(r, "%s of %s and %s: elementwise, rows stay aligned", r->n->op_type,
                       role(r, in_v(r, 0), b1, sizeof b1), role(r, in_v(r, 1), b2, sizeof b2));
}

static rf_status_t rule_matmul(rf_rows_t *r) {
    int a = in_v(r, 0), b = in_v(r, 1);
    int ra = val(r, a)->shape.rank, rb = val(r, b)->shape.rank;
    int ro = val(r, out_v(r, 0))->shape.rank;
    char b1[300], b2[300];
    if (is_row(r, a)) {
        if (ra == 1)
            return violation(r, "over rows",
                             "contracts the vector '%s' over its only axis, the row axis: the "
                             "output depends on every input row; MatMul may contract only over "
                             "features",
                             val(r, a)->name);
        if (ro - ra != 0)
            return violation(r, "batch broadcast",
                             "the row axis of '%s' lands on output axis %d; the row-owned "
                             "operand must keep its rows on axis 0",
                             val(r, a)->name, ro - ra);
    }
    if (is_row(r, b)) {
        if (rb <= 2)
            return violation(r, "over rows",
                             "contracts over the row axis of the right operand '%s': each "
                             "output row depends on every input row (attention across rows); "
                             "MatMul may contract only over features",
                             val(r, b)->name);
        if (ro - rb != 0)
            return violation(r, "batch broadcast",
                             "the row axis of '%s' lands on output axis %d; the row-owned "
                             "operand must keep its rows on axis 0",
                             val(r, b)->name, ro - rb);
    }
    if (is_row(r, a) && ra == 2 && !is_row(r, b))
        return own_outputs(r, "MatMul of row-owned '%s' by %s: contracts over features",
                           val(r, a)->name, role(r, b, b2, sizeof b2));
    return own_outputs(r, "MatMul of %s and %s: row axis is a batch axis",
                       role(r, a, b1, sizeof b1), role(r, b, b2, sizeof b2));
}

static rf_status_t rule_gemm(rf_rows_t *r) {
    int a = in_v(r, 0), b = in_v(r, 1), cc = in_v(r, 2);
    int ta = rf_node_attr_int(r->n, "transA", 0) != 0;
    int tb = rf_node_attr_int(r->n, "transB", 0) != 0;
    char b1[300];
    if (is_row(r, a) && ta)
        return violation(r, "transA",
                         "transA makes the row axis of '%s' the contraction axis: each output "
                         "element sums over every input row; Gemm may contract only over "
                         "features",
                         val(r, a)->name);
    if (is_row(r, b))
        return violation(r, tb ? "transB" : "",
                         tb ? "the right operand '%s' is row-owned and transB turns its rows "
                              "into output columns: each output row reads every input row "
                              "(X @ X^T); the right operand must be a constant"
                            : "contracts over the row axis of the right operand '%s': each "
                              "output row depends on every input row; the right operand must "
                              "be a constant",
                         val(r, b)->name);
    if (is_row(r, cc)) {
        const rf_shape_t *out = &val(r, out_v(r, 0))->shape;
        RF_RETURN_IF_ERROR_PLAIN(check_aligned(r, cc, out, "bias"));
    }
    if (is_row(r, a))
        return own_outputs(r,
                           "Gemm of row-owned '%s' by constant '%s'%s: contracts over "
                           "features",
                           val(r, a)->name, val(r, b)->name, tb ? " (transB)" : "");
    return own_outputs(r, "Gemm of constants plus %s bias: rows stay aligned",
                       role(r, cc, b1, sizeof b1));
}

static void axes_text(unsigned mask, int rank, char *buf, size_t size) {
    size_t used = 0;
    int count = 0;
    for (int i = 0; i < rank; i++)
        count += (mask >> i) & 1;
    used += (size_t)snprintf(buf, size, count == 1 ? "axis " : "axes [");
    for (int i = 0, first = 1; i < rank && used < size; i++)
        if ((mask >> i) & 1) {
            used += (size_t)snprintf(buf + used, size - used, first ? "%d" : ", %d", i);
            first = 0;
        }
    if (count != 1 && used < size)
        snprintf(buf + used, size - used, "]");
}

static rf_status_t rule_reduce(rf_rows_t *r) {
    int x = in_v(r, 0);
    int rank = val(r, x)->shape.rank;
    unsigned mask;
    int noop;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_reduce_axes(r->g, r->n, rank, &mask, &noop));
    char ax[96], detail[128];
    axes_text(mask, rank, ax, sizeof ax);
    snprintf(detail, sizeof detail, "over %s", ax);
    if (noop)
        return own_outputs(r, "%s of row-owned '%s' with no axes: identity", r->n->op_type,
                           val(r, x)->name);
    if (mask & 1u)
        return violation(r, detail,
                         "output row depends on every input row; row-owned graphs may reduce "
                         "only over features");
    return own_outputs(r, "%s of row-owned '%s' over %s: features only", r->n->op_type,
                       val(r, x)->name, ax);
}

static rf_status_t rule_layer_norm(rf_rows_t *r) {
    int x = in_v(r, 0);
    int rank = val(r, x)->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(r->n, "axis", -1), rank, "axis", &axis));
    char detail[64];
    snprintf(detail, sizeof detail, "over axes %d..%d", axis, rank - 1);
    for (int s = 1; s <= 2; s++)
        if (is_row(r, in_v(r, s)))
            return violation(r, detail,
                             "the %s '%s' is row-owned but broadcasts over the normalized "
                             "feature axes, so its rows would not line up with the output "
                             "rows; scale and bias must be constants",
                             s == 1 ? "scale" : "bias", val(r, in_v(r, s))->name);
    if (is_row(r, x) && axis == 0)
        return violation(r, detail,
                         "the mean and variance are taken over the row axis, so every output "
                         "row depends on every input row; row-owned graphs may normalize only "
                         "over features");
    return own_outputs(r, "%s of row-owned '%s' over features (axes %d..%d)", r->n->op_type,
                       val(r, x)->name, axis, rank - 1);
}

static rf_status_t rule_softmax(rf_rows_t *r) {
    int x = in_v(r, 0);
    int rank = val(r, x)->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(r->n, "axis", -1), rank, "axis", &axis));
    char detail[32];
    snprintf(detail, sizeof detail, "over axis %d", axis);
    if (axis == 0)
        return violation(r, detail,
                         "the normalizing sum runs over the row axis, so every output row "
                         "depends on every input row; row-owned graphs may take softmax only "
                         "over features");
    return own_outputs(r, "Softmax of row-owned '%s' over axis %d (features)", val(r, x)->name,
                       axis);
}

static rf_status_t rule_cumsum(rf_rows_t *r) {
    int x = in_v(r, 0);
    int64_t a;
    int n, axis;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(r->g, r->n, 1, "axis", &a, 1, &n));
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(a, val(r, x)->shape.rank, "axis", &axis));
    char detail[32], desc[RF_NODE_DESC_SIZE];
    snprintf(detail, sizeof detail, "over axis %d", axis);
    if (is_row(r, x) && axis == 0)
        return violation(r, detail,
                         "output row i sums input rows 0..i, so it depends on other rows; "
                         "row-owned graphs may scan only over features");
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "%s: CumSum over features is row-owned but rowfuse has no kernel for it",
                  rf_node_describe(r->g, r->k, desc, sizeof desc));
}

static rf_status_t rule_reshape(rf_rows_t *r) {
    int x = in_v(r, 0), o = out_v(r, 0);
    const rf_shape_t *in = &val(r, x)->shape, *out = &val(r, o)->shape;
    if (out->rank < 1 || out->dims[0] != in->dims[0]) {
        int64_t od = out->rank ? out->dims[0] : 1;
        return violation(r, "",
                         "changes dim 0 from %lld rows to %lld, %s; reshapes must keep dim 0 "
                         "equal to the row count",
                         (long long)in->dims[0], (long long)od,
                         od < in->dims[0] ? "folding rows into channels"
                                          : "splitting rows across several output rows");
    }
    char s1[128], s2[128];
    return own_outputs(r,
                       "%s of row-owned '%s' %s -> %s: dim 0 kept, features regrouped within "
                       "each row",
                       r->n->op_type, val(r, x)->name, rf_shape_format(in, s1, sizeof s1),
                       rf_shape_format(out, s2, sizeof s2));
}

static rf_status_t rule_transpose(rf_rows_t *r) {
    int x = in_v(r, 0);
    int rank = val(r, x)->shape.rank, perm[RF_MAX_RANK];
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_transpose_perm(r->n, rank, perm));
    char ptxt[96];
    size_t used = (size_t)snprintf(ptxt, sizeof ptxt, "perm [");
    for (int i = 0; i < rank && used < sizeof ptxt; i++)
        used += (size_t)snprintf(ptxt + used, sizeof ptxt - used, i ? ", %d" : "%d", perm[i]);
    if (used < sizeof ptxt)
        snprintf(ptxt + used, sizeof ptxt - used, "]");
    if (perm[0] != 0) {
        int dest = 0;
        for (int i = 0; i < rank; i++)
            if (perm[i] == 0)
                dest = i;
        return violation(r, ptxt,
                         "moves the row axis to axis %d, swapping rows with another axis; "
                         "transposes must keep the row axis at 0",
                         dest);
    }
    return own_outputs(r, "Transpose of row-owned '%s' with %s: row axis stays at 0",
                       val(r, x)->name, ptxt);
}

static rf_status_t rule_squeeze(rf_rows_t *r) {
    int x = in_v(r, 0);
    const rf_shape_t *in = &val(r, x)->shape;
    unsigned mask;
    int given;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_squeeze_axes(r->g, r->n, in->rank, &mask, &given));
    if (!given)
        for (int i = 0; i < in->rank; i++)
            if (in->dims[i] == 1)
                mask |= 1u << i;
    if (mask & 1u)
        return violation(r, "axis 0", "removes the row axis; squeeze only feature axes");
    return own_outputs(r, "Squeeze of row-owned '%s' (feature axes only)", val(r, x)->name);
}

static rf_status_t rule_unsqueeze(rf_rows_t *r) {
    int x = in_v(r, 0);
    const rf_shape_t *out = &val(r, out_v(r, 0))->shape;
    unsigned mask;
    int given;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_squeeze_axes(r->g, r->n, out->rank, &mask, &given));
    if (mask & 1u)
        return violation(r, "axis 0",
                         "inserts an axis before the row axis, moving rows to axis 1; "
                         "unsqueeze only after axis 0");
    return own_outputs(r, "Unsqueeze of row-owned '%s' (after the row axis)", val(r, x)->name);
}

static rf_status_t rule_expand(rf_rows_t *r) {
    const rf_shape_t *out = &val(r, out_v(r, 0))->shape;
    RF_RETURN_IF_ERROR_PLAIN(check_aligned(r, in_v(r, 0), out, "input"));
    return own_outputs(r, "Expand of row-owned '%s' along features", val(r, in_v(r, 0))->name);
}

static rf_status_t rule_slice(rf_rows_t *r) {
    int x = in_v(r, 0);
    const rf_shape_t *in = &val(r, x)->shape;
    int64_t starts[RF_MAX_RANK], steps[RF_MAX_RANK], counts[RF_MAX_RANK];
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_slice_params(r->g, r->n, in, starts, steps, counts));
    if (starts[0] != 0 || steps[0] != 1 || counts[0] != in->dims[0]) {
        if (steps[0] < 0)
            return violation(r, "along axis 0",
                             "reverses the order of the rows (a flip): output row i is input "
                             "row %lld-i; slices must keep every row in place",
                             (long long)starts[0]);
        return violation(r, "along axis 0",
                         "selects %lld of the %lld rows (from row %lld, step %lld), so output "
                         "row i is input row %lld+%lld*i; slices must keep every row in place "
                         "and cut only feature axes",
                         (long long)counts[0], (long long)in->dims[0], (long long)starts[0],
                         (long long)steps[0], (long long)starts[0], (long long)steps[0]);
    }
    return own_outputs(r, "Slice of row-owned '%s' along features (all rows kept)",
                       val(r, x)->name);
}

static rf_status_t rule_concat(rf_rows_t *r) {
    int x = in_v(r, 0);
    int rank = val(r, x)->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(rf_node_attr_int(r->n, "axis", 0), rank, "axis", &axis));
    if (axis == 0) {
        char names[256] = "";
        size_t used = 0;
        for (int i = 0; i < r->n->n_inputs && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s'%s'", i ? ", " : "",
                                     val(r, in_v(r, i))->name);
        return violation(r, "along axis 0",
                         "stacks the rows of %s, so output row i is not input row i (a roll, "
                         "shift or extra rows); concatenate only along features",
                         names);
    }
    return own_outputs(r, "Concat along axis %d (features) of row-owned '%s'%s", axis,
                       val(r, first_row_input(r))->name, r->n->n_inputs > 1 ? " and others" : "");
}

static rf_status_t rule_gather(rf_rows_t *r) {
    int x = in_v(r, 0), idx = in_v(r, 1);
    int axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(r->n, "axis", 0), val(r, x)->shape.rank, "axis", &axis));
    char detail[32], s1[128];
    snprintf(detail, sizeof detail, "along axis %d", axis);
    if (is_row(r, x) && axis == 0)
        return violation(r, detail,
                         "selects rows of '%s' by index (indices '%s' %s), so an output row "
                         "comes from another input row (e.g. row 0 broadcast to all rows); "
                         "gather only along features",
                         val(r, x)->name, val(r, idx)->name, shp(r, idx, s1, sizeof s1));
    if (is_row(r, x) && is_row(r, idx))
        return violation(r, detail,
                         "indexes row-owned '%s' with row-owned indices '%s': indices must be "
                         "constants",
                         val(r, x)->name, val(r, idx)->name);
    if (is_row(r, idx) && axis != 0)
        return violation(r, detail,
                         "the row axis of the indices '%s' lands on output axis %d; gather by "
                         "row-owned indices only along axis 0 (a lookup table)",
                         val(r, idx)->name, axis);
    if (is_row(r, idx))
        return own_outputs(r,
                           "Gather from constant '%s' by row-owned indices '%s': row i "
                           "looks up row i's indices",
                           val(r, x)->name, val(r, idx)->name);
    return own_outputs(r,
                       "Gather of row-owned '%s' along axis %d (features) by constant "
                       "indices",
                       val(r, x)->name, axis);
}

static rf_status_t rule_node(rf_rows_t *r) {
    if (rf_op_is_unary(r->n->op))
        return rule_elementwise(r);
    switch (r->n->op) {
    case RF_OP_ADD:
    case RF_OP_SUB:
    case RF_OP_MUL:
    case RF_OP_DIV:
    case RF_OP_POW:
    case RF_OP_GREATER:
    case RF_OP_WHERE:
    case RF_OP_CAST:
    case RF_OP_IDENTITY:
        return rule_elementwise(r);
    case RF_OP_MATMUL:
        return rule_matmul(r);
    case RF_OP_GEMM:
        return rule_gemm(r);
    case RF_OP_REDUCE_MEAN:
    case RF_OP_REDUCE_SUM:
    case RF_OP_REDUCE_MAX:
        return rule_reduce(r);
    case RF_OP_LAYER_NORM:
    case RF_OP_RMS_NORM:
        return rule_layer_norm(r);
    case RF_OP_SOFTMAX:
        return rule_softmax(r);
    case RF_OP_CUMSUM:
        return rule_cumsum(r);
    case RF_OP_RESHAPE:
    case RF_OP_FLATTEN:
        return rule_reshape(r);
    case RF_OP_TRANSPOSE:
        return rule_transpose(r);
    case RF_OP_SQUEEZE:
        return rule_squeeze(r);
    case RF_OP_UNSQUEEZE:
        return rule_unsqueeze(r);
    case RF_OP_EXPAND:
        return rule_expand(r);
    case RF_OP_SLICE:
        return rule_slice(r);
    case RF_OP_CONCAT:
        return rule_concat(r);
    case RF_OP_GATHER:
        return rule_gather(r);
    default:
        break;
    }
    char desc[RF_NODE_DESC_SIZE];
    return RF_ERR(RF_CODE_UNSUPPORTED, "%s: no row rule for this op",
                  rf_node_describe(r->g, r->k, desc, sizeof desc));
}

rf_status_t rf_verify_rows(rf_contract_t *c) {
    const rf_graph_t *g = c->graph;
    rf_rows_t r = {c, g, -1, NULL, 0};
    char s1[128];
    /* Constants first; anything not reached stays CONST with no reason. */
    for (int v = 0; v < c->n_values; v++) {
        const rf_value_t *x = rf_graph_value(g, v);
        c->state[v] = RF_ROW_CONST;
        if (x->is_const)
            RF_RETURN_IF_ERROR_PLAIN(
                rf_contract_set_reason(c, v, "constant %s %s (weight)", rf_dtype_name(x->dtype),
                                       rf_shape_format(&x->shape, s1, sizeof s1)));
    }
    /* The row dim: dim 0 of the first input that is not an initializer. */
    c->row_input = -1;
    for (int i = 0; i < rf_graph_input_count(g) && c->row_input < 0; i++)
        if (!rf_graph_value(g, rf_graph_input(g, i))->is_const)
            c->row_input = rf_graph_input(g, i);
    if (c->row_input < 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "every graph input is an initializer: nothing defines the row dim");
    const rf_value_t *rin = rf_graph_value(g, c->row_input);
    if (rin->shape.rank < 1)
        return RF_ERR(RF_CODE_ROW_VIOLATION,
                      "graph input '%s' is a scalar: the row dim is dim 0 of the first input",
                      rin->name);
    c->rows = rin->shape.dims[0];
    for (int i = 0; i < rf_graph_input_count(g); i++) {
        int v = rf_graph_input(g, i);
        const rf_value_t *x = rf_graph_value(g, v);
        if (x->is_const)
            continue;
        if (x->shape.rank < 1 || x->shape.dims[0] != c->rows)
            return RF_ERR(RF_CODE_ROW_VIOLATION,
                          "graph input '%s' %s does not have %lld rows on axis 0 (the row dim "
                          "is dim 0 of '%s'); every input must have one row per row",
                          x->name, rf_shape_format(&x->shape, s1, sizeof s1), (long long)c->rows,
                          rin->name);
        c->state[v] = RF_ROW_OWNED;
        RF_RETURN_IF_ERROR_PLAIN(
            v == c->row_input
                ? rf_contract_set_reason(c, v, "graph input: its dim 0 is the row dim (%lld rows)",
                                         (long long)c->rows)
                : rf_contract_set_reason(c, v, "graph input with %lld rows on axis 0",
                                         (long long)c->rows));
    }
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        r.k = k;
        r.n = rf_graph_node(g, k);
        if (first_row_input(&r) < 0) {
            for (int i = 0; i < r.n->n_outputs; i++)
                RF_RETURN_IF_ERROR_PLAIN(rf_contract_set_reason(
                    c, r.n->outputs[i],
                    r.n->op == RF_OP_CONSTANT ? "Constant node" : "%s of constants only",
                    r.n->op_type));
            continue;
        }
        RF_RETURN_IF_ERROR_PLAIN(rule_node(&r));
        /* Safety net for every rule: a row-owned output keeps N rows on axis 0. */
        for (int i = 0; i < r.n->n_outputs; i++) {
            const rf_value_t *o = rf_graph_value(g, r.n->outputs[i]);
            if (c->state[r.n->outputs[i]] == RF_ROW_OWNED &&
                (o->shape.rank < 1 || o->shape.dims[0] != c->rows))
                return violation(&r, "",
                                 "output '%s' %s does not keep the %lld rows on axis 0; every "
                                 "row-owned value has the row axis first",
                                 o->name, rf_shape_format(&o->shape, s1, sizeof s1),
                                 (long long)c->rows);
        }
    }
    for (int i = 0; i < rf_graph_output_count(g); i++) {
        int v = rf_graph_output(g, i);
        const rf_value_t *o = rf_graph_value(g, v);
        if (c->state[v] != RF_ROW_OWNED)
            return RF_ERR(RF_CODE_ROW_VIOLATION,
                          "graph output '%s' %s does not depend on the input rows (it is "
                          "computed from constants only); every output must be row-owned with "
                          "%lld rows on axis 0",
                          o->name, rf_shape_format(&o->shape, s1, sizeof s1), (long long)c->rows);
    }
    return RF_OK;
}
