/* Static shape and dtype inference for every op in rf_op_t (rf_graph_infer_shapes).
 *
 * Nodes are visited in topological order; each op's rule computes its outputs' dtypes and
 * shapes from its inputs (numpy broadcasting for elementwise ops and MatMul batch dims,
 * ONNX semantics for Gemm, reductions, LayerNormalization, layout ops). Shape-like
 * operands (Reshape's shape, Slice's bounds, axes inputs of opset >= 13/18) must be
 * constants; a computed one is RF_CODE_UNSUPPORTED. A declared shape or dtype that differs
 * from the inferred one is RF_CODE_SHAPE_ERROR naming the node, op and both shapes.
 * Unknown ops keep their outputs untyped, and so does anything downstream of them; the
 * verifier names the unknown op. */
#include <stdio.h>
#include <string.h>

#include "graph/shape_internal.h"
#include "rowfuse/graph.h"

#define SHAPE_STR(s, buf) rf_shape_format((s), (buf), sizeof(buf))

/* ---- per-op rules ---- */

typedef struct {
    const rf_graph_t *g;
    const rf_node_t *node;
    rf_dtype_t *dt; /* outputs */
    rf_shape_t *sh;
} rf_infer_t;

static const rf_value_t *in_val(const rf_infer_t *c, int slot) {
    if (slot >= c->node->n_inputs || c->node->inputs[slot] < 0)
        return NULL;
    return rf_graph_value(c->g, c->node->inputs[slot]);
}

static rf_status_t rf_need_inputs(const rf_infer_t *c, int min, int max) {
    int n = c->node->n_inputs;
    if (n < min || n > max)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "has %d inputs, expects %d..%d", n, min, max);
    for (int i = 0; i < min; i++)
        if (c->node->inputs[i] < 0)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "required input %d is missing", i);
    return RF_OK;
}

/* Numpy broadcasting of a and b into out. */
static rf_status_t rf_broadcast(const rf_shape_t *a, const rf_shape_t *b, rf_shape_t *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char s1[128], s2[128];
            return RF_ERR(RF_CODE_SHAPE_ERROR,
                          "cannot broadcast %s with %s (axis %d: %lld vs "
                          "%lld)",
                          SHAPE_STR(a, s1), SHAPE_STR(b, s2), i, (long long)da, (long long)db);
        }
        out->dims[i] = da == 1 ? db : da;
    }
    return RF_OK;
}

/* Does `from` broadcast to exactly `to` (unidirectional broadcasting)? */
static int rf_broadcasts_to(const rf_shape_t *from, const rf_shape_t *to) {
    if (from->rank > to->rank)
        return 0;
    for (int i = 0; i < from->rank; i++) {
        int64_t d = from->dims[i], t = to->dims[to->rank - from->rank + i];
        if (d != t && d != 1)
            return 0;
    }
    return 1;
}

static rf_status_t rf_check_same_dtype(const rf_value_t *a, const rf_value_t *b) {
    if (a->dtype != b->dtype)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "dtype mismatch: '%s' is %s, '%s' is %s", a->name,
                      rf_dtype_name(a->dtype), b->name, rf_dtype_name(b->dtype));
    return RF_OK;
}

static rf_status_t infer_elementwise(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *a = in_val(c, 0), *b = in_val(c, 1);
    if (c->node->op != RF_OP_POW) /* Pow's exponent may have its own dtype */
        RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(a, b));
    c->dt[0] = a->dtype;
    return rf_broadcast(&a->shape, &b->shape, &c->sh[0]);
}

/* Greater: two operands of one dtype, broadcast, a bool result. */
static rf_status_t infer_compare(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *a = in_val(c, 0), *b = in_val(c, 1);
    RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(a, b));
    c->dt[0] = RF_DTYPE_BOOL;
    return rf_broadcast(&a->shape, &b->shape, &c->sh[0]);
}

