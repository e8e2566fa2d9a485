/* The residual MLP as an rf graph built from arrays (rowfuse/mlp.h), and its CPU
 * reference through the interpreter: what the GPU check and the C bench compare against,
 * so both use the one reference implementation (src/ref) rather than a loop of their own. */
#include <string.h>

#include "rowfuse/mlp.h"
#include "rowfuse/ref.h"

rf_status_t rf_mlp_graph_create(rf_allocator_t a, int64_t rows, int64_t channels, int64_t hidden,
                                const uint16_t *w1, const float *b1, const uint16_t *w2,
                                const float *b2, rf_graph_t **out_graph) {
    rf_graph_t *g = NULL;
    rf_shape_t sx = {2, {rows, channels}}, sw1 = {2, {channels, hidden}}, sb1 = {1, {hidden}};
    rf_shape_t sw2 = {2, {hidden, channels}}, sb2 = {1, {channels}};
    int x, vw1, vb1, vw2, vb2, t[7];
    const char *names[7] = {"mm1", "add1", "hid", "mm2", "add2", "res", "Y"};
    size_t ch = (size_t)channels * (size_t)hidden;
    rf_status_t st;
    *out_graph = NULL;
    if (rows < 1 || channels < 1 || hidden < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "residual MLP %lldx%lldx%lld: every dim must be >= 1", (long long)rows,
                      (long long)channels, (long long)hidden);
    RF_RETURN_IF_ERROR_PLAIN(rf_graph_create(a, &g));
    st = rf_graph_add_value(g, "X", RF_DTYPE_F16, &sx, &x);
    if (!st)
        st = rf_graph_add_input(g, x);
    if (!st)
        st = rf_graph_add_const(g, "W1", RF_DTYPE_F16, &sw1, w1, ch * 2, &vw1);
    if (!st)
        st = rf_graph_add_const(g, "b1", RF_DTYPE_F32, &sb1, b1, (size_t)hidden * 4, &vb1);
    if (!st)
        st = rf_graph_add_const(g, "W2", RF_DTYPE_F16, &sw2, w2, ch * 2, &vw2);
    if (!st)
        st = rf_graph_add_const(g, "b2", RF_DTYPE_F32, &sb2, b2, (size_t)channels * 4, &vb2);
    for (int i = 0; i < 7 && !st; i++)
        st = rf_graph_add_value(g, names[i], RF_DTYPE_F32, NULL, &t[i]);
    if (!st) {
        /* Y = Relu(Add(Add(MatMul(Relu(Add(MatMul(X, W1), b1)), W2), b2), X)) */
        int in_mm1[2] = {x, vw1}, in_add1[2] = {t[0], vb1}, in_relu1[1] = {t[1]};
        int in_mm2[2] = {t[2], vw2}, in_add2[2] = {t[3], vb2}, in_res[2] = {t[4], x};
        int in_relu2[1] = {t[5]};
        struct {
            const char *op;
            const int *in;
            int n_in, out;
        } nodes[7] = {{"MatMul", in_mm1, 2, t[0]}, {"Add", in_add1, 2, t[1]},
                      {"Relu", in_relu1, 1, t[2]}, {"MatMul", in_mm2, 2, t[3]},
                      {"Add", in_add2, 2, t[4]},   {"Add", in_res, 2, t[5]},
                      {"Relu", in_relu2, 1, t[6]}};
        for (int i = 0; i < 7 && !st; i++)
            st = rf_graph_add_node(g, names[i], nodes[i].op, "", nodes[i].in, nodes[i].n_in,
                                   &nodes[i].out, 1, NULL, 0, NULL);
    }
    if (!st)
        st = rf_graph_add_output(g, t[6]);
    if (st) {
        rf_graph_destroy(g);
        return rf_status_annotate(st, "while building the residual MLP graph");
    }
    *out_graph = g;
    return RF_OK;
}

rf_status_t rf_mlp_reference(rf_allocator_t a, rf_precision_t precision, int64_t rows,
                             int64_t channels, int64_t hidden, const uint16_t *x,
                             const uint16_t *w1, const float *b1, const uint16_t *w2,
                             const float *b2, rf_tensor_t *out_y) {
    rf_graph_t *g = NULL;
    rf_tensor_t in;
    memset(out_y, 0, sizeof *out_y);
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_graph_create(a, rows, channels, hidden, w1, b1, w2, b2, &g));
    memset(&in, 0, sizeof in);
    in.dtype = RF_DTYPE_F16;
    in.shape.rank = 2;
    in.shape.dims[0] = rows;
    in.shape.dims[1] = channels;
    in.data = (void *)x;
    in.nbytes = (size_t)rows * (size_t)channels * 2;
    rf_status_t st = rf_ref_run(a, g, precision, &in, 1, out_y, 1);
    rf_graph_destroy(g);
    return rf_status_annotate(st, "while running the CPU reference");
}
