/* The C bench's timing loop (BENCHMARKING.md): interleaved rounds of CUDA-event interval
 * and host completion per launch, back-to-back replays, and the GPU span of one replay
 * from CUPTI activity records.
 *
 * An item is anything that can enqueue work on a stream: `replay` enqueues one graph
 * replay, `eager` the same work as plain launches (NULL for none). The harness owns no
 * item; it only calls them. Per observation: the host clock is read, an event recorded,
 * the item enqueued, a second event recorded, the event synchronized and the host clock
 * read again; the event pair is created once per run, never inside the measured interval.
 *
 * CUPTI (span.c) is loaded with dlopen at run time ($ROWFUSE_CUPTI_LIB, libcupti.so.13,
 * libcupti.so): without it the span is reported missing with the reason, and everything
 * else is still measured. rf_bench_span_init must run before any graph is captured (as
 * with torch.profiler, graph kernels captured before CUPTI starts may go unrecorded).
 */
#ifndef RF_BENCH_HARNESS_H
#define RF_BENCH_HARNESS_H

#include <cuda_runtime.h>

#include "base/stats.h"
#include "rowfuse/alloc.h"
#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef rf_status_t (*rf_bench_enqueue_fn)(void *ctx, cudaStream_t stream);

typedef struct rf_bench_item {
    const char *name;
    rf_bench_enqueue_fn replay; /* one graph replay */
    void *replay_ctx;
    rf_bench_enqueue_fn eager; /* the same work launched without a graph, or NULL */
    void *eager_ctx;
} rf_bench_item_t;

typedef struct rf_bench_options {
    int rounds;       /* 5 */
    int observations; /* 200 per round */
    int b2b_replays;  /* replays between the two events of a back-to-back sample */
    int b2b_samples;
    int span_replays; /* single synchronized replays recorded by CUPTI */
} rf_bench_options_t;

typedef struct rf_bench_timing {
    rf_bench_summary_t graph_event, graph_host, b2b;
    int have_eager;
    rf_bench_summary_t eager_event, eager_host;
    int have_span;
    rf_bench_summary_t span;
    int span_kernels;    /* kernel records per replay */
    char span_note[200]; /* why there is no span, when have_span == 0 */
} rf_bench_timing_t;

/* Times `n` items with the method above; out_timings[i] belongs to items[i]. */
rf_status_t rf_bench_time_items(rf_allocator_t allocator, const rf_bench_options_t *options,
                                const rf_bench_item_t *items, int n, cudaStream_t stream,
                                rf_bench_timing_t *out_timings);

/* Loads CUPTI and starts/stops kernel activity once. RF_CODE_NOT_FOUND if CUPTI cannot be
 * loaded, RF_CODE_CUDA_ERROR with CUPTI's message if it refuses. */
rf_status_t rf_bench_span_init(void);

/* `replays` synchronized replays of `item` under CUPTI kernel activity; the span of each
 * (first kernel start to last kernel end) into *out_span and the kernel records per replay
 * into *out_kernels. RF_CODE_MISMATCH if the records do not divide evenly by replays. */
rf_status_t rf_bench_span_measure(rf_allocator_t allocator, const rf_bench_item_t *item,
                                  cudaStream_t stream, int replays, rf_bench_summary_t *out_span,
                                  int *out_kernels);

/* The device's two measured ceilings (ceilings.c): the achievable memory bandwidth (a
 * device-to-device copy far larger than the L2) and the achievable fp16 tensor rate (the
 * best of cuBLASLt's top algorithms on one large GEMM). Zero where a measurement failed,
 * with the reason in note. */
typedef struct rf_bench_ceilings {
    double copy_bytes, copy_us, bandwidth_gbs; /* bytes read + written, median time, GB/s */
    double gemm_flops, gemm_us, tflops;
    int gemm_algos; /* algorithms timed */
    char note[240];
} rf_bench_ceilings_t;

void rf_bench_ceilings_measure(void *stream, rf_bench_ceilings_t *out);

#ifdef __cplusplus
}
#endif
#endif
