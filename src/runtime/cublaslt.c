/* The vendor baseline, "cublaslt": the residual-MLP block with cuBLASLt matmuls and
 * epilogues, enqueued on the caller's stream so it can be captured into a CUDA Graph, at
 * full strength: biases in the types the epilogues take, prepared once at set-up, and the
 * heuristic's top 8 algorithms of each matmul timed on the real buffers, the best kept.
 *
 * cuBLASLt is column-major; a row-major [M,K] matrix is the column-major [K,M] one, so
 *   H^T [H,M] = W1^T [H,C] * X^T [C,M]   A = W1 (H x C, ld H), B = X (C x M, ld C)
 *   Y^T [C,M] = W2^T [C,H] * H^T [H,M]   A = W2 (C x H, ld C), B = H (H x M, ld H)
 * and the bias vectors (b1 length H, b2 length C) run along D's rows as cuBLASLt wants.
 * Compute type CUBLAS_COMPUTE_32F (fp32 accumulate), scale type f32.
 *
 * The block is H = fp16(ReLU(X W1 + b1)) with an f32 b1, rounded once. cuBLASLt's rule
 * (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE): outside int8 and fp8 kernels the bias
 * has D's type, so an fp16 H takes an fp16 bias, and rounding b1 to fp16 is a fault the
 * check rejects. Matmul 1 therefore has three configurations that keep b1 exact; each is
 * planned, those cuBLASLt accepts are tuned and timed whole, and the fastest is kept:
 *   f32-bias   D = H fp16 with CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = f32, RELU_BIAS.
 *              Outside the documented table (cuBLASLt 13.0 on sm_90 has refused it;
 *              notes/bench.md); asked first because it would need no preparation.
 *              Launch: glue Y = f32(X); matmul 1; matmul 2.
 *   bias-in-k  b1 folded into the product: A = [W1; hi; lo; 0] with K = Kp =
 *              round_up(C + 2, 8), B = X' = [X, 1, 1, 0 ...], epilogue RELU, D = H fp16,
 *              where hi = fp16(b1), lo = fp16(b1 - hi): |b1 - hi - lo| <= 2^-22 |b1| +
 *              2^-25 (lo may be an fp16 subnormal), below the f32 accumulation's own
 *              rounding, and added inside it. A and X's constant columns are built once at
 *              set-up. Launch: glue X -> X' and Y = f32(X); matmul 1; matmul 2.
 *   f32-h      D = H32 f32 (scratch) with the f32 b1 (D's type), RELU_BIAS.
 *              Launch: matmul 1; glue H = fp16(H32) and Y = f32(X); matmul 2.
 * Matmul 2: Y = ReLU(W2^T H^T + 1 * Y + b2), epilogue RELU_BIAS, C = D = Y f32, b2 f32
 * (D's type); cuBLASLt adds the bias to alpha*AB + beta*C, then applies ReLU, which is
 * ReLU(H W2 + b2 + X). If no algorithm takes RELU_BIAS there, BIAS and a glue ReLU.
 * Every configuration launches 3 kernels per replay (one glue, two matmuls; an algorithm
 * with a split-K reduction may add its own). The one glue kernel stays: X is an input that
 * changes with every call, C of an f32 D must be f32, and X' must hold X.
 *
 * Tuning happens at the first launch for a row count (again when the row count or the
 * weight pointers change), on the caller's buffers: a variant is created before any rows
 * or buffers exist. It runs on the variant's own stream with the thread's capture mode
 * relaxed, so a first launch inside a stream capture (`rowfuse check` captures at once)
 * tunes too, and nothing of it enters the graph. Each candidate: 3 warm-up launches, then
 * 7 samples of 10 back-to-back launches between two events, queued behind a spin kernel
 * so the events time the GPU, not the host's launch rate; the median sample counts. The
 * variant note records the configurations (time or why refused), each candidate's time,
 * the chosen algorithms (index, id, tile, split-K, stages), the bias types and the kernels
 * per replay.
 *
 * Lifetime: the weights (w1, b1) must not change under the same pointers after the first
 * launch (they are constants, converted once); buffers a captured graph may read (A of
 * bias-in-k, X', H32) are kept until the variant is destroyed, so graphs captured before a
 * re-plan stay valid. A plan made outside a capture synchronizes the caller's stream
 * first; inside a capture the inputs must already be on the device. */
#include <cublasLt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "rt_internal.h"

