/* Tests of the CPU reference interpreter (src/ref/): hand-built graphs run through
 * rf_ref_run and compared with closed-form values computed here by direct loops; the
 * residual MLP in FP64 and MIXED against a C loop of the formula (with its own fp16
 * rounding through the bit conversions of tensor.h); error cases; and fault injection, an
 * allocator that fails the k-th allocation for every k, which must give OUT_OF_MEMORY
 * and leave no allocation behind.
 *
 * Inputs are fresh random numbers each run (the seed is printed; RF_TEST_SEED repeats one).
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "rf_test.h"
#include "rf_test_alloc.h"
#include "rowfuse/graph.h"
#include "rowfuse/ref.h"
#include "rowfuse/tensor.h"

/* ---- random numbers ---- */

static uint64_t rng_state;

static double rnd(void) { /* uniform in [-1, 1), an fp32 value */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill(double *d, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        d[i] = rnd();
}

/* ---- graph building ---- */

static rf_shape_t shp(int rank, const int64_t *dims) {
    rf_shape_t s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

static int64_t numel_of(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

static int add_input(rf_graph_t *g, const char *name, int rank, const int64_t *dims) {
    rf_shape_t s = shp(rank, dims);
    int v = -1;
    CHECK_OK(rf_graph_add_value(g, name, RF_DTYPE_F32, &s, &v));
    CHECK_OK(rf_graph_add_input(g, v));
    return v;
}

/* An intermediate or output value; rank < 0 leaves the shape to the interpreter. */
static int add_val(rf_graph_t *g, const char *name, int rank, const int64_t *dims) {
    rf_shape_t s = shp(rank < 0 ? 0 : rank, dims);
    int v = -1;
    CHECK_OK(rf_graph_add_value(g, name, RF_DTYPE_F32, rank < 0 ? NULL : &s, &v));
    return v;
}

/* A float constant stored as f32 (data must be fp32 values) or f64. */
static int add_const(rf_graph_t *g, const char *name, rf_dtype_t dt, int rank, const int64_t *dims,
                     const double *data) {
    rf_shape_t s = shp(rank, dims);
    int64_t n = numel_of(rank, dims);
    int v = -1;
    if (dt == RF_DTYPE_F32) {
        float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++)
            f[i] = (float)data[i];
        CHECK_OK(rf_graph_add_const(g, name, dt, &s, f, sizeof(float) * (size_t)n, &v));
        free(f);
    } else {
        CHECK_OK(rf_graph_add_const(g, name, dt, &s, data, sizeof(double) * (size_t)n, &v));
    }
    return v;
}

static int add_ints(rf_graph_t *g, const char *name, int n, const int64_t *vals) {
    rf_shape_t s = {.rank = 1, .dims = {n}};
    int v = -1;
    CHECK_OK(rf_graph_add_const(g, name, RF_DTYPE_I64, &s, vals, sizeof(int64_t) * (size_t)n, &v));
    return v;
}

static void add_node(rf_graph_t *g, const char *op, const int *in, int n_in, int out,
                     const rf_attr_t *attrs, int n_attrs) {
    CHECK_OK(rf_graph_add_node(g, op, op, "", in, n_in, &out, 1, attrs, n_attrs, NULL));
}

static rf_attr_t attr_int(const char *name, int64_t i) {
    rf_attr_t a = {.name = name, .type = RF_ATTR_INT, .i = i};
    return a;
}
static rf_attr_t attr_float(const char *name, double f) {
    rf_attr_t a = {.name = name, .type = RF_ATTR_FLOAT, .f = f};
    return a;
}
static rf_attr_t attr_ints(const char *name, const int64_t *v, int n) {
    rf_attr_t a = {.name = name, .type = RF_ATTR_INTS, .ints = v, .n = n};
    return a;
}
static rf_attr_t attr_str(const char *name, const char *s) {
    rf_attr_t a = {.name = name, .type = RF_ATTR_STRING, .s = s};
    return a;
}

/* An f32 tensor (data are fp32 values) for rf_ref_run's inputs. Caller frees .data. */
static rf_tensor_t make_f32(int rank, const int64_t *dims, const double *data) {
    rf_tensor_t t = {.dtype = RF_DTYPE_F32, .shape = shp(rank, dims)};
    int64_t n = numel_of(rank, dims);
    float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)data[i];
    t.data = f;
    t.nbytes = sizeof(float) * (size_t)n;
    return t;
}

static double out_at(const rf_tensor_t *t, int64_t i) {
    return t->dtype == RF_DTYPE_F64 ? ((const double *)t->data)[i]
                                    : (double)((const float *)t->data)[i];
}

/* Checks output t against want: |got - want| <= rtol * max(|want|, 1e-2 * max|want|),
 * and the shape. Prints the first mismatches. */
static void check_close(const char *what, const rf_tensor_t *t, int rank, const int64_t *dims,
                        const double *want, double rtol) {
    rf_shape_t s = shp(rank, dims);
    if (!t->data || !rf_shape_equal(&t->shape, &s)) {
        char b1[160], b2[160];
        fprintf(stderr, "%s: output shape %s, expected %s\n", what,
                rf_shape_format(&t->shape, b1, sizeof b1), rf_shape_format(&s, b2, sizeof b2));
        CHECK(0);
        return;
    }
    int64_t n = numel_of(rank, dims);
    double maxw = 0.0;
    for (int64_t i = 0; i < n; i++)
        maxw = fabs(want[i]) > maxw ? fabs(want[i]) : maxw;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = out_at(t, i), w = want[i];
        double scale = fabs(w) > 1e-2 * maxw ? fabs(w) : 1e-2 * maxw;
        int ok = (isnan(w) && isnan(g)) || fabs(g - w) <= rtol * scale || g == w;
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s: [%lld] got %.17g want %.17g\n", what, (long long)i, g, w);
    }
    CHECK(bad == 0);
}

/* Runs a one-input one-output graph and checks it. Frees the output. */
static void run_check(const char *what, rf_graph_t *g, rf_precision_t p, int in_rank,
                      const int64_t *in_dims, const double *x, int out_rank,
                      const int64_t *out_dims, const double *want, double rtol) {
    rf_tensor_t in = make_f32(in_rank, in_dims, x), out;
    rf_status_t st = rf_ref_run(rf_allocator_system(), g, p, &in, 1, &out, 1);
    if (st) {
        fprintf(stderr, "%s: %s\n", what, rf_status_message(st));
        rf_status_free(st);
        CHECK(0);
    } else {
        CHECK(out.dtype == (p == RF_PRECISION_FP64 ? RF_DTYPE_F64 : RF_DTYPE_F32));
        check_close(what, &out, out_rank, out_dims, want, rtol);
        rf_tensor_free(rf_allocator_system(), &out);
    }
    free(in.data);
}