/* Where(cond, x, y): a bool condition, x and y of one dtype, the three broadcast. */
static rf_status_t infer_where(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 3, 3));
    const rf_value_t *k = in_val(c, 0), *x = in_val(c, 1), *y = in_val(c, 2);
    if (k->dtype != RF_DTYPE_BOOL)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Where's condition '%s' is %s, not bool", k->name,
                      rf_dtype_name(k->dtype));
    RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(x, y));
    rf_shape_t xy;
    RF_RETURN_IF_ERROR_PLAIN(rf_broadcast(&x->shape, &y->shape, &xy));
    c->dt[0] = x->dtype;
    return rf_broadcast(&k->shape, &xy, &c->sh[0]);
}

static rf_status_t infer_unary(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 1));
    c->dt[0] = in_val(c, 0)->dtype;
    c->sh[0] = in_val(c, 0)->shape;
    return RF_OK;
}

/* ONNX TensorProto.DataType numbers for the dtypes rowfuse has. */
static rf_dtype_t rf_dtype_from_onnx(int64_t t) {
    switch (t) {
    case 1:
        return RF_DTYPE_F32;
    case 2:
        return RF_DTYPE_U8;
    case 3:
        return RF_DTYPE_I8;
    case 6:
        return RF_DTYPE_I32;
    case 7:
        return RF_DTYPE_I64;
    case 9:
        return RF_DTYPE_BOOL;
    case 10:
        return RF_DTYPE_F16;
    case 11:
        return RF_DTYPE_F64;
    case 16:
        return RF_DTYPE_BF16;
    default:
        return RF_DTYPE_UNDEFINED;
    }
}

static rf_status_t infer_cast(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 1));
    int64_t to = rf_node_attr_int(c->node, "to", -1);
    rf_dtype_t dt = rf_dtype_from_onnx(to);
    if (dt == RF_DTYPE_UNDEFINED)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "cast to ONNX dtype %lld, which rowfuse does not "
                      "handle",
                      (long long)to);
    c->dt[0] = dt;
    c->sh[0] = in_val(c, 0)->shape;
    return RF_OK;
}

static rf_status_t infer_constant(rf_infer_t *c) {
    if (c->node->n_attrs < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Constant without a value");
    const rf_attr_t *a = &c->node->attrs[0];
    memset(&c->sh[0], 0, sizeof c->sh[0]);
    switch (a->type) {
    case RF_ATTR_TENSOR: {
        const rf_value_t *t = rf_graph_value(c->g, a->tensor);
        if (!t || !t->has_shape)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Constant with a bad tensor");
        c->dt[0] = t->dtype;
        c->sh[0] = t->shape;
        return RF_OK;
    }
    case RF_ATTR_INT:
        c->dt[0] = RF_DTYPE_I64;
        return RF_OK;
    case RF_ATTR_FLOAT:
        c->dt[0] = RF_DTYPE_F32;
        return RF_OK;
    case RF_ATTR_INTS:
    case RF_ATTR_FLOATS:
        c->dt[0] = a->type == RF_ATTR_INTS ? RF_DTYPE_I64 : RF_DTYPE_F32;
        c->sh[0].rank = 1;
        c->sh[0].dims[0] = a->n;
        return RF_OK;
    default:
        break;
    }
    return RF_ERR(RF_CODE_UNSUPPORTED, "Constant with a '%s' attribute", a->name);
}

static rf_status_t infer_matmul(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *a = in_val(c, 0), *b = in_val(c, 1);
    RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(a, b));
    char s1[128], s2[128];
    if (a->shape.rank < 1 || b->shape.rank < 1)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "MatMul of a scalar (%s @ %s)", SHAPE_STR(&a->shape, s1),
                      SHAPE_STR(&b->shape, s2));
    int ra = a->shape.rank, rb = b->shape.rank;
    int64_t ka = a->shape.dims[ra - 1], kb = rb >= 2 ? b->shape.dims[rb - 2] : b->shape.dims[0];
    if (ka != kb)
        return RF_ERR(
            RF_CODE_SHAPE_ERROR, "MatMul inner dims differ: %s @ %s contracts %lld with %lld",
            SHAPE_STR(&a->shape, s1), SHAPE_STR(&b->shape, s2), (long long)ka, (long long)kb);
    rf_shape_t ba = {0, {0}}, bb = {0, {0}}, batch;
    ba.rank = ra > 2 ? ra - 2 : 0;
    bb.rank = rb > 2 ? rb - 2 : 0;
    memcpy(ba.dims, a->shape.dims, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dims, b->shape.dims, sizeof(int64_t) * (size_t)bb.rank);
    RF_RETURN_IF_ERROR(rf_broadcast(&ba, &bb, &batch), "MatMul batch dims");
    rf_shape_t *o = &c->sh[0];
    *o = batch;
    if (ra >= 2)
        o->dims[o->rank++] = a->shape.dims[ra - 2];
    if (rb >= 2)
        o->dims[o->rank++] = b->shape.dims[rb - 1];
    c->dt[0] = a->dtype;
    return RF_OK;
}

