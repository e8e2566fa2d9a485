/* The glue kernels of the cuBLASLt baseline (src/runtime/glue.h) in the fake CUDA runtime
 * (fake_cuda.h): each checks that its operands lie inside live device buffers of the sizes
 * the kernel would touch, then enqueues one kernel (a node when the stream is capturing)
 * and computes nothing. */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "fake_cuda.h"
#include "glue.h"

/* ---- the glue kernels of the cuBLASLt baseline (glue.h): operands checked, no arithmetic ---- */

static cudaError_t glue(cudaStream_t s, const char *call, int operands_ok) {
    int captured;
    if (!operands_ok)
        return cudaErrorInvalidValue;
    switch (fake_cuda_enqueue(s, cudaGraphNodeTypeKernel, call, "cudaErrorLaunchOutOfResources",
                              &captured)) {
    case FAKE_GO:
        return cudaSuccess;
    case FAKE_INJECTED:
        return cudaErrorLaunchOutOfResources;
    case FAKE_IMPLICIT:
        return cudaErrorStreamCaptureImplicit;
    default:
        return cudaErrorStreamCaptureInvalidated;
    }
}

#define R(p, bytes, what) fake_cuda_range((p), (size_t)(bytes), call, (what))

cudaError_t rf_glue_f16_to_f32(const void *src, float *dst, int64_t n, cudaStream_t stream) {
    const char *call = "rf_glue_f16_to_f32";
    if (n <= 0)
        return cudaSuccess;
    return glue(stream, call, R(src, n * 2, "src") && R(dst, n * 4, "dst"));
}

cudaError_t rf_glue_x_to_xaug(const void *x, void *xaug, float *y, int64_t rows, int64_t c,
                              int64_t kp, cudaStream_t stream) {
    const char *call = "rf_glue_x_to_xaug";
    if (rows * c <= 0)
        return cudaSuccess;
    return glue(stream, call,
                R(x, rows * c * 2, "x") && R(xaug, rows * kp * 2, "xaug") &&
                    R(y, rows * c * 4, "y"));
}

cudaError_t rf_glue_xaug_init(void *xaug, int64_t rows, int64_t c, int64_t kp,
                              cudaStream_t stream) {
    const char *call = "rf_glue_xaug_init";
    if (rows * (kp - c) <= 0)
        return cudaSuccess;
    return glue(stream, call, R(xaug, rows * kp * 2, "xaug"));
}

cudaError_t rf_glue_split_f16(const float *b, void *hi, void *lo, int64_t n, cudaStream_t stream) {
    const char *call = "rf_glue_split_f16";
    if (n <= 0)
        return cudaSuccess;
    return glue(stream, call, R(b, n * 4, "b") && R(hi, n * 2, "hi") && R(lo, n * 2, "lo"));
}

cudaError_t rf_glue_round_h_upcast_x(const float *h32, void *h16, int64_t nh, const void *x,
                                     float *y, int64_t nx, cudaStream_t stream) {
    const char *call = "rf_glue_round_h_upcast_x";
    if (nh <= 0 && nx <= 0)
        return cudaSuccess;
    return glue(stream, call,
                R(h32, nh * 4, "h32") && R(h16, nh * 2, "h16") && R(x, nx * 2, "x") &&
                    R(y, nx * 4, "y"));
}

cudaError_t rf_glue_relu_f32(float *data, int64_t n, cudaStream_t stream) {
    const char *call = "rf_glue_relu_f32";
    if (n <= 0)
        return cudaSuccess;
    return glue(stream, call, R(data, n * 4, "data"));
}

cudaError_t rf_glue_spin(int64_t ns, cudaStream_t stream) {
    if (ns <= 0)
        return cudaSuccess;
    return glue(stream, "rf_glue_spin", 1);
}

cudaError_t rf_glue_poison_smem(cudaStream_t stream) {
    return glue(stream, "rf_glue_poison_smem", 1);
}
