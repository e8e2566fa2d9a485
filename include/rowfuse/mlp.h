/* The residual MLP block's test data, CPU reference and the one correctness rule.
 *
 *   H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)
 *   X [M,C], W1 [C,H], W2 [H,C] fp16 bit patterns; b1 [H], b2 [C], Y [M,C] f32
 *
 * One seeded generator (rf_rng_*, splitmix64) makes every random test input in rowfuse:
 * the check, the C bench, the Python bench and tests (Python calls these functions through
 * librowfuse.so, so the same seed gives the same numbers). One reference: the CPU
 * interpreter (src/ref) in the plan's mixed precision (H rounded to fp16, fp64
 * elsewhere). One comparison: rf_mlp_compare, used by `rowfuse check`, `rowfuse bench`,
 * the Python bench and the tests.
 *
 * Ownership: rf_mlp_case_create allocates every array with the given allocator;
 * rf_mlp_case_free releases them (accepts a zeroed case). Nothing else allocates.
 */
#ifndef ROWFUSE_MLP_H
#define ROWFUSE_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/alloc.h"
#include "rowfuse/graph.h"
#include "rowfuse/ref.h"
#include "rowfuse/rng.h"
#include "rowfuse/status.h"
#include "rowfuse/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- one test case ---- */
typedef struct rf_mlp_case {
    int64_t rows, channels, hidden;
    uint64_t seed;
    uint16_t *x, *w1, *w2; /* fp16 bit patterns; x NULL when rows == 0 */
    float *b1, *b2;
    float *ref;    /* [rows, channels], mixed precision; NULL when rows == 0 or not asked */
    double *allow; /* [rows, channels]: the per-element error bound (below) */
    double step;   /* ||ref - Y with H unrounded||_2: what the fp16 rounding of H moves */
} rf_mlp_case_t;

/* Draws, in this order, W1 ~ U(+-3/sqrt(C)), b1 ~ U(+-0.5), W2 ~ U(+-3/sqrt(H)),
 * b2 ~ U(+-0.5), X ~ U(+-1), all from rf_rng_seed(seed); with_reference computes ref,
 * allow and step (rf_mlp_error_model).
 * rows may be 0 (weights only). INVALID_ARGUMENT for a bad or overflowing shape. */
rf_status_t rf_mlp_case_create(rf_allocator_t allocator, int64_t rows, int64_t channels,
                               int64_t hidden, uint64_t seed, int with_reference,
                               rf_mlp_case_t *out_case);
void rf_mlp_case_free(rf_allocator_t allocator, rf_mlp_case_t *mlp_case);

/* The residual MLP block as a graph (MatMul + Add form), X [rows, C] fp16 the one input,
 * the weights constants (copied). It mixes an fp16 input with f32 biases, as the GPU plan
 * does, so it is for the reference interpreter, not for the verifier. */
rf_status_t rf_mlp_graph_create(rf_allocator_t allocator, int64_t rows, int64_t channels,
                                int64_t hidden, const uint16_t *w1, const float *b1,
                                const uint16_t *w2, const float *b2, rf_graph_t **out_graph);

/* The block's output on the CPU interpreter (f64 for RF_PRECISION_FP64, f32 for MIXED);
 * *out_y from the allocator, free with rf_tensor_free. */
rf_status_t rf_mlp_reference(rf_allocator_t allocator, rf_precision_t precision, int64_t rows,
                             int64_t channels, int64_t hidden, const uint16_t *x,
                             const uint16_t *w1, const float *b1, const uint16_t *w2,
                             const float *b2, rf_tensor_t *out_y);