static rf_status_t infer_gemm(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 3));
    const rf_value_t *a = in_val(c, 0), *b = in_val(c, 1), *cc = in_val(c, 2);
    char s1[128], s2[128];
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Gemm needs rank-2 A and B, has %s and %s",
                      SHAPE_STR(&a->shape, s1), SHAPE_STR(&b->shape, s2));
    RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(a, b));
    int ta = rf_node_attr_int(c->node, "transA", 0) != 0;
    int tb = rf_node_attr_int(c->node, "transB", 0) != 0;
    int64_t m = a->shape.dims[ta ? 1 : 0], k = a->shape.dims[ta ? 0 : 1];
    int64_t kb = b->shape.dims[tb ? 1 : 0], n = b->shape.dims[tb ? 0 : 1];
    if (k != kb)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "Gemm inner dims differ: A %s%s and B %s%s contract %lld with %lld",
                      SHAPE_STR(&a->shape, s1), ta ? " (transA)" : "", SHAPE_STR(&b->shape, s2),
                      tb ? " (transB)" : "", (long long)k, (long long)kb);
    rf_shape_t *o = &c->sh[0];
    o->rank = 2;
    o->dims[0] = m;
    o->dims[1] = n;
    if (cc) {
        RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(a, cc));
        if (!rf_broadcasts_to(&cc->shape, o))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "Gemm bias C %s does not broadcast to %s",
                          SHAPE_STR(&cc->shape, s1), SHAPE_STR(o, s2));
    }
    c->dt[0] = a->dtype;
    return RF_OK;
}

static rf_status_t infer_reduce(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 2));
    const rf_value_t *x = in_val(c, 0);
    unsigned mask;
    int noop;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_reduce_axes(c->g, c->node, x->shape.rank, &mask, &noop));
    int keep = rf_node_attr_int(c->node, "keepdims", 1) != 0;
    rf_shape_t *o = &c->sh[0];
    o->rank = 0;
    for (int i = 0; i < x->shape.rank; i++) {
        if (!(mask & (1u << i)))
            o->dims[o->rank++] = x->shape.dims[i];
        else if (keep)
            o->dims[o->rank++] = 1;
    }
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_layer_norm(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 3));
    const rf_value_t *x = in_val(c, 0);
    int r = x->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(c->node, "axis", -1), r, "axis", &axis));
    if (c->node->n_outputs > 3)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%d outputs, expects 1..3", c->node->n_outputs);
    /* Scale and bias broadcast (unidirectionally) to the normalized shape x[axis:]. */
    rf_shape_t normed = {r - axis, {0}};
    memcpy(normed.dims, x->shape.dims + axis, sizeof(int64_t) * (size_t)(r - axis));
    for (int s = 1; s <= 2; s++) {
        const rf_value_t *p = in_val(c, s);
        if (!p)
            continue;
        char s1[128], s2[128];
        if (!rf_broadcasts_to(&p->shape, &normed))
            return RF_ERR(RF_CODE_SHAPE_ERROR,
                          "%s '%s' %s does not broadcast to the normalized shape %s",
                          s == 1 ? "scale" : "bias", p->name, SHAPE_STR(&p->shape, s1),
                          SHAPE_STR(&normed, s2));
    }
    c->dt[0] = x->dtype;
    c->sh[0] = x->shape;
    rf_dtype_t stash = rf_dtype_from_onnx(rf_node_attr_int(c->node, "stash_type", 1));
    for (int o = 1; o < 3; o++) {
        c->dt[o] = stash == RF_DTYPE_UNDEFINED ? RF_DTYPE_F32 : stash;
        c->sh[o] = x->shape;
        for (int i = axis; i < r; i++)
            c->sh[o].dims[i] = 1;
    }
    return RF_OK;
}