#define RF_LT_WORKSPACE (32u << 20)
#define RF_LT_CANDIDATES 8 /* the heuristic's top 8 */
#define RF_LT_WARMUP 3
#define RF_LT_SAMPLES 7
#define RF_LT_REPS 10 /* launches between the two events of one sample */

typedef enum lt_cfg { LT_F32_BIAS, LT_BIAS_IN_K, LT_F32_H, LT_NCFG } lt_cfg_t;

static const char *const lt_cfg_name[LT_NCFG] = {"f32-bias", "bias-in-k", "f32-h"};
static const char *const lt_cfg_what[LT_NCFG] = {
    "H fp16, b1 f32 (bias type f32), RELU_BIAS; glue Y = f32(X)",
    "b1 as fp16 hi + lo rows of K (to 2^-22 |b1| + 2^-25), RELU, H fp16; glue X -> [X, 1, 1, 0] "
    "and "
    "Y = f32(X)",
    "H32 f32 with b1 f32, RELU_BIAS; glue H = fp16(H32) and Y = f32(X)",
};

typedef struct lt_cand {
    cublasLtMatmulAlgo_t algo;
    float us; /* median per launch; < 0 when cublasLtMatmul refused it; 0 untimed */
    int32_t id;
    uint32_t tile, splitk, stages;
} lt_cand_t;

typedef struct lt_gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    int n;    /* candidates the heuristic gave; 0: unavailable (why says so) */
    int best; /* index of the fastest candidate, -1 before timing */
    lt_cand_t cand[RF_LT_CANDIDATES];
    char why[160];
} lt_gemm_t;

typedef struct lt_state {
    cublasLtHandle_t handle;
    void *workspace;
    cudaStream_t tune; /* non-blocking: set-up and timing, never captured */
    cudaEvent_t ev0, ev1;
    int64_t kp; /* K of bias-in-k */
    /* bias-in-k's A = [W1; hi; lo; 0] (column-major H x Kp), built from these pointers */
    void *w1aug;
    const void *w1_src;
    const float *b1_src;
    char const_why[160]; /* why the constants could not be built ("" when they were) */
    void *xaug;          /* X' [rows, Kp] fp16 */
    float *h32;          /* H32 [rows, H] f32 */
    int64_t xaug_rows, h32_rows;
    void **retired; /* device buffers a captured graph may still read; freed at destroy */
    size_t n_retired, cap_retired;
    int64_t plan_rows;             /* rows of the current plan; 0 = none */
    const void *plan_w1, *plan_b1; /* the weight pointers it was made with */
    int relu2_fused;
    int cfg;               /* the chosen configuration of matmul 1 */
    float cfg_us[LT_NCFG]; /* whole launch; 0 when not timed */
    lt_gemm_t g1[LT_NCFG], g2;
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

/* Appends printf-style text to a fixed buffer, truncating. */
static void lt_append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void lt_append(char *buf, size_t size, const char *fmt, ...) {
    size_t used = strlen(buf);
    va_list ap;
    if (used + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

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
    g->best = -1;
}

/* ---- planning one matmul: descriptors and the heuristic's top 8 ---- */

static void cand_describe(lt_cand_t *c) {
    c->id = -1;
    c->tile = c->splitk = c->stages = 0;
    (void)cublasLtMatmulAlgoConfigGetAttribute(&c->algo, CUBLASLT_ALGO_CONFIG_ID, &c->id,
                                               sizeof(c->id), NULL);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&c->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c->tile,
                                               sizeof(c->tile), NULL);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&c->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                               &c->splitk, sizeof(c->splitk), NULL);
    (void)cublasLtMatmulAlgoConfigGetAttribute(&c->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c->stages,
                                               sizeof(c->stages), NULL);
}

