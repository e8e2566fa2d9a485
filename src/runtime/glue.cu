/* Glue kernels for the cuBLASLt baseline (cublaslt.c): element-wise dtype conversions.
 * fp16 -> f32 upcasts X into Y so the second matmul can add the residual through
 * cuBLASLt's C matrix (beta = 1); f32 -> fp16 is the fallback for b1 when cuBLASLt
 * rejects an f32 bias on an fp16 output; ReLU in place is the fallback when matmul 2
 * cannot have the RELU_BIAS epilogue. Plain CUDA C, one thread per element. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
cudaError_t rf_glue_f16_to_f32(const void *src, float *dst, int64_t n, cudaStream_t stream);
cudaError_t rf_glue_f32_to_f16(const float *src, void *dst, int64_t n, cudaStream_t stream);
cudaError_t rf_glue_relu_f32(float *data, int64_t n, cudaStream_t stream);
}

static __global__ void f16_to_f32(const __half *src, float *dst, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = __half2float(src[i]);
}

static __global__ void f32_to_f16(const float *src, __half *dst, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = __float2half_rn(src[i]);
}

static __global__ void relu_f32(float *data, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = fmaxf(data[i], 0.0f);
}

static unsigned blocks_for(int64_t n) {
    return (unsigned)((n + 255) / 256);
}

cudaError_t rf_glue_f16_to_f32(const void *src, float *dst, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    f16_to_f32<<<blocks_for(n), 256, 0, stream>>>((const __half *)src, dst, n);
    return cudaGetLastError();
}

cudaError_t rf_glue_f32_to_f16(const float *src, void *dst, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    f32_to_f16<<<blocks_for(n), 256, 0, stream>>>(src, (__half *)dst, n);
    return cudaGetLastError();
}

cudaError_t rf_glue_relu_f32(float *data, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    relu_f32<<<blocks_for(n), 256, 0, stream>>>(data, n);
    return cudaGetLastError();
}