static rf_graph_t *new_graph(void) {
    rf_graph_t *g = NULL;
    CHECK_OK(rf_graph_create(rf_allocator_system(), &g));
    return g;
}

/* ---- elementwise ---- */

static double gelu_erf(double x) {
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}
static double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static double f16_bits_round(double v);

static double unary_ref(const char *op, const char *approx, double v) {
    if (!strcmp(op, "Relu"))
        return v > 0 ? v : 0;
    if (!strcmp(op, "Gelu"))
        return approx && !strcmp(approx, "tanh") ? gelu_tanh(v) : gelu_erf(v);
    if (!strcmp(op, "Sigmoid"))
        return 1.0 / (1.0 + exp(-v));
    if (!strcmp(op, "Tanh"))
        return (exp(v) - exp(-v)) / (exp(v) + exp(-v));
    if (!strcmp(op, "Erf"))
        return erf(v);
    if (!strcmp(op, "Sqrt"))
        return pow(v, 0.5);
    return v;
}

static void test_unary(void) {
    const int64_t d[2] = {7, 5};
    double x[35], want[35], want_mixed[35];
    fill(x, 35);
    x[3] = 0.0;
    struct {
        const char *op, *approx;
        int positive;
    } cases[] = {{"Relu", NULL, 0},   {"Gelu", NULL, 0},    {"Gelu", "tanh", 0},
                 {"Gelu", "none", 0}, {"Sigmoid", NULL, 0}, {"Tanh", NULL, 0},
                 {"Erf", NULL, 0},    {"Sqrt", NULL, 1},    {"Identity", NULL, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double xin[35];
        for (int i = 0; i < 35; i++) {
            xin[i] = cases[c].positive ? fabs(x[i]) : x[i];
            want[i] = unary_ref(cases[c].op, cases[c].approx, xin[i]);
            /* MIXED: the graph input is rounded to fp16, the result to fp32. */
            want_mixed[i] = (float)unary_ref(cases[c].op, cases[c].approx, f16_bits_round(xin[i]));
        }
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 2, d), y = add_val(g, "y", 2, d);
        rf_attr_t a = attr_str("approximate", cases[c].approx ? cases[c].approx : "none");
        add_node(g, cases[c].op, &xi, 1, y, &a, cases[c].approx ? 1 : 0);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check(cases[c].op, g, RF_PRECISION_FP64, 2, d, xin, 2, d, want, 1e-13);
        run_check(cases[c].op, g, RF_PRECISION_MIXED, 2, d, xin, 2, d, want_mixed, 1e-7);
        rf_graph_destroy(g);
    }
    /* A few known values. */
    const int64_t d1[1] = {3};
    double xv[3] = {1.0, -0.5, 0.0};
    double gw[3] = {0.84134474606854293, -0.15426876936299347, 0.0};
    rf_graph_t *g = new_graph();
    int xi = add_input(g, "x", 1, d1), y = add_val(g, "y", 1, d1);
    add_node(g, "Gelu", &xi, 1, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("Gelu known values", g, RF_PRECISION_FP64, 1, d1, xv, 1, d1, gw, 1e-14);
    rf_graph_destroy(g);
}

static void test_binary(void) {
    /* A [2,3,4] op B [3,1], and B [4] op A. */
    const int64_t da[3] = {2, 3, 4}, db[2] = {3, 1}, dc[1] = {4};
    double a[24], b[3], c[4], want[24];
    fill(a, 24);
    fill(b, 3);
    fill(c, 4);
    for (int i = 0; i < 3; i++)
        b[i] = b[i] >= 0 ? b[i] + 0.5 : b[i] - 0.5; /* away from 0 for Div */
    const char *ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (int o = 0; o < 5; o++) {
        double aa[24];
        for (int i = 0; i < 24; i++)
            aa[i] = o == 4 ? (float)(fabs(a[i]) + 0.1) : a[i];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++) {
                    double u = aa[(i * 3 + j) * 4 + k], v = b[j], r;
                    switch (o) {
                    case 0:
                        r = u + v;
                        break;
                    case 1:
                        r = u - v;
                        break;
                    case 2:
                        r = u * v;
                        break;
                    case 3:
                        r = u / v;
                        break;
                    default:
                        r = exp(v * log(u));
                        break;
                    }
                    want[(i * 3 + j) * 4 + k] = r;
                }
        rf_graph_t *g = new_graph();
        int x = add_input(g, "a", 3, da), bv = add_const(g, "b", RF_DTYPE_F64, 2, db, b);
        int y = add_val(g, "y", -1, NULL);
        int in[2] = {x, bv};
        add_node(g, ops[o], in, 2, y, NULL, 0);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check(ops[o], g, RF_PRECISION_FP64, 3, da, aa, 3, da, want, 1e-13);
        rf_graph_destroy(g);
    }
    /* c [4] - a [2,3,4]: broadcasting on the left operand. */
    for (int i = 0; i < 24; i++)
        want[i] = c[i % 4] - a[i];
    rf_graph_t *g = new_graph();
    int x = add_input(g, "a", 3, da), cv = add_const(g, "c", RF_DTYPE_F32, 1, dc, c);
    int y = add_val(g, "y", 3, da);
    int in[2] = {cv, x};
    add_node(g, "Sub", in, 2, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("Sub broadcast left", g, RF_PRECISION_FP64, 3, da, a, 3, da, want, 1e-15);
    rf_graph_destroy(g);
}

/* ---- MatMul / Gemm ---- */

static void test_matmul(void) {
    /* A [2,1,3,4] @ B [5,4,2] -> [2,5,3,2]. */
    const int64_t da[4] = {2, 1, 3, 4}, db[3] = {5, 4, 2}, dy[4] = {2, 5, 3, 2};
    double a[24], b[40], want[60];
    fill(a, 24);
    fill(b, 40);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            for (int m = 0; m < 3; m++)
                for (int n = 0; n < 2; n++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++)
                        s += a[(i * 3 + m) * 4 + k] * b[(j * 4 + k) * 2 + n];
                    want[((i * 5 + j) * 3 + m) * 2 + n] = s;
                }
    rf_graph_t *g = new_graph();
    int x = add_input(g, "a", 4, da), bv = add_const(g, "b", RF_DTYPE_F32, 3, db, b);
    int y = add_val(g, "y", 4, dy), in[2] = {x, bv};
    add_node(g, "MatMul", in, 2, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("MatMul batched", g, RF_PRECISION_FP64, 4, da, a, 4, dy, want, 1e-13);
    rf_graph_destroy(g);

    /* 1-D operands: v [4] @ B [4,3] -> [3]; A [2,3,4] @ v [4] -> [2,3]. */
    const int64_t dv[1] = {4}, dm[2] = {4, 3}, d3[1] = {3}, d23[2] = {2, 3};
    double w1[3], w2[6];
    for (int n = 0; n < 3; n++) {
        w1[n] = 0;
        for (int k = 0; k < 4; k++)
            w1[n] += a[k] * b[k * 3 + n];
    }
    g = new_graph();
    x = add_input(g, "v", 1, dv);
    bv = add_const(g, "b", RF_DTYPE_F32, 2, dm, b);
    y = add_val(g, "y", -1, NULL);
    in[0] = x;
    in[1] = bv;
    add_node(g, "MatMul", in, 2, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("MatMul vector-matrix", g, RF_PRECISION_FP64, 1, dv, a, 1, d3, w1, 1e-13);
    rf_graph_destroy(g);
    const int64_t da3[3] = {2, 3, 4};
    for (int i = 0; i < 6; i++) {
        w2[i] = 0;
        for (int k = 0; k < 4; k++)
            w2[i] += a[i * 4 + k] * b[k];
    }
    g = new_graph();
    x = add_input(g, "a", 3, da3);
    bv = add_const(g, "v", RF_DTYPE_F32, 1, dv, b);
    y = add_val(g, "y", -1, NULL);
    in[0] = x;
    in[1] = bv;
    add_node(g, "MatMul", in, 2, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("MatMul matrix-vector", g, RF_PRECISION_FP64, 3, da3, a, 2, d23, w2, 1e-13);
    rf_graph_destroy(g);
}

static void test_gemm(void) {
    /* For each transA/transB and C shape: Y = alpha * op(A) op(B) + beta * C. */
    const int M = 5, K = 3, N = 4;
    double a[15], b[12], c[20], want[20];
    fill(a, 15);
    fill(b, 12);
    fill(c, 20);
    int64_t c_dims[4][2] = {{M, N}, {N, 0}, {M, 1}, {0, 0}};
    int c_rank[4] = {2, 1, 2, 0};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int cc = 0; cc < 5; cc++) {
                double alpha = 0.75, beta = cc == 4 ? 0 : -1.5;
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < N; n++) {
                        double s = 0;
                        for (int k = 0; k < K; k++)
                            s += (ta ? a[k * M + m] : a[m * K + k]) *
                                 (tb ? b[n * K + k] : b[k * N + n]);
                        double cv = 0;
                        if (cc == 0)
                            cv = c[m * N + n];
                        else if (cc == 1)
                            cv = c[n];
                        else if (cc == 2)
                            cv = c[m];
                        else if (cc == 3)
                            cv = c[0];
                        want[m * N + n] = alpha * s + beta * cv;
                    }
                const int64_t dA[2] = {ta ? K : M, ta ? M : K}, dB[2] = {tb ? N : K, tb ? K : N};
                const int64_t dY[2] = {M, N};
                rf_graph_t *g = new_graph();
                int x = add_input(g, "a", 2, dA), bv = add_const(g, "b", RF_DTYPE_F32, 2, dB, b);
                int cv = cc < 4 ? add_const(g, "c", RF_DTYPE_F32, c_rank[cc], c_dims[cc], c) : -1;
                int y = add_val(g, "y", 2, dY), in[3] = {x, bv, cv};
                rf_attr_t at[4] = {attr_int("transA", ta), attr_int("transB", tb),
                                   attr_float("alpha", alpha), attr_float("beta", beta)};
                add_node(g, "Gemm", in, cc < 4 ? 3 : 2, y, at, 4);
                CHECK_OK(rf_graph_add_output(g, y));
                char what[64];
                snprintf(what, sizeof what, "Gemm transA=%d transB=%d C#%d", ta, tb, cc);
                run_check(what, g, RF_PRECISION_FP64, 2, dA, a, 2, dY, want, 1e-13);
                rf_graph_destroy(g);
            }
}

/* ---- reductions, LayerNorm, Softmax ---- */

static void test_reduce(void) {
    const int64_t d[3] = {2, 3, 4};
    double x[24];
    fill(x, 24);
    /* ReduceMean over axis 1 (attribute), keepdims. */
    {
        const int64_t dy[3] = {2, 1, 4};
        double want[8];
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++)
                want[i * 4 + k] =
                    (x[(i * 3 + 0) * 4 + k] + x[(i * 3 + 1) * 4 + k] + x[(i * 3 + 2) * 4 + k]) /
                    3.0;
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), y = add_val(g, "y", -1, NULL);
        const int64_t ax[1] = {1};
        rf_attr_t at = attr_ints("axes", ax, 1);
        add_node(g, "ReduceMean", &xi, 1, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("ReduceMean axes attr", g, RF_PRECISION_FP64, 3, d, x, 3, dy, want, 1e-14);
        rf_graph_destroy(g);
    }
    /* ReduceSum over the last axis (axes input, negative), keepdims 0. */
    {
        const int64_t dy[2] = {2, 3}, ax[1] = {-1};
        double want[6];
        for (int r = 0; r < 6; r++)
            want[r] = x[r * 4] + x[r * 4 + 1] + x[r * 4 + 2] + x[r * 4 + 3];
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), axv = add_ints(g, "axes", 1, ax);
        int y = add_val(g, "y", 2, dy), in[2] = {xi, axv};
        rf_attr_t at = attr_int("keepdims", 0);
        add_node(g, "ReduceSum", in, 2, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("ReduceSum axes input", g, RF_PRECISION_FP64, 3, d, x, 2, dy, want, 1e-14);
        rf_graph_destroy(g);
    }
    /* ReduceMax over everything (no axes), keepdims 0 -> scalar; and over axes {0, 2}. */
    {
        double mx = -INFINITY, want2[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = 0; i < 24; i++) {
            mx = x[i] > mx ? x[i] : mx;
            int j = (i / 4) % 3;
            want2[j] = x[i] > want2[j] ? x[i] : want2[j];
        }
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), y = add_val(g, "y", -1, NULL);
        rf_attr_t at = attr_int("keepdims", 0);
        add_node(g, "ReduceMax", &xi, 1, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("ReduceMax all", g, RF_PRECISION_FP64, 3, d, x, 0, NULL, &mx, 0);
        rf_graph_destroy(g);
        const int64_t ax[2] = {2, 0}, dy[1] = {3};
        g = new_graph();
        xi = add_input(g, "x", 3, d);
        y = add_val(g, "y", -1, NULL);
        rf_attr_t at2[2] = {attr_int("keepdims", 0), attr_ints("axes", ax, 2)};
        add_node(g, "ReduceMax", &xi, 1, y, at2, 2);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("ReduceMax axes {2,0}", g, RF_PRECISION_FP64, 3, d, x, 1, dy, want2, 0);
        rf_graph_destroy(g);
    }
    /* noop_with_empty_axes = 1 and no axes: identity. */
    {
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), y = add_val(g, "y", -1, NULL);
        rf_attr_t at = attr_int("noop_with_empty_axes", 1);
        add_node(g, "ReduceSum", &xi, 1, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("ReduceSum noop", g, RF_PRECISION_FP64, 3, d, x, 3, d, x, 0);
        rf_graph_destroy(g);
    }
}

