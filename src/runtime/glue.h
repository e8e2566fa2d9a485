/* Glue kernels of the cuBLASLt baseline (glue.cu, used by cublaslt.c), element-wise
 * conversions cuBLASLt's type rules leave to the caller, and the check's shared-memory
 * poison (rf_glue_poison_smem). Each enqueues one kernel on
 * `stream` (none when the element count is 0) and returns cudaGetLastError(). fp16
 * values travel as raw 16-bit patterns (void *); rounding to fp16 is round-to-nearest-even.
 * Internal to src/runtime. */
#ifndef RF_RUNTIME_GLUE_H
#define RF_RUNTIME_GLUE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = f32(src[i]) for i < n: X upcast into Y, the residual that matmul 2 adds
 * through its C matrix (beta = 1). */
cudaError_t rf_glue_f16_to_f32(const void *src, float *dst, int64_t n, cudaStream_t stream);

/* The per-call glue of the bias-in-K configuration: for a row-major X [rows, c] fp16,
 * xaug[r * kp + j] = X[r, j] (j < c) and y[r * c + j] = f32(X[r, j]). The columns
 * c..kp-1 of xaug are constants written once by rf_glue_xaug_init. */
cudaError_t rf_glue_x_to_xaug(const void *x, void *xaug, float *y, int64_t rows, int64_t c,
                              int64_t kp, cudaStream_t stream);

/* The constant columns of xaug [rows, kp]: column c and c+1 are 1.0, c+2..kp-1 are 0. */
cudaError_t rf_glue_xaug_init(void *xaug, int64_t rows, int64_t c, int64_t kp, cudaStream_t stream);

/* b = hi + lo to within 2^-22 |b| + 2^-25 (lo may be subnormal): hi[i] = fp16(b[i]),
 * lo[i] = fp16(b[i] - f32(hi[i])). Set-up of the bias-in-K configuration. */
cudaError_t rf_glue_split_f16(const float *b, void *hi, void *lo, int64_t n, cudaStream_t stream);

/* The f32-H configuration's one glue kernel, after matmul 1: h16[i] = fp16(h32[i]) for
 * i < nh and y[i] = f32(x[i]) for i < nx. */
cudaError_t rf_glue_round_h_upcast_x(const float *h32, void *h16, int64_t nh, const void *x,
                                     float *y, int64_t nx, cudaStream_t stream);

/* data[i] = max(data[i], 0) in place: the ReLU when matmul 2 cannot have RELU_BIAS. */
cudaError_t rf_glue_relu_f32(float *data, int64_t n, cudaStream_t stream);

/* One thread that spins for `ns` nanoseconds of the GPU's global timer: queued before a
 * timed batch so the host enqueues the batch while the GPU waits, and the events around
 * the batch time the GPU's work rather than the host's launch rate. */
cudaError_t rf_glue_spin(int64_t ns, cudaStream_t stream);

/* For the check (src/harness), not the cuBLASLt baseline: fills the shared memory of every SM
 * with all-ones bytes, each 32-bit word 0xFFFFFFFF (NaN as fp32, as a pair of fp16 and as
 * bf16), so a kernel launched next on `stream` that reads shared memory it never wrote reads
 * NaN. One kernel of blocks that take the device's largest dynamic shared memory per block
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin) and write all of it, as many blocks as fit on an
 * SM at once times the SM count, twice over (a second wave covers an SM the first missed). */
cudaError_t rf_glue_poison_smem(cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