/* A cuBLASLt refusal while planning: recorded in g->why, the gemm left unavailable. */
#define LT_PLAN_STEP(what, call)                                                                   \
    do {                                                                                           \
        cublasStatus_t rf_lt_s_ = (call);                                                          \
        if (rf_lt_s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            snprintf(g->why, sizeof(g->why), "%s: %s", (what), cublasLtGetStatusName(rf_lt_s_));   \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* D [m, n] (column-major, ld m) = epilogue(A [m, k] (ld lda) * B [k, n] (ld ldb) + beta C +
 * bias), A and B fp16, C and D of type dtype. bias_type >= 0 sets
 * CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE; bias_align tells the heuristic the bias pointer's
 * alignment (the pointer itself is set per launch). Leaves g->n = 0 and the reason in
 * g->why when cuBLASLt refuses; never fails otherwise. */
static void gemm_plan(lt_state_t *lt, lt_gemm_t *g, int64_t m, int64_t n, int64_t k, int64_t lda,
                      int64_t ldb, cudaDataType_t dtype, int bias_type, cublasLtEpilogue_t epi,
                      const void *bias_align) {
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res[RF_LT_CANDIDATES];
    cublasOperation_t op = CUBLAS_OP_N;
    int32_t bt = bias_type;
    uint64_t ws = RF_LT_WORKSPACE;
    int found = 0;
    gemm_free(g);
    LT_PLAN_STEP("cublasLtMatmulDescCreate",
                 cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_PLAN_STEP("TRANSA", cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op,
                                                          sizeof(op)));
    LT_PLAN_STEP("TRANSB", cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op,
                                                          sizeof(op)));
    LT_PLAN_STEP("EPILOGUE", cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                            &epi, sizeof(epi)));
    if (bias_type >= 0)
        LT_PLAN_STEP("BIAS_DATA_TYPE f32",
                     cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &bt, sizeof(bt)));
    if (epi != CUBLASLT_EPILOGUE_RELU)
        LT_PLAN_STEP("BIAS_POINTER",
                     cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                    &bias_align, sizeof(bias_align)));
    LT_PLAN_STEP("layout A",
                 cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16F, (uint64_t)m, (uint64_t)k, lda));
    LT_PLAN_STEP("layout B",
                 cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16F, (uint64_t)k, (uint64_t)n, ldb));
    LT_PLAN_STEP("layout C", cublasLtMatrixLayoutCreate(&g->c, dtype, (uint64_t)m, (uint64_t)n, m));
    LT_PLAN_STEP("layout D", cublasLtMatrixLayoutCreate(&g->d, dtype, (uint64_t)m, (uint64_t)n, m));
    LT_PLAN_STEP("cublasLtMatmulPreferenceCreate", cublasLtMatmulPreferenceCreate(&pref));
    LT_PLAN_STEP("MAX_WORKSPACE_BYTES",
                 cublasLtMatmulPreferenceSetAttribute(
                     pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    LT_PLAN_STEP("heuristic",
                 cublasLtMatmulAlgoGetHeuristic(lt->handle, g->desc, g->a, g->b, g->c, g->d, pref,
                                                RF_LT_CANDIDATES, res, &found));
    for (int i = 0; i < found && i < RF_LT_CANDIDATES; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS || res[i].workspaceSize > RF_LT_WORKSPACE)
            continue;
        g->cand[g->n].algo = res[i].algo;
        cand_describe(&g->cand[g->n]);
        g->n++;
    }
    if (g->n == 0)
        snprintf(g->why, sizeof(g->why), "heuristic: no algorithm (%d offered)", found);
out:
    if (pref)
        (void)cublasLtMatmulPreferenceDestroy(pref);
}

/* ---- one launch, step by step ---- */

static cublasStatus_t set_bias(lt_gemm_t *g, const void *bias) {
    return cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                          sizeof(bias));
}

/* mm1 and mm2 set *call to the cuBLASLt call that failed. */
static cublasStatus_t mm1(lt_state_t *lt, int cfg, int i, const rf_mlp_args_t *a, cudaStream_t s,
                          const char **call) {
    const float one = 1.0f, zero = 0.0f;
    lt_gemm_t *g = &lt->g1[cfg];
    const void *A = cfg == LT_BIAS_IN_K ? lt->w1aug : a->w1;
    const void *B = cfg == LT_BIAS_IN_K ? lt->xaug : a->x;
    void *D = cfg == LT_F32_H ? (void *)lt->h32 : a->h;
    *call = "cublasLtMatmulDescSetAttribute(matmul 1, BIAS_POINTER)";
    if (cfg != LT_BIAS_IN_K) {
        cublasStatus_t bs = set_bias(g, a->b1);
        if (bs != CUBLAS_STATUS_SUCCESS)
            return bs;
    }
    *call = "cublasLtMatmul(matmul 1)";
    return cublasLtMatmul(lt->handle, g->desc, &one, A, g->a, B, g->b, &zero, D, g->c, D, g->d,
                          &g->cand[i].algo, lt->workspace, RF_LT_WORKSPACE, s);
}