/* RMSNormalization (opset 23): X and Scale; one output of X's shape and dtype. */
static rf_status_t infer_rms_norm(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *x = in_val(c, 0), *p = in_val(c, 1);
    int r = x->shape.rank, axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(c->node, "axis", -1), r, "axis", &axis));
    rf_shape_t normed = {r - axis, {0}};
    memcpy(normed.dims, x->shape.dims + axis, sizeof(int64_t) * (size_t)(r - axis));
    char s1[128], s2[128];
    if (!rf_broadcasts_to(&p->shape, &normed))
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "scale '%s' %s does not broadcast to the normalized shape %s", p->name,
                      SHAPE_STR(&p->shape, s1), SHAPE_STR(&normed, s2));
    c->dt[0] = x->dtype;
    c->sh[0] = x->shape;
    return RF_OK;
}

static rf_status_t infer_softmax(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 1));
    int axis;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(rf_node_attr_int(c->node, "axis", -1),
                                           in_val(c, 0)->shape.rank, "axis", &axis));
    return infer_unary(c);
}

static rf_status_t infer_reshape(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *x = in_val(c, 0);
    int64_t sh[RF_MAX_RANK];
    int n;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(c->g, c->node, 1, "shape", sh, RF_MAX_RANK, &n));
    int allowzero = rf_node_attr_int(c->node, "allowzero", 0) != 0;
    int64_t numel, known = 1;
    int infer_at = -1;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&x->shape, &numel));
    rf_shape_t *o = &c->sh[0];
    o->rank = n;
    for (int i = 0; i < n; i++) {
        int64_t d = sh[i];
        if (d == 0 && !allowzero) {
            if (i >= x->shape.rank)
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "shape entry %d is 0 (copy) but the input "
                              "has rank %d",
                              i, x->shape.rank);
            d = x->shape.dims[i];
        } else if (d == -1) {
            if (infer_at >= 0)
                return RF_ERR(RF_CODE_SHAPE_ERROR, "more than one -1 in the target shape");
            infer_at = i;
            d = 1;
        } else if (d < 0 || d > RF_MAX_DIM) {
            return RF_ERR(RF_CODE_SHAPE_ERROR, "target shape entry %d is %lld", i, (long long)d);
        }
        o->dims[i] = d;
        if (i != infer_at) {
            if (d != 0 && known > RF_MAX_ELEMENTS / d)
                return RF_ERR(RF_CODE_SHAPE_ERROR, "target shape is too large");
            known *= d;
        }
    }
    char s1[128], s2[128];
    if (infer_at >= 0) {
        if (known == 0 || numel % known)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot reshape %s (%lld elements) to %s with -1",
                          SHAPE_STR(&x->shape, s1), (long long)numel, SHAPE_STR(o, s2));
        o->dims[infer_at] = numel / known;
        known = numel;
    }
    if (known != numel)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot reshape %s (%lld elements) to %s (%lld)",
                      SHAPE_STR(&x->shape, s1), (long long)numel, SHAPE_STR(o, s2),
                      (long long)known);
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_transpose(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 1));
    const rf_value_t *x = in_val(c, 0);
    int perm[RF_MAX_RANK];
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_transpose_perm(c->node, x->shape.rank, perm));
    c->sh[0].rank = x->shape.rank;
    for (int i = 0; i < x->shape.rank; i++)
        c->sh[0].dims[i] = x->shape.dims[perm[i]];
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_flatten(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 1));
    const rf_value_t *x = in_val(c, 0);
    int r = x->shape.rank;
    int64_t axis = rf_node_attr_int(c->node, "axis", 1);
    if (axis < -(int64_t)r || axis > r)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "axis %lld is out of range for rank %d", (long long)axis,
                      r);
    if (axis < 0)
        axis += r;
    int64_t outer = 1, inner = 1; /* numel was checked when x got its shape */
    for (int i = 0; i < r; i++)
        *(i < axis ? &outer : &inner) *= x->shape.dims[i];
    c->sh[0].rank = 2;
    c->sh[0].dims[0] = outer;
    c->sh[0].dims[1] = inner;
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_squeeze(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 2));
    const rf_value_t *x = in_val(c, 0);
    unsigned mask;
    int given;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_squeeze_axes(c->g, c->node, x->shape.rank, &mask, &given));
    rf_shape_t *o = &c->sh[0];
    o->rank = 0;
    for (int i = 0; i < x->shape.rank; i++) {
        int64_t d = x->shape.dims[i];
        int drop = given ? (mask >> i) & 1 : d == 1;
        if (drop && d != 1)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot squeeze axis %d of size %lld", i,
                          (long long)d);
        if (!drop)
            o->dims[o->rank++] = d;
    }
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_unsqueeze(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 2));
    const rf_value_t *x = in_val(c, 0);
    int64_t axes[RF_MAX_RANK];
    int n, present;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axes_operand(c->g, c->node, axes, &n, &present));
    if (n == 0)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "Unsqueeze without axes");
    int r = x->shape.rank + n;
    if (r > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "output rank %d exceeds %d", r, RF_MAX_RANK);
    unsigned mask;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axes_mask(axes, n, r, &mask));
    rf_shape_t *o = &c->sh[0];
    o->rank = r;
    for (int i = 0, j = 0; i < r; i++)
        o->dims[i] = (mask >> i) & 1 ? 1 : x->shape.dims[j++];
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_expand(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *x = in_val(c, 0);
    int64_t sh[RF_MAX_RANK];
    int n;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(c->g, c->node, 1, "shape", sh, RF_MAX_RANK, &n));
    rf_shape_t target = {n, {0}};
    for (int i = 0; i < n; i++) {
        if (sh[i] < 0 || sh[i] > RF_MAX_DIM)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "target shape entry %d is %lld", i,
                          (long long)sh[i]);
        target.dims[i] = sh[i];
    }
    c->dt[0] = x->dtype;
    return rf_broadcast(&x->shape, &target, &c->sh[0]);
}

