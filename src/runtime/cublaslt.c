/* The vendor baseline, "cublaslt": the residual-MLP block with cuBLASLt matmuls and
 * epilogues, enqueued on the caller's stream so it can be captured into a CUDA Graph.
 *
 * cuBLASLt is column-major; a row-major [M,K] matrix is the column-major [K,M] one, so
 *   H^T [H,M] = W1^T [H,C] * X^T [C,M]   A = W1 (H x C, ld H), B = X (C x M, ld C)
 *   Y^T [C,M] = W2^T [C,H] * H^T [H,M]   A = W2 (C x H, ld C), B = H (H x M, ld H)
 * and the bias vectors (b1 length H, b2 length C) run along D's rows as cuBLASLt wants.
 *
 * Launch (each step one or more kernels):
 *   1. glue kernel: Y = f32(X)                        (the residual, upcast)
 *   2. matmul 1: H = fp16(ReLU(W1^T X^T + b1))        epilogue RELU_BIAS, D fp16
 *   3. matmul 2: Y = ReLU(W2^T H^T + 1 * Y + b2)      epilogue RELU_BIAS, C = D = Y f32
 * cuBLASLt adds the bias to alpha*AB + beta*C and then applies ReLU, which is exactly
 * ReLU(H W2 + b2 + X). Compute type CUBLAS_COMPUTE_32F (fp32 accumulate).
 *
 * Fallbacks, decided once at the first planning and written in the variant's note:
 * - b1 as f32 with the fp16 output (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) is asked for
 *   first; cuBLASLt 13.0 on sm_90 answers CUBLAS_STATUS_INVALID_VALUE (seen on the H200),
 *   so b1 is then rounded to fp16 by a glue kernel in the launch and the bias type left
 *   at its default (D's type).
 * - if no algorithm takes RELU_BIAS for matmul 2 (in place, beta = 1), it runs with the
 *   BIAS epilogue and a glue kernel applies the ReLU. */
#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

#define RF_LT_WORKSPACE (32u << 20)

typedef struct lt_gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulAlgo_t algo;
} lt_gemm_t;

typedef struct lt_state {
    cublasLtHandle_t handle;
    void *workspace;
    void *b1_f16;      /* [H] fp16, used only when the f32 b1 is rejected */
    int bias1_f32;     /* 1: matmul 1 takes b1 as f32; 0: fp16 copy; -1: not decided */
    int relu2_fused;   /* 1: matmul 2 has RELU_BIAS; 0: BIAS + glue ReLU; -1: not decided */
    int64_t plan_rows; /* rows the gemms below were planned for; 0 = none */
    lt_gemm_t g1, g2;
} lt_state_t;

static rf_status_t lt_status(cublasStatus_t s, const char *file, int line, const char *call) {
    rf_code_t code = RF_CODE_CUDA_ERROR;
    if (s == CUBLAS_STATUS_NOT_INITIALIZED || s == CUBLAS_STATUS_ARCH_MISMATCH)
        code = RF_CODE_NO_DEVICE;
    else if (s == CUBLAS_STATUS_ALLOC_FAILED)
        code = RF_CODE_OUT_OF_MEMORY;
    else if (s == CUBLAS_STATUS_NOT_SUPPORTED)
        code = RF_CODE_UNSUPPORTED;
    return rf_status_make(code, file, line, "%s: %s: %s", call, cublasLtGetStatusName(s),
                          cublasLtGetStatusString(s));
}