static cublasStatus_t mm2(lt_state_t *lt, int i, const rf_mlp_args_t *a, cudaStream_t s,
                          const char **call) {
    const float one = 1.0f;
    lt_gemm_t *g = &lt->g2;
    cublasStatus_t bs = set_bias(g, a->b2);
    *call = "cublasLtMatmulDescSetAttribute(matmul 2, BIAS_POINTER)";
    if (bs != CUBLAS_STATUS_SUCCESS)
        return bs;
    *call = "cublasLtMatmul(matmul 2)";
    return cublasLtMatmul(lt->handle, g->desc, &one, a->w2, g->a, a->h, g->b, &one, a->y, g->c,
                          a->y, g->d, &g->cand[i].algo, lt->workspace, RF_LT_WORKSPACE, s);
}

/* The glue kernel of configuration cfg before (pre = 1) or after (pre = 0) matmul 1. */
static cudaError_t glue(const rf_variant_t *v, lt_state_t *lt, int cfg, int pre,
                        const rf_mlp_args_t *a, cudaStream_t s) {
    int64_t m = a->rows, c = v->channels, h = v->hidden;
    if (pre && cfg == LT_F32_BIAS)
        return rf_glue_f16_to_f32(a->x, a->y, m * c, s);
    if (pre && cfg == LT_BIAS_IN_K)
        return rf_glue_x_to_xaug(a->x, lt->xaug, a->y, m, c, lt->kp, s);
    if (!pre && cfg == LT_F32_H)
        return rf_glue_round_h_upcast_x(lt->h32, a->h, m * h, a->x, a->y, m * c, s);
    return cudaSuccess;
}

/* What a timed job enqueues: matmul 1 alone, matmul 2 alone, or the whole launch. */
typedef enum lt_job_kind { LT_JOB_MM1, LT_JOB_MM2, LT_JOB_BLOCK } lt_job_kind_t;

typedef struct lt_job {
    lt_job_kind_t kind;
    int cfg, i1, i2;
} lt_job_t;

/* Enqueues the job on s. A cuBLASLt refusal of an algorithm sets *refused and returns its
 * status; any other failure is a CUDA error. */
static rf_status_t run_job(const rf_variant_t *v, lt_state_t *lt, const lt_job_t *j,
                           const rf_mlp_args_t *a, cudaStream_t s, int *refused) {
    cudaError_t e;
    cublasStatus_t b;
    const char *call = "";
    int64_t n = a->rows * v->channels;
    *refused = 0;
    if (j->kind == LT_JOB_BLOCK && (e = glue(v, lt, j->cfg, 1, a, s)) != cudaSuccess)
        return rf_cuda_status(e, __FILE__, __LINE__, "glue kernel before matmul 1");
    if (j->kind != LT_JOB_MM2 &&
        (b = mm1(lt, j->cfg, j->i1, a, s, &call)) != CUBLAS_STATUS_SUCCESS) {
        *refused = 1;
        return lt_status(b, __FILE__, __LINE__, call);
    }
    if (j->kind == LT_JOB_BLOCK && (e = glue(v, lt, j->cfg, 0, a, s)) != cudaSuccess)
        return rf_cuda_status(e, __FILE__, __LINE__, "glue kernel after matmul 1");
    if (j->kind != LT_JOB_MM1 && (b = mm2(lt, j->i2, a, s, &call)) != CUBLAS_STATUS_SUCCESS) {
        *refused = 1;
        return lt_status(b, __FILE__, __LINE__, call);
    }
    if (j->kind == LT_JOB_BLOCK && !lt->relu2_fused &&
        (e = rf_glue_relu_f32(a->y, n, s)) != cudaSuccess)
        return rf_cuda_status(e, __FILE__, __LINE__, "glue relu_f32(Y)");
    return RF_OK;
}

static int cmp_float(const void *p, const void *q) {
    float a = *(const float *)p, b = *(const float *)q;
    return (a > b) - (a < b);
}

/* Median over RF_LT_SAMPLES of the per-launch time of RF_LT_REPS back-to-back jobs on the
 * tuning stream, after RF_LT_WARMUP jobs. */
