/* Benchmark statistics: order statistics of timing observations.
 *
 * The harness keeps every observation (microseconds, doubles) and reports the median and
 * the 10th/90th percentiles. Quantiles interpolate linearly between closest ranks at
 * position q*(n-1) (numpy's default, "type 7"), the same definition as the Python side
 * (rowfuse.bench.harness.quantile), so C and Python numbers mean the same thing.
 *
 * The median's uncertainty is a percentile bootstrap (rf_bench_median_interval).
 *
 * Ownership: rf_bench_summarize copies and sorts the values into a scratch buffer taken
 * from the given allocator and freed before it returns; the input is not modified.
 */
#ifndef RF_BENCH_STATS_H
#define RF_BENCH_STATS_H

#include <stddef.h>

#include "rowfuse/alloc.h"
#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_bench_summary {
    size_t count;
    double median, p10, p90;
    double mean, min, max;
    /* bootstrap 95% interval of the median: RF_BENCH_BOOTSTRAP resamples with replacement
     * (rowfuse/rng.h, a fixed seed, so the interval is a function of the data) */
    double median_lo, median_hi;
} rf_bench_summary_t;

#define RF_BENCH_BOOTSTRAP 1000

/* Two medians are a tie when their bootstrap intervals overlap (docs/benchmarking.md). */
int rf_bench_summary_tie(const rf_bench_summary_t *a, const rf_bench_summary_t *b);

/* Quantile q in [0, 1] of `n` ascending values (n >= 1). No checks: internal use. */
double rf_bench_quantile_sorted(const double *sorted, size_t n, double q);

/* The bootstrap interval of the median of n ascending values (n >= 1) into *out_lo,
 * *out_hi; `counts` is scratch for n size_t values. No checks: internal use. */
void rf_bench_median_interval(const double *sorted, size_t n, size_t *counts, double *out_lo,
                              double *out_hi);

/* Summarizes `count` observations. Errors: count == 0 or a non-finite value
 * (INVALID_ARGUMENT, naming its index), OUT_OF_MEMORY for the scratch copy. */
rf_status_t rf_bench_summarize(rf_allocator_t allocator, const double *values, size_t count,
                               rf_bench_summary_t *out_summary);

#ifdef __cplusplus
}
#endif
#endif