#define RF_LT(call)                                                                                \
    do {                                                                                           \
        cublasStatus_t rf_lt_s_ = (call);                                                          \
        if (rf_lt_s_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return lt_status(rf_lt_s_, __FILE__, __LINE__, #call);                                 \
    } while (0)

static void gemm_free(lt_gemm_t *g) {
    if (g->desc)
        (void)cublasLtMatmulDescDestroy(g->desc);
    if (g->a)
        (void)cublasLtMatrixLayoutDestroy(g->a);
    if (g->b)
        (void)cublasLtMatrixLayoutDestroy(g->b);
    if (g->c)
        (void)cublasLtMatrixLayoutDestroy(g->c);
    if (g->d)
        (void)cublasLtMatrixLayoutDestroy(g->d);
    memset(g, 0, sizeof(*g));
}

/* D [m, n] (column-major) = epilogue(A [m, k] * B [k, n] + beta C + bias). Picks the
 * heuristic's first algorithm for the workspace we have. A bias pointer is set per launch
 * (it comes with the args); the planning pointer only tells cuBLASLt its alignment. */
static rf_status_t gemm_plan(lt_state_t *lt, lt_gemm_t *g, int64_t m, int64_t n, int64_t k,
                             cudaDataType_t dtype, cudaDataType_t bias_type, cublasLtEpilogue_t epi,
                             const void *bias_align) {
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    cublasOperation_t op = CUBLAS_OP_N;
    int32_t bt = (int32_t)bias_type;
    uint64_t ws = RF_LT_WORKSPACE;
    int found = 0;
    cublasStatus_t s;
    RF_LT(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    RF_LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op)));
    RF_LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof(op)));
    RF_LT(
        cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (bias_type != dtype) /* only when it differs from the default (D's type) */
        RF_LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                             sizeof(bt)));
    RF_LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_align,
                                         sizeof(bias_align)));
    RF_LT(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16F, (uint64_t)m, (uint64_t)k, m));
    RF_LT(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16F, (uint64_t)k, (uint64_t)n, k));
    RF_LT(cublasLtMatrixLayoutCreate(&g->c, dtype, (uint64_t)m, (uint64_t)n, m));
    RF_LT(cublasLtMatrixLayoutCreate(&g->d, dtype, (uint64_t)m, (uint64_t)n, m));
    RF_LT(cublasLtMatmulPreferenceCreate(&pref));
    s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof(ws));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(lt->handle, g->desc, g->a, g->b, g->c, g->d, pref, 1,
                                           &result, &found);
    (void)cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_SUCCESS && found < 1)
        s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (s != CUBLAS_STATUS_SUCCESS) {
        char call[160];
        snprintf(call, sizeof(call),
                 "cublasLtMatmulAlgoGetHeuristic(m=%lld n=%lld k=%lld, D %s, bias %s, %s)",
                 (long long)m, (long long)n, (long long)k, dtype == CUDA_R_16F ? "f16" : "f32",
                 bias_type == CUDA_R_16F ? "f16" : "f32",
                 epi == CUBLASLT_EPILOGUE_RELU_BIAS ? "RELU_BIAS" : "BIAS");
        return lt_status(s, __FILE__, __LINE__, call);
    }
    g->algo = result.algo;
    return RF_OK;
}

static rf_status_t plan(rf_variant_t *v, lt_state_t *lt, const rf_mlp_args_t *args) {
    int64_t m = args->rows, c = v->channels, h = v->hidden;
    rf_status_t st;
    char first_error[160] = "";
    gemm_free(&lt->g1);
    gemm_free(&lt->g2);
    lt->plan_rows = 0;
    if (lt->bias1_f32 != 0) {
        st = gemm_plan(lt, &lt->g1, h, m, c, CUDA_R_16F, CUDA_R_32F, CUBLASLT_EPILOGUE_RELU_BIAS,
                       args->b1);
        if (st && lt->bias1_f32 == -1) { /* first planning: fall back to an fp16 b1 */
            snprintf(first_error, sizeof(first_error), "%s", rf_status_message(st));
            rf_status_free(st);
            gemm_free(&lt->g1);
            lt->bias1_f32 = 0;
        } else if (st) {
            return rf_status_annotate(st, "while planning matmul 1");
        } else {
            lt->bias1_f32 = 1;
        }
    }
    if (lt->bias1_f32 == 0)
        RF_RETURN_IF_ERROR(gemm_plan(lt, &lt->g1, h, m, c, CUDA_R_16F, CUDA_R_16F,
                                     CUBLASLT_EPILOGUE_RELU_BIAS, lt->b1_f16),
                           "while planning matmul 1 with an fp16 bias (after the f32 bias "
                           "was refused: %s)",
                           first_error);
    if (lt->relu2_fused != 0) {
        st = gemm_plan(lt, &lt->g2, c, m, h, CUDA_R_32F, CUDA_R_32F, CUBLASLT_EPILOGUE_RELU_BIAS,
                       args->b2);
        if (st && lt->relu2_fused == -1) {
            rf_status_free(st);
            gemm_free(&lt->g2);
            lt->relu2_fused = 0;
        } else if (st) {
            return rf_status_annotate(st, "while planning matmul 2");
        } else {
            lt->relu2_fused = 1;
        }
    }
    if (lt->relu2_fused == 0)
        RF_RETURN_IF_ERROR(gemm_plan(lt, &lt->g2, c, m, h, CUDA_R_32F, CUDA_R_32F,
                                     CUBLASLT_EPILOGUE_BIAS, args->b2),
                           "while planning matmul 2 with the BIAS epilogue");
    snprintf(v->note, sizeof(v->note),
             "matmul 1: RELU_BIAS, b1 %s; matmul 2: %s, residual through C = f32(X), beta = 1 "
             "(glue kernel upcasts X into Y)",
             lt->bias1_f32 ? "f32" : "rounded to fp16 by a glue kernel (f32 bias refused)",
             lt->relu2_fused ? "RELU_BIAS" : "BIAS + glue ReLU kernel");
    v->kernels_min = 3 + (lt->bias1_f32 ? 0 : 1) + (lt->relu2_fused ? 0 : 1);
    lt->plan_rows = m;
    return RF_OK;
}

static rf_status_t set_bias(lt_gemm_t *g, const void *bias) {
    RF_LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                         sizeof(bias)));
    return RF_OK;
}

