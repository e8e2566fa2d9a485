/* Order statistics for the benchmark harness; see stats.h for the quantile definition.
 * Sorting a copy keeps the caller's observation order, which records the interleaving. */
#include "base/stats.h"

#include "rowfuse/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double rf_bench_quantile_sorted(const double *sorted, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : n - 1;
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

static int rf_bench_cmp_double(const void *a, const void *b);

/* The value of rank k (0-based) of a resample given as counts per sorted position. */
static double rank_value(const double *sorted, const size_t *counts, size_t n, size_t k) {
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        seen += counts[i];
        if (seen > k)
            return sorted[i];
    }
    return sorted[n - 1];
}

void rf_bench_median_interval(const double *sorted, size_t n, size_t *counts, double *out_lo,
                              double *out_hi) {
    double medians[RF_BENCH_BOOTSTRAP];
    double pos = 0.5 * (double)(n - 1), frac = pos - floor(pos);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : n - 1;
    rf_rng_t r;
    rf_rng_seed(&r, 0x5eedb007ull ^ (uint64_t)n);
    for (int b = 0; b < RF_BENCH_BOOTSTRAP; b++) {
        /* a resample as counts over the sorted values: its order statistics need no sort */
        memset(counts, 0, n * sizeof(size_t));
        for (size_t i = 0; i < n; i++)
            counts[rf_rng_next(&r) % n]++;
        double vlo = rank_value(sorted, counts, n, lo), vhi = rank_value(sorted, counts, n, hi);
        medians[b] = vlo + (vhi - vlo) * frac;
    }
    qsort(medians, RF_BENCH_BOOTSTRAP, sizeof(double), rf_bench_cmp_double);
    *out_lo = rf_bench_quantile_sorted(medians, RF_BENCH_BOOTSTRAP, 0.025);
    *out_hi = rf_bench_quantile_sorted(medians, RF_BENCH_BOOTSTRAP, 0.975);
}

int rf_bench_summary_tie(const rf_bench_summary_t *a, const rf_bench_summary_t *b) {
    return a->median_lo <= b->median_hi && b->median_lo <= a->median_hi;
}

static int rf_bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

rf_status_t rf_bench_summarize(rf_allocator_t allocator, const double *values, size_t count,
                               rf_bench_summary_t *out_summary) {
    if (!values || !out_summary)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_bench_summarize: NULL argument");
    if (count == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_bench_summarize: no observations");
    for (size_t i = 0; i < count; i++)
        if (!isfinite(values[i]))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "rf_bench_summarize: observation %zu is not finite (%g)", i, values[i]);
    size_t bytes;
    if (rf_mul_size(count, sizeof(double), &bytes))
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "rf_bench_summarize: %zu observations", count);
    double *sorted = NULL;
    size_t *counts = NULL;
    RF_RETURN_IF_ERROR(rf_alloc(allocator, bytes, "sorted observations", (void **)&sorted),
                       "while summarizing %zu observations", count);
    rf_status_t st =
        rf_alloc(allocator, count * sizeof(size_t), "bootstrap counts", (void **)&counts);
    if (st) {
        rf_free(allocator, sorted);
        return rf_status_annotate(st, "while summarizing %zu observations", count);
    }
    memcpy(sorted, values, bytes);
    qsort(sorted, count, sizeof(double), rf_bench_cmp_double);
    /* Kahan-free but ordered summation: ascending order keeps the rounding error small. */
    double sum = 0.0;
    for (size_t i = 0; i < count; i++)
        sum += sorted[i];
    rf_bench_summary_t s;
    s.count = count;
    s.median = rf_bench_quantile_sorted(sorted, count, 0.5);
    s.p10 = rf_bench_quantile_sorted(sorted, count, 0.1);
    s.p90 = rf_bench_quantile_sorted(sorted, count, 0.9);
    s.mean = sum / (double)count;
    s.min = sorted[0];
    s.max = sorted[count - 1];
    rf_bench_median_interval(sorted, count, counts, &s.median_lo, &s.median_hi);
    rf_free(allocator, counts);
    rf_free(allocator, sorted);
    *out_summary = s;
    return RF_OK;
}
