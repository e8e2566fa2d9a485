/* Finds the residual MLP block in a verified graph (rowfuse/compile.h). The matcher walks
 * back from the output: Relu(Add(projection(Relu(projection(X))), X)), where a projection
 * is Gemm(A, W, b) or Add(MatMul(A, W), b) in either operand order. */
#include <stdio.h>
#include <string.h>

#include "rowfuse/compile.h"

typedef struct rf_proj {
    int in, w, b, trans;
} rf_proj_t;

static const rf_node_t *rf_producer(const rf_graph_t *g, int value, rf_op_t op) {
    const rf_value_t *v = rf_graph_value(g, value);
    if (!v || v->producer < 0)
        return NULL;
    const rf_node_t *n = rf_graph_node(g, v->producer);
    return (n && n->op == op) ? n : NULL;
}

static int rf_is_const_rank(const rf_graph_t *g, int value, int rank) {
    const rf_value_t *v = rf_graph_value(g, value);
    return v && v->is_const && v->has_shape && v->shape.rank == rank;
}

static rf_status_t rf_unsupported_at(const rf_graph_t *g, int value, const char *want) {
    const rf_value_t *v = rf_graph_value(g, value);
    char desc[160];
    if (v && v->producer >= 0)
        rf_node_describe(g, v->producer, desc, sizeof desc);
    else
        snprintf(desc, sizeof desc, "value '%s'", v ? v->name : "?");
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "%s: expected %s; rowfuse's GPU kernels implement the residual MLP "
                  "Y = ReLU(ReLU(X W1 + b1) W2 + b2 + X) (other row-owned graphs run on the "
                  "CPU reference only)",
                  desc, want);
}

/* value = Gemm(A, W, b) | Add(MatMul(A, W), b) | Add(b, MatMul(A, W)). */
static rf_status_t rf_match_proj(const rf_graph_t *g, int value, rf_proj_t *out) {
    const rf_node_t *n = rf_producer(g, value, RF_OP_GEMM);
    if (n) {
        if (n->n_inputs < 3 || n->inputs[2] < 0 || rf_node_attr_int(n, "transA", 0) != 0 ||
            rf_node_attr_float(n, "alpha", 1.0) != 1.0 ||
            rf_node_attr_float(n, "beta", 1.0) != 1.0 || !rf_is_const_rank(g, n->inputs[1], 2) ||
            !rf_is_const_rank(g, n->inputs[2], 1))
            return rf_unsupported_at(g, value,
                                     "Gemm(A, W, b) with constant 2-D W, 1-D b, alpha = beta = 1, "
                                     "transA = 0");
        out->in = n->inputs[0];
        out->w = n->inputs[1];
        out->b = n->inputs[2];
        out->trans = (int)rf_node_attr_int(n, "transB", 0);
        return RF_OK;
    }
    n = rf_producer(g, value, RF_OP_ADD);
    if (n && n->n_inputs == 2) {
        for (int k = 0; k < 2; k++) {
            const rf_node_t *mm = rf_producer(g, n->inputs[k], RF_OP_MATMUL);
            if (mm && rf_is_const_rank(g, mm->inputs[1], 2) &&
                rf_is_const_rank(g, n->inputs[1 - k], 1)) {
                out->in = mm->inputs[0];
                out->w = mm->inputs[1];
                out->b = n->inputs[1 - k];
                out->trans = 0;
                return RF_OK;
            }
        }
    }
    return rf_unsupported_at(g, value, "a projection Gemm(A, W, b) or MatMul(A, W) + b");
}

rf_status_t rf_mlp_match(const rf_graph_t *g, rf_mlp_block_t *out) {
    memset(out, 0, sizeof *out);
    if (rf_graph_input_count(g) != 1 || rf_graph_output_count(g) != 1)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "the GPU kernels take one input and one output; the model has %d and %d",
                      rf_graph_input_count(g), rf_graph_output_count(g));
    int x = rf_graph_input(g, 0), y = rf_graph_output(g, 0);
    const rf_value_t *xv = rf_graph_value(g, x);
    if (!xv->has_shape || xv->shape.rank != 2)
        return RF_ERR(RF_CODE_UNSUPPORTED, "input '%s' must be 2-D [rows, channels]", xv->name);
    const rf_node_t *relu2 = rf_producer(g, y, RF_OP_RELU);
    if (!relu2)
        return rf_unsupported_at(g, y, "the output to be Relu(...)");
    const rf_node_t *add = rf_producer(g, relu2->inputs[0], RF_OP_ADD);
    if (!add || add->n_inputs != 2 || (add->inputs[0] != x && add->inputs[1] != x))
        return rf_unsupported_at(g, relu2->inputs[0], "Add(projection, X): the residual");
    int p2v = add->inputs[0] == x ? add->inputs[1] : add->inputs[0];
    rf_proj_t p1, p2;
    RF_RETURN_IF_ERROR_PLAIN(rf_match_proj(g, p2v, &p2));
    const rf_node_t *relu1 = rf_producer(g, p2.in, RF_OP_RELU);
    if (!relu1)
        return rf_unsupported_at(g, p2.in, "the hidden state Relu(X W1 + b1)");
    RF_RETURN_IF_ERROR_PLAIN(rf_match_proj(g, relu1->inputs[0], &p1));
    if (p1.in != x)
        return rf_unsupported_at(g, relu1->inputs[0], "the first projection to read X");

    const rf_value_t *w1 = rf_graph_value(g, p1.w), *w2 = rf_graph_value(g, p2.w);
    int64_t c = xv->shape.dims[1];
    int64_t h = p1.trans ? w1->shape.dims[0] : w1->shape.dims[1];
    int64_t w1_in = p1.trans ? w1->shape.dims[1] : w1->shape.dims[0];
    int64_t w2_in = p2.trans ? w2->shape.dims[1] : w2->shape.dims[0];
    int64_t w2_out = p2.trans ? w2->shape.dims[0] : w2->shape.dims[1];
    if (w1_in != c || w2_in != h || w2_out != c || rf_graph_value(g, p1.b)->shape.dims[0] != h ||
        rf_graph_value(g, p2.b)->shape.dims[0] != c)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "residual MLP weights do not line up: X has %lld channels, W1 maps %lld->"
                      "%lld, W2 maps %lld->%lld",
                      (long long)c, (long long)w1_in, (long long)h, (long long)w2_in,
                      (long long)w2_out);
    out->x = x;
    out->y = y;
    out->w1 = p1.w;
    out->b1 = p1.b;
    out->w2 = p2.w;
    out->b2 = p2.b;
    out->w1_trans = p1.trans;
    out->w2_trans = p2.trans;
    out->rows = xv->shape.dims[0];
    out->channels = c;
    out->hidden = h;
    return RF_OK;
}
