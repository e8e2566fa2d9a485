/* The floor of every benchmark: one empty kernel, launched from C through this shim. */
#include <cuda_runtime.h>

__global__ void rf_bench_empty_kernel(void) {}

/* Enqueues the empty kernel on `stream`; returns the cudaError_t of the launch. */
extern "C" int rf_bench_empty_launch(void *stream) {
    rf_bench_empty_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}
