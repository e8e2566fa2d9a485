/* Unit tests of the statistics (src/base/stats.c) and the MLP test data, reference and
 * comparison (rowfuse/mlp.h) against closed-form cases: quantiles of known sequences, the
 * pass rule on a hand-computed pair, the MLP block on a 1x2x2 example worked out by hand,
 * and the generator's known first value. Runs without a GPU. */
#include <stdint.h>

#include "base/stats.h"
#include "rf_test.h"
#include "rowfuse/mlp.h"
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

static void test_median_interval(void) {
    /* A constant sample: the interval is the point. 0..1000: the median is 500 and the
     * median's rank has standard deviation sqrt(n)/2 ~ 15.8, so the 95% interval is about
     * 500 -+ 31 (a normal approximation of the binomial): check [460, 480] and [520, 540]. */
    static double v[1001];
    rf_bench_summary_t s, t;
    for (int i = 0; i < 1001; i++)
        v[i] = 7.0;
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), v, 1001, &s));
    CHECK(s.median_lo == 7.0 && s.median_hi == 7.0);
    for (int i = 0; i < 1001; i++)
        v[i] = (double)((i * 389) % 1001); /* 0..1000, shuffled */
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), v, 1001, &s));
    CHECK(s.median == 500.0);
    CHECK(s.median_lo >= 460 && s.median_lo <= 480 && s.median_hi >= 520 && s.median_hi <= 540);
    /* ties: overlapping intervals tie, disjoint ones do not */
    for (int i = 0; i < 1001; i++)
        v[i] += 20.0;
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), v, 1001, &t));
    CHECK(rf_bench_summary_tie(&s, &t));
    for (int i = 0; i < 1001; i++)
        v[i] += 200.0;
    CHECK_OK(rf_bench_summarize(rf_allocator_system(), v, 1001, &t));
    CHECK(!rf_bench_summary_tie(&s, &t));
}

static void test_compare(void) {
    /* ref (3, 4) with allowance 0.6 each and step 5: out (3.5, 4) is 0.5 off in element 0
     * (ratio 0.83) and 0.1 step away: it passes; a smaller allowance or step fraction fails. */
    float out[2] = {3.5f, 4.0f}, ref[2] = {3.0f, 4.0f};
    double allow[2] = {0.6, 0.6}, narrow[2] = {0.4, 0.6};
    rf_mlp_tolerance_t tol = {0.25, 1.0}, tight = {0.05, 1.0};
    rf_mlp_compare_result_t r;
    char why[256];
    rf_mlp_compare(out, ref, allow, 5.0, 2, &tol, &r);
    CHECK(r.passed && near(r.steps, 0.1, 1e-7) && near(r.max_ratio, 0.5 / 0.6, 1e-7));
    CHECK(near(r.max_abs, 0.5, 1e-7) && r.worst_index == 0);
    rf_mlp_compare(out, ref, allow, 5.0, 2, &tight, &r); /* 0.1 step over 0.05 */
    CHECK(!r.passed && r.out_of_tol == 0);
    rf_mlp_compare(out, ref, narrow, 5.0, 2, &tol, &r); /* 0.5 over its allowance 0.4 */
    CHECK(!r.passed && r.out_of_tol == 1);
    out[1] = NAN;
    rf_mlp_compare(out, ref, allow, 5.0, 2, &tol, &r);
    CHECK(!r.passed && r.nonfinite == 1 && r.worst_index == 1);
    rf_mlp_compare_describe(&r, 2, why, sizeof why);
    CHECK(strstr(why, "[0, 1]") != NULL && strstr(why, "non-finite") != NULL);
    rf_mlp_compare(out, ref, allow, 5.0, 0, &tol, &r); /* nothing compared never passes */
    CHECK(!r.passed);
}

static void reference_1x2x2(float b1_0, double *y) {
    uint16_t x[2] = {rf_f32_to_f16(1.0f), rf_f32_to_f16(-2.0f)};
    uint16_t w1[4] = {rf_f32_to_f16(1.0f), rf_f32_to_f16(0.5f), rf_f32_to_f16(0.25f),
                      rf_f32_to_f16(-1.0f)};
    uint16_t w2[4] = {rf_f32_to_f16(2.0f), rf_f32_to_f16(-1.0f), rf_f32_to_f16(0.5f),
                      rf_f32_to_f16(1.0f)};
    float b1[2] = {b1_0, -0.5f}, b2[2] = {0.25f, 0.75f};
    rf_tensor_t t;
    CHECK_OK(
        rf_mlp_reference(rf_allocator_system(), RF_PRECISION_FP64, 1, 2, 2, x, w1, b1, w2, b2, &t));
    if (t.data)
        memcpy(y, t.data, 2 * sizeof(double));
    rf_tensor_free(rf_allocator_system(), &t);
}

