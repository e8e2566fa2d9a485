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
    double *allow; /* [rows, channels]: the error model's per-element allowance (below) */
    double step;   /* ||ref - Y with H unrounded||_2: what the fp16 rounding of H moves
                      (+inf below RF_MLP_NORM_MIN_H H values: no norm test there) */
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

/* ---- the error model and the one comparison ----
 *
 * A correct kernel computes the same function as the reference but accumulates in fp32 in
 * its own order. Its output can differ from the reference in two ways only (derivation in
 * src/check/README.md):
 *  - per element: the fp32 accumulation error of both matmuls (bounded by 2 K u32 times
 *    the sum of the magnitudes of the terms, u32 = 2^-24, K = ceil(length / 16) + 1 the
 *    fp32 additions of a tensor-core kernel, whose MMA adds 16 products at a time to the
 *    accumulator, and the factor 2 for its truncating alignment), and for every H element whose
 *    pre-activation lies within that accumulation bound of an fp16 rounding boundary, the
 *    fp16 step it may take instead, times |W2|. rf_mlp_error_model computes this allowance
 *    for every output element from the exact pre-activations;
 *  - in norm: those boundary crossings are rare, so the output's distance to the reference
 *    is a small fraction of `step`, the distance the fp16 rounding of H itself moves the
 *    output. A kernel that keeps H in fp32 is one `step` away; one that rounds H toward
 *    zero, stores Y in fp16 or rounds b1 to fp16 is 0.6 to 2.5 steps away. */
/* fewer rows x hidden: *out_step is +inf (no norm test). 2048: at 41x90x25 (1,025 H values)
 * a correct kernel's output reached 0.43 step for one seed, the b1-in-fp16 fault 0.44-0.6. */
#define RF_MLP_NORM_MIN_H 2048
rf_status_t rf_mlp_error_model(rf_allocator_t allocator, int64_t rows, int64_t channels,
                               int64_t hidden, const uint16_t *x, const uint16_t *w1,
                               const float *b1, const uint16_t *w2, const float *b2,
                               const float *ref, double *out_allow, double *out_step);

typedef struct rf_mlp_tolerance {
    double step_fraction; /* ||y - ref|| <= step_fraction * step */
    double allow_factor;  /* every element: |y - ref| <= allow_factor * allow */
} rf_mlp_tolerance_t;

/* The tolerances every gate uses: 0.3 step (the GPU kernels measured at most 0.07, a CPU
 * model accumulating sequentially in fp32 at most 0.16, the closest planted fault 0.6;
 * tests/unit/test_gate_faults.c) and the allowance itself. */
rf_mlp_tolerance_t rf_mlp_tolerance_default(void);

typedef struct rf_mlp_compare_result {
    int passed;
    int64_t nonfinite, out_of_tol; /* out_of_tol: elements over allow_factor * allow */
    double max_abs, rel_l2;        /* ||y - ref|| / ||ref|| (reported, not gated) */
    double steps;                  /* ||y - ref|| / step (gated) */
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
