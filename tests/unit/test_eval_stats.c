/* The evaluator's statistics (rowfuse/eval.h) against closed forms and exact values:
 * Wilson intervals (the k = 0 and k = n closed forms, Newcombe's 81/263 example, the
 * k <-> n - k symmetry), exact McNemar p-values (computed with Python's exact integer
 * arithmetic, sum(math.comb(n, i)) / 2^n, including counts whose binomial coefficients
 * overflow a double), and Holm's adjustment worked by hand. */
#include <stdint.h>

#include "rf_test.h"
#include "rowfuse/eval.h"

#define Z95 1.959963984540054

static int rel_close(double got, double want, double tol) {
    return fabs(got - want) <= tol * fabs(want);
}

static void test_wilson(void) {
    double lo, hi, z2 = Z95 * Z95;
    rf_eval_wilson(0, 10, Z95, &lo, &hi); /* upper bound z^2 / (n + z^2) */
    CHECK(lo == 0.0 && rel_close(hi, z2 / (10 + z2), 1e-14));
    rf_eval_wilson(10, 10, Z95, &lo, &hi); /* lower bound n / (n + z^2) */
    CHECK(hi == 1.0 && rel_close(lo, 10 / (10 + z2), 1e-14));
    rf_eval_wilson(81, 263, Z95, &lo, &hi); /* Newcombe (1998): 0.2553 to 0.3662 */
    CHECK(fabs(lo - 0.2553) < 5e-5 && fabs(hi - 0.3662) < 5e-5);
    CHECK(rel_close(lo, 0.2552885198782742, 1e-12) && rel_close(hi, 0.36620957698280004, 1e-12));
    for (int64_t n = 1; n <= 60; n += 7)
        for (int64_t k = 0; k <= n; k++) {
            double l2, h2;
            rf_eval_wilson(k, n, Z95, &lo, &hi);
            rf_eval_wilson(n - k, n, Z95, &l2, &h2);
            CHECK(fabs(lo - (1.0 - h2)) < 1e-12 && fabs(hi - (1.0 - l2)) < 1e-12);
            CHECK(0.0 <= lo && lo <= (double)k / n && (double)k / n <= hi && hi <= 1.0);
        }
    rf_eval_wilson(0, 0, Z95, &lo, &hi);
    CHECK(lo == 0.0 && hi == 1.0);
}

static void test_mcnemar(void) {
    static const struct {
        int64_t b, c;
        double p;
    } cases[] = {
        {0, 5, 0.0625},      /* 2 / 2^5 */
        {1, 9, 0.021484375}, /* 2 * 11 / 2^10 */
        {3, 12, 0.03515625}, /* 2 * 576 / 2^15 */
        {10, 20, 0.09873714670538902},
        {40, 60, 0.05688793364098079},
        {7, 30, 0.00019107642583549023},
        {20, 0, 1.9073486328125e-06},       /* 2 / 2^20 */
        {900, 1100, 8.457089535503927e-06}, /* C(2000, 900) ~ 1e597 overflows a double */
        {3000, 3200, 0.011488253770871206},
        {5000, 5300, 0.003215819673645239},
        {0, 1000, 1.8665272370064378e-301},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double p = rf_eval_mcnemar_p(cases[i].b, cases[i].c);
        double q = rf_eval_mcnemar_p(cases[i].c, cases[i].b);
        if (!rel_close(p, cases[i].p, 1e-9) || p != q)
            fprintf(stderr, "  mcnemar(%lld, %lld) = %.17g, want %.17g\n", (long long)cases[i].b,
                    (long long)cases[i].c, p, cases[i].p);
        CHECK(rel_close(p, cases[i].p, 1e-9) && p == q);
    }
    CHECK(rf_eval_mcnemar_p(0, 0) == 1.0);
    CHECK(rf_eval_mcnemar_p(1, 2) == 1.0); /* |b - c| = 1: both tails are everything */
    CHECK(rf_eval_mcnemar_p(7, 7) == 1.0);
    CHECK(rf_eval_mcnemar_p(0, 1) == 1.0);
    CHECK(rf_eval_mcnemar_p(0, 5000) == 0.0); /* 2^-4999 underflows: 0, not NaN */
    CHECK(isnan(rf_eval_mcnemar_p(-1, 3)));
}

static void test_holm(void) {
    rf_allocator_t a = rf_allocator_system();
    /* Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running max
     * makes the last 0.06. */
    double p[4] = {0.01, 0.04, 0.03, 0.005}, adj[4];
    CHECK_OK(rf_eval_holm(a, p, 4, adj));
    CHECK(fabs(adj[0] - 0.03) < 1e-15 && fabs(adj[1] - 0.06) < 1e-15);
    CHECK(fabs(adj[2] - 0.06) < 1e-15 && fabs(adj[3] - 0.02) < 1e-15);
    double q[3] = {0.5, 0.6, 0.2}, qa[3]; /* capped at 1 */
    CHECK_OK(rf_eval_holm(a, q, 3, qa));
    CHECK(qa[0] == 1.0 && qa[1] == 1.0 && fabs(qa[2] - 0.6) < 1e-15);
    double one = 0.03, onea;
    CHECK_OK(rf_eval_holm(a, &one, 1, &onea));
    CHECK(onea == 0.03);
    CHECK_OK(rf_eval_holm(a, NULL, 0, NULL));
    double bad[2] = {0.1, NAN};
    CHECK_ERR(rf_eval_holm(a, bad, 2, adj), RF_CODE_INVALID_ARGUMENT, "p-value 1");
}

int main(void) {
    test_wilson();
    test_mcnemar();
    test_holm();
    return rf_test_finish();
}
