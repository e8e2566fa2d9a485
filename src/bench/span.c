/* GPU span of one replay from CUPTI activity records (see harness.h). CUPTI is loaded with
 * dlopen so the rowfuse CLI starts on machines without it. CUPTI's buffer callbacks carry
 * no user pointer, so the records of the current measurement go to one file-level
 * collector; measurements are not thread-safe (the bench is single-threaded). */
#define _POSIX_C_SOURCE 200809L
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/harness.h"

typedef CUptiResult (*rf_cupti_enable_fn)(CUpti_ActivityKind);
typedef CUptiResult (*rf_cupti_register_fn)(CUpti_BuffersCallbackRequestFunc,
                                            CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*rf_cupti_flush_fn)(uint32_t);
typedef CUptiResult (*rf_cupti_next_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*rf_cupti_str_fn)(CUptiResult, const char **);

static struct {
    void *lib;
    rf_cupti_enable_fn enable, disable;
    rf_cupti_register_fn register_callbacks;
    rf_cupti_flush_fn flush_all;
    rf_cupti_next_fn next_record;
    rf_cupti_str_fn result_string;
    int ready;
    /* the collector of the measurement in progress */
    uint64_t *starts, *ends;
    size_t count, capacity;
    int overflow;
} rf_cupti;

#define RF_CUPTI_BUFFER (1u << 20)

static void rf_cupti_request(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, RF_CUPTI_BUFFER);
    *size = *buffer ? RF_CUPTI_BUFFER : 0;
    *max_records = 0;
}

static void rf_cupti_complete(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
                              size_t valid) {
    CUpti_Activity *rec = NULL;
    (void)ctx;
    (void)stream_id;
    (void)size;
    while (rf_cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (rf_cupti.count < rf_cupti.capacity) {
            rf_cupti.starts[rf_cupti.count] = k->start;
            rf_cupti.ends[rf_cupti.count] = k->end;
            rf_cupti.count++;
        } else {
            rf_cupti.overflow = 1;
        }
    }
    free(buffer);
}

static rf_status_t rf_cupti_status(CUptiResult r, const char *what) {
    const char *msg = "unknown CUPTI error";
    if (r == CUPTI_SUCCESS)
        return RF_OK;
    if (rf_cupti.result_string)
        (void)rf_cupti.result_string(r, &msg);
    return RF_ERR(RF_CODE_CUDA_ERROR, "%s: CUPTI error %d: %s", what, (int)r, msg);
}

rf_status_t rf_bench_span_init(void) {
    if (rf_cupti.ready)
        return RF_OK;
    const char *names[4] = {getenv("ROWFUSE_CUPTI_LIB"), "libcupti.so.13", "libcupti.so",
                            "libcupti.so.12"};
    for (int i = 0; i < 4 && !rf_cupti.lib; i++)
        if (names[i] && names[i][0])
            rf_cupti.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!rf_cupti.lib)
        return RF_ERR(RF_CODE_NOT_FOUND,
                      "CUPTI not found (set ROWFUSE_CUPTI_LIB or LD_LIBRARY_PATH): %s", dlerror());
    /* dlsym returns void*; going through memcpy keeps -Wpedantic quiet about the cast. */
    void *sym;
#define RF_CUPTI_SYM(field, name)                                                                  \
    do {                                                                                           \
        sym = dlsym(rf_cupti.lib, name);                                                           \
        if (!sym)                                                                                  \
            return RF_ERR(RF_CODE_NOT_FOUND, "CUPTI lacks %s", name);                              \
        memcpy(&rf_cupti.field, &sym, sizeof sym);                                                 \
    } while (0)
    RF_CUPTI_SYM(enable, "cuptiActivityEnable");
    RF_CUPTI_SYM(disable, "cuptiActivityDisable");
    RF_CUPTI_SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    RF_CUPTI_SYM(flush_all, "cuptiActivityFlushAll");
    RF_CUPTI_SYM(next_record, "cuptiActivityGetNextRecord");
    RF_CUPTI_SYM(result_string, "cuptiGetResultString");
