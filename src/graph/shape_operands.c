/* Operands of shape inference (graph/shape_internal.h): constant integer operands, axes,
 * permutations, squeeze axes and Slice bounds, read and checked for the per-op rules in
 * shape.c. Shape-like operands must be constants; a computed one is RF_CODE_UNSUPPORTED. */
#include <stdio.h>
#include <string.h>

#include "graph/shape_internal.h"
#include "rowfuse/graph.h"

#define SHAPE_STR(s, buf) rf_shape_format((s), (buf), sizeof(buf))

/* ---- constant operands ---- */

/* The Constant node that produces value v, or NULL. */
static const rf_node_t *rf_constant_producer(const rf_graph_t *g, int v) {
    const rf_value_t *val = rf_graph_value(g, v);
    if (!val || val->producer < 0)
        return NULL;
    const rf_node_t *n = rf_graph_node(g, val->producer);
    return (n && n->op == RF_OP_CONSTANT) ? n : NULL;
}

int rf_shape_value_is_const(const rf_graph_t *g, int v) {
    const rf_value_t *val = rf_graph_value(g, v);
    if (!val)
        return 0;
    if (val->is_const && (val->data || val->nbytes == 0))
        return 1;
    const rf_node_t *c = rf_constant_producer(g, v);
    if (!c || c->n_attrs < 1)
        return 0;
    const rf_attr_t *a = &c->attrs[0];
    if (a->type == RF_ATTR_TENSOR)
        return rf_shape_value_is_const(g, a->tensor);
    return a->type == RF_ATTR_INT || a->type == RF_ATTR_INTS || a->type == RF_ATTR_FLOAT ||
           a->type == RF_ATTR_FLOATS;
}

static int rf_dtype_is_int(rf_dtype_t t) {
    return t == RF_DTYPE_I64 || t == RF_DTYPE_I32 || t == RF_DTYPE_I8 || t == RF_DTYPE_U8;
}

rf_status_t rf_shape_const_ints(const rf_graph_t *g, const rf_node_t *node, int slot,
                                const char *what, int64_t *out, int max, int *out_n) {
    *out_n = 0;
    if (slot >= node->n_inputs || node->inputs[slot] < 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "the %s input is missing", what);
    int v = node->inputs[slot];
    const rf_value_t *val = rf_graph_value(g, v);
    const rf_node_t *c = rf_constant_producer(g, v);
    if (!(val->is_const && (val->data || val->nbytes == 0)) && c && c->n_attrs >= 1) {
        const rf_attr_t *a = &c->attrs[0];
        if (a->type == RF_ATTR_INT || a->type == RF_ATTR_INTS) {
            int n = a->type == RF_ATTR_INT ? 1 : a->n;
            if (n > max)
                return RF_ERR(RF_CODE_UNSUPPORTED,
                              "the %s input '%s' has %d elements, more "
                              "than %d",
                              what, val->name, n, max);
            for (int i = 0; i < n; i++)
                out[i] = a->type == RF_ATTR_INT ? a->i : a->ints[i];
            *out_n = n;
            return RF_OK;
        }
        if (a->type == RF_ATTR_TENSOR) {
            val = rf_graph_value(g, a->tensor);
            if (!val)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                              "the %s input's Constant has a bad "
                              "tensor",
                              what);
        }
    }
    if (!val->is_const || (!val->data && val->nbytes))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "the %s input '%s' is computed at run time; rowfuse needs it to be a "
                      "constant (static shapes only)",
                      what, val->name);
    if (!rf_dtype_is_int(val->dtype))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "the %s input '%s' has dtype %s, not an integer", what,
                      val->name, rf_dtype_name(val->dtype));
    if (val->shape.rank > 1)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "the %s input '%s' has rank %d, not 0 or 1", what,
                      val->name, val->shape.rank);
    int64_t n = val->shape.rank == 0 ? 1 : val->shape.dims[0];
    if (n > max)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the %s input '%s' has %lld elements, more than %d",
                      what, val->name, (long long)n, max);
    if ((size_t)n * rf_dtype_size(val->dtype) > val->nbytes)
        return RF_ERR(RF_CODE_INTERNAL, "constant '%s' holds fewer bytes than its shape",
                      val->name);
    for (int64_t i = 0; i < n; i++)
        out[i] = rf_value_get_i64(val, i);
    *out_n = (int)n;
    return RF_OK;
}