static rf_status_t time_job(const rf_variant_t *v, lt_state_t *lt, const lt_job_t *j,
                            const rf_mlp_args_t *a, float *out_us, int *refused) {
    float samples[RF_LT_SAMPLES];
    int launches = j->kind == LT_JOB_BLOCK ? 4 : 1;
    for (int w = 0; w < RF_LT_WARMUP; w++)
        RF_RETURN_IF_ERROR_PLAIN(run_job(v, lt, j, a, lt->tune, refused));
    for (int k = 0; k < RF_LT_SAMPLES; k++) {
        float ms = 0.0f;
        /* ~10 us of host time per launch is enqueued while the GPU waits */
        RF_CUDA(rf_glue_spin(20000 + 10000 * (int64_t)RF_LT_REPS * launches, lt->tune));
        RF_CUDA(cudaEventRecord(lt->ev0, lt->tune));
        for (int r = 0; r < RF_LT_REPS; r++)
            RF_RETURN_IF_ERROR_PLAIN(run_job(v, lt, j, a, lt->tune, refused));
        RF_CUDA(cudaEventRecord(lt->ev1, lt->tune));
        RF_CUDA(cudaEventSynchronize(lt->ev1));
        RF_CUDA(cudaEventElapsedTime(&ms, lt->ev0, lt->ev1));
        samples[k] = ms * 1000.0f / (float)RF_LT_REPS;
    }
    qsort(samples, RF_LT_SAMPLES, sizeof(float), cmp_float);
    *out_us = samples[RF_LT_SAMPLES / 2];
    return RF_OK;
}

/* Times every candidate of g (matmul 1 of cfg, or matmul 2 when cfg < 0) and keeps the
 * fastest in g->best. Candidates cuBLASLt refuses at launch get us = -1; when all are
 * refused g->n becomes 0 with the reason in g->why. */
static rf_status_t tune_gemm(const rf_variant_t *v, lt_state_t *lt, lt_gemm_t *g, int cfg,
                             const rf_mlp_args_t *a) {
    g->best = -1;
    for (int i = 0; i < g->n; i++) {
        lt_job_t j = {cfg < 0 ? LT_JOB_MM2 : LT_JOB_MM1, cfg < 0 ? 0 : cfg, i, i};
        int refused = 0;
        rf_status_t st = time_job(v, lt, &j, a, &g->cand[i].us, &refused);
        if (st && !refused)
            return st;
        if (st) {
            snprintf(g->why, sizeof(g->why), "every algorithm refused at launch (last: %s)",
                     rf_status_message(st));
            rf_status_free(st);
            g->cand[i].us = -1.0f;
            continue;
        }
        if (g->best < 0 || g->cand[i].us < g->cand[g->best].us)
            g->best = i;
    }
    if (g->best < 0)
        g->n = 0;
    else
        g->why[0] = '\0';
    return RF_OK;
}

/* ---- device buffers: never freed while the variant lives once a graph may read them ---- */

static rf_status_t retire(const rf_variant_t *v, lt_state_t *lt, void *p) {
    if (!p)
        return RF_OK;
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(v->allocator, (void **)&lt->retired, &lt->cap_retired,
                                     lt->n_retired + 1, sizeof(void *),
                                     "retired cuBLASLt buffers"));
    lt->retired[lt->n_retired++] = p;
    return RF_OK;
}

/* cudaMalloc of a buffer that replaces *p (the old one is retired). A failed allocation
 * is reported in why (the configuration needing it becomes unavailable), not returned. */
static rf_status_t replace_buffer(const rf_variant_t *v, lt_state_t *lt, void **p, size_t bytes,
                                  const char *what, char *why, size_t why_size) {
    void *fresh = NULL;
    cudaError_t err = cudaMalloc(&fresh, bytes);
    if (err != cudaSuccess) {
        rf_status_t st = rf_cuda_status(err, __FILE__, __LINE__, "cudaMalloc");
        snprintf(why, why_size, "%s (%zu bytes): %s", what, bytes, rf_status_message(st));
        rf_status_free(st);
        return RF_OK;
    }
    rf_status_t st = retire(v, lt, *p);
    if (st) {
        (void)cudaFree(fresh);
        return st;
    }
    *p = fresh;
    return RF_OK;
}

