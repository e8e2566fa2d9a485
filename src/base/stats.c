/* Order statistics for the benchmark harness; see stats.h for the quantile definition.
 * Sorting a copy keeps the caller's observation order, which records the interleaving. */
#include "base/stats.h"

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
    RF_RETURN_IF_ERROR(rf_alloc(allocator, bytes, "sorted observations", (void **)&sorted),
                       "while summarizing %zu observations", count);
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
    rf_free(allocator, sorted);
    *out_summary = s;
    return RF_OK;
}