static void test_layer_norm(void) {
    /* axis -1 over [5, 6] with scale and bias; axis 1 over [2, 3, 4] with Mean and
     * InvStdDev outputs and no bias. */
    const int64_t d[2] = {5, 6}, dp[1] = {6};
    double x[30], sc[6], bi[6], want[30];
    fill(x, 30);
    fill(sc, 6);
    fill(bi, 6);
    double eps = 1e-5;
    for (int r = 0; r < 5; r++) {
        double m = 0, v = 0;
        for (int j = 0; j < 6; j++)
            m += x[r * 6 + j] / 6.0;
        for (int j = 0; j < 6; j++)
            v += (x[r * 6 + j] - m) * (x[r * 6 + j] - m) / 6.0;
        for (int j = 0; j < 6; j++)
            want[r * 6 + j] = (x[r * 6 + j] - m) / sqrt(v + eps) * sc[j] + bi[j];
    }
    rf_graph_t *g = new_graph();
    int xi = add_input(g, "x", 2, d), s = add_const(g, "s", RF_DTYPE_F32, 1, dp, sc);
    int b = add_const(g, "b", RF_DTYPE_F32, 1, dp, bi), y = add_val(g, "y", 2, d);
    int in[3] = {xi, s, b};
    rf_attr_t at[2] = {attr_int("axis", -1), attr_float("epsilon", eps)};
    add_node(g, "LayerNormalization", in, 3, y, at, 2);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check("LayerNormalization", g, RF_PRECISION_FP64, 2, d, x, 2, d, want, 1e-13);
    rf_graph_destroy(g);

    const int64_t d3[3] = {2, 3, 4}, dsc[2] = {3, 4}, dst[3] = {2, 1, 1};
    double x3[24], s3[12], w3[24], mean[2], inv[2];
    fill(x3, 24);
    fill(s3, 12);
    for (int r = 0; r < 2; r++) {
        double m = 0, v = 0;
        for (int j = 0; j < 12; j++)
            m += x3[r * 12 + j] / 12.0;
        for (int j = 0; j < 12; j++)
            v += (x3[r * 12 + j] - m) * (x3[r * 12 + j] - m) / 12.0;
        mean[r] = m;
        inv[r] = 1.0 / sqrt(v + 1e-5);
        for (int j = 0; j < 12; j++)
            w3[r * 12 + j] = (x3[r * 12 + j] - m) * inv[r] * s3[j];
    }
    g = new_graph();
    xi = add_input(g, "x", 3, d3);
    s = add_const(g, "s", RF_DTYPE_F32, 2, dsc, s3);
    int outs[3] = {add_val(g, "y", -1, NULL), add_val(g, "mean", -1, NULL),
                   add_val(g, "inv", 3, dst)};
    int in2[2] = {xi, s};
    rf_attr_t at1 = attr_int("axis", 1);
    CHECK_OK(rf_graph_add_node(g, "ln", "LayerNormalization", "", in2, 2, outs, 3, &at1, 1, NULL));
    for (int i = 0; i < 3; i++)
        CHECK_OK(rf_graph_add_output(g, outs[i]));
    rf_tensor_t tin = make_f32(3, d3, x3), tout[3];
    CHECK_OK(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &tin, 1, tout, 3));
    check_close("LayerNormalization axis 1 Y", &tout[0], 3, d3, w3, 1e-13);
    check_close("LayerNormalization Mean", &tout[1], 3, dst, mean, 1e-13);
    check_close("LayerNormalization InvStdDev", &tout[2], 3, dst, inv, 1e-13);
    for (int i = 0; i < 3; i++)
        rf_tensor_free(rf_allocator_system(), &tout[i]);
    free(tin.data);
    rf_graph_destroy(g);
}