static rf_status_t infer_slice(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 1, 5));
    const rf_value_t *x = in_val(c, 0);
    int64_t starts[RF_MAX_RANK], steps[RF_MAX_RANK], counts[RF_MAX_RANK];
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_slice_params(c->g, c->node, &x->shape, starts, steps, counts));
    c->sh[0].rank = x->shape.rank;
    memcpy(c->sh[0].dims, counts, sizeof(int64_t) * (size_t)x->shape.rank);
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_concat(rf_infer_t *c) {
    int n = c->node->n_inputs;
    if (n < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Concat without inputs");
    const rf_value_t *x = in_val(c, 0);
    if (!x)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Concat with a missing input");
    int axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(c->node, "axis", 0), x->shape.rank, "axis", &axis));
    rf_shape_t o = x->shape;
    for (int k = 1; k < n; k++) {
        const rf_value_t *y = in_val(c, k);
        char s1[128], s2[128];
        if (!y)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Concat with a missing input");
        RF_RETURN_IF_ERROR_PLAIN(rf_check_same_dtype(x, y));
        int ok = y->shape.rank == x->shape.rank;
        for (int i = 0; ok && i < x->shape.rank; i++)
            if (i != axis && y->shape.dims[i] != x->shape.dims[i])
                ok = 0;
        if (!ok)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "cannot concatenate %s and %s along axis %d",
                          SHAPE_STR(&x->shape, s1), SHAPE_STR(&y->shape, s2), axis);
        o.dims[axis] += y->shape.dims[axis];
    }
    c->sh[0] = o;
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_gather(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    const rf_value_t *x = in_val(c, 0), *idx = in_val(c, 1);
    int axis;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_shape_axis(rf_node_attr_int(c->node, "axis", 0), x->shape.rank, "axis", &axis));
    if (idx->dtype != RF_DTYPE_I64 && idx->dtype != RF_DTYPE_I32)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "indices '%s' have dtype %s, not i32/i64", idx->name,
                      rf_dtype_name(idx->dtype));
    int r = x->shape.rank - 1 + idx->shape.rank;
    if (r > RF_MAX_RANK)
        return RF_ERR(RF_CODE_UNSUPPORTED, "output rank %d exceeds %d", r, RF_MAX_RANK);
    if (rf_shape_value_is_const(c->g, c->node->inputs[1]) && idx->is_const) {
        int64_t n, d = x->shape.dims[axis];
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(&idx->shape, &n));
        for (int64_t i = 0; i < n; i++) {
            int64_t k = rf_value_get_i64(idx, i);
            if (k < -d || k >= d)
                return RF_ERR(RF_CODE_SHAPE_ERROR,
                              "index %lld is out of range for axis %d of "
                              "size %lld",
                              (long long)k, axis, (long long)d);
        }
    }
    rf_shape_t *o = &c->sh[0];
    o->rank = 0;
    for (int i = 0; i < axis; i++)
        o->dims[o->rank++] = x->shape.dims[i];
    for (int i = 0; i < idx->shape.rank; i++)
        o->dims[o->rank++] = idx->shape.dims[i];
    for (int i = axis + 1; i < x->shape.rank; i++)
        o->dims[o->rank++] = x->shape.dims[i];
    c->dt[0] = x->dtype;
    return RF_OK;
}

