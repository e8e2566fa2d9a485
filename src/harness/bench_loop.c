/* The interleaved timing loop of the C bench; see bench_loop.h for what is measured and how.
 * Observations are kept in flat arrays [item][round*obs] so the summaries see every one. */
#define _POSIX_C_SOURCE 200809L
#include "harness/bench_loop.h"

#include "rowfuse/rng.h"

#include <stdint.h>
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
static rf_status_t rf_bench_observe(const rf_bench_options_t *o, rf_bench_enqueue_fn fn, void *ctx,
                                    cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                                    double *out_event_us, double *out_host_us) {
    float ms = 0.0f;
    if (o->flush && o->flush_bytes > 0) { /* cold L2: outside the events and the host clock */
        RF_RETURN_IF_ERROR_PLAIN(
            rf_bench_cuda(cudaMemsetAsync(o->flush, 0x5a, (size_t)o->flush_bytes, s),
                          "cudaMemsetAsync(L2 flush)"));
        RF_RETURN_IF_ERROR_PLAIN(rf_bench_cuda(cudaStreamSynchronize(s), "L2 flush"));
    }
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
 * eager selects the eager enqueue (items without one are skipped). Observation k of round
 * r of item i lands at [i][r*obs + k] of ev and host; seq (may be NULL) receives the item
 * of every observation in execution order. */
static rf_status_t rf_bench_interleave(const rf_bench_options_t *o, int rounds, int obs,
                                       uint64_t seed, const rf_bench_item_t *items, int n,
                                       int eager, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                                       double *ev, double *host, int *seq) {
    size_t per = (size_t)rounds * (size_t)obs, done = 0;
    int order[64];
    rf_rng_t rng;
    rf_rng_seed(&rng, seed);
    if (n > 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "at most 64 items are interleaved, not %d", n);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < obs; k++) {
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
                size_t at = (size_t)i * per + (size_t)r * (size_t)obs + (size_t)k;
                RF_RETURN_IF_ERROR(rf_bench_observe(o, fn, ctx, s, e0, e1, &ev[at], &host[at]),
                                   "%s %s observation %d of round %d", it->name,
                                   eager ? "eager" : "graph", k, r);
                if (seq)
                    seq[done++] = i;
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

/* Every item's note when the span is missing for the whole run. */
static void rf_bench_span_note_all(rf_bench_timing_t *out, int n, int failed, rf_status_t why) {
    for (int i = 0; i < n; i++) {
        snprintf(out[i].span_note, sizeof out[i].span_note, "%s%s", failed ? "FAILED: " : "",
                 rf_status_message(why));
        out[i].span_failed = failed;
    }
    rf_status_free(why);
}

/* The records of the graph rounds -> a span per observation (seq gives each one's item),
 * summarized per item. An attribution error marks every item's span FAILED. */
static rf_status_t rf_bench_spans(rf_allocator_t a, const rf_bench_options_t *o,
                                  const rf_bench_item_t *items, int n, const int *seq, size_t nobs,
                                  rf_bench_kernel_record_t *recs, size_t nrec,
                                  rf_bench_timing_t *out) {
    size_t per = (size_t)o->rounds * (size_t)o->observations, bytes;
    int *expected = NULL;
    double *spans = NULL, *by_item = NULL;
    rf_status_t st;
    if (rf_mul_size(nobs, 2 * sizeof(double) + sizeof(int), &bytes))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "too many observations");
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, bytes, "spans", (void **)&spans));
    by_item = spans + nobs;
    expected = (int *)(by_item + nobs);
    for (size_t j = 0; j < nobs; j++)
        expected[j] = items[seq[j]].kernels;
    rf_status_t attr = rf_bench_span_attribute(recs, nrec, expected, nobs, o->attribution, spans);
    if (attr) {
        rf_bench_span_note_all(out, n, 1,
                               rf_status_annotate(attr, "GPU span (%s attribution of %zu records)",
                                                  rf_bench_attribution_name(o->attribution), nrec));
        rf_free(a, spans);
        return RF_OK;
    }
    /* spans are in execution order; regroup per item keeping each item's own order */
    size_t fill[64] = {0};
    for (size_t j = 0; j < nobs; j++)
        by_item[(size_t)seq[j] * per + fill[seq[j]]++] = spans[j];
    st = RF_OK;
    for (int i = 0; i < n && !st; i++) {
        st = rf_bench_summarize(a, by_item + (size_t)i * per, fill[i], &out[i].span);
        if (!st) {
            out[i].have_span = 1;
            out[i].span_kernels = items[i].kernels;
        }
    }
    rf_free(a, spans);
    return st;
}

