/* Unit tests for rf_ref_run_given (rowfuse/ref.h): the interpreter with an intermediate
 * value supplied, as the evaluator uses it to run a block elsewhere and the rest of the
 * graph on the CPU. Checks the outputs against hand-computed values, which nodes ran, every
 * argument error, and that no allocation failure leaks. */
#include <stdint.h>

#include "rf_graph_build.h"
#include "rf_test.h"
#include "rf_test_alloc.h"
#include "rowfuse/ref.h"
#include "rowfuse/tensor.h"

/* x [3,2] -> MatMul(w1) -> Relu = y (the split point) -> MatMul(w2) -> Add(x) = z. */
typedef struct given_graph {
    int x, w1, h, y, w2, l, z;
} given_graph_t;

static given_graph_t build(int declare_y) {
    given_graph_t g;
    gb_new();
    g.x = gb_input("x", SH(2, 3, 2));
    g.w1 = gb_weight("w1", SH(2, 2, 2)); /* [[0.5, 0.75], [1, 1.25]] */
    g.w2 = gb_weight("w2", SH(2, 2, 2));
    g.h = gb_op("MatMul", "h", GB_IN(g.x, g.w1));
    g.y = declare_y ? gb_declared("y", RF_DTYPE_F32, SH(2, 3, 2)) : gb_tmp("y");
    gb_node_n("Relu", "relu", GB_IN(g.h), &g.y, 1, NULL, 0);
    g.l = gb_op("MatMul", "l", GB_IN(g.y, g.w2));
    g.z = gb_op("Add", "z", GB_IN(g.l, g.x));
    CHECK_OK(rf_graph_add_output(gb_graph, g.z));
    return g;
}

static rf_tensor_t f64_tensor(double *data, int64_t rows, int64_t cols) {
    rf_tensor_t t = {RF_DTYPE_F64, SH(2, rows, cols), data, (size_t)(rows * cols) * sizeof(double)};
    return t;
}

static void test_outputs_and_nodes_run(void) {
    given_graph_t g = build(0);
    double x[6] = {1, -2, 0.5, 3, -1, 4}, y[6] = {1, 0, 2, -1, 0.25, 8};
    rf_tensor_t tx = f64_tensor(x, 3, 2), ty = f64_tensor(y, 3, 2), out;
    rf_ref_given_t given = {g.y, &ty};
    int ran[5] = {7, 7, 7, 7, 7};
    CHECK_OK(rf_ref_run_given(rf_allocator_system(), gb_graph, RF_PRECISION_FP64, &tx, 1, &given, 1,
                              &out, 1, ran));
    /* z = y @ w2 + x with w2 = [[0.5, 0.75], [1, 1.25]]: the given y, not Relu(x @ w1). */
    const double *z = out.data;
    for (int r = 0; r < 3 && z; r++)
        for (int c = 0; c < 2; c++) {
            double want =
                y[2 * r] * (c ? 0.75 : 0.5) + y[2 * r + 1] * (c ? 1.25 : 1.0) + x[2 * r + c];
            CHECK(fabs(z[2 * r + c] - want) < 1e-12);
        }
    CHECK(out.dtype == RF_DTYPE_F64 && out.shape.dims[0] == 3 && out.shape.dims[1] == 2);
    CHECK(ran[0] == 0 && ran[1] == 0 && ran[2] == 1 && ran[3] == 1);
    rf_tensor_free(rf_allocator_system(), &out);

    /* Mixed precision: the given value is used as is (y[5] = 8 + 2^-20 is no fp16 value),
     * the nodes that run still round their operands to fp16. */
    y[4] = 0.0;
    y[5] = 8.0 + 1.0 / 1048576.0;
    CHECK_OK(rf_ref_run_given(rf_allocator_system(), gb_graph, RF_PRECISION_MIXED, &tx, 1, &given,
                              1, &out, 1, NULL));
    const float *zf = out.data;
    CHECK(out.dtype == RF_DTYPE_F32 && zf);
    if (zf) /* row 2: fp16(y) = (0, 8), l = (8, 10), z = l + x = (7, 14) */
        CHECK(zf[4] == 7.0f && zf[5] == 14.0f);
    rf_tensor_free(rf_allocator_system(), &out);

    /* No given values: every node runs, as rf_ref_run. */
    CHECK_OK(rf_ref_run_given(rf_allocator_system(), gb_graph, RF_PRECISION_FP64, &tx, 1, NULL, 0,
                              &out, 1, ran));
    CHECK(ran[0] == 1 && ran[1] == 1 && ran[2] == 1 && ran[3] == 1);
    rf_tensor_free(rf_allocator_system(), &out);
    gb_free();
}

