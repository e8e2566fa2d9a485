/* Device discovery, streams, CUDA error statuses and the device buffers of one block
 * shape (rowfuse/runtime.h). Everything here goes through the CUDA runtime API. */
#include <stdio.h>
#include <string.h>

#include "glue.h"
#include "rt_internal.h"

int rf_cuda_is_no_device(cudaError_t err) {
    return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
           err == cudaErrorStubLibrary || err == cudaErrorDevicesUnavailable ||
           err == cudaErrorSystemDriverMismatch || err == cudaErrorCompatNotSupportedOnDevice;
}

/* The likely cause of an error CUDA gives while a stream is capturing, for the message:
 * the capture itself refused something the launch path did. "" for other errors. */
static const char *capture_cause(cudaError_t err) {
    switch (err) {
    case cudaErrorStreamCaptureImplicit:
        return " (a kernel was launched outside the capturing stream: on the legacy default "
               "stream, which waits for every blocking stream, so the launch would have made "
               "the capturing stream wait outside the graph; CUDA refused it and invalidated "
               "the capture)";
    case cudaErrorStreamCaptureUnsupported:
        return " (a call a capture does not allow was made during the capture: a synchronize, "
               "or a kernel launched outside the capturing stream on the legacy default stream)";
    case cudaErrorStreamCaptureInvalidated:
        return " (an earlier error during the capture invalidated it, e.g. a kernel launched "
               "outside the capturing stream on the legacy default stream)";
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureUnjoined:
        return " (work outside the capturing stream was joined into the capture, or work "
               "forked from it was not joined back)";
    default:
        return "";
    }
}

rf_status_t rf_cuda_status(cudaError_t err, const char *file, int line, const char *call) {
    rf_code_t code = RF_CODE_CUDA_ERROR;
    if (rf_cuda_is_no_device(err))
        code = RF_CODE_NO_DEVICE;
    else if (err == cudaErrorMemoryAllocation)
        code = RF_CODE_OUT_OF_MEMORY;
    /* Clear a sticky-free error so the next call does not report it again. */
    (void)cudaGetLastError();
    return rf_status_make(
        code, file, line, "%s: %s: %s%s%s", call, cudaGetErrorName(err), cudaGetErrorString(err),
        code == RF_CODE_NO_DEVICE ? " (no usable CUDA GPU or driver)" : "", capture_cause(err));
}

rf_status_t rf_cuda_status_raw(int err, const char *file, int line, const char *call) {
    /* The kernel ABI returns CUresult or cudaError_t numbers. The common ones agree
     * (0 success, 1 invalid value, 2 out of memory, 100 no device); the runtime's names
     * are used for the message, with the raw number kept. */
    rf_status_t st = rf_cuda_status((cudaError_t)err, file, line, call);
    return rf_status_annotate(st, "error %d", err);
}

int rf_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

rf_status_t rf_device_require(void) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess)
        return rf_cuda_status(err, __FILE__, __LINE__, "cudaGetDeviceCount");
    if (n == 0)
        return RF_ERR(RF_CODE_NO_DEVICE, "cudaGetDeviceCount: no CUDA GPU is visible");
    return RF_OK;
}

rf_status_t rf_device_open(int ordinal, rf_device_info_t *out_info) {
    struct cudaDeviceProp prop;
    int n = 0;
    memset(out_info, 0, sizeof(*out_info));
    RF_RETURN_IF_ERROR(rf_device_require(), "while opening device %d", ordinal);
    RF_CUDA(cudaGetDeviceCount(&n));
    if (ordinal < 0 || ordinal >= n)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "device %d does not exist (%d visible)", ordinal,
                      n);
    RF_CUDA(cudaSetDevice(ordinal));
    RF_CUDA(cudaFree(0)); /* creates the primary context now, outside any timing */
    RF_CUDA(cudaGetDeviceProperties(&prop, ordinal));
    out_info->ordinal = ordinal;
    snprintf(out_info->name, sizeof(out_info->name), "%.127s", prop.name);
    out_info->cc_major = prop.major;
    out_info->cc_minor = prop.minor;
    out_info->sm_count = prop.multiProcessorCount;
    out_info->total_mem = prop.totalGlobalMem;
    RF_CUDA(cudaDriverGetVersion(&out_info->driver_version));
    RF_CUDA(cudaRuntimeGetVersion(&out_info->runtime_version));
    if (cudaDeviceGetAttribute(&out_info->clock_khz, cudaDevAttrClockRate, ordinal) != cudaSuccess)
        out_info->clock_khz = 0;
    if (cudaDeviceGetAttribute(&out_info->mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal) !=
        cudaSuccess)
        out_info->mem_clock_khz = 0;
    (void)cudaGetLastError();
    return RF_OK;
}

rf_status_t rf_stream_create(void **out_stream) {
    cudaStream_t s = NULL;
    *out_stream = NULL;
    RF_RETURN_IF_ERROR(rf_device_require(), "while creating a stream");
    RF_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *out_stream = (void *)s;
    return RF_OK;
}

void rf_stream_destroy(void *stream) {
    if (stream)
        (void)cudaStreamDestroy((cudaStream_t)stream);
}

rf_status_t rf_stream_sync(void *stream) {
    RF_CUDA(cudaStreamSynchronize((cudaStream_t)stream));
    return RF_OK;
}

