/* The two ceilings a roofline fraction is measured against, taken on the device in the same
 * run as the variants (see bench_loop.h):
 *   copy  a device-to-device cudaMemcpyAsync of RF_CEIL_COPY_BYTES: every byte read once
 *         and written once, so the achievable bandwidth is 2 x bytes / time. The buffer is
 *         far larger than the L2, so this is HBM, not cache.
 *   gemm  one fp16 GEMM of RF_CEIL_GEMM_N^3 through cuBLASLt (fp32 accumulation, fp16
 *         output, the heuristic's top algorithms timed and the best kept): the achievable
 *         tensor rate, 2 N^3 / time.
 * Each is the median of RF_CEIL_REPS timed launches after RF_CEIL_WARMUP untimed ones
 * (events on one stream). Both are best-effort: a failure is reported with its reason
 * and the bench goes on without ceilings. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "harness/bench_loop.h"

#define RF_CEIL_COPY_BYTES ((size_t)1 << 30) /* 1 GiB each way */
#define RF_CEIL_GEMM_N 8192
#define RF_CEIL_REPS 20
#define RF_CEIL_WARMUP 3
#define RF_CEIL_ALGOS 8

#define CEIL_CUDA(call)                                                                            \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            st = RF_ERR(RF_CODE_CUDA_ERROR, "%s: %s", #call, cudaGetErrorString(e_));              \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define CEIL_LT(call)                                                                              \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            st = RF_ERR(RF_CODE_CUDA_ERROR, "%s: cuBLAS status %d", #call, (int)s_);               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* Median of RF_CEIL_REPS event-timed calls of fn (after the warm-up), in microseconds. */
typedef cudaError_t (*ceil_fn)(void *ctx, cudaStream_t s);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static rf_status_t time_median(ceil_fn fn, void *ctx, cudaStream_t s, double *out_us) {
    rf_status_t st = RF_OK;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double us[RF_CEIL_REPS];
    CEIL_CUDA(cudaEventCreate(&e0));
    CEIL_CUDA(cudaEventCreate(&e1));
    for (int i = 0; i < RF_CEIL_WARMUP; i++)
        CEIL_CUDA(fn(ctx, s));
    for (int i = 0; i < RF_CEIL_REPS; i++) {
        float ms = 0;
        CEIL_CUDA(cudaEventRecord(e0, s));
        CEIL_CUDA(fn(ctx, s));
        CEIL_CUDA(cudaEventRecord(e1, s));
        CEIL_CUDA(cudaEventSynchronize(e1));
        CEIL_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        us[i] = 1e3 * ms;
    }
    qsort(us, RF_CEIL_REPS, sizeof us[0], cmp_double);
    *out_us = rf_bench_quantile_sorted(us, RF_CEIL_REPS, 0.5);
done:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return st;
}

typedef struct {
    void *dst, *src;
} copy_ctx_t;

static cudaError_t run_copy(void *ctx, cudaStream_t s) {
    copy_ctx_t *c = ctx;
    return cudaMemcpyAsync(c->dst, c->src, RF_CEIL_COPY_BYTES, cudaMemcpyDeviceToDevice, s);
}

static rf_status_t ceiling_copy(cudaStream_t s, rf_bench_ceilings_t *out) {
    rf_status_t st = RF_OK;
    copy_ctx_t c = {0};
    double us = 0;
    CEIL_CUDA(cudaMalloc(&c.src, RF_CEIL_COPY_BYTES));
    CEIL_CUDA(cudaMalloc(&c.dst, RF_CEIL_COPY_BYTES));
    CEIL_CUDA(cudaMemsetAsync(c.src, 0x3c, RF_CEIL_COPY_BYTES, s));
    if ((st = time_median(run_copy, &c, s, &us)))
        goto done;
    out->copy_bytes = 2.0 * (double)RF_CEIL_COPY_BYTES;
    out->copy_us = us;
    out->bandwidth_gbs = out->copy_bytes / us * 1e-3;
done:
    cudaFree(c.src);
    cudaFree(c.dst);
    return st;
}

typedef struct {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t layout;
    const cublasLtMatmulAlgo_t *algo;
    void *a, *b, *d, *work;
    size_t work_bytes;
} gemm_ctx_t;

