/* The fake cuBLASLt of the fault-injection test (fake_cuda.h): handles, descriptors,
 * layouts and preferences are tracked host objects; the heuristic offers FAKE_ALGOS
 * algorithms; a matmul checks that each operand lies inside a live device buffer as large
 * as its layout says, then enqueues one kernel (a node when the stream is capturing) and
 * computes nothing. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

#define FAKE_ALGOS 2 /* two candidates, so the tuning's choice between them runs */

struct cublasLtContext {
    int magic;
};

/* What a layout records, kept in the opaque's data words. */
typedef struct fake_layout {
    uint64_t type, rows, cols, ld;
} fake_layout_t;

#define INJECT(call, err)                                                                          \
    do {                                                                                           \
        if (fake_cuda_inject(call, #err))                                                          \
            return err;                                                                            \
    } while (0)

static cublasStatus_t create(int kind, void **out, size_t size, const char *call) {
    if (fake_cuda_inject(call, "CUBLAS_STATUS_ALLOC_FAILED"))
        return CUBLAS_STATUS_ALLOC_FAILED;
    *out = fake_cuda_new(kind, size);
    return *out ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

static cublasStatus_t destroy(int kind, void *p, const char *call) {
    return fake_cuda_delete(kind, p, call) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

static int live(int kind, const void *p, const char *call) {
    return fake_cuda_check(kind, p, call);
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    if (fake_cuda_inject("cublasLtCreate", "CUBLAS_STATUS_NOT_INITIALIZED"))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *h = fake_cuda_new(FAKE_LT_HANDLE, sizeof(**h));
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    return destroy(FAKE_LT_HANDLE, h, "cublasLtDestroy");
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    (void)compute, (void)scale;
    return create(FAKE_LT_DESC, (void **)d, sizeof(**d), "cublasLtMatmulDescCreate");
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    return destroy(FAKE_LT_DESC, d, "cublasLtMatmulDescDestroy");
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size) {
    (void)attr, (void)buf, (void)size;
    if (!live(FAKE_LT_DESC, d, "cublasLtMatmulDescSetAttribute"))
        return CUBLAS_STATUS_INVALID_VALUE;
    INJECT("cublasLtMatmulDescSetAttribute", CUBLAS_STATUS_INVALID_VALUE);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    fake_layout_t f = {(uint64_t)type, rows, cols, (uint64_t)ld};
    cublasStatus_t s =
        create(FAKE_LT_LAYOUT, (void **)l, sizeof(**l), "cublasLtMatrixLayoutCreate");
    if (s == CUBLAS_STATUS_SUCCESS)
        memcpy((*l)->data, &f, sizeof(f));
    return s;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    return destroy(FAKE_LT_LAYOUT, l, "cublasLtMatrixLayoutDestroy");
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    return create(FAKE_LT_PREF, (void **)p, sizeof(**p), "cublasLtMatmulPreferenceCreate");
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    return destroy(FAKE_LT_PREF, p, "cublasLtMatmulPreferenceDestroy");
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
    (void)attr, (void)buf, (void)size;
    if (!live(FAKE_LT_PREF, p, "cublasLtMatmulPreferenceSetAttribute"))
        return CUBLAS_STATUS_INVALID_VALUE;
    INJECT("cublasLtMatmulPreferenceSetAttribute", CUBLAS_STATUS_INVALID_VALUE);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
                                              cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *found) {
    const char *call = "cublasLtMatmulAlgoGetHeuristic";
    if (!live(FAKE_LT_HANDLE, h, call) || !live(FAKE_LT_DESC, d, call) ||
        !live(FAKE_LT_LAYOUT, a, call) || !live(FAKE_LT_LAYOUT, b, call) ||
        !live(FAKE_LT_LAYOUT, c, call) || !live(FAKE_LT_LAYOUT, dl, call) ||
        !live(FAKE_LT_PREF, p, call))
        return CUBLAS_STATUS_INVALID_VALUE;
    INJECT(call, CUBLAS_STATUS_NOT_SUPPORTED);
    *found = requested < FAKE_ALGOS ? requested : FAKE_ALGOS;
    for (int i = 0; i < *found; i++) {
        memset(&results[i], 0, sizeof(results[i]));
        results[i].algo.data[0] = (uint64_t)i + 1;
        results[i].state = CUBLAS_STATUS_SUCCESS;
        results[i].wavesCount = 1.0f;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void *buf, size_t size, size_t *written) {
    uint32_t v = (uint32_t)algo->data[0];
    (void)attr;
    INJECT("cublasLtMatmulAlgoConfigGetAttribute", CUBLAS_STATUS_INVALID_VALUE);
    if (size < sizeof(v))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, &v, sizeof(v));
    if (written)
        *written = sizeof(v);
    return CUBLAS_STATUS_SUCCESS;
}

/* The operand's bytes by its layout: ld * (cols - 1) + rows elements. */
static int operand_ok(const void *p, cublasLtMatrixLayout_t l, const char *what) {
    fake_layout_t f;
    size_t elem;
    memcpy(&f, l->data, sizeof(f));
    elem = f.type == CUDA_R_16F ? 2 : f.type == CUDA_R_32F ? 4 : 0;
    if (!elem || f.rows < 1 || f.cols < 1 || f.ld < f.rows) {
        fake_cuda_bad("cublasLtMatmul: layout of %s is not modelled or not valid", what);
        return 0;
    }
    return fake_cuda_range(p, (size_t)(f.ld * (f.cols - 1) + f.rows) * elem, "cublasLtMatmul",
                           what);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t la, const void *B,
                              cublasLtMatrixLayout_t lb, const void *beta, const void *C,
                              cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws_size,
                              cudaStream_t stream) {
    const char *call = "cublasLtMatmul";
    int captured;
    if (!live(FAKE_LT_HANDLE, h, call) || !live(FAKE_LT_DESC, d, call) ||
        !live(FAKE_LT_LAYOUT, la, call) || !live(FAKE_LT_LAYOUT, lb, call) ||
        !live(FAKE_LT_LAYOUT, lc, call) || !live(FAKE_LT_LAYOUT, ld, call))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta || !algo || algo->data[0] < 1 || algo->data[0] > FAKE_ALGOS) {
        fake_cuda_bad("cublasLtMatmul: no scale or an algorithm the heuristic did not give");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (!operand_ok(A, la, "A") || !operand_ok(B, lb, "B") || !operand_ok(C, lc, "C") ||
        !operand_ok(D, ld, "D") ||
        (ws_size && !fake_cuda_range(workspace, ws_size, call, "workspace")))
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (fake_cuda_enqueue(stream, cudaGraphNodeTypeKernel, call,
                              "CUBLAS_STATUS_EXECUTION_FAILED", &captured)) {
    case FAKE_GO:
        return CUBLAS_STATUS_SUCCESS;
    case FAKE_INJECTED:
        return CUBLAS_STATUS_EXECUTION_FAILED;
    default:
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
}

const char *cublasLtGetStatusName(cublasStatus_t s) {
    switch (s) {
#define NAME(e)                                                                                    \
    case e:                                                                                        \
        return #e;
        NAME(CUBLAS_STATUS_SUCCESS)
        NAME(CUBLAS_STATUS_NOT_INITIALIZED)
        NAME(CUBLAS_STATUS_ALLOC_FAILED)
        NAME(CUBLAS_STATUS_INVALID_VALUE)
        NAME(CUBLAS_STATUS_NOT_SUPPORTED)
        NAME(CUBLAS_STATUS_EXECUTION_FAILED)
#undef NAME
    default:
        return "CUBLAS_STATUS_UNKNOWN";
    }
}

const char *cublasLtGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "success" : "injected by the fake cuBLASLt";
}