static void test_softmax(void) {
    const int64_t d[3] = {2, 3, 4};
    double x[24], want[24];
    fill(x, 24);
    for (int axis = -1; axis < 3; axis++) {
        int ax = axis < 0 ? 2 : axis;
        int64_t st[3] = {12, 4, 1};
        for (int i = 0; i < 24; i++) {
            int64_t pos = (i / st[ax]) % d[ax], base = i - pos * st[ax];
            double s = 0;
            for (int64_t j = 0; j < d[ax]; j++)
                s += exp(x[base + j * st[ax]]);
            want[i] = exp(x[i]) / s;
        }
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), y = add_val(g, "y", 3, d);
        rf_attr_t at = attr_int("axis", axis);
        add_node(g, "Softmax", &xi, 1, y, &at, axis == -1 ? 0 : 1);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("Softmax", g, RF_PRECISION_FP64, 3, d, x, 3, d, want, 1e-14);
        rf_graph_destroy(g);
    }
}

/* ---- Cast ---- */

static void test_cast(void) {
    const int64_t d[1] = {6};
    double x[6] = {2.7, -2.7, 0.0, 1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 70000.0};
    struct {
        int64_t to;
        rf_precision_t p;
        double want[6];
    } cases[] = {
        {7, RF_PRECISION_FP64, {2, -2, 0, 1, 1, 70000}},
        {9, RF_PRECISION_FP64, {1, 1, 0, 1, 1, 1}},
        /* fp16: 1 + 2^-11 is a tie that goes to even (1), 1 + 3*2^-11 to 1 + 2^-9,
         * 70000 overflows; fp64 mode rounds the same way (a cast is part of the model). */
        {10, RF_PRECISION_MIXED, {2.69921875, -2.69921875, 0, 1, 1.0 + 4.0 / 2048, INFINITY}},
        {10, RF_PRECISION_FP64, {2.69921875, -2.69921875, 0, 1, 1.0 + 4.0 / 2048, INFINITY}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rf_graph_t *g = new_graph();
        rf_shape_t s = shp(1, d);
        int xi = -1, y = -1;
        /* The input is declared i64 so that MIXED does not round it to fp16 (only float
         * inputs are); the tensor passed is f64 with fractions, to test truncation. */
        CHECK_OK(rf_graph_add_value(g, "x", RF_DTYPE_I64, &s, &xi));
        CHECK_OK(rf_graph_add_input(g, xi));
        CHECK_OK(
            rf_graph_add_value(g, "y", cases[c].to == 10 ? RF_DTYPE_F16 : RF_DTYPE_I64, &s, &y));
        rf_attr_t at = attr_int("to", cases[c].to);
        add_node(g, "Cast", &xi, 1, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        rf_tensor_t in = {.dtype = RF_DTYPE_F64, .shape = s, .data = x, .nbytes = sizeof x};
        rf_tensor_t out;
        CHECK_OK(rf_ref_run(rf_allocator_system(), g, cases[c].p, &in, 1, &out, 1));
        check_close("Cast", &out, 1, d, cases[c].want, 0);
        rf_tensor_free(rf_allocator_system(), &out);
        rf_graph_destroy(g);
    }
}

/* ---- layout ops ---- */

/* x [2,3,4] through one layout op; want computed by the caller. */
static void layout_case(const char *what, const char *op, const int *extra, int n_extra,
                        const rf_attr_t *attrs, int n_attrs, const double *x, int out_rank,
                        const int64_t *out_dims, const double *want, rf_graph_t *g) {
    const int64_t d[3] = {2, 3, 4};
    int xi = add_input(g, "x", 3, d), y = add_val(g, "y", out_rank, out_dims);
    int in[5] = {xi, -1, -1, -1, -1};
    for (int i = 0; i < n_extra; i++)
        in[1 + i] = extra[i];
    add_node(g, op, in, 1 + n_extra, y, attrs, n_attrs);
    CHECK_OK(rf_graph_add_output(g, y));
    run_check(what, g, RF_PRECISION_FP64, 3, d, x, out_rank, out_dims, want, 0);
    rf_graph_destroy(g);
}

static void test_layout(void) {
    double x[24], want[96];
    fill(x, 24);
    /* Reshape to [0, -1] = [2, 12]. */
    {
        rf_graph_t *g = new_graph();
        const int64_t sh[2] = {0, -1}, dy[2] = {2, 12};
        int s = add_ints(g, "shape", 2, sh);
        layout_case("Reshape", "Reshape", &s, 1, NULL, 0, x, 2, dy, x, g);
    }
    /* Flatten axis 2 -> [6, 4]. */
    {
        const int64_t dy[2] = {6, 4};
        rf_attr_t at = attr_int("axis", 2);
        layout_case("Flatten", "Flatten", NULL, 0, &at, 1, x, 2, dy, x, new_graph());
    }
    /* Transpose perm [2, 0, 1] -> [4, 2, 3]. */
    {
        const int64_t perm[3] = {2, 0, 1}, dy[3] = {4, 2, 3};
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    want[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
        rf_attr_t at = attr_ints("perm", perm, 3);
        layout_case("Transpose", "Transpose", NULL, 0, &at, 1, x, 3, dy, want, new_graph());
        /* Default perm: reversed. */
        const int64_t dr[3] = {4, 3, 2};
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 2; i++)
                    want[(k * 3 + j) * 2 + i] = x[(i * 3 + j) * 4 + k];
        layout_case("Transpose default", "Transpose", NULL, 0, NULL, 0, x, 3, dr, want,
                    new_graph());
    }
    /* Unsqueeze axes [0, -1] (input) -> [1, 2, 3, 4, 1]; Squeeze needs a size-1 input. */
    {
        rf_graph_t *g = new_graph();
        const int64_t ax[2] = {0, -1}, dy[5] = {1, 2, 3, 4, 1};
        int a = add_ints(g, "axes", 2, ax);
        layout_case("Unsqueeze", "Unsqueeze", &a, 1, NULL, 0, x, 5, dy, x, g);
    }
    {
        /* x [2,3,4] -> Unsqueeze(1) [2,1,3,4] -> Squeeze() [2,3,4]. */
        const int64_t d[3] = {2, 3, 4}, one[1] = {1};
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 3, d), a = add_ints(g, "axes", 1, one);
        int u = add_val(g, "u", -1, NULL), y = add_val(g, "y", 3, d), in[2] = {xi, a};
        add_node(g, "Unsqueeze", in, 2, u, NULL, 0);
        add_node(g, "Squeeze", &u, 1, y, NULL, 0);
        CHECK_OK(rf_graph_add_output(g, y));
        run_check("Squeeze", g, RF_PRECISION_FP64, 3, d, x, 3, d, x, 0);
        rf_graph_destroy(g);
    }
    /* Expand [2,3,4] to [2, 2,1,1] -> [2,2,3,4]. */
    {
        rf_graph_t *g = new_graph();
        const int64_t sh[4] = {2, 2, 1, 1}, dy[4] = {2, 2, 3, 4};
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 24; i++)
                want[r * 24 + i] = x[i];
        int s = add_ints(g, "shape", 4, sh);
        layout_case("Expand", "Expand", &s, 1, NULL, 0, x, 4, dy, want, g);
    }
    /* Slice: axis 2 from -1 down to the start with step -2 -> indices 3, 1; axis 1 from 1
     * to a huge end -> 1, 2. */
    {
        rf_graph_t *g = new_graph();
        const int64_t st[2] = {-1, 1}, en[2] = {-100, INT64_MAX}, ax[2] = {2, 1}, sp[2] = {-2, 1},
                      dy[3] = {2, 2, 2};
        int k = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 1; j < 3; j++)
                for (int c = 3; c >= 0; c -= 2)
                    want[k++] = x[(i * 3 + j) * 4 + c];
        int ex[4] = {add_ints(g, "starts", 2, st), add_ints(g, "ends", 2, en),
                     add_ints(g, "axes", 2, ax), add_ints(g, "steps", 2, sp)};
        layout_case("Slice", "Slice", ex, 4, NULL, 0, x, 3, dy, want, g);
    }
    /* Concat(x, c) on axis 1 with c [2, 2, 4]. */
    {
        rf_graph_t *g = new_graph();
        const int64_t dc[3] = {2, 2, 4}, dy[3] = {2, 5, 4};
        double c[16];
        fill(c, 16);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 5; j++)
                for (int q = 0; q < 4; q++)
                    want[(i * 5 + j) * 4 + q] =
                        j < 3 ? x[(i * 3 + j) * 4 + q] : c[(i * 2 + j - 3) * 4 + q];
        int cv = add_const(g, "c", RF_DTYPE_F32, 3, dc, c);
        rf_attr_t at = attr_int("axis", -2);
        layout_case("Concat", "Concat", &cv, 1, &at, 1, x, 3, dy, want, g);
    }
    /* Gather on axis 2 with indices [[3, -4], [1, 1], [-1, 0]] -> [2, 3, 3, 2]. */
    {
        rf_graph_t *g = new_graph();
        const int64_t idx[6] = {3, -4, 1, 1, -1, 0}, di[2] = {3, 2}, dy[4] = {2, 3, 3, 2};
        rf_shape_t s = shp(2, di);
        int iv = -1;
        CHECK_OK(rf_graph_add_const(g, "idx", RF_DTYPE_I64, &s, idx, sizeof idx, &iv));
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int t = 0; t < 6; t++)
                    want[(i * 3 + j) * 6 + t] = x[(i * 3 + j) * 4 + (idx[t] + 4) % 4];
        rf_attr_t at = attr_int("axis", 2);
        layout_case("Gather", "Gather", &iv, 1, &at, 1, x, 4, dy, want, g);
    }
}