rf_status_t rf_shape_axis(int64_t axis, int rank, const char *what, int *out_axis) {
    *out_axis = 0;
    if (axis < -(int64_t)rank || axis >= rank)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s %lld is out of range for rank %d", what,
                      (long long)axis, rank);
    *out_axis = (int)(axis < 0 ? axis + rank : axis);
    return RF_OK;
}

/* Axes from the attribute `axes` or, when the node has it, input 1. Returns count in
 * *out_n; *out_present = 0 if neither exists. */
rf_status_t rf_shape_axes_operand(const rf_graph_t *g, const rf_node_t *node, int64_t *axes,
                                  int *out_n, int *out_present) {
    *out_n = 0;
    *out_present = 0;
    if (node->n_inputs >= 2 && node->inputs[1] >= 0) {
        *out_present = 1;
        return rf_shape_const_ints(g, node, 1, "axes", axes, RF_MAX_RANK, out_n);
    }
    const rf_attr_t *a = rf_node_attr(node, "axes");
    if (a && a->type == RF_ATTR_INTS) {
        if (a->n > RF_MAX_RANK)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "%d axes, more than rank %d", a->n, RF_MAX_RANK);
        for (int i = 0; i < a->n; i++)
            axes[i] = a->ints[i];
        *out_n = a->n;
        *out_present = 1;
    } else if (a && a->type == RF_ATTR_INT) {
        axes[0] = a->i;
        *out_n = 1;
        *out_present = 1;
    }
    return RF_OK;
}

rf_status_t rf_shape_axes_mask(const int64_t *axes, int n, int rank, unsigned *out_mask) {
    unsigned mask = 0;
    *out_mask = 0;
    for (int i = 0; i < n; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(axes[i], rank, "axis", &ax));
        if (mask & (1u << ax))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "axis %d is listed twice", ax);
        mask |= 1u << ax;
    }
    *out_mask = mask;
    return RF_OK;
}

rf_status_t rf_shape_reduce_axes(const rf_graph_t *g, const rf_node_t *node, int rank,
                                 unsigned *out_mask, int *out_noop) {
    int64_t axes[RF_MAX_RANK];
    int n, present;
    *out_mask = 0;
    *out_noop = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axes_operand(g, node, axes, &n, &present));
    if (n == 0) {
        if (rf_node_attr_int(node, "noop_with_empty_axes", 0)) {
            *out_noop = 1;
            return RF_OK;
        }
        *out_mask = rank ? (1u << rank) - 1 : 0; /* reduce everything */
        return RF_OK;
    }
    return rf_shape_axes_mask(axes, n, rank, out_mask);
}

rf_status_t rf_shape_transpose_perm(const rf_node_t *node, int rank, int perm[RF_MAX_RANK]) {
    const rf_attr_t *a = rf_node_attr(node, "perm");
    if (!a || a->type != RF_ATTR_INTS) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return RF_OK;
    }
    if (a->n != rank)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "perm has %d entries for an input of rank %d", a->n,
                      rank);
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        int ax;
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(a->ints[i], rank, "perm entry", &ax));
        if (seen & (1u << ax))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "perm lists axis %d twice", ax);
        seen |= 1u << ax;
        perm[i] = ax;
    }
    return RF_OK;
}

rf_status_t rf_shape_squeeze_axes(const rf_graph_t *g, const rf_node_t *node, int rank,
                                  unsigned *out_mask, int *out_given) {
    int64_t axes[RF_MAX_RANK];
    int n, present;
    *out_mask = 0;
    *out_given = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_axes_operand(g, node, axes, &n, &present));
    if (!present || n == 0)
        return RF_OK;
    *out_given = 1;
    return rf_shape_axes_mask(axes, n, rank, out_mask);
}