static rf_status_t infer_cumsum(rf_infer_t *c) {
    RF_RETURN_IF_ERROR_PLAIN(rf_need_inputs(c, 2, 2));
    int64_t ax[1];
    int n, axis;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(c->g, c->node, 1, "axis", ax, 1, &n));
    if (n != 1)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "the axis input must hold one element");
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(ax[0], in_val(c, 0)->shape.rank, "axis", &axis));
    c->dt[0] = in_val(c, 0)->dtype;
    c->sh[0] = in_val(c, 0)->shape;
    return RF_OK;
}

/* How many outputs each known op defines (LayerNormalization: up to 3). */
static int rf_op_max_outputs(rf_op_t op) {
    return op == RF_OP_LAYER_NORM ? 3 : 1;
}

rf_status_t rf_shape_infer_node(const rf_graph_t *g, int k,
                                rf_dtype_t out_dtypes[RF_SHAPE_MAX_OUTPUTS],
                                rf_shape_t out_shapes[RF_SHAPE_MAX_OUTPUTS], int *out_known) {
    const rf_node_t *node = rf_graph_node(g, k);
    *out_known = 0;
    if (!node || node->op == RF_OP_UNKNOWN)
        return RF_OK;
    /* Inputs still untyped (downstream of an unknown op): leave for the verifier. The
     * Constant node's tensor is not an input. */
    for (int i = 0; i < node->n_inputs; i++) {
        const rf_value_t *v = rf_graph_value(g, node->inputs[i]);
        if (v && (!v->has_shape || v->dtype == RF_DTYPE_UNDEFINED))
            return RF_OK;
    }
    if (node->n_outputs < 1 || node->n_outputs > rf_op_max_outputs(node->op))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "has %d outputs, expects 1..%d", node->n_outputs,
                      rf_op_max_outputs(node->op));
    for (int i = 0; i < RF_SHAPE_MAX_OUTPUTS; i++) {
        out_dtypes[i] = RF_DTYPE_UNDEFINED;
        memset(&out_shapes[i], 0, sizeof out_shapes[i]);
    }
    rf_infer_t c = {g, node, out_dtypes, out_shapes};
    rf_status_t st;
    switch (node->op) {
    case RF_OP_ADD:
    case RF_OP_SUB:
    case RF_OP_MUL:
    case RF_OP_DIV:
    case RF_OP_POW:
        st = infer_elementwise(&c);
        break;
    case RF_OP_IDENTITY:
        st = infer_unary(&c);
        break;
    case RF_OP_GREATER:
        st = infer_compare(&c);
        break;
    case RF_OP_WHERE:
        st = infer_where(&c);
        break;
    case RF_OP_CAST:
        st = infer_cast(&c);
        break;
    case RF_OP_CONSTANT:
        st = infer_constant(&c);
        break;
    case RF_OP_MATMUL:
        st = infer_matmul(&c);
        break;
    case RF_OP_GEMM:
        st = infer_gemm(&c);
        break;
    case RF_OP_REDUCE_MEAN:
    case RF_OP_REDUCE_SUM:
    case RF_OP_REDUCE_MAX:
        st = infer_reduce(&c);
        break;
    case RF_OP_LAYER_NORM:
        st = infer_layer_norm(&c);
        break;
    case RF_OP_RMS_NORM:
        st = infer_rms_norm(&c);
        break;
    case RF_OP_SOFTMAX:
        st = infer_softmax(&c);
        break;
    case RF_OP_RESHAPE:
        st = infer_reshape(&c);
        break;
    case RF_OP_TRANSPOSE:
        st = infer_transpose(&c);
        break;
    case RF_OP_FLATTEN:
        st = infer_flatten(&c);
        break;
    case RF_OP_SQUEEZE:
        st = infer_squeeze(&c);
        break;
    case RF_OP_UNSQUEEZE:
        st = infer_unsqueeze(&c);
        break;
    case RF_OP_EXPAND:
        st = infer_expand(&c);
        break;
    case RF_OP_SLICE:
        st = infer_slice(&c);
        break;
    case RF_OP_CONCAT:
        st = infer_concat(&c);
        break;
    case RF_OP_GATHER:
        st = infer_gather(&c);
        break;
    case RF_OP_CUMSUM:
        st = infer_cumsum(&c);
        break;
    default:
        if (!rf_op_is_unary(node->op))
            return RF_OK; /* ops added to rf_op_t later: no rule yet, left untyped */
        st = infer_unary(&c);
        break;
    }
    RF_RETURN_IF_ERROR_PLAIN(st);
    for (int i = 0; i < node->n_outputs; i++) {
        int64_t numel;
        char s1[128];
        if (out_shapes[i].rank > RF_MAX_RANK)
            return RF_ERR(RF_CODE_UNSUPPORTED, "output rank exceeds %d", RF_MAX_RANK);
        RF_RETURN_IF_ERROR(rf_shape_numel(&out_shapes[i], &numel), "output %d shape %s", i,
                           SHAPE_STR(&out_shapes[i], s1));
    }
    *out_known = 1;
    return RF_OK;
}

