/* Timing primitives for the bench job: CUDA-event intervals around graph replays or
 * eager launches, and the host clock from launch to the return of a synchronize. They
 * measure; they do not decide how many observations make a result (the bench does). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "rt_internal.h"

double rf_timing_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

typedef rf_status_t (*enqueue_fn)(void *ctx, const rf_mlp_args_t *args, void *stream);

static rf_status_t enqueue_replay(void *ctx, const rf_mlp_args_t *args, void *stream) {
    (void)args;
    return rf_exec_replay((rf_exec_t *)ctx, stream);
}

static rf_status_t enqueue_launch(void *ctx, const rf_mlp_args_t *args, void *stream) {
    return rf_variant_launch((rf_variant_t *)ctx, args, stream);
}

static rf_status_t events_around(enqueue_fn fn, void *ctx, const rf_mlp_args_t *args, void *stream,
                                 int n, double *out_us) {
    cudaEvent_t start = NULL, stop = NULL;
    cudaStream_t s = (cudaStream_t)stream;
    rf_status_t st = RF_OK;
    cudaError_t err;
    float ms = 0.0f;
    *out_us = 0.0;
    if (n < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "timing needs n >= 1 (got %d)", n);
    if ((err = cudaEventCreate(&start)) != cudaSuccess ||
        (err = cudaEventCreate(&stop)) != cudaSuccess) {
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventCreate");
        goto done;
    }
    if ((err = cudaEventRecord(start, s)) != cudaSuccess) {
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventRecord(start)");
        goto done;
    }
    for (int i = 0; i < n && !st; i++)
        st = fn(ctx, args, stream);
    if (st)
        goto done;
    if ((err = cudaEventRecord(stop, s)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventRecord(stop)");
    else if ((err = cudaEventSynchronize(stop)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventSynchronize(stop)");
    else if ((err = cudaEventElapsedTime(&ms, start, stop)) != cudaSuccess)
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventElapsedTime");
    if (st)
        goto done;
    *out_us = (double)ms * 1e3;
done:
    if (start)
        (void)cudaEventDestroy(start);
    if (stop)
        (void)cudaEventDestroy(stop);
    return st;
}

/* With out_event_us NULL no event is recorded, so the host interval holds only the
 * launch call and the synchronize; with events, their two records are inside it too. */
static rf_status_t host_around(enqueue_fn fn, void *ctx, const rf_mlp_args_t *args, void *stream,
                               double *out_host_us, double *out_event_us) {
    cudaEvent_t start = NULL, stop = NULL;
    cudaStream_t s = (cudaStream_t)stream;
    rf_status_t st = RF_OK;
    cudaError_t err = cudaSuccess;
    double t0, t1;
    float ms = 0.0f;
    *out_host_us = 0.0;
    if (out_event_us) {
        *out_event_us = 0.0;
        if ((err = cudaEventCreate(&start)) != cudaSuccess ||
            (err = cudaEventCreate(&stop)) != cudaSuccess) {
            st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventCreate");
            goto done;
        }
    }
    t0 = rf_timing_now_us();
    if (start && (err = cudaEventRecord(start, s)) != cudaSuccess) {
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventRecord(start)");
        goto done;
    }
    if ((st = fn(ctx, args, stream)) != RF_OK)
        goto done;
    if (stop && (err = cudaEventRecord(stop, s)) != cudaSuccess) {
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventRecord(stop)");
        goto done;
    }
    if ((err = cudaStreamSynchronize(s)) != cudaSuccess) {
        st = rf_cuda_status(err, __FILE__, __LINE__, "cudaStreamSynchronize");
        goto done;
    }
    t1 = rf_timing_now_us();
    *out_host_us = t1 - t0;
    if (out_event_us) {
        if ((err = cudaEventElapsedTime(&ms, start, stop)) != cudaSuccess) {
            st = rf_cuda_status(err, __FILE__, __LINE__, "cudaEventElapsedTime");
            goto done;
        }
        *out_event_us = (double)ms * 1e3;
    }
done:
    if (start)
        (void)cudaEventDestroy(start);
    if (stop)
        (void)cudaEventDestroy(stop);
    return st;
}

rf_status_t rf_timing_replay_events(rf_exec_t *exec, void *stream, int n, double *out_us) {
    return events_around(enqueue_replay, exec, NULL, stream, n, out_us);
}

rf_status_t rf_timing_replay_host(rf_exec_t *exec, void *stream, double *out_host_us,
                                  double *out_event_us) {
    return host_around(enqueue_replay, exec, NULL, stream, out_host_us, out_event_us);
}

rf_status_t rf_timing_launch_events(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream,
                                    int n, double *out_us) {
    return events_around(enqueue_launch, variant, args, stream, n, out_us);
}

rf_status_t rf_timing_launch_host(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream,
                                  double *out_host_us, double *out_event_us) {
    return host_around(enqueue_launch, variant, args, stream, out_host_us, out_event_us);
}
