/* Glue kernels for the cuBLASLt baseline (cublaslt.c; declared in glue.h): element-wise
 * conversions between the types cuBLASLt accepts and the block's. Plain CUDA C. The
 * per-call ones (X upcast, X into the K-augmented copy, H rounding) handle four elements
 * per thread when the pointers are 16-byte aligned and the counts allow it, one otherwise;
 * both paths compute the same values. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "glue.h"

#define RF_GLUE_THREADS 256

static unsigned blocks_for(int64_t n) {
    return (unsigned)((n + RF_GLUE_THREADS - 1) / RF_GLUE_THREADS);
}

static int aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

/* ---- X -> f32 (the residual) ---- */

static __global__ void f16_to_f32(const __half *src, float *dst, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = __half2float(src[i]);
}

/* n4 groups of four: 8-byte loads, 16-byte stores. */
static __global__ void f16_to_f32_x4(const uint2 *src, float4 *dst, int64_t n4) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        uint2 v = src[i];
        float2 a = __half22float2(*(const __half2 *)&v.x);
        float2 b = __half22float2(*(const __half2 *)&v.y);
        dst[i] = make_float4(a.x, a.y, b.x, b.y);
    }
}

cudaError_t rf_glue_f16_to_f32(const void *src, float *dst, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    if (n % 4 == 0 && aligned16(src) && aligned16(dst))
        f16_to_f32_x4<<<blocks_for(n / 4), RF_GLUE_THREADS, 0, stream>>>((const uint2 *)src,
                                                                         (float4 *)dst, n / 4);
    else
        f16_to_f32<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>((const __half *)src, dst, n);
    return cudaGetLastError();
}

/* ---- X -> (X', Y) for bias-in-K ---- */

static __global__ void x_to_xaug(const __half *x, __half *xaug, float *y, int64_t n, int64_t c,
                                 int64_t kp) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int64_t r = i / c, j = i - r * c;
        __half v = x[i];
        xaug[r * kp + j] = v;
        y[i] = __half2float(v);
    }
}

/* Groups of four columns (c % 4 == 0, so a group never crosses a row; kp % 8 == 0, so
 * the group's place in X' is 8-byte aligned). */
static __global__ void x_to_xaug_x4(const uint2 *x, uint2 *xaug, float4 *y, int64_t n4, int64_t c4,
                                    int64_t kp4) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        int64_t r = i / c4, j = i - r * c4;
        uint2 v = x[i];
        float2 a = __half22float2(*(const __half2 *)&v.x);
        float2 b = __half22float2(*(const __half2 *)&v.y);
        xaug[r * kp4 + j] = v;
        y[i] = make_float4(a.x, a.y, b.x, b.y);
    }
}

cudaError_t rf_glue_x_to_xaug(const void *x, void *xaug, float *y, int64_t rows, int64_t c,
                              int64_t kp, cudaStream_t stream) {
    int64_t n = rows * c;
    if (n <= 0)
        return cudaSuccess;
    if (c % 4 == 0 && kp % 4 == 0 && aligned16(x) && aligned16(xaug) && aligned16(y))
        x_to_xaug_x4<<<blocks_for(n / 4), RF_GLUE_THREADS, 0, stream>>>(
            (const uint2 *)x, (uint2 *)xaug, (float4 *)y, n / 4, c / 4, kp / 4);
    else
        x_to_xaug<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>((const __half *)x, (__half *)xaug,
                                                                 y, n, c, kp);
    return cudaGetLastError();
}

static __global__ void xaug_init(__half *xaug, int64_t rows, int64_t c, int64_t kp) {
    int64_t extra = kp - c;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * extra) {
        int64_t r = i / extra, j = i - r * extra;
        xaug[r * kp + c + j] = __float2half_rn(j < 2 ? 1.0f : 0.0f);
    }
}

cudaError_t rf_glue_xaug_init(void *xaug, int64_t rows, int64_t c, int64_t kp,
                              cudaStream_t stream) {
    int64_t n = rows * (kp - c);
    if (n <= 0)
        return cudaSuccess;
    xaug_init<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>((__half *)xaug, rows, c, kp);
    return cudaGetLastError();
}

/* ---- b1 -> hi + lo (set-up of bias-in-K) ---- */

static __global__ void split_f16(const float *b, __half *hi, __half *lo, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half h = __float2half_rn(b[i]);
        hi[i] = h;
        lo[i] = __float2half_rn(b[i] - __half2float(h));
    }
}