rf_status_t rf_graph_infer_shapes(rf_graph_t *g) {
    char desc[RF_NODE_DESC_SIZE], s1[128], s2[128];
    for (int i = 0; i < rf_graph_input_count(g); i++) {
        const rf_value_t *v = rf_graph_value(g, rf_graph_input(g, i));
        if (!v->has_shape)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "graph input '%s' has no static shape", v->name);
        if (v->dtype == RF_DTYPE_UNDEFINED)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "graph input '%s' has no dtype", v->name);
        int64_t numel;
        RF_RETURN_IF_ERROR(rf_shape_numel(&v->shape, &numel), "graph input '%s'", v->name);
    }
    RF_RETURN_IF_ERROR(rf_graph_toposort(g), "shape inference");
    for (int k = 0; k < rf_graph_node_count(g); k++) {
        rf_dtype_t dt[RF_SHAPE_MAX_OUTPUTS];
        rf_shape_t sh[RF_SHAPE_MAX_OUTPUTS];
        int known;
        RF_RETURN_IF_ERROR(rf_shape_infer_node(g, k, dt, sh, &known), "%s",
                           rf_node_describe(g, k, desc, sizeof desc));
        if (!known)
            continue;
        const rf_node_t *node = rf_graph_node(g, k);
        for (int i = 0; i < node->n_outputs; i++) {
            const rf_value_t *v = rf_graph_value(g, node->outputs[i]);
            if (v->has_shape && !rf_shape_equal(&v->shape, &sh[i]))
                return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: output '%s' is declared %s but inferred %s",
                              rf_node_describe(g, k, desc, sizeof desc), v->name,
                              SHAPE_STR(&v->shape, s1), SHAPE_STR(&sh[i], s2));
            if (v->dtype != RF_DTYPE_UNDEFINED && v->dtype != dt[i])
                return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: output '%s' is declared %s but inferred %s",
                              rf_node_describe(g, k, desc, sizeof desc), v->name,
                              rf_dtype_name(v->dtype), rf_dtype_name(dt[i]));
            rf_graph_set_value_type(g, node->outputs[i], dt[i], &sh[i]);
        }
    }
    return RF_OK;
}