/* bias-in-k's constants from the caller's W1 and b1, and X' for `rows` rows. */
static rf_status_t prepare_bias_in_k(const rf_variant_t *v, lt_state_t *lt,
                                     const rf_mlp_args_t *a) {
    int64_t c = v->channels, h = v->hidden, kp = lt->kp, m = a->rows;
    if (lt->w1_src != a->w1 || lt->b1_src != a->b1 || !lt->w1aug) {
        uint16_t *w1aug;
        lt->w1_src = NULL;
        lt->b1_src = NULL;
        lt->const_why[0] = '\0';
        RF_RETURN_IF_ERROR_PLAIN(replace_buffer(v, lt, &lt->w1aug, (size_t)(kp * h) * 2,
                                                "[W1; hi; lo; 0]", lt->const_why,
                                                sizeof(lt->const_why)));
        if (lt->const_why[0])
            return RF_OK;
        w1aug = (uint16_t *)lt->w1aug;
        RF_CUDA(
            cudaMemcpyAsync(w1aug, a->w1, (size_t)(c * h) * 2, cudaMemcpyDeviceToDevice, lt->tune));
        RF_CUDA(rf_glue_split_f16(a->b1, w1aug + c * h, w1aug + (c + 1) * h, h, lt->tune));
        RF_CUDA(cudaMemsetAsync(w1aug + (c + 2) * h, 0, (size_t)((kp - c - 2) * h) * 2, lt->tune));
        lt->w1_src = a->w1;
        lt->b1_src = a->b1;
    }
    if (lt->xaug_rows < m) {
        char why[160] = "";
        RF_RETURN_IF_ERROR_PLAIN(
            replace_buffer(v, lt, &lt->xaug, (size_t)(m * kp) * 2, "X'", why, sizeof(why)));
        if (why[0]) {
            snprintf(lt->g1[LT_BIAS_IN_K].why, sizeof(lt->g1[LT_BIAS_IN_K].why), "%s", why);
            return RF_OK;
        }
        lt->xaug_rows = m;
        RF_CUDA(rf_glue_xaug_init(lt->xaug, m, c, kp, lt->tune));
    }
    return RF_OK;
}

/* ---- planning and tuning for the caller's rows and buffers ---- */

static void note_gemm(char *note, size_t size, const char *name, const lt_gemm_t *g) {
    const lt_cand_t *b = &g->cand[g->best];
    lt_append(note, size,
              "%s: algorithm %d of %d (id %d, tile %u, split-k %u, stages %u) %.2f us;"
              " candidates",
              name, g->best + 1, g->n, (int)b->id, b->tile, b->splitk, b->stages, (double)b->us);
    for (int i = 0; i < g->n; i++) {
        if (g->cand[i].us < 0)
            lt_append(note, size, " refused");
        else
            lt_append(note, size, " %.2f%s", (double)g->cand[i].us, i == g->best ? "*" : "");
    }
    lt_append(note, size, ". ");
}

static void write_note(rf_variant_t *v, lt_state_t *lt, int64_t m) {
    char *note = v->note;
    size_t size = sizeof(v->note);
    note[0] = '\0';
    lt_append(note, size,
              "tuned at %lld rows: matmul 1 %s (%s), %.2f us per launch; others:", (long long)m,
              lt_cfg_name[lt->cfg], lt_cfg_what[lt->cfg], (double)lt->cfg_us[lt->cfg]);
    for (int c = 0; c < LT_NCFG; c++) {
        if (c == lt->cfg)
            continue;
        if (lt->g1[c].n > 0 && lt->cfg_us[c] > 0)
            lt_append(note, size, " %s %.2f us;", lt_cfg_name[c], (double)lt->cfg_us[c]);
        else
            lt_append(note, size, " %s refused (%s);", lt_cfg_name[c], lt->g1[c].why);
    }
    lt_append(note, size, " ");
    note_gemm(note, size, "matmul 1", &lt->g1[lt->cfg]);
    note_gemm(note, size,
              lt->relu2_fused ? "matmul 2 (RELU_BIAS, C = Y)" : "matmul 2 (BIAS, C = Y)", &lt->g2);
    lt_append(
        note, size,
        "Biases: b1 %s, b2 f32, prepared once. %d kernel launches per replay (glue, matmul 1, "
        "matmul 2%s).",
        lt->cfg == LT_BIAS_IN_K ? "f32 as fp16 hi + lo in K" : "f32", lt->relu2_fused ? 3 : 4,
        lt->relu2_fused ? "" : ", glue ReLU");
}