/* ---- the residual MLP, both precisions, against a direct loop ---- */

static double f16_bits_round(double v) { /* independent of rf_round_f16: via the bits */
    return rf_f16_to_f32(rf_f32_to_f16((float)v));
}

/* Y = ReLU(ReLU(X W1^T + b1) W2^T + b2 + X), weights stored [out, in] as nn.Linear does.
 * MIXED: X, W, H fp16; sums exact then fp32; every add rounded to fp32. */
static void mlp_formula(int mixed, int64_t R, int64_t C, int64_t H, const double *x,
                        const double *w1, const double *b1, const double *w2, const double *b2,
                        double *y) {
    double *h = malloc(sizeof(double) * (size_t)(R * H));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < H; j++) {
            double s = 0;
            for (int64_t c = 0; c < C; c++)
                s += mixed ? f16_bits_round(x[r * C + c]) * f16_bits_round(w1[j * C + c])
                           : x[r * C + c] * w1[j * C + c];
            double v = mixed ? (double)(float)((double)(float)s + b1[j]) : s + b1[j];
            v = v > 0 ? v : 0;
            h[r * H + j] = mixed ? f16_bits_round(v) : v;
        }
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            double s = 0;
            for (int64_t j = 0; j < H; j++)
                s += h[r * H + j] * (mixed ? f16_bits_round(w2[c * H + j]) : w2[c * H + j]);
            double v;
            if (mixed) {
                v = (double)(float)((double)(float)s + b2[c]);
                v = (double)(float)(v + f16_bits_round(x[r * C + c]));
            } else {
                v = s + b2[c] + x[r * C + c];
            }
            y[r * C + c] = v > 0 ? v : 0;
        }
    free(h);
}