rf_status_t rf_bench_time_items(rf_allocator_t a, const rf_bench_options_t *o,
                                const rf_bench_item_t *items, int n, cudaStream_t s,
                                rf_bench_timing_t *out) {
    if (!o || !items || n < 1 || n > 64 || !out || o->rounds < 1 || o->observations < 1 ||
        o->b2b_replays < 1 || o->b2b_samples < 1 || o->control_observations < 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_bench_time_items: need 1..64 items and rounds, observations, b2b "
                      "replays and b2b samples >= 1, control observations >= 0");
    for (int i = 0; i < n; i++)
        if (items[i].kernels < 1)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "item %s: %d kernels per replay", items[i].name,
                          items[i].kernels);
    size_t per = (size_t)o->rounds * (size_t)o->observations, total, bytes;
    size_t cper = (size_t)o->control_observations, ctotal = cper * (size_t)n;
    if (rf_mul_size(per, (size_t)n, &total) ||
        rf_mul_size(4 * total + 2 * ctotal + (size_t)o->b2b_samples, sizeof(double), &bytes) ||
        total > (size_t)INT32_MAX)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "too many observations");
    double *buf = NULL;
    int *seq = NULL;
    rf_bench_kernel_record_t *recs = NULL;
    size_t nrec = 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    rf_status_t st;
    RF_RETURN_IF_ERROR(rf_alloc(a, bytes, "observations", (void **)&buf), "while timing %d items",
                       n);
    double *gev = buf, *ghost = buf + total, *eev = buf + 2 * total, *ehost = buf + 3 * total;
    double *cev = buf + 4 * total, *chost = cev + ctotal, *scratch = chost + ctotal;
    memset(out, 0, sizeof(*out) * (size_t)n);
    if ((st = rf_alloc(a, total * sizeof(int), "observation order", (void **)&seq)))
        goto done;
    if ((st = rf_bench_cuda(cudaEventCreate(&e0), "cudaEventCreate")) ||
        (st = rf_bench_cuda(cudaEventCreate(&e1), "cudaEventCreate")))
        goto done;

    /* 1. graph rounds, CUPTI on when asked and available */
    int cupti = 0;
    if (o->span && rf_bench_span_ready()) {
        size_t kernels = 0;
        for (int i = 0; i < n; i++)
            kernels += (size_t)items[i].kernels;
        rf_status_t b = rf_bench_span_begin(a, 2 * per * kernels + 256);
        if (b)
            rf_bench_span_note_all(out, n, 0, b);
        else
            cupti = 1;
    } else {
        rf_bench_span_note_all(out, n, 0,
                               RF_ERR(RF_CODE_NOT_FOUND, "%s",
                                      o->span ? "CUPTI unavailable (see the run's progress "
                                                "lines): no GPU span"
                                              : "CUPTI off for this run (--no-span): no GPU span"));
    }
    st = rf_bench_interleave(o, o->rounds, o->observations, 0xbe4c4ull, items, n, 0, s, e0, e1, gev,
                             ghost, seq);
    if (cupti) {
        rf_status_t e = rf_bench_span_end(a, &recs, &nrec);
        if (!st && e)
            rf_bench_span_note_all(out, n, 1, rf_status_annotate(e, "GPU span"));
        else if (e)
            rf_status_free(e);
        else if (!st)
            st = rf_bench_spans(a, o, items, n, seq, total, recs, nrec, out);
        for (int i = 0; i < n; i++)
            out[i].cupti = 1;
    }
    if (st)
        goto done;

    /* 2. the control round without CUPTI: does CUPTI move the host figures? */
    if (cupti && cper > 0) {
        if ((st = rf_bench_interleave(o, 1, o->control_observations, 0xc0417ull, items, n, 0, s, e0,
                                      e1, cev, chost, NULL)))
            goto done;
        for (int i = 0; i < n && !st; i++) {
            if (!(st = rf_bench_summarize(a, cev + (size_t)i * cper, cper, &out[i].control_event)))
                st = rf_bench_summarize(a, chost + (size_t)i * cper, cper, &out[i].control_host);
            out[i].have_control = !st;
        }
        if (st)
            goto done;
    }

    /* 3. eager rounds, then the summaries and back-to-back replays */
    if ((st = rf_bench_interleave(o, o->rounds, o->observations, 0xbe4c5ull, items, n, 1, s, e0, e1,
                                  eev, ehost, NULL)))
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
        st = rf_bench_back_to_back(a, o, &items[i], s, e0, e1, scratch, &t->b2b);
    }
done:
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    rf_free(a, recs);
    rf_free(a, seq);
    rf_free(a, buf);
    return st;
}