static rf_status_t plan_relaxed(rf_variant_t *v, lt_state_t *lt, const rf_mlp_args_t *a) {
    int64_t m = a->rows, c = v->channels, h = v->hidden;
    int any = 0;
    char why[800] = "";
    lt->plan_rows = 0;
    for (int i = 0; i < LT_NCFG; i++) {
        gemm_free(&lt->g1[i]);
        lt->cfg_us[i] = 0.0f;
    }
    gemm_free(&lt->g2);

    /* matmul 1, each configuration */
    gemm_plan(lt, &lt->g1[LT_F32_BIAS], h, m, c, h, c, CUDA_R_16F, CUDA_R_32F,
              CUBLASLT_EPILOGUE_RELU_BIAS, a->b1);
    RF_RETURN_IF_ERROR_PLAIN(prepare_bias_in_k(v, lt, a));
    if (lt->const_why[0])
        snprintf(lt->g1[LT_BIAS_IN_K].why, sizeof(lt->g1[LT_BIAS_IN_K].why), "%s", lt->const_why);
    else if (lt->xaug_rows >= m)
        gemm_plan(lt, &lt->g1[LT_BIAS_IN_K], h, m, lt->kp, h, lt->kp, CUDA_R_16F, -1,
                  CUBLASLT_EPILOGUE_RELU, NULL);
    if (lt->h32_rows < m) {
        char hwhy[160] = "";
        RF_RETURN_IF_ERROR_PLAIN(replace_buffer(v, lt, (void **)&lt->h32, (size_t)(m * h) * 4,
                                                "H32", hwhy, sizeof(hwhy)));
        if (hwhy[0])
            snprintf(lt->g1[LT_F32_H].why, sizeof(lt->g1[LT_F32_H].why), "%s", hwhy);
        else
            lt->h32_rows = m;
    }
    if (lt->h32_rows >= m)
        gemm_plan(lt, &lt->g1[LT_F32_H], h, m, c, h, c, CUDA_R_32F, -1, CUBLASLT_EPILOGUE_RELU_BIAS,
                  a->b1);

    /* matmul 2 */
    lt->relu2_fused = 1;
    gemm_plan(lt, &lt->g2, c, m, h, c, h, CUDA_R_32F, -1, CUBLASLT_EPILOGUE_RELU_BIAS, a->b2);
    if (lt->g2.n == 0) {
        char first[160];
        snprintf(first, sizeof(first), "%s", lt->g2.why);
        lt->relu2_fused = 0;
        gemm_plan(lt, &lt->g2, c, m, h, c, h, CUDA_R_32F, -1, CUBLASLT_EPILOGUE_BIAS, a->b2);
        if (lt->g2.n == 0)
            return RF_ERR(RF_CODE_UNSUPPORTED,
                          "cuBLASLt has no algorithm for matmul 2 (%lldx%lldx%lld, D f32): "
                          "RELU_BIAS: %s; BIAS: %s",
                          (long long)c, (long long)m, (long long)h, first, lt->g2.why);
    }

    /* the inputs of every configuration's matmul 1 (X', Y) and of matmul 2 (H) exist
     * before anything is timed */
    RF_CUDA(cudaStreamSynchronize(lt->tune));
    for (int i = 0; i < LT_NCFG; i++)
        if (lt->g1[i].n > 0)
            RF_CUDA(glue(v, lt, i, 1, a, lt->tune));
    RF_RETURN_IF_ERROR(tune_gemm(v, lt, &lt->g2, -1, a), "while timing matmul 2's algorithms");
    if (lt->g2.n == 0)
        return RF_ERR(RF_CODE_UNSUPPORTED, "cuBLASLt refused every algorithm of matmul 2: %s",
                      lt->g2.why);
    for (int i = 0; i < LT_NCFG; i++) {
        lt_job_t j = {LT_JOB_BLOCK, i, 0, lt->g2.best};
        int refused = 0;
        rf_status_t st;
        if (lt->g1[i].n == 0)
            continue;
        RF_RETURN_IF_ERROR(tune_gemm(v, lt, &lt->g1[i], i, a),
                           "while timing matmul 1's algorithms (%s)", lt_cfg_name[i]);
        if (lt->g1[i].n == 0)
            continue;
        j.i1 = lt->g1[i].best;
        st = time_job(v, lt, &j, a, &lt->cfg_us[i], &refused);
        if (st && !refused)
            return rf_status_annotate(st, "while timing the whole launch (%s)", lt_cfg_name[i]);
        if (st) {
            snprintf(lt->g1[i].why, sizeof(lt->g1[i].why), "%s", rf_status_message(st));
            rf_status_free(st);
            lt->g1[i].n = 0;
            continue;
        }
        if (!any || lt->cfg_us[i] < lt->cfg_us[lt->cfg])
            lt->cfg = i;
        any = 1;
    }
    RF_CUDA(cudaStreamSynchronize(lt->tune));
    if (!any) {
        for (int i = 0; i < LT_NCFG; i++)
            lt_append(why, sizeof(why), "%s%s: %s", i ? "; " : "", lt_cfg_name[i], lt->g1[i].why);
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "cuBLASLt takes no configuration of matmul 1 that keeps b1 f32 "
                      "(%lldx%lldx%lld): %s",
                      (long long)h, (long long)m, (long long)c, why);
    }
    v->kernels_min = lt->relu2_fused ? 3 : 4;
    write_note(v, lt, m);
    lt->plan_rows = m;
    lt->plan_w1 = a->w1;
    lt->plan_b1 = a->b1;
    return RF_OK;
}

