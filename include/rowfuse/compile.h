/* Compilation of a verified graph into a GPU package.
 *
 * rowfuse's kernels implement the residual MLP block
 *   H = fp16(ReLU(X @ W1 + b1));  Y = ReLU(H @ W2 + b2 + X)
 * rf_mlp_match finds that block in a verified graph (Gemm or MatMul+Add for each
 * projection, with either operand order for the adds) and extracts its weights; any other
 * graph is UNSUPPORTED with a message naming the first node that does not fit.
 *
 * rf_compile_package writes a package directory: weights/ (W1 [C,H] and W2 [H,C]
 * rounded to fp16, biases f32), the kernels (built by kernels/build.py, which this
 * function runs as a tool), and plan.json. Ownership: nothing is retained.
 */
#ifndef ROWFUSE_COMPILE_H
#define ROWFUSE_COMPILE_H

#include "rowfuse/graph.h"
#include "rowfuse/ref.h"
#include "rowfuse/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_mlp_block {
    int x;      /* value index of the block input X [M, C] */
    int y;      /* value index of the output Y [M, C] */
    int w1, b1; /* constant values */
    int w2, b2;
    int w1_trans; /* 1 if w1 is stored [H, C] (Gemm transB=1 / Linear weight) */
    int w2_trans; /* 1 if w2 is stored [C, H] */
    int64_t rows, channels, hidden;
} rf_mlp_block_t;

rf_status_t rf_mlp_match(const rf_graph_t *graph, rf_mlp_block_t *out_block);

/* The residual MLP block as a graph (MatMul + Add form), X [rows, C] fp16 the one input,
 * the weights constants (W1 [C,H], W2 [H,C] fp16 bit patterns; b1 [H], b2 [C] f32,
 * copied). The graph mixes an fp16 input with f32 biases, as the GPU plan does, so it is
 * for the reference interpreter (which infers its own shapes), not for the ONNX-level
 * shape inference or the verifier. *out_graph is the caller's. */
rf_status_t rf_mlp_graph_create(rf_allocator_t allocator, int64_t rows, int64_t channels,
                                int64_t hidden, const uint16_t *w1, const float *b1,
                                const uint16_t *w2, const float *b2, rf_graph_t **out_graph);

/* The block's output for X [rows, C] (fp16 bit patterns) on the CPU reference interpreter
 * (f64 for RF_PRECISION_FP64, f32 for MIXED). *out_y is allocated with the allocator; free
 * it with rf_tensor_free. */
rf_status_t rf_mlp_reference(rf_allocator_t allocator, rf_precision_t precision, int64_t rows,
                             int64_t channels, int64_t hidden, const uint16_t *x,
                             const uint16_t *w1, const float *b1, const uint16_t *w2,
                             const float *b2, rf_tensor_t *out_y);

typedef struct rf_compile_options {
    const char *model_path; /* recorded in plan.json */
    const char *out_dir;
    const char *schedule; /* persistent-smem | persistent-gmem | conventional */
    int64_t rows;
    int tile_rows;           /* 16, 32 or 64 */
    const char *arch;        /* "sm_90a" */
    const char *python;      /* interpreter for the kernel generator, e.g. "python3" */
    const char *kernels_dir; /* folder holding build.py */
} rf_compile_options_t;

/* The scheduler: the schedule "auto" stands for at this block and row count, and why
 * (a static string). */
const char *rf_schedule_choose(const rf_mlp_block_t *block, int64_t rows, const char **out_reason);

typedef struct rf_compile_result {
    const char *schedule; /* static string: the schedule the plan runs */
    const char *reason;   /* static string: why (the scheduler's rule, or the option) */
    int64_t tile_rows;    /* the tile rows that schedule was built with */
} rf_compile_result_t;

/* Writes the package. With schedule "auto", records the scheduler's choice and reason;
 * with tile_rows 0, the tile rows the generator chose (read back from kernels.json).
 * out_result may be NULL. */
rf_status_t rf_compile_package(const rf_graph_t *graph, const rf_mlp_block_t *block,
                               const rf_compile_options_t *options,
                               rf_compile_result_t *out_result);

#ifdef __cplusplus
}
#endif
#endif