static void test_reference_by_hand(void) {
    /* x = (1, -2); W1 = [[1, 0.5], [0.25, -1]] (C x H); b1 = (0.5, -0.5)
     * pre-H = (1*1 + -2*0.25 + 0.5, 1*0.5 + -2*-1 - 0.5) = (1.0, 2.0); ReLU keeps both.
     * W2 = [[2, -1], [0.5, 1]] (H x C); b2 = (0.25, 0.75)
     * Y = ReLU(H W2 + b2 + x) = ReLU((2 + 1 + 0.25 + 1, -1 + 2 + 0.75 - 2)) = (4.25, 0). */
    double y[2] = {-1, -1};
    reference_1x2x2(0.5f, y);
    CHECK(near(y[0], 4.25, 1e-15) && near(y[1], 0.0, 1e-15));
    /* A negative pre-activation must be cut: b1 = (-5, -0.5) drops hidden unit 0:
     * H = (0, 2): Y = ReLU((0 + 1 + 0.25 + 1, 0 + 2 + 0.75 - 2)) = (2.25, 0.75). */
    reference_1x2x2(-5.0f, y);
    CHECK(near(y[0], 2.25, 1e-15) && near(y[1], 0.75, 1e-15));
}

static void test_cases(void) {
    rf_mlp_case_t d, e;
    CHECK_ERR(rf_mlp_case_create(rf_allocator_system(), 4, 0, 4, 1, 1, &d),
              RF_CODE_INVALID_ARGUMENT, "channels and hidden >= 1");
    CHECK_OK(rf_mlp_case_create(rf_allocator_system(), 7, 5, 9, 42, 1, &d));
    if (!d.x)
        return;
    /* Never zeros; the reference is the mixed-precision interpreter's, and another seed
     * gives other inputs while the same seed gives the same ones. */
    int nonzero = 0;
    for (int i = 0; i < 7 * 5; i++)
        nonzero += d.x[i] != 0 && d.x[i] != 0x8000;
    CHECK(nonzero == 35);
    rf_tensor_t again;
    CHECK_OK(rf_mlp_reference(rf_allocator_system(), RF_PRECISION_MIXED, 7, 5, 9, d.x, d.w1, d.b1,
                              d.w2, d.b2, &again));
    CHECK(again.data && memcmp(again.data, d.ref, 35 * sizeof(float)) == 0);
    rf_tensor_free(rf_allocator_system(), &again);
    CHECK_OK(rf_mlp_case_create(rf_allocator_system(), 7, 5, 9, 43, 0, &e));
    CHECK(e.x && memcmp(d.x, e.x, 35 * sizeof(uint16_t)) != 0 && e.ref == NULL);
    rf_mlp_case_free(rf_allocator_system(), &e);
    /* weights come first, so a weights-only case (rows 0) has the same weights */
    CHECK_OK(rf_mlp_case_create(rf_allocator_system(), 0, 5, 9, 42, 1, &e));
    CHECK(e.x == NULL && memcmp(d.w2, e.w2, 45 * sizeof(uint16_t)) == 0);
    rf_mlp_case_free(rf_allocator_system(), &e);
    rf_mlp_case_free(rf_allocator_system(), &d);

    /* The generator: a known splitmix64 value, and U(-1, 1) with mean near 0. */
    rf_rng_t r;
    rf_rng_seed(&r, 0);
    CHECK(rf_rng_next(&r) == 0xE220A8397B1DCDAFull);
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++)
        sum += rf_rng_uniform(&r, 1.0);
    CHECK(fabs(sum / n) < 5.0 * sqrt(1.0 / 3.0) / sqrt((double)n));
}

int main(void) {
    test_quantiles();
    test_summary_errors();
    test_median_interval();
    test_compare();
    test_reference_by_hand();
    test_cases();
    return rf_test_finish();
}