/* Plans and tunes on the variant's stream with the thread's capture mode relaxed (so it
 * may run inside the caller's capture), then restores the mode. */
static rf_status_t plan(rf_variant_t *v, lt_state_t *lt, const rf_mlp_args_t *a, cudaStream_t s) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err;
    rf_status_t st = RF_OK;
    RF_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
    err = cudaStreamIsCapturing(s, &cs);
    if (err != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamIsCapturing");
    else if (cs == cudaStreamCaptureStatusInvalidated)
        st = RF_ERR(RF_CODE_CUDA_ERROR, "the caller's stream capture was invalidated");
    else if (cs == cudaStreamCaptureStatusNone && (err = cudaStreamSynchronize(s)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamSynchronize(caller's stream)");
    if (!st) {
        st = plan_relaxed(v, lt, a);
        if (st) /* leave nothing of a failed tuning running */
            (void)cudaStreamSynchronize(lt->tune);
    }
    err = cudaThreadExchangeStreamCaptureMode(&mode);
    if (!st && err != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaThreadExchangeStreamCaptureMode");
    return st;
}

static rf_status_t lt_launch(rf_variant_t *v, const rf_mlp_args_t *args, void *stream) {
    lt_state_t *lt = (lt_state_t *)v->impl;
    cudaStream_t s = (cudaStream_t)stream;
    lt_job_t j;
    int refused = 0;
    if (lt->plan_rows != args->rows || lt->plan_w1 != args->w1 || lt->plan_b1 != args->b1)
        RF_RETURN_IF_ERROR(plan(v, lt, args, s), "while planning and tuning cuBLASLt for %lld rows",
                           (long long)args->rows);
    j.kind = LT_JOB_BLOCK;
    j.cfg = lt->cfg;
    j.i1 = lt->g1[lt->cfg].best;
    j.i2 = lt->g2.best;
    return run_job(v, lt, &j, args, s, &refused);
}

static void lt_destroy(rf_variant_t *v) {
    lt_state_t *lt = (lt_state_t *)v->impl;
    if (!lt)
        return;
    for (int i = 0; i < LT_NCFG; i++)
        gemm_free(&lt->g1[i]);
    gemm_free(&lt->g2);
    for (size_t i = 0; i < lt->n_retired; i++)
        (void)cudaFree(lt->retired[i]);
    rf_free(v->allocator, lt->retired);
    if (lt->w1aug)
        (void)cudaFree(lt->w1aug);
    if (lt->xaug)
        (void)cudaFree(lt->xaug);
    if (lt->h32)
        (void)cudaFree(lt->h32);
    if (lt->ev0)
        (void)cudaEventDestroy(lt->ev0);
    if (lt->ev1)
        (void)cudaEventDestroy(lt->ev1);
    if (lt->tune)
        (void)cudaStreamDestroy(lt->tune);
    if (lt->workspace)
        (void)cudaFree(lt->workspace);
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
    lt->kp = (v->channels + 2 + 7) / 8 * 8;
    lt->g2.best = -1;
    for (int i = 0; i < LT_NCFG; i++)
        lt->g1[i].best = -1;
    RF_LT(cublasLtCreate(&lt->handle));
    /* Allocated now, not at planning time: planning can happen inside a stream capture. */
    err = cudaMalloc(&lt->workspace, RF_LT_WORKSPACE);
    if (err != cudaSuccess) {
        lt->workspace = NULL;
        return rf_cuda_status(err, __FILE__, __LINE__, "cudaMalloc(cuBLASLt workspace, 32 MiB)");
    }
    RF_CUDA(cudaStreamCreateWithFlags(&lt->tune, cudaStreamNonBlocking));
    RF_CUDA(cudaEventCreate(&lt->ev0));
    RF_CUDA(cudaEventCreate(&lt->ev1));
    snprintf(v->note, sizeof(v->note), "not yet tuned (tuning happens at the first launch)");
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
        lt_destroy(v); /* what lt_init made; the variant itself is ours until returned */
        rf_free(a, v);
        return rf_status_annotate(st, "while creating the cuBLASLt variant (%lldx%lld)",
                                  (long long)channels, (long long)hidden);
    }
    *out_variant = v;
    return RF_OK;
}