#undef RF_CUPTI_SYM
    RF_RETURN_IF_ERROR_PLAIN(
        rf_cupti_status(rf_cupti.register_callbacks(rf_cupti_request, rf_cupti_complete),
                        "cuptiActivityRegisterCallbacks"));
    /* Start and stop once now, before any graph is captured. */
    RF_RETURN_IF_ERROR_PLAIN(rf_cupti_status(rf_cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                                             "cuptiActivityEnable"));
    (void)rf_cupti.flush_all(1);
    (void)rf_cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    rf_cupti.count = 0;
    rf_cupti.ready = 1;
    return RF_OK;
}

static int rf_bench_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

rf_status_t rf_bench_span_measure(rf_allocator_t a, const rf_bench_item_t *item,
                                  cudaStream_t stream, int replays, rf_bench_summary_t *out_span,
                                  int *out_kernels) {
    rf_status_t st = RF_OK;
    *out_kernels = 0;
    if (!rf_cupti.ready)
        return RF_ERR(RF_CODE_NOT_FOUND, "CUPTI was not initialized (no span)");
    size_t cap = (size_t)replays * 64, n;
    uint64_t *mem = NULL;
    double *spans = NULL;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(a, 2 * cap * sizeof(uint64_t), "CUPTI records", (void **)&mem));
    rf_cupti.starts = mem;
    rf_cupti.ends = mem + cap;
    rf_cupti.count = 0;
    rf_cupti.capacity = cap;
    rf_cupti.overflow = 0;
    (void)cudaDeviceSynchronize();
    if ((st = rf_cupti_status(rf_cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                              "cuptiActivityEnable")))
        goto done;
    for (int i = 0; i < replays && !st; i++) {
        st = item->replay(item->replay_ctx, stream);
        cudaError_t err = cudaStreamSynchronize(stream);
        if (!st && err != cudaSuccess)
            st = RF_ERR(RF_CODE_CUDA_ERROR, "cudaStreamSynchronize: %s", cudaGetErrorName(err));
    }
    (void)rf_cupti.flush_all(1);
    (void)rf_cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (st)
        goto done;
    n = rf_cupti.count;
    if (rf_cupti.overflow || n == 0 || n % (size_t)replays) {
        st = RF_ERR(RF_CODE_MISMATCH,
                    "CUPTI saw %zu kernel records%s for %d replays (not a multiple)", n,
                    rf_cupti.overflow ? " (buffer full)" : "", replays);
        goto done;
    }
    /* Records arrive per buffer, not in time order: sort by start, then chunk. Ends are
     * taken per chunk from the matching records, so sort pairs by start. */
    {
        size_t k = n / (size_t)replays;
        uint64_t *pairs = NULL;
        if ((st = rf_alloc(a, 2 * n * sizeof(uint64_t), "record pairs", (void **)&pairs)))
            goto done;
        for (size_t i = 0; i < n; i++) {
            pairs[2 * i] = rf_cupti.starts[i];
            pairs[2 * i + 1] = rf_cupti.ends[i];
        }
        qsort(pairs, n, 2 * sizeof(uint64_t), rf_bench_cmp_u64);
        if ((st = rf_alloc(a, (size_t)replays * sizeof(double), "spans", (void **)&spans))) {
            rf_free(a, pairs);
            goto done;
        }
        for (int r = 0; r < replays; r++) {
            uint64_t lo = UINT64_MAX, hi = 0;
            for (size_t i = (size_t)r * k; i < (size_t)(r + 1) * k; i++) {
                lo = pairs[2 * i] < lo ? pairs[2 * i] : lo;
                hi = pairs[2 * i + 1] > hi ? pairs[2 * i + 1] : hi;
            }
            spans[r] = (double)(hi - lo) * 1e-3; /* ns -> us */
        }
        rf_free(a, pairs);
        *out_kernels = (int)k;
        st = rf_bench_summarize(a, spans, (size_t)replays, out_span);
    }
done:
    rf_cupti.starts = rf_cupti.ends = NULL;
    rf_cupti.capacity = 0;
    rf_free(a, spans);
    rf_free(a, mem);
    return st;
}
