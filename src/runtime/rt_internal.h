/* Internal to the rowfuse runtime: CUDA error -> status conversion and the variant
 * vtable shared by package schedules (variant.c) and the cuBLASLt baseline (cublaslt.c).
 * Not a public header: nothing outside src/runtime and src/harness includes it. */
#ifndef RF_RUNTIME_INTERNAL_H
#define RF_RUNTIME_INTERNAL_H

#include <cuda_runtime_api.h>

#include "rowfuse/runtime.h"

/* Status for a failed CUDA runtime call: RF_CODE_NO_DEVICE for "no GPU / no driver"
 * errors, RF_CODE_OUT_OF_MEMORY for allocation failures, else RF_CODE_CUDA_ERROR. The
 * message is "<call>: <cudaErrorName>: <description>". */
rf_status_t rf_cuda_status(cudaError_t err, const char *file, int line, const char *call);
/* Maps a raw error number returned through the kernel ABI (a CUresult or cudaError_t). */
rf_status_t rf_cuda_status_raw(int err, const char *file, int line, const char *call);
int rf_cuda_is_no_device(cudaError_t err);

#define RF_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t rf_cuda_err_ = (call);                                                         \
        if (rf_cuda_err_ != cudaSuccess)                                                           \
            return rf_cuda_status(rf_cuda_err_, __FILE__, __LINE__, #call);                        \
    } while (0)

/* Ensures a device is usable (cudaGetDeviceCount > 0) and the context exists. */
rf_status_t rf_device_require(void);

/* Fills the shared memory of every SM with NaN (rf_glue_poison_smem) on `stream`: run by
 * the check right before a checked replay, as a launch of its own (so the graph's kernel
 * nodes are the schedule's alone), so that a kernel reading shared memory it never wrote
 * gives NaN instead of what an earlier kernel left there. */
rf_status_t rf_device_poison_smem(void *stream);

typedef struct rf_variant_ops {
    rf_status_t (*launch)(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream);
    void (*destroy)(rf_variant_t *variant);
} rf_variant_ops_t;

struct rf_variant {
    rf_allocator_t allocator;
    const rf_variant_ops_t *ops;
    char name[32];
    char note[1024]; /* rf_variant_note: cuBLASLt's tuning record */
    int64_t channels, hidden;
    int kernels_min, kernels_exact; /* see rf_variant_expected_kernels */
    rf_pkg_t *pkg;                  /* borrowed; NULL for cublaslt */
    void *impl;                     /* cublaslt state */
};

/* The package's launch entry and its expected kernel count (package.c). */
rf_status_t rf_pkg_launch_schedule(rf_pkg_t *pkg, const char *schedule, const rf_mlp_args_t *args,
                                   void *stream);

#endif
