/* The evaluator's GPU path: runs the model's residual-MLP block with a package's kernels.
 * This is the only evaluator file that calls the CUDA runtime, and it uses only the public
 * runtime API (rowfuse/runtime.h): open the device, load the package, make the variant of
 * the schedule the package's plan chose, upload the model's own weights (fp16 W1 [C, H] and
 * W2 [H, C], f32 biases: the layout `rowfuse compile` writes), then run the rows through in
 * chunks of the plan's row count (the last chunk padded with zero rows) and read Y back.
 * Built without the CUDA runtime, it reports RF_CODE_NO_DEVICE. */
#include <stdio.h>
#include <string.h>

#include "eval/eval_internal.h"
#include "rowfuse/tensor.h"

#ifdef RF_HAVE_CUDA
#include "rowfuse/runtime.h"

typedef struct rf_gpu_run {
    rf_pkg_t *pkg;
    rf_variant_t *variant;
    void *stream;
    rf_mlp_buffers_t buffers;
    int have_buffers;
    uint16_t *xh;
    float *yh;
} rf_gpu_run_t;

static void rf_gpu_run_free(rf_allocator_t a, rf_gpu_run_t *g) {
    if (g->have_buffers)
        rf_mlp_buffers_free(&g->buffers);
    rf_stream_destroy(g->stream);
    rf_variant_destroy(g->variant);
    rf_pkg_destroy(g->pkg);
    rf_free(a, g->xh);
    rf_free(a, g->yh);
}

static rf_status_t rf_gpu_setup(rf_allocator_t a, const char *dir, const rf_eval_block_t *b,
                                int64_t rows, rf_gpu_run_t *g, int64_t *out_chunk,
                                rf_eval_gpu_info_t *info) {
    int64_t C = b->channels, H = b->hidden;
    RF_RETURN_IF_ERROR_PLAIN(rf_pkg_load(a, dir, &g->pkg));
    if (rf_pkg_channels(g->pkg) != C || rf_pkg_hidden(g->pkg) != H)
        return RF_ERR(RF_CODE_SHAPE_ERROR,
                      "package %s is for C=%lld, H=%lld; the model's block has C=%lld, H=%lld "
                      "(compile the package from this model)",
                      dir, (long long)rf_pkg_channels(g->pkg), (long long)rf_pkg_hidden(g->pkg),
                      (long long)C, (long long)H);
    const char *schedule = rf_pkg_schedule(g->pkg);
    snprintf(info->schedule, sizeof info->schedule, "%s", schedule ? schedule : "?");
    info->package_rows = rf_pkg_rows(g->pkg);
    int64_t chunk = info->package_rows >= 1 ? info->package_rows : rows;
    *out_chunk = chunk = chunk < rows ? chunk : rows;
    RF_RETURN_IF_ERROR(rf_variant_create_pkg(a, g->pkg, schedule, &g->variant),
                       "package %s, schedule %s", dir, info->schedule);
    RF_RETURN_IF_ERROR_PLAIN(rf_stream_create(&g->stream));
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_buffers_alloc(chunk, C, H, &g->buffers));
    g->have_buffers = 1;
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_buffers_upload(&g->buffers, NULL, b->w1, b->b1, b->w2, b->b2));
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc(a, (size_t)(chunk * C) * sizeof *g->xh, "X (fp16)", (void **)&g->xh));
    return rf_alloc(a, (size_t)(chunk * C) * sizeof *g->yh, "Y", (void **)&g->yh);
}

rf_status_t rf_eval_gpu_block(rf_allocator_t a, const char *dir, const rf_eval_block_t *b,
                              const double *x, int64_t rows, float *out_y,
                              rf_eval_gpu_info_t *info) {
    rf_device_info_t dev;
    memset(info, 0, sizeof *info);
    RF_RETURN_IF_ERROR(rf_device_open(0, &dev),
                       "--gpu needs a CUDA GPU (--cpu-mixed runs the same numerics on the CPU)");
    snprintf(info->device, sizeof info->device, "%s (sm_%d%d, %d SMs, driver %d)", dev.name,
             dev.cc_major, dev.cc_minor, dev.sm_count, dev.driver_version);
    if (!dir)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "--gpu needs --package PKGDIR");
    rf_gpu_run_t g;
    memset(&g, 0, sizeof g);
    int64_t C = b->channels, chunk = 0;
    rf_status_t st = rf_gpu_setup(a, dir, b, rows, &g, &chunk, info);
    for (int64_t r0 = 0; !st && r0 < rows; r0 += chunk) {
        int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
        /* Round X to fp16 directly from double, as the interpreter's mixed precision does. */
        for (int64_t i = 0; i < chunk * C; i++)
            g.xh[i] = i < n * C ? rf_f32_to_f16((float)rf_round_f16(x[r0 * C + i])) : 0;
        rf_mlp_args_t args = g.buffers.args;
        args.rows = chunk;
        st = rf_mlp_buffers_upload(&g.buffers, g.xh, NULL, NULL, NULL, NULL);
        if (!st)
            st = rf_variant_launch(g.variant, &args, g.stream);
        if (!st)
            st = rf_stream_sync(g.stream);
        if (!st)
            st = rf_mlp_buffers_download_y(&g.buffers, g.yh);
        if (!st)
            memcpy(out_y + r0 * C, g.yh, (size_t)(n * C) * sizeof *out_y);
        else
            st = rf_status_annotate(st, "GPU rows %lld-%lld", (long long)(r0 + 1),
                                    (long long)(r0 + n));
    }
    rf_gpu_run_free(a, &g);
    return st;
}

#else

rf_status_t rf_eval_gpu_block(rf_allocator_t a, const char *dir, const rf_eval_block_t *b,
                              const double *x, int64_t rows, float *out_y,
                              rf_eval_gpu_info_t *info) {
    (void)a;
    (void)dir;
    (void)b;
    (void)x;
    (void)rows;
    (void)out_y;
    memset(info, 0, sizeof *info);
    return RF_ERR(RF_CODE_NO_DEVICE,
                  "this rowfuse was built without the CUDA runtime (no CUDA toolkit at build "
                  "time); --gpu needs it (--cpu-mixed runs the same numerics on the CPU)");
}

#endif