static void test_errors(void) {
    given_graph_t g = build(1);
    double x[6] = {0}, y[6] = {0}, y4[4] = {0};
    rf_tensor_t tx = f64_tensor(x, 3, 2), ty = f64_tensor(y, 3, 2), bad = f64_tensor(y4, 2, 2);
    rf_tensor_t out;
    rf_allocator_t a = rf_allocator_system();
    rf_ref_given_t gv[2] = {{g.x, &ty}, {g.y, &ty}};
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, gv, 1, &out, 1, NULL),
              RF_CODE_INVALID_ARGUMENT, "graph input");
    gv[0].value = g.w1;
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, gv, 1, &out, 1, NULL),
              RF_CODE_INVALID_ARGUMENT, "constant");
    gv[0].value = g.y;
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, gv, 2, &out, 1, NULL),
              RF_CODE_INVALID_ARGUMENT, "given twice");
    gv[0].value = 99;
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, gv, 1, &out, 1, NULL),
              RF_CODE_INVALID_ARGUMENT, "out of range");
    gv[0].value = g.y;
    gv[0].tensor = &bad;
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, gv, 1, &out, 1, NULL),
              RF_CODE_SHAPE_ERROR, "[2, 2]");
    CHECK(out.data == NULL);
    gb_free();

    /* LayerNorm has three outputs: giving one while another is needed is not a split. */
    gb_new();
    int xi = gb_input("x", SH(2, 3, 2)), s = gb_weight("s", SH(1, 2));
    int ln[3] = {gb_tmp("ln"), gb_tmp("mean"), gb_tmp("inv")};
    gb_node_n("LayerNormalization", "ln", GB_IN(xi, s), ln, 3, NULL, 0);
    CHECK_OK(rf_graph_add_output(gb_graph, ln[0]));
    rf_ref_given_t mean = {ln[1], &ty};
    CHECK_ERR(rf_ref_run_given(a, gb_graph, RF_PRECISION_FP64, &tx, 1, &mean, 1, &out, 1, NULL),
              RF_CODE_INVALID_ARGUMENT, "split point");
    gb_free();
}

static void test_fault_injection(void) {
    given_graph_t g = build(0);
    double x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {1, 2, 3, 4, 5, 6};
    rf_tensor_t tx = f64_tensor(x, 3, 2), ty = f64_tensor(y, 3, 2), out;
    rf_ref_given_t given = {g.y, &ty};
    int ok = 0, failures = 0;
    for (long k = 1; k <= 1000 && !ok; k++) {
        rf_test_alloc_t f;
        rf_allocator_t a = rf_test_allocator(&f, k);
        rf_status_t st =
            rf_ref_run_given(a, gb_graph, RF_PRECISION_MIXED, &tx, 1, &given, 1, &out, 1, NULL);
        if (st == RF_OK) {
            ok = 1;
            rf_tensor_free(a, &out);
        } else {
            failures++;
            CHECK(rf_status_code(st) == RF_CODE_OUT_OF_MEMORY && out.data == NULL);
            rf_status_free(st);
        }
        CHECK(f.live == 0);
    }
    CHECK(ok && failures > 3);
    gb_free();
}

int main(void) {
    test_outputs_and_nodes_run();
    test_errors();
    test_fault_injection();
    return rf_test_finish();
}
