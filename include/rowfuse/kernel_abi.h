/* The C ABI between a compiled rowfuse package and the C runtime.
 *
 * `rowfuse compile` generates CuTe DSL kernels ahead of time for one (channels, hidden)
 * shape and links them, with a small generated C shim, into the package's shared library
 * (or objects the runtime links). The shim exports the functions below; the runtime
 * resolves them by name (dlsym) so packages and the runtime can be built separately.
 *
 * Block computed (M rows, C channels, H hidden):
 *   H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)
 * Layouts (row-major, contiguous, device pointers):
 *   x [M, C] fp16, w1 [C, H] fp16, b1 [H] f32, w2 [H, C] fp16, b2 [C] f32, y [M, C] f32,
 *   h [M, H] fp16 scratch: required by schedules that route H through global memory
 *   ("persistent-gmem", "conventional"), ignored by "persistent-smem".
 *
 * Return values are CUDA driver/runtime error numbers (0 = success); the runtime turns
 * them into statuses with the CUDA error name. rf_pkg_launch returns cudaErrorNotReady
 * (600) before rf_pkg_init, and cudaErrorInvalidValue (1) for an unknown schedule, a NULL
 * pointer the schedule needs, a pointer not 16-byte aligned, rows < 0, or
 * rows * max(channels, hidden) > INT32_MAX. Rows may be 0 (one empty launch per kernel).
 * Launch functions only enqueue work on the given stream (a cudaStream_t / CUstream passed
 * as void*), so they can be captured into a CUDA Graph.
 */
#ifndef ROWFUSE_KERNEL_ABI_H
#define ROWFUSE_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_KERNEL_ABI_VERSION 1

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

/* Function types, with the exported symbol names. */
typedef int (*rf_pkg_abi_version_fn)(void); /* "rf_pkg_abi_version" */
typedef int (*rf_pkg_channels_fn)(void);    /* "rf_pkg_channels" */
typedef int (*rf_pkg_hidden_fn)(void);      /* "rf_pkg_hidden" */
/* Number of kernels one launch of `schedule` enqueues (1 or 2), or -1 if the package
 * does not contain that schedule. Used to check captured graphs. "rf_pkg_kernel_count" */
typedef int (*rf_pkg_kernel_count_fn)(const char *schedule);
/* Loads modules / sets attributes once, outside any capture. "rf_pkg_init" */
typedef int (*rf_pkg_init_fn)(void);
/* Enqueues `schedule` on `stream`. "rf_pkg_launch" */
typedef int (*rf_pkg_launch_fn)(const char *schedule, const rf_mlp_args_t *args, void *stream);

#ifdef __cplusplus
}
#endif
#endif
