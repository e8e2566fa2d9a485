/* GPU span per timed observation from kernel activity records (docs/benchmarking.md (c)).
 *
 * The C bench records CUPTI kernel activity during the very observations it times (event
 * interval and host completion), so one observation = one graph replay gives one GPU span:
 * first kernel start to last kernel end of that replay. This file holds the attribution
 * of records to observations as a pure function, so it is tested without a GPU.
 *
 * Two ways to attribute, both requiring every observation's record count to equal its
 * graph's kernel count (a replay with missing or extra records is an error naming the
 * observation, never dropped):
 *   RF_BENCH_ATTRIBUTE_CORRELATION  records grouped by CUPTI correlation id (every kernel
 *       of one cudaGraphLaunch carries that launch's id); groups in time order must be
 *       the observations in execution order, one group each, ids strictly increasing.
 *   RF_BENCH_ATTRIBUTE_ORDER  records sorted by start and cut into consecutive runs of
 *       the known kernel counts; each run must start after the previous one ended (the
 *       observations are separated by a synchronize). Catches a wrong total, and a lost
 *       record whenever it makes a run straddle two replays.
 *
 * Ownership: the records are sorted in place (the caller's array); nothing is allocated.
 */
#ifndef RF_BASE_SPAN_ATTR_H
#define RF_BASE_SPAN_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_bench_kernel_record {
    uint64_t start, end;  /* ns, CUPTI's timestamps */
    uint32_t correlation; /* CUPTI correlation id of the launch */
} rf_bench_kernel_record_t;

typedef enum rf_bench_attribution {
    RF_BENCH_ATTRIBUTE_CORRELATION = 0,
    RF_BENCH_ATTRIBUTE_ORDER = 1,
} rf_bench_attribution_t;

/* "correlation" / "order" */
const char *rf_bench_attribution_name(rf_bench_attribution_t how);
/* RF_CODE_INVALID_ARGUMENT naming the accepted values for any other name. */
rf_status_t rf_bench_attribution_parse(const char *name, rf_bench_attribution_t *out_how);

/* Attributes `count` records to `observations` replays run in this order, replay j holding
 * expected[j] >= 1 kernels, and writes replay j's span in microseconds to out_span_us[j].
 * Errors: RF_CODE_MISMATCH naming the first observation whose records do not match its
 * graph (count, overlap, correlation order) or the totals; RF_CODE_INVALID_ARGUMENT for
 * NULL arguments, expected[j] < 1 or a record that ends before it starts. */
rf_status_t rf_bench_span_attribute(rf_bench_kernel_record_t *records, size_t count,
                                    const int *expected, size_t observations,
                                    rf_bench_attribution_t how, double *out_span_us);

#ifdef __cplusplus
}
#endif
#endif
