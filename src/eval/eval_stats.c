/* The evaluator's statistics (rowfuse/eval.h): Wilson score intervals, the exact McNemar
 * test and Holm's step-down correction. Pure functions; tests/unit/test_eval_stats.c
 * checks them against closed forms and exact values computed with integer arithmetic. */
#include <math.h>
#include <stdlib.h>

#include "rowfuse/eval.h"

void rf_eval_wilson(int64_t k, int64_t n, double z, double *out_low, double *out_high) {
    if (n <= 0 || k < 0 || k > n) {
        *out_low = 0.0;
        *out_high = 1.0;
        return;
    }
    double nn = (double)n, p = (double)k / nn, z2 = z * z;
    double den = 1.0 + z2 / nn;
    double center = (p + z2 / (2.0 * nn)) / den;
    double half = z * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / den;
    /* At k = 0 (k = n) the bound is 0 (1) exactly; rounding must not push it past. */
    *out_low = k == 0 ? 0.0 : fmax(0.0, center - half);
    *out_high = k == n ? 1.0 : fmin(1.0, center + half);
}

/* log of C(n, i) / 2^n. */
static double rf_log_binom_half(int64_t n, int64_t i) {
    return lgamma((double)n + 1.0) - lgamma((double)i + 1.0) - lgamma((double)(n - i) + 1.0) -
           (double)n * log(2.0);
}

double rf_eval_mcnemar_p(int64_t b, int64_t c) {
    if (b < 0 || c < 0)
        return NAN;
    int64_t n = b + c, k = b < c ? b : c;
    if (n == 0 || 2 * k >= n - 1) /* b == c, or |b - c| == 1: the two tails cover everything */
        return 1.0;
    /* P(X <= k) for X ~ Binomial(n, 1/2): the terms grow with i up to k < n/2, so the last
     * is the largest; sum the others relative to it, walking down with the exact ratio
     * C(n, i-1) / C(n, i) = i / (n - i + 1). Small terms underflow harmlessly to 0. */
    double log_top = rf_log_binom_half(n, k), sum = 0.0, term = 1.0;
    for (int64_t i = k; i >= 0 && term > 0.0; i--) {
        sum += term;
        term *= (double)i / (double)(n - i + 1);
    }
    double log_p = log(2.0) + log_top + log(sum);
    return log_p >= 0.0 ? 1.0 : exp(log_p);
}

typedef struct rf_holm_item {
    double p;
    int index;
} rf_holm_item_t;

static int rf_holm_cmp(const void *a, const void *b) {
    const rf_holm_item_t *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

rf_status_t rf_eval_holm(rf_allocator_t allocator, const double *p, int n, double *out_adjusted) {
    if (n <= 0)
        return RF_OK;
    for (int i = 0; i < n; i++)
        if (!(p[i] >= 0.0 && p[i] <= 1.0))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "Holm: p-value %d is %g, not in [0, 1]", i,
                          p[i]);
    rf_holm_item_t *items;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(allocator, (size_t)n * sizeof *items, "Holm order", (void **)&items));
    for (int i = 0; i < n; i++)
        items[i] = (rf_holm_item_t){p[i], i};
    qsort(items, (size_t)n, sizeof *items, rf_holm_cmp);
    double running = 0.0;
    for (int j = 0; j < n; j++) {
        double v = fmin(1.0, (double)(n - j) * items[j].p);
        running = fmax(running, v); /* adjusted p-values never decrease along the order */
        out_adjusted[items[j].index] = running;
    }
    rf_free(allocator, items);
    return RF_OK;
}
