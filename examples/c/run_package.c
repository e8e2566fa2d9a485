/* Loads a package made by `rowfuse compile` and runs one batch through the runtime API
 * (rowfuse/runtime.h): eagerly, then as a CUDA Graph replay, which must give the same Y.
 *
 *   run_package PKGDIR [ROWS]
 *
 * X is seeded random fp16 input (seed printed); the weights are the package's. Prints the
 * device, the schedule, and a checksum and the first values of Y. Exit status: 0 on
 * success, 1 when a rowfuse call fails (the message names what and why), 2 for bad
 * arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowfuse/runtime.h"
#include "rowfuse/tensor.h"

#define SEED 20261204u

/* Reports a failed call and releases its status; returns 1 when st was an error. */
static int failed(const char *what, rf_status_t st) {
    if (!st)
        return 0;
    fprintf(stderr, "run_package: %s: %s: %s\n", what, rf_code_name(rf_status_code(st)),
            rf_status_message(st));
    rf_status_free(st);
    return 1;
}

/* Uniform in [-1, 1) from a 32-bit LCG, so the input is the same on every machine. */
static float next_uniform(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: run_package PKGDIR [ROWS]\n");
        return 2;
    }
    long long rows_arg = 0;
    if (argc == 3) {
        char *end = NULL;
        rows_arg = strtoll(argv[2], &end, 10);
        if (!end || *end || rows_arg < 1) {
            fprintf(stderr, "run_package: ROWS must be a positive integer, not '%s'\n", argv[2]);
            return 2;
        }
    }
    int rc = 1;
    rf_device_info_t dev;
    rf_pkg_t *pkg = NULL;
    rf_variant_t *variant = NULL;
    rf_exec_t *exec = NULL;
    void *stream = NULL;
    rf_mlp_buffers_t buf;
    int have_buffers = 0;
    uint16_t *x = NULL;
    float *y = NULL, *y_graph = NULL;

    if (failed("rf_device_open", rf_device_open(0, &dev)) ||
        failed(argv[1], rf_pkg_load(rf_allocator_system(), argv[1], &pkg)))
        goto done;
    int64_t rows = rows_arg ? rows_arg : rf_pkg_rows(pkg);
    int64_t channels = rf_pkg_channels(pkg), hidden = rf_pkg_hidden(pkg);
    const char *schedule = rf_pkg_schedule(pkg);
    printf("device %s (sm_%d%d, %d SMs); package %s: %lld x %lld x %lld, schedule %s\n", dev.name,
           dev.cc_major, dev.cc_minor, dev.sm_count, argv[1], (long long)rows, (long long)channels,
           (long long)hidden, schedule);

    size_t n_x = (size_t)(rows * channels);
    x = malloc(n_x * sizeof *x);
    y = malloc(n_x * sizeof *y);
    y_graph = malloc(n_x * sizeof *y_graph);
    if (!x || !y || !y_graph) {
        fprintf(stderr, "run_package: out of host memory for %lld rows\n", (long long)rows);
        goto done;
    }
    uint32_t state = SEED;
    for (size_t i = 0; i < n_x; i++)
        x[i] = rf_f32_to_f16(next_uniform(&state));
    printf("input: seeded uniform [-1, 1), seed %u\n", SEED);

    if (failed("rf_mlp_buffers_alloc", rf_mlp_buffers_alloc(rows, channels, hidden, &buf)))
        goto done;
    have_buffers = 1;
    if (failed("rf_pkg_upload_weights", rf_pkg_upload_weights(pkg, &buf)) ||
        failed("rf_mlp_buffers_upload", rf_mlp_buffers_upload(&buf, x, NULL, NULL, NULL, NULL)) ||
        failed("rf_stream_create", rf_stream_create(&stream)) ||
        failed(schedule, rf_variant_create_pkg(rf_allocator_system(), pkg, schedule, &variant)))
        goto done;

    /* eager: one launch on the stream */
    if (failed("rf_mlp_buffers_poison", rf_mlp_buffers_poison(&buf, stream)) ||
        failed("rf_variant_launch", rf_variant_launch(variant, &buf.args, stream)) ||
        failed("rf_stream_sync", rf_stream_sync(stream)) ||
        failed("rf_mlp_buffers_download_y", rf_mlp_buffers_download_y(&buf, y)))
        goto done;

    /* the same launch captured into a CUDA Graph, replayed */
    if (failed("rf_exec_capture",
               rf_exec_capture(rf_allocator_system(), variant, &buf.args, stream, &exec)) ||
        failed("rf_mlp_buffers_poison", rf_mlp_buffers_poison(&buf, stream)) ||
        failed("rf_exec_replay", rf_exec_replay(exec, stream)) ||
        failed("rf_stream_sync", rf_stream_sync(stream)) ||
        failed("rf_mlp_buffers_download_y", rf_mlp_buffers_download_y(&buf, y_graph)))
        goto done;

    double sum = 0.0;
    for (size_t i = 0; i < n_x; i++) {
        if (y[i] != y[i]) {
            fprintf(stderr, "run_package: Y[%zu] is NaN: the launch left it unwritten\n", i);
            goto done;
        }
        sum += y[i];
    }
    if (memcmp(y, y_graph, n_x * sizeof *y) != 0) {
        fprintf(stderr, "run_package: the graph replay's Y differs from the eager launch's\n");
        goto done;
    }
    printf("Y: sum %.6f; Y[0][0..3] = %.5f %.5f %.5f %.5f; graph replay: same Y (%d kernel "
           "nodes)\n",
           sum, y[0], n_x > 1 ? y[1] : 0.0f, n_x > 2 ? y[2] : 0.0f, n_x > 3 ? y[3] : 0.0f,
           rf_exec_kernel_nodes(exec));
    rc = 0;

done:
    rf_exec_destroy(exec);
    rf_variant_destroy(variant);
    if (stream)
        rf_stream_destroy(stream);
    if (have_buffers)
        rf_mlp_buffers_free(&buf);
    rf_pkg_destroy(pkg);
    free(x);
    free(y);
    free(y_graph);
    return rc;
}