static cudaError_t run_gemm(void *ctx, cudaStream_t s) {
    gemm_ctx_t *g = ctx;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t b =
        cublasLtMatmul(g->lt, g->desc, &one, g->a, g->layout, g->b, g->layout, &zero, g->d,
                       g->layout, g->d, g->layout, g->algo, g->work, g->work_bytes, s);
    return b == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorLaunchFailure;
}

static rf_status_t ceiling_gemm(cudaStream_t s, rf_bench_ceilings_t *out) {
    rf_status_t st = RF_OK;
    const int n = RF_CEIL_GEMM_N;
    const size_t bytes = (size_t)n * n * 2;
    gemm_ctx_t g = {0};
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t found[RF_CEIL_ALGOS];
    int nfound = 0;
    g.work_bytes = (size_t)64 << 20;
    CEIL_LT(cublasLtCreate(&g.lt));
    CEIL_CUDA(cudaMalloc(&g.a, bytes));
    CEIL_CUDA(cudaMalloc(&g.b, bytes));
    CEIL_CUDA(cudaMalloc(&g.d, bytes));
    CEIL_CUDA(cudaMalloc(&g.work, g.work_bytes));
    CEIL_CUDA(cudaMemsetAsync(g.a, 0x3c, bytes, s)); /* fp16 1.0625: finite products */
    CEIL_CUDA(cudaMemsetAsync(g.b, 0x1c, bytes, s)); /* fp16 ~0.0041 */
    CEIL_LT(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CEIL_LT(cublasLtMatrixLayoutCreate(&g.layout, CUDA_R_16F, n, n, n));
    CEIL_LT(cublasLtMatmulPreferenceCreate(&pref));
    CEIL_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &g.work_bytes, sizeof g.work_bytes));
    CEIL_LT(cublasLtMatmulAlgoGetHeuristic(g.lt, g.desc, g.layout, g.layout, g.layout, g.layout,
                                           pref, RF_CEIL_ALGOS, found, &nfound));
    if (nfound < 1) {
        st = RF_ERR(RF_CODE_UNSUPPORTED, "cuBLASLt offers no algorithm for the %d^3 fp16 GEMM", n);
        goto done;
    }
    out->gemm_us = 0;
    for (int i = 0; i < nfound; i++) {
        double us = 0;
        g.algo = &found[i].algo;
        rf_status_t t = time_median(run_gemm, &g, s, &us);
        if (t) { /* an algorithm that fails is skipped: the ceiling is the best that runs */
            rf_status_free(t);
            continue;
        }
        if (out->gemm_us == 0 || us < out->gemm_us)
            out->gemm_us = us;
    }
    if (out->gemm_us == 0) {
        st = RF_ERR(RF_CODE_CUDA_ERROR, "none of cuBLASLt's %d algorithms ran the %d^3 GEMM",
                    nfound, n);
        goto done;
    }
    out->gemm_flops = 2.0 * (double)n * n * n;
    out->tflops = out->gemm_flops / out->gemm_us * 1e-6;
    out->gemm_algos = nfound;
done:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (g.layout)
        cublasLtMatrixLayoutDestroy(g.layout);
    if (g.desc)
        cublasLtMatmulDescDestroy(g.desc);
    if (g.lt)
        cublasLtDestroy(g.lt);
    cudaFree(g.a);
    cudaFree(g.b);
    cudaFree(g.d);
    cudaFree(g.work);
    return st;
}

void rf_bench_ceilings_measure(void *stream, rf_bench_ceilings_t *out) {
    cudaStream_t s = stream;
    memset(out, 0, sizeof *out);
    rf_status_t st = ceiling_copy(s, out);
    if (st) {
        snprintf(out->note, sizeof out->note, "copy: %s", rf_status_message(st));
        rf_status_free(st);
        cudaGetLastError();
    }
    st = ceiling_gemm(s, out);
    if (st) {
        size_t used = strlen(out->note);
        snprintf(out->note + used, sizeof out->note - used, "%sgemm: %s", used ? "; " : "",
                 rf_status_message(st));
        rf_status_free(st);
        cudaGetLastError();
    }
    cudaStreamSynchronize(s);
}
