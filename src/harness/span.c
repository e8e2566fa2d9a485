/* CUPTI kernel activity records collected while the harness times (see bench_loop.h). CUPTI is
 * loaded with dlopen so the rowfuse CLI starts on machines without it. CUPTI's buffer
 * callbacks carry no user pointer, so the records of the collection in progress go to one
 * file-level collector; collections are not thread-safe (the bench is single-threaded).
 * Which record belongs to which observation is decided by base/span_attr.c. */
#define _POSIX_C_SOURCE 200809L
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench_loop.h"

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
    /* the collector of the collection in progress */
    rf_bench_kernel_record_t *records;
    size_t count, capacity, seen;
    int enabled;
} rf_cupti;

/* Large enough that a bench run's records (thousands of ~200-byte kernel records) fill no
 * buffer while timing: CUPTI then hands buffers over at the final flush, not mid-round. */
#define RF_CUPTI_BUFFER (16u << 20)

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
            rf_bench_kernel_record_t *r = &rf_cupti.records[rf_cupti.count++];
            r->start = k->start;
            r->end = k->end;
            r->correlation = k->correlationId;
        }
        rf_cupti.seen++;
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
    rf_cupti.count = rf_cupti.seen = 0;
    rf_cupti.ready = 1;
    return RF_OK;
}

int rf_bench_span_ready(void) {
    return rf_cupti.ready;
}

rf_status_t rf_bench_span_begin(rf_allocator_t a, size_t capacity) {
    if (!rf_cupti.ready)
        return RF_ERR(RF_CODE_NOT_FOUND, "CUPTI was not initialized (no span)");
    if (rf_cupti.enabled)
        return RF_ERR(RF_CODE_INTERNAL, "a CUPTI collection is already in progress");
    size_t bytes;
    if (capacity == 0 || rf_mul_size(capacity, sizeof(rf_bench_kernel_record_t), &bytes))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "CUPTI collection of %zu records", capacity);
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(a, bytes, "CUPTI kernel records", (void **)&rf_cupti.records));
    rf_cupti.count = rf_cupti.seen = 0;
    rf_cupti.capacity = capacity;
    (void)cudaDeviceSynchronize();
    rf_status_t st = rf_cupti_status(rf_cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                                     "cuptiActivityEnable");
    if (st) {
        rf_free(a, rf_cupti.records);
        rf_cupti.records = NULL;
        rf_cupti.capacity = 0;
        return st;
    }
    rf_cupti.enabled = 1;
    return RF_OK;
}

rf_status_t rf_bench_span_end(rf_allocator_t a, rf_bench_kernel_record_t **out_records,
                              size_t *out_count) {
    *out_records = NULL;
    *out_count = 0;
    if (!rf_cupti.enabled)
        return RF_ERR(RF_CODE_INTERNAL, "no CUPTI collection in progress");
    (void)cudaDeviceSynchronize();
    rf_status_t st = rf_cupti_status(rf_cupti.flush_all(1), "cuptiActivityFlushAll");
    (void)rf_cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    rf_cupti.enabled = 0;
    if (!st && rf_cupti.seen > rf_cupti.capacity)
        st = RF_ERR(RF_CODE_MISMATCH,
                    "CUPTI delivered %zu kernel records, more than the %zu the observations' "
                    "graphs can leave",
                    rf_cupti.seen, rf_cupti.capacity);
    if (st) {
        rf_free(a, rf_cupti.records);
    } else {
        *out_records = rf_cupti.records;
        *out_count = rf_cupti.count;
    }
    rf_cupti.records = NULL;
    rf_cupti.capacity = rf_cupti.count = rf_cupti.seen = 0;
    return st;
}
