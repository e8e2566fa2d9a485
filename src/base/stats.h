/* Benchmark statistics: order statistics of timing observations.
 *
 * The harness keeps every observation (microseconds, doubles) and reports the median and
 * the 10th/90th percentiles. Quantiles interpolate linearly between closest ranks at
 * position q*(n-1) (numpy's default, "type 7"), the same definition as the Python side
 * (rowfuse.bench.quantile), so C and Python numbers mean the same thing.
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
} rf_bench_summary_t;

/* Quantile q in [0, 1] of `n` ascending values (n >= 1). No checks: internal use. */
double rf_bench_quantile_sorted(const double *sorted, size_t n, double q);

/* Summarizes `count` observations. Errors: count == 0 or a non-finite value
 * (INVALID_ARGUMENT, naming its index), OUT_OF_MEMORY for the scratch copy. */
rf_status_t rf_bench_summarize(rf_allocator_t allocator, const double *values, size_t count,
                               rf_bench_summary_t *out_summary);

#ifdef __cplusplus
}
#endif
#endif
