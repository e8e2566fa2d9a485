/* The ops the chain patterns export to (Reciprocal, Neg, Exp, Log, Abs, RMSNormalization):
 * shape inference, the verifier (row rule: elementwise; a normalization over features is
 * row-local, over rows it is rejected) and the CPU reference against closed forms on seeded
 * random inputs; Cast to fp16 rounds in both precisions. */
#include <math.h>

#include "rf_graph_build.h"
#include "rf_test.h"
#include "rowfuse/ref.h"
#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"
#include "rowfuse/verify.h"

#define ROWS 5
#define COLS 7

static float xs[ROWS * COLS];

static rf_tensor_t input_tensor(void) {
    rf_tensor_t t;
    memset(&t, 0, sizeof t);
    t.dtype = RF_DTYPE_F32;
    t.shape = SH(2, ROWS, COLS);
    t.data = xs;
    t.nbytes = sizeof xs;
    return t;
}

/* Runs the graph (one input, one output) and returns the f64 output (caller frees). */
static double *run(rf_precision_t p) {
    rf_tensor_t in = input_tensor(), out;
    rf_status_t st = rf_graph_infer_shapes(gb_graph);
    CHECK_OK(st);
    rf_contract_t *c = NULL;
    CHECK_OK(rf_verify(gb_graph, &c));
    rf_contract_destroy(c);
    memset(&out, 0, sizeof out);
    CHECK_OK(rf_ref_run(rf_allocator_system(), gb_graph, p, &in, 1, &out, 1));
    if (!out.data)
        return NULL;
    double *y = malloc(sizeof(double) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++)
        y[i] = p == RF_PRECISION_FP64 ? ((double *)out.data)[i] : ((float *)out.data)[i];
    rf_tensor_free(rf_allocator_system(), &out);
    return y;
}

static double closed(const char *op, double x) {
    if (!strcmp(op, "Reciprocal"))
        return 1.0 / x;
    if (!strcmp(op, "Neg"))
        return -x;
    if (!strcmp(op, "Exp"))
        return exp(x);
    if (!strcmp(op, "Log"))
        return log(fabs(x) + 0.5); /* the graph takes Log(Abs(x) + 0.5) */
    return fabs(x);
}

static void test_unary(const char *op) {
    gb_new();
    int x = gb_input("x", SH(2, ROWS, COLS)), y;
    if (!strcmp(op, "Log")) {
        float half = 0.5f;
        int h = -1;
        rf_shape_t s = SCALAR;
        CHECK_OK(rf_graph_add_const(gb_graph, "half", RF_DTYPE_F32, &s, &half, 4, &h));
        int a = gb_op("Abs", "a", GB_IN(x));
        int b = gb_op("Add", "b", GB_IN(a, h));
        y = gb_op("Log", "y", GB_IN(b));
    } else {
        y = gb_op(op, "y", GB_IN(x));
    }
    CHECK_OK(rf_graph_add_output(gb_graph, y));
    double *out = run(RF_PRECISION_FP64);
    int bad = 0;
    for (int i = 0; out && i < ROWS * COLS; i++)
        bad += !(fabs(out[i] - closed(op, xs[i])) <= 1e-12 * (1.0 + fabs(closed(op, xs[i]))));
    CHECK(out && bad == 0);
    if (bad)
        fprintf(stderr, "  %s: %d elements differ from the closed form\n", op, bad);
    CHECK(gb_has(y, RF_DTYPE_F32, SH(2, ROWS, COLS)));
    free(out);
    gb_free();
}

/* RMSNormalization over the last axis: y = x / sqrt(mean(x^2) + eps) * scale. */
static void test_rms_norm(void) {
    gb_new();
    int x = gb_input("x", SH(2, ROWS, COLS));
    int scale = gb_weight("scale", SH(1, COLS));
    int y = gb_op_a("RMSNormalization", "y", GB_IN(x, scale),
                    GB_ATTRS(gb_attr_float("epsilon", 1e-3), gb_attr_int("axis", -1)));
    CHECK_OK(rf_graph_add_output(gb_graph, y));
    double *out = run(RF_PRECISION_FP64);
    int bad = 0;
    for (int r = 0; out && r < ROWS; r++) {
        double ms = 0.0;
        for (int j = 0; j < COLS; j++)
            ms += (double)xs[r * COLS + j] * xs[r * COLS + j];
        double inv = 1.0 / sqrt(ms / COLS + (double)(float)1e-3);
        for (int j = 0; j < COLS; j++) {
            double want = xs[r * COLS + j] * inv * (0.5 + (double)(j % 7) * 0.25);
            bad += !(fabs(out[r * COLS + j] - want) <= 1e-9 * (1.0 + fabs(want)));
        }
    }
    CHECK(out && bad == 0);
    free(out);
    /* Normalizing over the rows (axis 0) mixes rows: the verifier rejects it. */
    gb_new();
    x = gb_input("x", SH(2, ROWS, COLS));
    scale = gb_weight("scale", SH(2, ROWS, COLS));
    y = gb_op_a("RMSNormalization", "y", GB_IN(x, scale), GB_ATTRS(gb_attr_int("axis", 0)));
    CHECK_OK(rf_graph_add_output(gb_graph, y));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    rf_contract_t *c = NULL;
    CHECK_ERR(rf_verify(gb_graph, &c), RF_CODE_ROW_VIOLATION, "RMSNormalization");
    rf_contract_destroy(c);
    gb_free();
}

/* Cast to fp16 rounds to nearest even in FP64 mode too (and Cast back to f32 keeps it). */
static void test_cast_f16(void) {
    gb_new();
    int x = gb_input("x", SH(2, ROWS, COLS));
    int h = gb_op_a("Cast", "h", GB_IN(x), GB_ATTRS(gb_attr_int("to", 10)));
    int y = gb_op_a("Cast", "y", GB_IN(h), GB_ATTRS(gb_attr_int("to", 1)));
    CHECK_OK(rf_graph_add_output(gb_graph, y));
    for (int p = 0; p < 2; p++) {
        double *out = run(p ? RF_PRECISION_MIXED : RF_PRECISION_FP64);
        int bad = 0, moved = 0;
        for (int i = 0; out && i < ROWS * COLS; i++) {
            double want = rf_round_f16(xs[i]);
            bad += out[i] != want;
            moved += want != xs[i];
        }
        CHECK(out && bad == 0);
        CHECK(moved > 0); /* the inputs are not fp16 values, so rounding shows */
        free(out);
    }
    gb_free();
}

int main(void) {
    rf_rng_t rng;
    uint64_t seed = 23;
    rf_rng_seed(&rng, seed);
    printf("seed %llu\n", (unsigned long long)seed);
    rf_rng_fill_f32(&rng, 2.0, xs, ROWS * COLS);
    const char *ops[] = {"Reciprocal", "Neg", "Exp", "Log", "Abs"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        test_unary(ops[i]);
    test_rms_norm();
    test_cast_f16();
    return rf_test_finish();
}