static rf_status_t lt_launch(rf_variant_t *v, const rf_mlp_args_t *args, void *stream) {
    lt_state_t *lt = (lt_state_t *)v->impl;
    cudaStream_t s = (cudaStream_t)stream;
    const float one = 1.0f, zero = 0.0f;
    int64_t m = args->rows, c = v->channels, h = v->hidden;
    const void *b1 = args->b1;
    cudaError_t err;
    if (lt->plan_rows != m)
        RF_RETURN_IF_ERROR(plan(v, lt, args), "while planning cuBLASLt for %lld rows",
                           (long long)m);
    if (!lt->bias1_f32) {
        if ((err = rf_glue_f32_to_f16(args->b1, lt->b1_f16, h, s)) != cudaSuccess)
            return rf_cuda_status(err, __FILE__, __LINE__, "glue f32_to_f16(b1)");
        b1 = lt->b1_f16;
    }
    if ((err = rf_glue_f16_to_f32(args->x, args->y, m * c, s)) != cudaSuccess)
        return rf_cuda_status(err, __FILE__, __LINE__, "glue f16_to_f32(X -> Y)");
    RF_RETURN_IF_ERROR_PLAIN(set_bias(&lt->g1, b1));
    RF_RETURN_IF_ERROR_PLAIN(set_bias(&lt->g2, args->b2));
    RF_LT(cublasLtMatmul(lt->handle, lt->g1.desc, &one, args->w1, lt->g1.a, args->x, lt->g1.b,
                         &zero, args->h, lt->g1.c, args->h, lt->g1.d, &lt->g1.algo, lt->workspace,
                         RF_LT_WORKSPACE, s));
    RF_LT(cublasLtMatmul(lt->handle, lt->g2.desc, &one, args->w2, lt->g2.a, args->h, lt->g2.b, &one,
                         args->y, lt->g2.c, args->y, lt->g2.d, &lt->g2.algo, lt->workspace,
                         RF_LT_WORKSPACE, s));
    if (!lt->relu2_fused && (err = rf_glue_relu_f32(args->y, m * c, s)) != cudaSuccess)
        return rf_cuda_status(err, __FILE__, __LINE__, "glue relu_f32(Y)");
    return RF_OK;
}

static void lt_destroy(rf_variant_t *v) {
    lt_state_t *lt = (lt_state_t *)v->impl;
    if (!lt)
        return;
    gemm_free(&lt->g1);
    gemm_free(&lt->g2);
    if (lt->workspace)
        (void)cudaFree(lt->workspace);
    if (lt->b1_f16)
        (void)cudaFree(lt->b1_f16);
    if (lt->handle)
        (void)cublasLtDestroy(lt->handle);
    rf_free(v->allocator, lt);
    v->impl = NULL;
}

static const rf_variant_ops_t lt_ops = {lt_launch, lt_destroy};

static rf_status_t lt_init(rf_variant_t *v) {
    lt_state_t *lt = NULL;
    cudaError_t err;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc_zeroed(v->allocator, 1, sizeof(*lt), "cuBLASLt state", (void **)&lt));
    v->impl = lt;
    lt->bias1_f32 = -1;
    lt->relu2_fused = -1;
    RF_LT(cublasLtCreate(&lt->handle));
    err = cudaMalloc(&lt->workspace, RF_LT_WORKSPACE);
    if (err != cudaSuccess) {
        lt->workspace = NULL;
        return rf_cuda_status(err, __FILE__, __LINE__, "cudaMalloc(cuBLASLt workspace, 32 MiB)");
    }
    /* Allocated now, not at planning time: planning can happen inside a stream capture,
     * where cudaMalloc is not allowed. */
    err = cudaMalloc(&lt->b1_f16, (size_t)v->hidden * 2);
    if (err != cudaSuccess) {
        lt->b1_f16 = NULL;
        return rf_cuda_status(err, __FILE__, __LINE__, "cudaMalloc(b1 as fp16)");
    }
    return RF_OK;
}

rf_status_t rf_variant_create_cublaslt(rf_allocator_t a, int64_t channels, int64_t hidden,
                                       rf_variant_t **out_variant) {
    rf_variant_t *v = NULL;
    rf_status_t st;
    *out_variant = NULL;
    if (channels < 1 || hidden < 1 || channels > RF_MAX_DIM || hidden > RF_MAX_DIM)
        return RF_ERR(RF_CODE_SHAPE_ERROR, "cublaslt: channels=%lld hidden=%lld must be >= 1",
                      (long long)channels, (long long)hidden);
    RF_RETURN_IF_ERROR(rf_device_require(), "while creating the cuBLASLt variant");
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*v), "variant", (void **)&v));
    v->allocator = a;
    v->ops = &lt_ops;
    snprintf(v->name, sizeof(v->name), "%s", rf_schedule_name(RF_SCHEDULE_CUBLASLT));
    v->channels = channels;
    v->hidden = hidden;
    v->kernels_min = 3;
    v->kernels_exact = 0;
    st = lt_init(v);
    if (st) {
        rf_variant_destroy(v);
        return rf_status_annotate(st, "while creating the cuBLASLt variant (%lldx%lld)",
                                  (long long)channels, (long long)hidden);
    }
    *out_variant = v;
    return RF_OK;
}
