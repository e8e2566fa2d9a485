/* The C bench's timing loop (docs/benchmarking.md): interleaved rounds of CUDA-event interval
 * and host completion per launch, the GPU span of each of those same graph replays from
 * CUPTI kernel activity records, and back-to-back replays.
 *
 * An item is anything that can enqueue work on a stream: `replay` enqueues one graph
 * replay, `eager` the same work as plain launches (NULL for none). The harness owns no
 * item; it only calls them. Per observation: the host clock is read, an event recorded,
 * the item enqueued, a second event recorded, the event synchronized and the host clock
 * read again; the event pair is created once per run, never inside the measured interval.
 *
 * The GPU span comes from the timed observations themselves: CUPTI records kernel activity
 * during the graph rounds (rounds x observations per item, items interleaved in a shuffled
 * order), and base/span_attr.c attributes the records to the observations (by correlation
 * id, or by order with each item's kernel count); every observation must leave exactly
 * its graph's kernel count, else the span is FAILED with the reason (span_failed). As
 * CUPTI may itself perturb the host figures, a control round of `control_observations`
 * per item (interleaved the same way) runs after the CUPTI rounds with CUPTI off; its
 * event interval and host completion are reported beside the main ones. With span = 0
 * CUPTI stays off throughout (no span, no control round).
 *
 * CUPTI (span.c) is loaded with dlopen at run time ($ROWFUSE_CUPTI_LIB, libcupti.so.13,
 * libcupti.so): without it the span is reported missing with the reason, and everything
 * else is still measured. rf_bench_span_init must run before any graph is captured (as
 * with torch.profiler, graph kernels captured before CUPTI starts may go unrecorded).
 */
#ifndef RF_HARNESS_BENCH_LOOP_H
#define RF_HARNESS_BENCH_LOOP_H

#include <cuda_runtime.h>

#include "base/span_attr.h"
#include "base/stats.h"
#include "rowfuse/alloc.h"
#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef rf_status_t (*rf_bench_enqueue_fn)(void *ctx, cudaStream_t stream);

typedef struct rf_bench_item {
    const char *name;
    int kernels;                /* kernel nodes of one replay: the CUPTI records it must leave */
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
    int span;                 /* 1: CUPTI records the graph rounds (a span per observation) */
    int control_observations; /* per item, a graph round with CUPTI off after them; 0: none */
    rf_bench_attribution_t attribution;
    /* cold L2: before every graph, eager and control observation (outside its events and
     * host clock) `flush_bytes` of device memory at `flush` are written and the stream
     * synchronised, so what the previous observation left in the L2 is evicted; 0 / NULL:
     * warm (replays find what the last one left). Back-to-back samples stay warm. */
    void *flush;
    int64_t flush_bytes;
} rf_bench_options_t;

typedef struct rf_bench_timing {
    rf_bench_summary_t graph_event, graph_host, b2b;
    int have_eager;
    rf_bench_summary_t eager_event, eager_host;
    int cupti;       /* CUPTI recorded kernel activity during the graph rounds */
    int have_span;   /* span from every graph observation of the rounds */
    int span_failed; /* CUPTI ran but its records did not match the observations: FAILED */
    rf_bench_summary_t span;
    int span_kernels;    /* kernel records per replay (== the item's kernels) */
    char span_note[400]; /* why there is no span, when have_span == 0 */
    int have_control;    /* the control round without CUPTI ran */
    rf_bench_summary_t control_event, control_host;
} rf_bench_timing_t;

/* Times `n` items with the method above; out_timings[i] belongs to items[i]. */
rf_status_t rf_bench_time_items(rf_allocator_t allocator, const rf_bench_options_t *options,
                                const rf_bench_item_t *items, int n, cudaStream_t stream,
                                rf_bench_timing_t *out_timings);

/* Loads CUPTI and starts/stops kernel activity once. RF_CODE_NOT_FOUND if CUPTI cannot be
 * loaded, RF_CODE_CUDA_ERROR with CUPTI's message if it refuses. */
rf_status_t rf_bench_span_init(void);
/* 1 when rf_bench_span_init succeeded. */
int rf_bench_span_ready(void);

/* Starts collecting kernel activity records, at most `capacity` of them (span.c). */
rf_status_t rf_bench_span_begin(rf_allocator_t allocator, size_t capacity);
/* Flushes and stops the collection; *out_records (from `allocator`, the caller's to free
 * with rf_free) holds *out_count records in delivery order. RF_CODE_MISMATCH when CUPTI
 * delivered more records than the capacity. */
rf_status_t rf_bench_span_end(rf_allocator_t allocator, rf_bench_kernel_record_t **out_records,
                              size_t *out_count);

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