cudaError_t rf_glue_split_f16(const float *b, void *hi, void *lo, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    split_f16<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>(b, (__half *)hi, (__half *)lo, n);
    return cudaGetLastError();
}

/* ---- H32 -> fp16 and X -> f32 in one launch (f32-H) ---- */

static __global__ void round_h_upcast_x(const float *h32, __half *h16, int64_t nh, const __half *x,
                                        float *y, int64_t nx) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nh)
        h16[i] = __float2half_rn(h32[i]);
    if (i < nx)
        y[i] = __half2float(x[i]);
}

static __global__ void round_h_upcast_x_x4(const float4 *h32, uint2 *h16, int64_t nh4,
                                           const uint2 *x, float4 *y, int64_t nx4) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nh4) {
        float4 v = h32[i];
        __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
        uint2 o;
        o.x = *(const unsigned *)&a;
        o.y = *(const unsigned *)&b;
        h16[i] = o;
    }
    if (i < nx4) {
        uint2 v = x[i];
        float2 a = __half22float2(*(const __half2 *)&v.x);
        float2 b = __half22float2(*(const __half2 *)&v.y);
        y[i] = make_float4(a.x, a.y, b.x, b.y);
    }
}

cudaError_t rf_glue_round_h_upcast_x(const float *h32, void *h16, int64_t nh, const void *x,
                                     float *y, int64_t nx, cudaStream_t stream) {
    int64_t n = nh > nx ? nh : nx;
    if (n <= 0)
        return cudaSuccess;
    if (nh % 4 == 0 && nx % 4 == 0 && aligned16(h32) && aligned16(h16) && aligned16(x) &&
        aligned16(y))
        round_h_upcast_x_x4<<<blocks_for(n / 4), RF_GLUE_THREADS, 0, stream>>>(
            (const float4 *)h32, (uint2 *)h16, nh / 4, (const uint2 *)x, (float4 *)y, nx / 4);
    else
        round_h_upcast_x<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>(h32, (__half *)h16, nh,
                                                                        (const __half *)x, y, nx);
    return cudaGetLastError();
}

/* ---- ReLU in place (fallback when matmul 2 has no RELU_BIAS) ---- */

static __global__ void relu_f32(float *data, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = fmaxf(data[i], 0.0f);
}

cudaError_t rf_glue_relu_f32(float *data, int64_t n, cudaStream_t stream) {
    if (n <= 0)
        return cudaSuccess;
    relu_f32<<<blocks_for(n), RF_GLUE_THREADS, 0, stream>>>(data, n);
    return cudaGetLastError();
}

/* ---- a delay before a timed batch ---- */

static __device__ unsigned long long global_ns(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __global__ void spin(unsigned long long ns) {
    unsigned long long t0 = global_ns();
    while (global_ns() - t0 < ns) {
    }
}

cudaError_t rf_glue_spin(int64_t ns, cudaStream_t stream) {
    if (ns <= 0)
        return cudaSuccess;
    spin<<<1, 1, 0, stream>>>((unsigned long long)ns);
    return cudaGetLastError();
}

/* ---- shared memory poisoned before a checked replay ---- */

static __global__ void poison_smem(unsigned words16) {
    extern __shared__ uint4 smem[];
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    /* st.shared through asm: stores nothing reads afterwards must still be made. */
    for (unsigned i = threadIdx.x; i < words16; i += blockDim.x)
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(base + 16u * i),
                     "r"(0xFFFFFFFFu)
                     : "memory");
}

cudaError_t rf_glue_poison_smem(cudaStream_t stream) {
    int dev = 0, sms = 0, per_block = 0, per_sm = 0, reserved = 0;
    cudaError_t err;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) !=
            cudaSuccess ||
        (err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)) !=
            cudaSuccess ||
        (err = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev)) !=
            cudaSuccess)
        return err;
    if (sms < 1 || per_block < 16)
        return cudaErrorInvalidValue;
    if ((err = cudaFuncSetAttribute(poison_smem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    per_block)) != cudaSuccess ||
        (err = cudaFuncSetAttribute(poison_smem, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared)) != cudaSuccess)
        return err;
    int fit = per_sm / (per_block + reserved);
    unsigned blocks = 2u * (unsigned)sms * (unsigned)(fit > 1 ? fit : 1);
    poison_smem<<<blocks, 1024, (size_t)per_block, stream>>>((unsigned)per_block / 16u);
    return cudaGetLastError();
}