/* Builds the MLP as the exporter does (Gemm with transB=1) or as MatMul + Add with the
 * weights pre-transposed (as_matmul). */
static rf_graph_t *mlp_graph(int as_matmul, int64_t R, int64_t C, int64_t H, const double *w1,
                             const double *b1, const double *w2, const double *b2) {
    rf_graph_t *g = new_graph();
    const int64_t dx[2] = {R, C}, dw1[2] = {H, C}, dw2[2] = {C, H}, dh[2] = {R, H};
    int x = add_input(g, "x", 2, dx);
    int bb1 = add_const(g, "b1", RF_DTYPE_F32, 1, &H, b1),
        bb2 = add_const(g, "b2", RF_DTYPE_F32, 1, &C, b2);
    int t1 = add_val(g, "t1", 2, dh), h = add_val(g, "h", 2, dh), t2 = add_val(g, "t2", 2, dx);
    int t3 = add_val(g, "t3", 2, dx), y = add_val(g, "y", 2, dx);
    if (!as_matmul) {
        int ww1 = add_const(g, "w1", RF_DTYPE_F32, 2, dw1, w1);
        int ww2 = add_const(g, "w2", RF_DTYPE_F32, 2, dw2, w2);
        rf_attr_t tb = attr_int("transB", 1);
        int in1[3] = {x, ww1, bb1}, in2[3] = {h, ww2, bb2};
        add_node(g, "Gemm", in1, 3, t1, &tb, 1);
        add_node(g, "Relu", &t1, 1, h, NULL, 0);
        add_node(g, "Gemm", in2, 3, t2, &tb, 1);
    } else {
        /* W^T as constants, MatMul then Add. */
        double *w1t = malloc(sizeof(double) * (size_t)(H * C)),
               *w2t = malloc(sizeof(double) * (size_t)(H * C));
        for (int64_t j = 0; j < H; j++)
            for (int64_t c = 0; c < C; c++) {
                w1t[c * H + j] = w1[j * C + c];
                w2t[j * C + c] = w2[c * H + j];
            }
        int ww1 = add_const(g, "w1t", RF_DTYPE_F32, 2, dw2, w1t);
        int ww2 = add_const(g, "w2t", RF_DTYPE_F32, 2, dw1, w2t);
        free(w1t);
        free(w2t);
        int m1 = add_val(g, "m1", -1, NULL), m2 = add_val(g, "m2", -1, NULL);
        int in1[2] = {x, ww1}, in1b[2] = {m1, bb1}, in2[2] = {h, ww2}, in2b[2] = {m2, bb2};
        add_node(g, "MatMul", in1, 2, m1, NULL, 0);
        add_node(g, "Add", in1b, 2, t1, NULL, 0);
        add_node(g, "Relu", &t1, 1, h, NULL, 0);
        add_node(g, "MatMul", in2, 2, m2, NULL, 0);
        add_node(g, "Add", in2b, 2, t2, NULL, 0);
    }
    int in3[2] = {t2, x};
    add_node(g, "Add", in3, 2, t3, NULL, 0);
    add_node(g, "Relu", &t3, 1, y, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, y));
    return g;
}

