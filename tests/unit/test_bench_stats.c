/* Unit tests for the C bench's statistics and CPU reference (src/bench/stats.c,
 * src/bench/mlp_data.c) against closed-form cases: quantiles of known sequences,
 * rel. L2 error of a hand-computed pair, and the MLP block on a 1x2x2 example worked out
 * by hand. Runs without a GPU. */
#include <stdint.h>

#include "bench/mlp_data.h"
#include "bench/stats.h"
#include "rf_test.h"
#include "rowfuse/tensor.h"

static int near(double a, double b, double tol) {
    return fabs(a - b) <= tol;
}

static void test_quantiles(void) {
    /* 1..11: q*(n-1) = 10q falls on ranks: p10 = 2, median = 6, p90 = 10. */
    double v[11];
    for (int i = 0; i < 11; i++)
        v[i] = (double)(11 - i); /* descending: summarize must sort a copy */
    rf_bench_summary_t s;
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), v, 11, &s));
    CHECK(s.count == 11);
    CHECK(s.median == 6.0 && s.p10 == 2.0 && s.p90 == 10.0);
    CHECK(s.min == 1.0 && s.max == 11.0 && s.mean == 6.0);
    CHECK(v[0] == 11.0); /* input order kept */

    /* 10, 20, 30, 40: positions 1.5, 0.3, 2.7 interpolate to 25, 13, 37. */
    double w[4] = {40, 10, 30, 20};
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), w, 4, &s));
    CHECK(near(s.median, 25.0, 1e-12) && near(s.p10, 13.0, 1e-12) && near(s.p90, 37.0, 1e-12));

    /* 0..999: median 499.5, p10 99.9, p90 899.1 (same as the Python test). */
    static double r[1000];
    for (int i = 0; i < 1000; i++)
        r[i] = (double)((i * 389) % 1000); /* a permutation of 0..999 */
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), r, 1000, &s));
    CHECK(near(s.median, 499.5, 1e-9) && near(s.p10, 99.9, 1e-9) && near(s.p90, 899.1, 1e-9));

    double one = 3.25;
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), &one, 1, &s));
    CHECK(s.p10 == 3.25 && s.median == 3.25 && s.p90 == 3.25);
}

static void test_summary_errors(void) {
    rf_bench_summary_t s;
    double v[3] = {1.0, NAN, 2.0};
    CHECK_ERR(rf_bench_summarize(rf_allocator_system(), v, 0, &s), RF_CODE_INVALID_ARGUMENT,
              "no observations");
    CHECK_ERR(rf_bench_summarize(rf_allocator_system(), v, 3, &s), RF_CODE_INVALID_ARGUMENT,
              "observation 1 is not finite");
}

static void test_rel_l2(void) {
    /* ref (3, 4): norm 5; difference (0.5, 0): rel 0.1. */
    float out[2] = {3.5f, 4.0f};
    double ref[2] = {3.0, 4.0};
    int finite = 0;
    CHECK(near(rf_bench_rel_l2(out, ref, 2, &finite), 0.1, 1e-12) && finite);
    out[1] = NAN;
    CHECK(isinf(rf_bench_rel_l2(out, ref, 2, &finite)) && !finite);
}

static void test_reference_by_hand(void) {
    /* x = (1, -2); W1 = [[1, 0.5], [0.25, -1]] (C x H); b1 = (0.5, -0.5)
     * pre-H = (1*1 + -2*0.25 + 0.5, 1*0.5 + -2*-1 - 0.5) = (1.0, 2.0); ReLU keeps both.
     * W2 = [[2, -1], [0.5, 1]] (H x C); b2 = (0.25, 0.75)
     * Y = ReLU(H W2 + b2 + x) = ReLU((2 + 1 + 0.25 + 1, -1 + 2 + 0.75 - 2)) = (4.25, 0). */
    uint16_t x[2] = {rf_f32_to_f16(1.0f), rf_f32_to_f16(-2.0f)};
    uint16_t w1[4] = {rf_f32_to_f16(1.0f), rf_f32_to_f16(0.5f), rf_f32_to_f16(0.25f),
                      rf_f32_to_f16(-1.0f)};
    uint16_t w2[4] = {rf_f32_to_f16(2.0f), rf_f32_to_f16(-1.0f), rf_f32_to_f16(0.5f),
                      rf_f32_to_f16(1.0f)};
    float b1[2] = {0.5f, -0.5f}, b2[2] = {0.25f, 0.75f};
    double y[2] = {-1, -1};
    CHECK_OK(rf_bench_mlp_reference(rf_allocator_system(), 1, 2, 2, x, w1, b1, w2, b2, y));
    CHECK(near(y[0], 4.25, 1e-15) && near(y[1], 0.0, 1e-15));
    /* A negative pre-activation must be cut: b1 = (-5, -0.5) drops hidden unit 0:
     * H = (0, 2): Y = ReLU((0 + 1 + 0.25 + 1, 0 + 2 + 0.75 - 2)) = (2.25, 0.75). */
    b1[0] = -5.0f;
    CHECK_OK(rf_bench_mlp_reference(rf_allocator_system(), 1, 2, 2, x, w1, b1, w2, b2, y));
    CHECK(near(y[0], 2.25, 1e-15) && near(y[1], 0.75, 1e-15));
}

static void test_inputs(void) {
    rf_bench_mlp_data_t *d = NULL;
    CHECK_ERR(rf_bench_mlp_data_create(rf_allocator_system(), 0, 4, 4, 1, &d),
              RF_CODE_INVALID_ARGUMENT, "must be >= 1");
    CHECK_OK(rf_bench_mlp_data_create(rf_allocator_system(), 7, 5, 9, 42, &d));
    if (!d)
        return;
    /* Never zeros; the reference is what rf_bench_mlp_reference says, and a second
     * seed gives other inputs. */
    int nonzero = 0;
    for (int i = 0; i < 7 * 5; i++)
        nonzero += d->x[i] != 0 && d->x[i] != 0x8000;
    CHECK(nonzero == 35);
    double again[35];
    CHECK_OK(rf_bench_mlp_reference(rf_allocator_system(), 7, 5, 9, d->x, d->w1, d->b1, d->w2,
                                    d->b2, again));
    CHECK(memcmp(again, d->y_ref, sizeof again) == 0);
    rf_bench_mlp_data_t *e = NULL;
    CHECK_OK(rf_bench_mlp_data_create(rf_allocator_system(), 7, 5, 9, 43, &e));
    if (e)
        CHECK(memcmp(d->x, e->x, 35 * sizeof(uint16_t)) != 0);
    rf_bench_mlp_data_destroy(e);
    rf_bench_mlp_data_destroy(d);

    /* N(0, 1): mean within 5 sigma/sqrt(n) of 0, variance within 2% of 1. */
    uint64_t s = 12345;
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double z = rf_bench_normal(&s);
        sum += z;
        sq += z * z;
    }
    CHECK(fabs(sum / n) < 5.0 / sqrt((double)n));
    CHECK(fabs(sq / n - 1.0) < 0.02);
}

int main(void) {
    test_quantiles();
    test_summary_errors();
    test_rel_l2();
    test_reference_by_hand();
    test_inputs();
    return rf_test_finish();
}