static rf_status_t dev_alloc(void **ptr, int64_t count, size_t elem, const char *what) {
    size_t bytes = 0;
    cudaError_t err;
    if (count < 0 || rf_mul_size((size_t)count, elem, &bytes))
        return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: %lld elements of %zu bytes overflow", what,
                      (long long)count, elem);
    if (bytes == 0)
        bytes = 16; /* a valid pointer even for empty tensors */
    err = cudaMalloc(ptr, bytes);
    if (err != cudaSuccess) {
        char call[96];
        snprintf(call, sizeof(call), "cudaMalloc(%s, %zu bytes)", what, bytes);
        *ptr = NULL;
        return rf_cuda_status(err, __FILE__, __LINE__, call);
    }
    return RF_OK;
}

void rf_mlp_buffers_free(rf_mlp_buffers_t *b) {
    if (!b)
        return;
    (void)cudaFree((void *)b->args.x);
    (void)cudaFree((void *)b->args.w1);
    (void)cudaFree((void *)b->args.b1);
    (void)cudaFree((void *)b->args.w2);
    (void)cudaFree((void *)b->args.b2);
    (void)cudaFree(b->args.h);
    (void)cudaFree(b->args.y);
    memset(b, 0, sizeof(*b));
}

rf_status_t rf_mlp_buffers_alloc(int64_t rows, int64_t channels, int64_t hidden,
                                 rf_mlp_buffers_t *out) {
    rf_status_t st = RF_OK;
    void *p[7] = {0};
    memset(out, 0, sizeof(*out));
    if (rows < 1 || channels < 1 || hidden < 1 || rows > RF_MAX_DIM || channels > RF_MAX_DIM ||
        hidden > RF_MAX_DIM)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "block shape %lldx%lldx%lld (rows x channels x hidden): each must be "
                      "in 1..%lld",
                      (long long)rows, (long long)channels, (long long)hidden,
                      (long long)RF_MAX_DIM);
    if ((st = rf_device_require()) != RF_OK)
        return rf_status_annotate(st, "while allocating device buffers");
    if ((st = dev_alloc(&p[0], rows * channels, 2, "X")) != RF_OK ||
        (st = dev_alloc(&p[1], channels * hidden, 2, "W1")) != RF_OK ||
        (st = dev_alloc(&p[2], hidden, 4, "b1")) != RF_OK ||
        (st = dev_alloc(&p[3], hidden * channels, 2, "W2")) != RF_OK ||
        (st = dev_alloc(&p[4], channels, 4, "b2")) != RF_OK ||
        (st = dev_alloc(&p[5], rows * hidden, 2, "H")) != RF_OK ||
        (st = dev_alloc(&p[6], rows * channels, 4, "Y")) != RF_OK) {
        for (int i = 0; i < 7; i++)
            (void)cudaFree(p[i]);
        return rf_status_annotate(st, "while allocating buffers for %lldx%lldx%lld",
                                  (long long)rows, (long long)channels, (long long)hidden);
    }
    out->args.x = p[0];
    out->args.w1 = p[1];
    out->args.b1 = (const float *)p[2];
    out->args.w2 = p[3];
    out->args.b2 = (const float *)p[4];
    out->args.h = p[5];
    out->args.y = (float *)p[6];
    out->args.rows = rows;
    out->rows = rows;
    out->channels = channels;
    out->hidden = hidden;
    return RF_OK;
}

static rf_status_t upload(const void *dst, const void *src, size_t bytes, const char *what) {
    cudaError_t err;
    if (!src)
        return RF_OK;
    err = cudaMemcpy((void *)dst, src, bytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) {
        char call[96];
        snprintf(call, sizeof(call), "cudaMemcpy(%s, %zu bytes, host to device)", what, bytes);
        return rf_cuda_status(err, __FILE__, __LINE__, call);
    }
    return RF_OK;
}

rf_status_t rf_mlp_buffers_upload(rf_mlp_buffers_t *b, const uint16_t *x, const uint16_t *w1,
                                  const float *b1, const uint16_t *w2, const float *b2) {
    size_t m = (size_t)b->rows, c = (size_t)b->channels, h = (size_t)b->hidden;
    RF_RETURN_IF_ERROR_PLAIN(upload(b->args.x, x, m * c * 2, "X"));
    RF_RETURN_IF_ERROR_PLAIN(upload(b->args.w1, w1, c * h * 2, "W1"));
    RF_RETURN_IF_ERROR_PLAIN(upload(b->args.b1, b1, h * 4, "b1"));
    RF_RETURN_IF_ERROR_PLAIN(upload(b->args.w2, w2, h * c * 2, "W2"));
    RF_RETURN_IF_ERROR_PLAIN(upload(b->args.b2, b2, c * 4, "b2"));
    return RF_OK;
}

rf_status_t rf_mlp_buffers_fill(rf_mlp_buffers_t *b, unsigned char byte, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    RF_CUDA(cudaMemsetAsync(b->args.y, byte, (size_t)(b->rows * b->channels) * 4, s));
    RF_CUDA(cudaMemsetAsync(b->args.h, byte, (size_t)(b->rows * b->hidden) * 2, s));
    return RF_OK;
}

rf_status_t rf_device_poison_smem(void *stream) {
    RF_CUDA(rf_glue_poison_smem((cudaStream_t)stream));
    return RF_OK;
}

rf_status_t rf_mlp_buffers_poison(rf_mlp_buffers_t *b, void *stream) {
    return rf_mlp_buffers_fill(b, 0xFF, stream);
}

rf_status_t rf_mlp_buffers_download_y(const rf_mlp_buffers_t *b, float *out_y) {
    RF_CUDA(cudaDeviceSynchronize());
    RF_CUDA(
        cudaMemcpy(out_y, b->args.y, (size_t)(b->rows * b->channels) * 4, cudaMemcpyDeviceToHost));
    return RF_OK;
}