rf_status_t rf_shape_slice_params(const rf_graph_t *g, const rf_node_t *node, const rf_shape_t *in,
                                  int64_t starts[RF_MAX_RANK], int64_t steps[RF_MAX_RANK],
                                  int64_t counts[RF_MAX_RANK]) {
    int64_t st[RF_MAX_RANK], en[RF_MAX_RANK], ax[RF_MAX_RANK], sp[RF_MAX_RANK];
    int ns = 0, ne = 0, na = 0, np = 0;
    for (int i = 0; i < in->rank; i++) {
        starts[i] = 0;
        steps[i] = 1;
        counts[i] = in->dims[i];
    }
    if (node->n_inputs >= 3) { /* opset >= 10: bounds are inputs */
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(g, node, 1, "starts", st, RF_MAX_RANK, &ns));
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(g, node, 2, "ends", en, RF_MAX_RANK, &ne));
        if (node->n_inputs >= 4 && node->inputs[3] >= 0)
            RF_RETURN_IF_ERROR_PLAIN(rf_shape_const_ints(g, node, 3, "axes", ax, RF_MAX_RANK, &na));
        else
            na = -1;
        if (node->n_inputs >= 5 && node->inputs[4] >= 0)
            RF_RETURN_IF_ERROR_PLAIN(
                rf_shape_const_ints(g, node, 4, "steps", sp, RF_MAX_RANK, &np));
        else
            np = -1;
    } else { /* opset 1..9: attributes */
        const rf_attr_t *as = rf_node_attr(node, "starts"), *ae = rf_node_attr(node, "ends"),
                        *aa = rf_node_attr(node, "axes");
        if (!as || !ae || as->type != RF_ATTR_INTS || ae->type != RF_ATTR_INTS)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Slice without starts/ends");
        if (as->n > RF_MAX_RANK || ae->n > RF_MAX_RANK || (aa && aa->n > RF_MAX_RANK))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "Slice with more bounds than rank %d", RF_MAX_RANK);
        ns = as->n;
        ne = ae->n;
        memcpy(st, as->ints, sizeof(int64_t) * (size_t)ns);
        memcpy(en, ae->ints, sizeof(int64_t) * (size_t)ne);
        na = -1;
        if (aa && aa->type == RF_ATTR_INTS) {
            na = aa->n;
            memcpy(ax, aa->ints, sizeof(int64_t) * (size_t)na);
        }
        np = -1;
    }
    if (ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "starts, ends, axes and steps have different lengths (%d, %d, %d, %d)", ns,
                      ne, na, np);
    unsigned seen = 0;
    for (int i = 0; i < ns; i++) {
        int a;
        RF_RETURN_IF_ERROR_PLAIN(rf_shape_axis(na >= 0 ? ax[i] : i, in->rank, "axis", &a));
        if (seen & (1u << a))
            return RF_ERR(RF_CODE_SHAPE_ERROR, "axis %d is sliced twice", a);
        seen |= 1u << a;
        int64_t step = np >= 0 ? sp[i] : 1, dim = in->dims[a];
        if (step == 0)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "step 0 on axis %d", a);
        /* Clamp as ONNX does; the bounds may be INT64_MIN/MAX, so compare before adding. */
        int64_t s = st[i], e = en[i];
        if (s < 0)
            s = s < -dim ? -1 : s + dim;
        if (e < 0)
            e = e < -dim ? -1 : e + dim;
        int64_t count;
        if (step > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            count = e > s ? (e - s - 1) / step + 1 : 0; /* no overflow for huge steps */
        } else {
            s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            int64_t back = step == INT64_MIN ? INT64_MAX : -step;
            count = s > e ? (s - e - 1) / back + 1 : 0;
        }
        starts[a] = s;
        steps[a] = step;
        counts[a] = count;
    }
    return RF_OK;
}