/* ---- the error bound and the one comparison ----
 *
 * A correct kernel computes the same function as the reference and differs from it only in
 * how it accumulates in fp32 (derivation and its limits in src/harness/README.md). For every
 * output element the bound is computed from the operands themselves:
 *  - stage 1: for each H value, the interval around the exact pre-activation that a
 *    correct kernel's fp32 pre-activation (and the reference's own) can reach: the
 *    accumulation bound of X W1 (below) plus the fp32 additions of b1; where an fp16
 *    rounding boundary (or ReLU's kink) lies inside that interval, H may differ from the
 *    reference's by the width of its fp16 image (dh), else not at all;
 *  - stage 2: sum dh |W2| (the flips carried to Y), the accumulation bound of H W2 with
 *    magnitudes widened by the flips, and the fp32 additions of b2 and X (two in the
 *    kernel, three roundings in the reference).
 * Accumulation models (rf_mlp_accumulation_t):
 *  - RF_MLP_ACC_TENSOR_CORE (every rowfuse schedule, cuBLASLt): the dot product is cut into
 *    k16 blocks; each MMA step adds one block to a partial sum of a contiguous range of
 *    blocks (any order, any split-K or block-pair split, ranges merged by fp32 adds), so
 *    every partial sum is at most 2M, M the largest |prefix sum| at a block boundary; a step
 *    loses at most RF_MMA_STEP_ULPS (8) fp32 units of its largest addend;
 *  - RF_MLP_ACC_ANY_ORDER (IREE's modules): any order of fp32 adds, gamma_K sum |t|.
 * The comparison requires every element finite and within its bound. `step` (the distance
 * the fp16 rounding of H moves the output) is reported, and gated only when a tolerance
 * asks for it (step_fraction > 0). */
typedef enum rf_mlp_accumulation {
    RF_MLP_ACC_TENSOR_CORE = 0,
    RF_MLP_ACC_ANY_ORDER = 1,
} rf_mlp_accumulation_t;

/* The bound of every output element of `rows` rows into out_allow [rows, C], and
 * *out_step = ||ref - Y with H unrounded|| (ref and out_step may be NULL: no step). dx
 * (NULL = none; [rows, C], >= 0): how far another implementation's input may be from x,
 * carried through W1 and the residual. INVALID_ARGUMENT for a bad shape or model. */
rf_status_t rf_mlp_error_bound(rf_allocator_t allocator, rf_mlp_accumulation_t accumulation,
                               int64_t rows, int64_t channels, int64_t hidden, const uint16_t *x,
                               const double *dx, const uint16_t *w1, const float *b1,
                               const uint16_t *w2, const float *b2, const float *ref,
                               double *out_allow, double *out_step);
/* rf_mlp_error_bound with RF_MLP_ACC_TENSOR_CORE and no dx: what every GPU gate uses. */
rf_status_t rf_mlp_error_model(rf_allocator_t allocator, int64_t rows, int64_t channels,
                               int64_t hidden, const uint16_t *x, const uint16_t *w1,
                               const float *b1, const uint16_t *w2, const float *b2,
                               const float *ref, double *out_allow, double *out_step);

typedef struct rf_mlp_tolerance {
    double step_fraction; /* > 0: also ||y - ref|| <= step_fraction * step; 0: not gated */
    double allow_factor;  /* every element: |y - ref| <= allow_factor * allow */
} rf_mlp_tolerance_t;

/* The tolerance every gate uses: the per-element bound itself (allow_factor 1), no norm
 * test (step_fraction 0). */
rf_mlp_tolerance_t rf_mlp_tolerance_default(void);

typedef struct rf_mlp_compare_result {
    int passed;
    int64_t nonfinite, out_of_tol; /* out_of_tol: elements over allow_factor * allow */
    double max_abs, rel_l2;        /* ||y - ref|| / ||ref|| (reported, not gated) */
    double steps;                  /* ||y - ref|| / step (gated only if asked) */
    double max_ratio;              /* max |y - ref| / allow (gated) */
    int64_t worst_index; /* first non-finite element, else the largest ratio; -1 if n == 0 */
    double worst_got, worst_ref;
} rf_mlp_compare_result_t;

/* Compares n outputs with the reference of a case (ref, allow, step) under tol. Never
 * fails: the verdict is out->passed; a NaN anywhere fails. */
void rf_mlp_compare(const float *y, const float *ref, const double *allow, double step, size_t n,
                    const rf_mlp_tolerance_t *tol, rf_mlp_compare_result_t *out);
/* One line describing a failed comparison (counts, steps, the worst element with its
 * row and column); "" when it passed. */
void rf_mlp_compare_describe(const rf_mlp_compare_result_t *r, int64_t channels, char *out,
                             size_t out_size);

#ifdef __cplusplus
}
#endif
#endif