static void test_mlp(void) {
    double diff = 0; /* largest |mixed - fp64| over all shapes */
    const int64_t shapes[][3] = {{1, 5, 3}, {7, 48, 96}, {49, 67, 129}, {130, 5, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], C = shapes[s][1], H = shapes[s][2];
        double *x = malloc(sizeof(double) * (size_t)(R * C)),
               *w1 = malloc(sizeof(double) * (size_t)(H * C));
        double *w2 = malloc(sizeof(double) * (size_t)(H * C)),
               *b1 = malloc(sizeof(double) * (size_t)H);
        double *b2 = malloc(sizeof(double) * (size_t)C),
               *want = malloc(sizeof(double) * (size_t)(R * C));
        double *want64 = malloc(sizeof(double) * (size_t)(R * C));
        fill(x, R * C);
        fill(w1, H * C);
        fill(w2, H * C);
        fill(b1, H);
        fill(b2, C);
        const int64_t dx[2] = {R, C};
        mlp_formula(0, R, C, H, x, w1, b1, w2, b2, want64);
        mlp_formula(1, R, C, H, x, w1, b1, w2, b2, want);
        for (int as_matmul = 0; as_matmul < 2; as_matmul++) {
            char what[96];
            rf_graph_t *g = mlp_graph(as_matmul, R, C, H, w1, b1, w2, b2);
            snprintf(what, sizeof what, "MLP %s fp64 R=%lld C=%lld H=%lld",
                     as_matmul ? "MatMul" : "Gemm", (long long)R, (long long)C, (long long)H);
            run_check(what, g, RF_PRECISION_FP64, 2, dx, x, 2, dx, want64, 1e-12);
            snprintf(what, sizeof what, "MLP %s mixed R=%lld C=%lld H=%lld",
                     as_matmul ? "MatMul" : "Gemm", (long long)R, (long long)C, (long long)H);
            run_check(what, g, RF_PRECISION_MIXED, 2, dx, x, 2, dx, want, 1e-6);
            rf_graph_destroy(g);
        }
        for (int64_t i = 0; i < R * C; i++)
            diff = fabs(want[i] - want64[i]) > diff ? fabs(want[i] - want64[i]) : diff;
        free(x);
        free(w1);
        free(w2);
        free(b1);
        free(b2);
        free(want);
        free(want64);
    }
    /* The mixed formula really differs from fp64, so the mixed checks above can fail. */
    CHECK(diff > 1e-4);
}

/* ---- Constant nodes, constants and inputs as outputs ---- */

static void test_constant_and_passthrough(void) {
    const int64_t d[1] = {3};
    double x[3], c[3];
    fill(x, 3);
    fill(c, 3);
    rf_graph_t *g = new_graph();
    int xi = add_input(g, "x", 1, d), k = add_val(g, "k", -1, NULL), y = add_val(g, "y", -1, NULL);
    int cv = add_const(g, "c", RF_DTYPE_F32, 1, d, c);
    rf_attr_t at = {.name = "value_floats", .type = RF_ATTR_FLOATS, .floats = c, .n = 3};
    CHECK_OK(rf_graph_add_node(g, "k", "Constant", "", NULL, 0, &k, 1, &at, 1, NULL));
    int in[2] = {xi, k};
    add_node(g, "Mul", in, 2, y, NULL, 0);
    /* Outputs: x * c, the graph input itself, a constant. */
    CHECK_OK(rf_graph_add_output(g, y));
    CHECK_OK(rf_graph_add_output(g, xi));
    CHECK_OK(rf_graph_add_output(g, cv));
    rf_tensor_t tin = make_f32(1, d, x), out[3];
    double want[3], xr[3];
    for (int p = 0; p < 2; p++) {
        rf_precision_t prec = p ? RF_PRECISION_MIXED : RF_PRECISION_FP64;
        for (int i = 0; i < 3; i++) {
            xr[i] = p ? f16_bits_round(x[i]) : x[i];
            want[i] = p ? (double)(float)(xr[i] * c[i]) : x[i] * c[i];
        }
        CHECK_OK(rf_ref_run(rf_allocator_system(), g, prec, &tin, 1, out, 3));
        check_close("Constant * x", &out[0], 1, d, want, 0);
        check_close("input as output", &out[1], 1, d, xr, 0);
        check_close("constant as output", &out[2], 1, d, c, 0);
        for (int i = 0; i < 3; i++)
            rf_tensor_free(rf_allocator_system(), &out[i]);
    }
    free(tin.data);
    rf_graph_destroy(g);
}

/* ---- errors ---- */

static void test_errors(void) {
    const int64_t d[2] = {3, 4}, dbad[2] = {4, 4}, dwrong[2] = {3, 5};
    double x[16];
    fill(x, 16);
    rf_tensor_t in = make_f32(2, d, x), out;
    /* Unimplemented op, named. */
    {
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 2, d), y = add_val(g, "y", -1, NULL);
        CHECK_OK(rf_graph_add_node(g, "cs", "CumSum", "", &xi, 1, &y, 1, NULL, 0, NULL));
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_UNSUPPORTED, "node 0 'cs' (CumSum): op 'CumSum' is not implemented");
        CHECK(out.data == NULL);
        rf_graph_destroy(g);
        g = new_graph();
        xi = add_input(g, "x", 2, d);
        y = add_val(g, "y", -1, NULL);
        CHECK_OK(rf_graph_add_node(g, "", "FancyOp", "", &xi, 1, &y, 1, NULL, 0, NULL));
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_MIXED, &in, 1, &out, 1),
                  RF_CODE_UNSUPPORTED, "FancyOp");
        rf_graph_destroy(g);
    }
    /* Input shape, counts, declared shapes, bad attributes and indices. */
    {
        rf_graph_t *g = new_graph();
        int xi = add_input(g, "x", 2, dbad), y = add_val(g, "y", -1, NULL);
        add_node(g, "Relu", &xi, 1, y, NULL, 0);
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_SHAPE_ERROR, "input 0 'x' has shape [3, 4], the graph expects [4, 4]");
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 0, &out, 1),
                  RF_CODE_INVALID_ARGUMENT, "1 inputs, 0 were given");
        CHECK_ERR(rf_ref_run(rf_allocator_system(), NULL, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_INVALID_ARGUMENT, "graph is NULL");
        rf_graph_destroy(g);
        g = new_graph();
        xi = add_input(g, "x", 2, d);
        y = add_val(g, "y", 2, dwrong);
        add_node(g, "Relu", &xi, 1, y, NULL, 0);
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_SHAPE_ERROR, "computes to shape [3, 4] but the graph declares [3, 5]");
        rf_graph_destroy(g);
        g = new_graph();
        xi = add_input(g, "x", 2, d);
        y = add_val(g, "y", -1, NULL);
        rf_attr_t at = attr_str("approximate", "fast");
        add_node(g, "Gelu", &xi, 1, y, &at, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_UNSUPPORTED, "approximate");
        rf_graph_destroy(g);
        g = new_graph();
        xi = add_input(g, "x", 2, d);
        const int64_t idx[2] = {0, 4};
        int iv = add_ints(g, "idx", 2, idx), in2[2] = {xi, iv};
        y = add_val(g, "y", -1, NULL);
        rf_attr_t ax = attr_int("axis", 1);
        add_node(g, "Gather", in2, 2, y, &ax, 1);
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_INVALID_ARGUMENT, "Gather index 4 at position 1 is outside [-4, 4)");
        rf_graph_destroy(g);
        g = new_graph();
        xi = add_input(g, "x", 2, d);
        const int64_t dm[2] = {5, 2};
        int wv = add_const(g, "w", RF_DTYPE_F32, 2, dm, x), in3[2] = {xi, wv};
        y = add_val(g, "y", -1, NULL);
        add_node(g, "MatMul", in3, 2, y, NULL, 0);
        CHECK_OK(rf_graph_add_output(g, y));
        CHECK_ERR(rf_ref_run(rf_allocator_system(), g, RF_PRECISION_FP64, &in, 1, &out, 1),
                  RF_CODE_SHAPE_ERROR, "(MatMul): MatMul of [3, 4] and [5, 2]: inner dimensions");
        rf_graph_destroy(g);
    }
    free(in.data);
}

