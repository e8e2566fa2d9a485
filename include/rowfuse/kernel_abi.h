/* The C ABI between a compiled rowfuse package and the C runtime.
 *
 * `rowfuse compile` has the CuTe DSL kernels of its plan generated ahead of time for one
 * (channels, hidden) shape and linked, with the checked-in shim src/pkg/rf_pkg_shim.c
 * (filled with the package's kernel table), into the package's librowfuse_pkg.so. The
 * shim exports the functions below; the runtime resolves them by name (dlsym). The shim
 * decides nothing: which kernels a schedule launches, in which order and on how many
 * blocks is in plan.json (rowfuse/plan.h), which only the runtime reads.
 *
 * Block computed (M rows, C channels, H hidden):
 *   H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)
 * Layouts (row-major, contiguous, device pointers):
 *   x [M, C] fp16, w1 [C, H] fp16, b1 [H] f32, w2 [H, C] fp16, b2 [C] f32, y [M, C] f32,
 *   h [M, H] fp16 scratch: required by kernels that route H through global memory
 *   (modes fused_gmem, proj1, proj2), ignored by fused_smem.
 *
 * Chain packages hold "chain_mma" kernels instead: one persistent kernel per chain of
 * row-local stages (linear, gated, act, add, norm) that maps X [M, C] fp16 to Y [M, N_out]
 * f32, every row from its own input row. Their weights are two
 * flat device arrays, `wh` (fp16: every W) and `wf` (f32: biases, norm gains), at the element
 * offsets the kernel was specialised for (plan.json "chain"); they are launched through
 * rf_pkg_launch_chain with rf_chain_args_t (chain_stream kernels, which split an FFN's
 * hidden dimension over every SM, with a scratch buffer). rf_pkg_launch on a chain kernel (and
 * rf_pkg_launch_chain on an MLP kernel) returns cudaErrorInvalidValue. For a chain package
 * rf_pkg_channels / rf_pkg_hidden return the chain's input and output widths (C, N_out).
 *
 * Return values are CUDA error numbers (0 = success); the runtime turns them into
 * statuses with the CUDA error name. rf_pkg_launch returns cudaErrorNotReady (600) before
 * rf_pkg_init, and cudaErrorInvalidValue (1) for a kernel index out of range, a NULL
 * pointer the kernel needs, a pointer not 16-byte aligned, rows < 0, grid < 1, or
 * rows * max(channels, hidden) > INT32_MAX (chain kernels: rows * max(C, N_out)).
 * Launches only enqueue work on the given stream (a cudaStream_t passed as void*), so they
 * can be captured into a CUDA Graph.
 */
#ifndef ROWFUSE_KERNEL_ABI_H
#define ROWFUSE_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_KERNEL_ABI_VERSION 4

typedef struct rf_mlp_args {
    const void *x;
    const void *w1;
    const float *b1;
    const void *w2;
    const float *b2;
    void *h;
    float *y;
    int64_t rows;
} rf_mlp_args_t;

/* The arguments of a chain kernel (row-major, contiguous, 16-byte aligned device pointers):
 * x [M, C] fp16, wh fp16 and wf f32 (the package's two weight arrays, whole), y [M, N_out]
 * f32. chain_stream kernels (ABI version 4) also take `scratch`, scratch_bytes of device
 * memory for their cross-block partials and counters (its layout and size: plan.json's
 * kernel entry, "scratch_partial_per_row" fp32 per row then "scratch_counters_per_tile"
 * int32 per row tile; the counters zero before the first launch, and every launch leaves
 * them zero); chain_mma kernels ignore both. */
typedef struct rf_chain_args {
    const void *x;
    const void *wh;
    const float *wf;
    float *y;
    int64_t rows;
    void *scratch;
    int64_t scratch_bytes;
} rf_chain_args_t;

/* Function types, with the exported symbol names. */
typedef int (*rf_pkg_abi_version_fn)(void); /* "rf_pkg_abi_version" */
typedef int (*rf_pkg_channels_fn)(void);    /* "rf_pkg_channels" */
typedef int (*rf_pkg_hidden_fn)(void);      /* "rf_pkg_hidden" */
/* Kernels in the library, in plan.json's "kernels" order. "rf_pkg_kernel_count" */
typedef int (*rf_pkg_kernel_count_fn)(void);
/* Entry name of kernel `index` (plan.json's kernel name), NULL out of range.
 * "rf_pkg_kernel_name" */
typedef const char *(*rf_pkg_kernel_name_fn)(int index);
/* Loads every kernel's module once, outside any capture. "rf_pkg_init" */
typedef int (*rf_pkg_init_fn)(void);
/* Enqueues kernel `index` on `stream` with `grid` blocks. "rf_pkg_launch" */
typedef int (*rf_pkg_launch_fn)(int index, const rf_mlp_args_t *args, int32_t grid, void *stream);
/* Enqueues chain kernel `index` on `stream` with `grid` blocks. "rf_pkg_launch_chain" */
typedef int (*rf_pkg_launch_chain_fn)(int index, const rf_chain_args_t *args, int32_t grid,
                                      void *stream);

#ifdef __cplusplus
}
#endif
#endif
