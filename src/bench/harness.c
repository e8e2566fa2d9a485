/* The interleaved timing loop of the C bench; see harness.h for what is measured and how.
 * Observations are kept in flat arrays [item][round*obs] so the summaries see every one. */
#define _POSIX_C_SOURCE 200809L
#include "bench/harness.h"

#include "rowfuse/rng.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double rf_bench_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static rf_status_t rf_bench_cuda(cudaError_t err, const char *what) {
    if (err == cudaSuccess)
        return RF_OK;
    return RF_ERR(RF_CODE_CUDA_ERROR, "%s: %s: %s", what, cudaGetErrorName(err),
                  cudaGetErrorString(err));
}

/* One observation: host clock around event, enqueue, event, event synchronize. */
static rf_status_t rf_bench_observe(rf_bench_enqueue_fn fn, void *ctx, cudaStream_t s,
                                    cudaEvent_t e0, cudaEvent_t e1, double *out_event_us,
                                    double *out_host_us) {
    float ms = 0.0f;
    double t0 = rf_bench_now_us();
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventRecord(e0, s), "cudaEventRecord(start)"));
    RF_RETURN_IF_ERROR_PLAIN(fn(ctx, s));
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventRecord(e1, s), "cudaEventRecord(stop)"));
    RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventSynchronize(e1), "cudaEventSynchronize"));
    double t1 = rf_bench_now_us();
    RF_RETURN_IF_ERROR_PLAIN(
        rf_bench_cuda(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime"));
    *out_event_us = (double)ms * 1e3;
    *out_host_us = t1 - t0;
    return RF_OK;
}

/* rounds x obs observations of every item, interleaved; within each round the items run
 * in a seeded random order (Fisher-Yates, rowfuse/rng.h), drawn anew for every pass.
 * eager selects the eager enqueue (items without one are skipped). */
static rf_status_t rf_bench_interleave(const rf_bench_options_t *o, const rf_bench_item_t *items,
                                       int n, int eager, cudaStream_t s, cudaEvent_t e0,
                                       cudaEvent_t e1, double *ev, double *host) {
    size_t per = (size_t)o->rounds * (size_t)o->observations;
    int order[64];
    rf_rng_t rng;
    rf_rng_seed(&rng, 0xbe4c4ull + (uint64_t)eager);
    if (n > 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "at most 64 items are interleaved, not %d", n);
    for (int r = 0; r < o->rounds; r++)
        for (int k = 0; k < o->observations; k++) {
            for (int j = 0; j < n; j++)
                order[j] = j;
            for (int j = n - 1; j > 0; j--) {
                int pick = (int)(rf_rng_next(&rng) % (uint64_t)(j + 1)), t = order[j];
                order[j] = order[pick];
                order[pick] = t;
            }
            for (int j = 0; j < n; j++) {
                int i = order[j];
                const rf_bench_item_t *it = &items[i];
                rf_bench_enqueue_fn fn = eager ? it->eager : it->replay;
                void *ctx = eager ? it->eager_ctx : it->replay_ctx;
                if (!fn)
                    continue;
                size_t at = (size_t)i * per + (size_t)r * (size_t)o->observations + (size_t)k;
                RF_RETURN_IF_ERROR(rf_bench_observe(fn, ctx, s, e0, e1, &ev[at], &host[at]),
                                   "%s %s observation %d of round %d", it->name,
                                   eager ? "eager" : "graph", k, r);
            }
        }
    return RF_OK;
}

static rf_status_t rf_bench_back_to_back(rf_allocator_t a, const rf_bench_options_t *o,
                                         const rf_bench_item_t *it, cudaStream_t s, cudaEvent_t e0,
                                         cudaEvent_t e1, double *scratch, rf_bench_summary_t *out) {
    for (int k = 0; k < o->b2b_samples; k++) {
        float ms = 0.0f;
        RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventRecord(e0, s), "cudaEventRecord"));
        for (int i = 0; i < o->b2b_replays; i++)
            RF_RETURN_IF_ERROR(it->replay(it->replay_ctx, s), "%s back-to-back", it->name);
        RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventRecord(e1, s), "cudaEventRecord"));
        RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaEventSynchronize(e1), "cudaEventSynchronize"));
        RF_RETURN_IF_ERROR_PLAIN(
            rf_bench_cuda(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime"));
        scratch[k] = (double)ms * 1e3 / (double)o->b2b_replays;
    }
    return rf_bench_summarize(a, scratch, (size_t)o->b2b_samples, out);
}

rf_status_t rf_bench_time_items(rf_allocator_t a, const rf_bench_options_t *o,
                                const rf_bench_item_t *items, int n, cudaStream_t s,
                                rf_bench_timing_t *out) {
    if (!o || !items || n < 1 || !out || o->rounds < 1 || o->observations < 1 ||
        o->b2b_replays < 1 || o->b2b_samples < 1 || o->span_replays < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_bench_time_items: need items and rounds, observations, b2b replays, "
                      "b2b samples and span replays >= 1");
    size_t per = (size_t)o->rounds * (size_t)o->observations, total, bytes;
    if (rf_mul_size(per, (size_t)n, &total) || rf_mul_size(total, 4 * sizeof(double), &bytes))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "too many observations");
    double *buf = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    rf_status_t st;
    RF_RETURN_IF_ERROR(
        rf_alloc(a, bytes + (size_t)o->b2b_samples * sizeof(double), "observations", (void **)&buf),
        "while timing %d items", n);
    double *gev = buf, *ghost = buf + total, *eev = buf + 2 * total, *ehost = buf + 3 * total;
    double *scratch = buf + 4 * total;
    memset(out, 0, sizeof(*out) * (size_t)n);
    if ((st = rf_bench_cuda(cudaEventCreate(&e0), "cudaEventCreate")) ||
        (st = rf_bench_cuda(cudaEventCreate(&e1), "cudaEventCreate")))
        goto done;
    if ((st = rf_bench_interleave(o, items, n, 0, s, e0, e1, gev, ghost)) ||
        (st = rf_bench_interleave(o, items, n, 1, s, e0, e1, eev, ehost)))
        goto done;
    for (int i = 0; i < n && !st; i++) {
        rf_bench_timing_t *t = &out[i];
        size_t at = (size_t)i * per;
        if ((st = rf_bench_summarize(a, gev + at, per, &t->graph_event)) ||
            (st = rf_bench_summarize(a, ghost + at, per, &t->graph_host)))
            break;
        if (items[i].eager) {
            t->have_eager = 1;
            if ((st = rf_bench_summarize(a, eev + at, per, &t->eager_event)) ||
                (st = rf_bench_summarize(a, ehost + at, per, &t->eager_host)))
                break;
        }
        if ((st = rf_bench_back_to_back(a, o, &items[i], s, e0, e1, scratch, &t->b2b)))
            break;
        rf_status_t sp =
            rf_bench_span_measure(a, &items[i], s, o->span_replays, &t->span, &t->span_kernels);
        if (sp) {
            snprintf(t->span_note, sizeof t->span_note, "%s", rf_status_message(sp));
            rf_status_free(sp);
        } else {
            t->have_span = 1;
        }
    }
done:
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    rf_free(a, buf);
    return st;
}