/* ---- fault injection ---- */

/* Runs g under an allocator failing the k-th allocation, for k = 1, 2, ... until a run
 * succeeds; every failure must be OUT_OF_MEMORY with zeroed outputs and nothing live. */
static void fault_inject(const char *what, rf_graph_t *g, rf_precision_t p, const rf_tensor_t *in,
                         int n_in, int n_out) {
    rf_tensor_t out[4];
    int failures = 0, ok = 0;
    for (long k = 1; k <= 10000 && !ok; k++) {
        rf_test_alloc_t f;
        rf_allocator_t a = rf_test_allocator(&f, k);
        rf_status_t st = rf_ref_run(a, g, p, in, n_in, out, n_out);
        if (st == RF_OK) {
            ok = 1;
            CHECK(f.live == n_out);
            for (int i = 0; i < n_out; i++)
                rf_tensor_free(a, &out[i]);
            CHECK(f.live == 0);
        } else {
            if (rf_status_code(st) != RF_CODE_OUT_OF_MEMORY || f.live != 0 || out[0].data) {
                fprintf(stderr, "%s: failing allocation %ld: %s (%s), %ld live\n", what, k,
                        rf_code_name(rf_status_code(st)), rf_status_message(st), f.live);
                CHECK(0);
            }
            failures++;
            rf_status_free(st);
        }
    }
    CHECK(ok);
    CHECK(failures > 3);
}

static void test_fault_injection(void) {
    const int64_t R = 7, C = 5, H = 3, dx[2] = {R, C};
    double x[35], w1[15], w2[15], b1[3], b2[5];
    fill(x, 35);
    fill(w1, 15);
    fill(w2, 15);
    fill(b1, 3);
    fill(b2, 5);
    rf_tensor_t in = make_f32(2, dx, x);
    for (int as_matmul = 0; as_matmul < 2; as_matmul++) {
        rf_graph_t *g = mlp_graph(as_matmul, R, C, H, w1, b1, w2, b2);
        fault_inject("MLP fp64", g, RF_PRECISION_FP64, &in, 1, 1);
        fault_inject("MLP mixed", g, RF_PRECISION_MIXED, &in, 1, 1);
        rf_graph_destroy(g);
    }
    /* A graph using LayerNorm (3 outputs), Reshape, Gather, Concat, Softmax, ReduceMean. */
    rf_graph_t *g = new_graph();
    const int64_t dp[1] = {C}, sh[3] = {R, 1, C}, idx[2] = {4, 0}, ax[1] = {-1};
    int xi = add_input(g, "x", 2, dx), s = add_const(g, "s", RF_DTYPE_F32, 1, dp, b2);
    int ln[3] = {add_val(g, "ln", -1, NULL), add_val(g, "mean", -1, NULL),
                 add_val(g, "inv", -1, NULL)};
    int in1[2] = {xi, s};
    CHECK_OK(rf_graph_add_node(g, "ln", "LayerNormalization", "", in1, 2, ln, 3, NULL, 0, NULL));
    int shv = add_ints(g, "shape", 3, sh), r = add_val(g, "r", -1, NULL), in2[2] = {ln[0], shv};
    add_node(g, "Reshape", in2, 2, r, NULL, 0);
    int iv = add_ints(g, "idx", 2, idx), gt = add_val(g, "g", -1, NULL), in3[2] = {r, iv};
    rf_attr_t a2 = attr_int("axis", 2);
    add_node(g, "Gather", in3, 2, gt, &a2, 1);
    int cat = add_val(g, "cat", -1, NULL), in4[2] = {gt, r};
    add_node(g, "Concat", in4, 2, cat, &a2, 1);
    int sm = add_val(g, "sm", -1, NULL);
    add_node(g, "Softmax", &cat, 1, sm, NULL, 0);
    int axv = add_ints(g, "axes", 1, ax), rm = add_val(g, "rm", -1, NULL), in5[2] = {sm, axv};
    add_node(g, "ReduceMean", in5, 2, rm, NULL, 0);
    CHECK_OK(rf_graph_add_output(g, rm));
    CHECK_OK(rf_graph_add_output(g, ln[2]));
    fault_inject("mixed ops", g, RF_PRECISION_FP64, &in, 1, 2);
    fault_inject("mixed ops", g, RF_PRECISION_MIXED, &in, 1, 2);
    rf_graph_destroy(g);
    free(in.data);
}

int main(void) {
    const char *env = getenv("RF_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : 20261204u; /* fixed; RF_TEST_SEED sweeps */
    printf("test_ref: seed %llu (set RF_TEST_SEED to try another)\n", (unsigned long long)seed);
    /* splitmix64 of the seed, so that nearby seeds give unrelated streams */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    rng_state = (z ^ (z >> 31)) | 1;
    test_unary();
    test_binary();
    test_matmul();
    test_gemm();
    test_reduce();
    test_layer_norm();
    test_softmax();
    test_cast();
    test_layout();
    test_mlp();
    test_constant_and_passthrough();
    test_errors();
    test_fault_injection();
    return rf_test_finish();
}
