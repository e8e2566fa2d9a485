/* Tests of the CUDA runtime that need no GPU: loading packages that do not exist or are
 * malformed fails with a clear status naming the file and field; a stand-in kernel
 * library (runtime_fake_pkg.c) exercises the ABI checks; and with no visible device every
 * entry point that needs one returns RF_CODE_NO_DEVICE instead of crashing.
 * CUDA_VISIBLE_DEVICES is emptied first, so the test means the same on a GPU machine.
 *
 * With the argument --gpu (tests/gpu/run.sh runs it so on the GPU machine) the GPU is left
 * visible and the test checks instead what needs one: the stand-in library loads, its
 * launch enqueues nothing, so capturing it must fail with "no kernel node" (the
 * empty-graph error); buffers round-trip; the cuBLASLt variant captures and times. */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/check.h"
#include "rf_test.h"
#include "rowfuse/runtime.h"
#include "rowfuse/tensor.h"

static char tmp_root[256];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* Makes <tmp_root>/<name>/ holding plan.json = plan; returns the directory. */
static const char *make_pkg(const char *name, const char *plan) {
    static char dir[512];
    char path[600];
    snprintf(dir, sizeof(dir), "%s/%s", tmp_root, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    write_text(path, plan);
    return dir;
}

static int copy_file(const char *from, const char *to) {
    char buf[65536];
    size_t n;
    FILE *in = fopen(from, "rb"), *out;
    if (!in)
        return -1;
    out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

static void test_missing_and_malformed(void) {
    rf_allocator_t a = rf_allocator_system();
    rf_pkg_t *pkg = (rf_pkg_t *)1;
    CHECK_ERR(rf_pkg_load(a, "does/not/exist", &pkg), RF_CODE_NOT_FOUND, "plan.json");
    CHECK(pkg == NULL);
    CHECK_ERR(rf_pkg_load(a, "", &pkg), RF_CODE_INVALID_ARGUMENT, "empty");
    CHECK_ERR(rf_pkg_load(a, make_pkg("badjson", "{\"channels\": 48,"), &pkg), RF_CODE_PARSE_ERROR,
              "not valid JSON");
    CHECK_ERR(rf_pkg_load(a, make_pkg("array", "[1, 2]"), &pkg), RF_CODE_PARSE_ERROR,
              "JSON object");
    CHECK_ERR(rf_pkg_load(a, make_pkg("nochan", "{\"hidden\": 96}"), &pkg), RF_CODE_PARSE_ERROR,
              "\"channels\" is missing");
    CHECK_ERR(rf_pkg_load(a, make_pkg("strchan", "{\"channels\": \"48\", \"hidden\": 96}"), &pkg),
              RF_CODE_PARSE_ERROR, "\"channels\" must be a number");
    CHECK_ERR(rf_pkg_load(a, make_pkg("negchan", "{\"channels\": -3, \"hidden\": 96}"), &pkg),
              RF_CODE_PARSE_ERROR, "\"channels\" is -3");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("fracrows", "{\"channels\": 48, \"hidden\": 96, \"rows\": 4.5}"),
                          &pkg),
              RF_CODE_PARSE_ERROR, "\"rows\" is 4.5");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("nosched", "{\"channels\": 48, \"hidden\": 96, "
                                              "\"library\": \"k.so\"}"),
                          &pkg),
              RF_CODE_PARSE_ERROR, "\"schedule\" is missing");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("escape", "{\"channels\": 48, \"hidden\": 96, \"schedule\": "
                                             "\"conventional\", \"library\": \"../k.so\"}"),
                          &pkg),
              RF_CODE_PARSE_ERROR, "inside the package");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("nolib", "{\"channels\": 48, \"hidden\": 96, \"schedule\": "
                                            "\"conventional\", \"library\": \"k.so\"}"),
                          &pkg),
              RF_CODE_NOT_FOUND, "cannot load kernel library");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("badweights", "{\"channels\": 48, \"hidden\": 96, "
                                                 "\"schedule\": \"conventional\", \"library\": "
                                                 "\"k.so\", \"weights\": [1]}"),
                          &pkg),
              RF_CODE_PARSE_ERROR, "\"weights\" must be an object");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("nomanifest", "{\"channels\": 48, \"hidden\": 96, "
                                                 "\"schedule\": \"conventional\"}"),
                          &pkg),
              RF_CODE_NOT_FOUND, "kernel manifest");
    CHECK(pkg == NULL);
}

static void test_fake_library(const char *fake_lib) {
    rf_allocator_t a = rf_allocator_system();
    rf_pkg_t *pkg = NULL;
    rf_variant_t *v = NULL;
    char path[600];
    const char *plan = "{\"channels\": 48, \"hidden\": 96, \"rows\": 49, \"tile_rows\": 16, "
                       "\"schedule\": \"persistent-smem\", \"library\": \"libk.so\", "
                       "\"weights\": {\"b1\": \"weights/b1.npy\"}}";
    const char *dir = make_pkg("fake", plan);
    snprintf(path, sizeof(path), "%s/libk.so", dir);
    if (copy_file(fake_lib, path) != 0) {
        fprintf(stderr, "cannot copy %s (build rf_test_fake_pkg first)\n", fake_lib);
        CHECK(0);
        return;
    }
    /* Without a GPU, the full load stops at the device check with NO_DEVICE. */
    CHECK_ERR(rf_pkg_load(a, dir, &pkg), RF_CODE_NO_DEVICE, "while loading package");
    CHECK(pkg == NULL);

    CHECK_OK(rf_pkg_load_nogpu(a, dir, &pkg));
    if (!pkg)
        return;
    CHECK(rf_pkg_channels(pkg) == 48);
    CHECK(rf_pkg_hidden(pkg) == 96);
    CHECK(rf_pkg_rows(pkg) == 49);
    CHECK(rf_pkg_tile_rows(pkg) == 16);
    CHECK(strcmp(rf_pkg_schedule(pkg), "persistent-smem") == 0);
    CHECK(rf_pkg_kernel_count(pkg, "persistent-smem") == 1);
    CHECK(rf_pkg_kernel_count(pkg, "conventional") == 2);
    CHECK(rf_pkg_kernel_count(pkg, "cublaslt") == -1);
    CHECK(rf_pkg_kernel_count(pkg, "nonsense") == -1);

    /* Weights: one named, present after we write it; others not named. */
    {
        rf_tensor_t t, back;
        rf_shape_t s = {1, {96}};
        char wdir[600], wpath[700];
        snprintf(wdir, sizeof(wdir), "%s/weights", dir);
        mkdir(wdir, 0755);
        snprintf(wpath, sizeof(wpath), "%s/b1.npy", wdir);
        CHECK_OK(rf_tensor_alloc(a, RF_DTYPE_F32, &s, &t));
        for (int i = 0; i < 96; i++)
            ((float *)t.data)[i] = 0.25f * (float)(i + 1);
        CHECK_OK(rf_npy_write(wpath, &t));
        CHECK_OK(rf_pkg_weight(pkg, "b1", &back));
        CHECK(back.dtype == RF_DTYPE_F32 && back.nbytes == t.nbytes &&
              memcmp(back.data, t.data, t.nbytes) == 0);
        rf_tensor_free(a, &back);
        rf_tensor_free(a, &t);
        CHECK_ERR(rf_pkg_weight(pkg, "w1", &back), RF_CODE_NOT_FOUND, "no weight \"w1\"");
    }

    CHECK_ERR(rf_variant_create_pkg(a, pkg, "persistent-tmem", &v), RF_CODE_NOT_FOUND,
              "does not contain schedule \"persistent-tmem\"");
    /* "cublaslt" needs no package kernels: it becomes the cuBLASLt variant, which needs
     * a GPU. */
    CHECK_ERR(rf_variant_create_pkg(a, pkg, "cublaslt", &v), RF_CODE_NO_DEVICE, "cuBLASLt variant");
    CHECK(v == NULL);
    CHECK_OK(rf_variant_create_pkg(a, pkg, "conventional", &v));
    if (v) {
        int min = 0, exact = 0;
        rf_mlp_args_t args;
        rf_exec_t *e = NULL;
        rf_variant_expected_kernels(v, &min, &exact);
        CHECK(min == 2 && exact == 1);
        CHECK(strcmp(rf_variant_name(v), "conventional") == 0);
        memset(&args, 0, sizeof(args));
        CHECK_ERR(rf_variant_launch(v, &args, NULL), RF_CODE_INVALID_ARGUMENT,
                  "every buffer must be set");
        args.x = args.w1 = args.w2 = (const void *)&args;
        args.b1 = args.b2 = (const float *)&args;
        args.h = (void *)&args;
        args.y = (float *)&args;
        args.rows = 4;
        CHECK_ERR(rf_variant_launch(v, &args, NULL), RF_CODE_INVALID_ARGUMENT,
                  "loaded without a GPU");
        CHECK_ERR(rf_exec_capture(a, v, &args, NULL, &e), RF_CODE_INVALID_ARGUMENT,
                  "legacy default stream");
        CHECK(e == NULL);
        rf_variant_destroy(v);
    }
    rf_pkg_destroy(pkg);

    /* Plan and library disagree: channels, then ABI version, then the chosen schedule. */
    make_pkg("fake", "{\"channels\": 64, \"hidden\": 96, \"schedule\": \"conventional\", "
                     "\"library\": \"libk.so\"}");
    CHECK_ERR(rf_pkg_load_nogpu(a, dir, &pkg), RF_CODE_MISMATCH, "channels=48 hidden=96");
    make_pkg("fake", "{\"channels\": 48, \"hidden\": 96, \"schedule\": \"persistent-tmem\", "
                     "\"library\": \"libk.so\"}");
    CHECK_ERR(rf_pkg_load_nogpu(a, dir, &pkg), RF_CODE_MISMATCH, "does not contain it");
    /* A plan may choose the vendor schedule: it needs no kernels of the library. */
    make_pkg("fake", "{\"channels\": 48, \"hidden\": 96, \"schedule\": \"cublaslt\", "
                     "\"library\": \"libk.so\"}");
    CHECK_OK(rf_pkg_load_nogpu(a, dir, &pkg));
    CHECK(pkg && strcmp(rf_pkg_schedule(pkg), "cublaslt") == 0);
    rf_pkg_destroy(pkg);
    pkg = NULL;
    make_pkg("fake", plan);
    setenv("RF_FAKE_ABI", "7", 1);
    CHECK_ERR(rf_pkg_load_nogpu(a, dir, &pkg), RF_CODE_UNSUPPORTED, "ABI version 7");
    unsetenv("RF_FAKE_ABI");
    CHECK(pkg == NULL);
}

static void test_no_device(void) {
    rf_allocator_t a = rf_allocator_system();
    rf_device_info_t info;
    rf_mlp_buffers_t buf;
    rf_variant_t *v = (rf_variant_t *)1;
    void *stream = (void *)1;
    CHECK(rf_device_count() == 0);
    CHECK_ERR(rf_device_open(0, &info), RF_CODE_NO_DEVICE, "cudaGetDeviceCount");
    CHECK_ERR(rf_stream_create(&stream), RF_CODE_NO_DEVICE, "no usable CUDA GPU");
    CHECK(stream == NULL);
    CHECK_ERR(rf_mlp_buffers_alloc(49, 48, 96, &buf), RF_CODE_NO_DEVICE, "device buffers");
    CHECK_ERR(rf_mlp_buffers_alloc(0, 48, 96, &buf), RF_CODE_SHAPE_ERROR, "0x48x96");
    CHECK_ERR(rf_variant_create_cublaslt(a, 48, 96, &v), RF_CODE_NO_DEVICE, "cuBLASLt");
    CHECK(v == NULL);
    CHECK_ERR(rf_variant_create_cublaslt(a, 0, 96, &v), RF_CODE_SHAPE_ERROR, "channels=0");
    /* Destroy functions accept NULL. */
    rf_variant_destroy(NULL);
    rf_exec_destroy(NULL);
    rf_pkg_destroy(NULL);
    rf_mlp_buffers_free(NULL);
    CHECK(rf_timing_now_us() > 0.0);
}

static void test_check_job(void) {
    rf_allocator_t a = rf_allocator_system();
    rf_check_shape_t *shapes = NULL;
    rf_check_options_t o;
    rf_check_result_t *res = (rf_check_result_t *)1;
    rf_device_info_t dev;
    int n = -1;
    CHECK_OK(rf_check_parse_shapes(a, "49,1x48x96,5000x37x200", &shapes, &n));
    CHECK(n == 3);
    if (shapes && n == 3) {
        CHECK(shapes[0].rows == 49 && shapes[0].channels == 0 && shapes[0].hidden == 0);
        CHECK(shapes[1].rows == 1 && shapes[1].channels == 48 && shapes[1].hidden == 96);
        CHECK(shapes[2].rows == 5000 && shapes[2].channels == 37 && shapes[2].hidden == 200);
    }
    rf_free(a, shapes);
    CHECK_ERR(rf_check_parse_shapes(a, "4x5", &shapes, &n), RF_CODE_INVALID_ARGUMENT,
              "ROWSxCHANNELSxHIDDEN");
    CHECK_ERR(rf_check_parse_shapes(a, "0", &shapes, &n), RF_CODE_INVALID_ARGUMENT,
              "positive integers");
    CHECK_ERR(rf_check_parse_shapes(a, "49;50", &shapes, &n), RF_CODE_INVALID_ARGUMENT,
              "ROWSxCHANNELSxHIDDEN");
    CHECK_ERR(rf_check_parse_shapes(a, "1x2x", &shapes, &n), RF_CODE_INVALID_ARGUMENT,
              "positive integers");
    rf_check_options_default(&o);
    CHECK(o.rel_l2_tol == 1e-3 && o.atol == 1e-2 && o.rtol == 1e-2);
    CHECK_ERR(rf_check_run(a, &o, &dev, &res, &n), RF_CODE_INVALID_ARGUMENT, "nothing to check");
    {
        rf_check_shape_t one = {49, 48, 96};
        o.shapes = &one;
        o.n_shapes = 1;
        CHECK_ERR(rf_check_run(a, &o, &dev, &res, &n), RF_CODE_NO_DEVICE, "needs a GPU");
        CHECK(res == NULL && n == 0);
    }
}

static void test_gpu(const char *fake_lib) {
    rf_allocator_t a = rf_allocator_system();
    rf_device_info_t info;
    rf_pkg_t *pkg = NULL;
    rf_variant_t *v = NULL;
    rf_exec_t *e = NULL;
    rf_mlp_buffers_t buf;
    void *stream = NULL;
    char path[600];
    const char *dir = make_pkg("gpu", "{\"channels\": 48, \"hidden\": 96, \"schedule\": "
                                      "\"conventional\", \"library\": \"libk.so\"}");
    snprintf(path, sizeof(path), "%s/libk.so", dir);
    CHECK(copy_file(fake_lib, path) == 0);
    CHECK_OK(rf_device_open(0, &info));
    CHECK(rf_device_count() >= 1 && info.sm_count > 0);
    CHECK_OK(rf_stream_create(&stream));
    CHECK_OK(rf_mlp_buffers_alloc(5, 48, 96, &buf));
    {
        uint16_t x[5 * 48];
        float y[5 * 48];
        for (int i = 0; i < 5 * 48; i++)
            x[i] = rf_f32_to_f16((float)(i % 17) - 8.0f);
        CHECK_OK(rf_mlp_buffers_upload(&buf, x, NULL, NULL, NULL, NULL));
        CHECK_OK(rf_mlp_buffers_poison(&buf, stream));
        CHECK_OK(rf_mlp_buffers_download_y(&buf, y));
        CHECK(isnan(y[0]) && isnan(y[5 * 48 - 1]));
    }
    CHECK_OK(rf_pkg_load(a, dir, &pkg));
    if (pkg) {
        CHECK_OK(rf_variant_create_pkg(a, pkg, "conventional", &v));
        if (v) {
            CHECK_ERR(rf_exec_capture(a, v, &buf.args, stream, &e), RF_CODE_INTERNAL,
                      "holds no kernel node");
            CHECK(e == NULL);
            /* The stream is usable again after the failed capture. */
            CHECK_OK(rf_stream_sync(stream));
        }
        rf_variant_destroy(v);
        v = NULL;
        rf_pkg_destroy(pkg);
    }
    CHECK_OK(rf_variant_create_cublaslt(a, 48, 96, &v));
    if (v) {
        double us = 0.0, host = 0.0, ev = 0.0;
        CHECK_OK(rf_exec_capture(a, v, &buf.args, stream, &e));
        if (e) {
            CHECK(rf_exec_kernel_nodes(e) >= 3);
            CHECK_OK(rf_timing_replay_events(e, stream, 10, &us));
            CHECK(us > 0.0);
            CHECK_OK(rf_timing_replay_host(e, stream, &host, &ev));
            CHECK(host > 0.0 && ev > 0.0);
            CHECK_OK(rf_timing_launch_host(v, &buf.args, stream, &host, NULL));
            printf("cublaslt 5x48x96: %d kernel nodes, %.1f us/replay back-to-back, host %.1f "
                   "us (%s)\n",
                   rf_exec_kernel_nodes(e), us / 10.0, host, rf_variant_note(v));
        }
        rf_exec_destroy(e);
        rf_variant_destroy(v);
    }
    rf_mlp_buffers_free(&buf);
    rf_stream_destroy(stream);
}

int main(int argc, char **argv) {
    char exe[512], fake[600];
    ssize_t n;
    int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    if (!gpu)
        setenv("CUDA_VISIBLE_DEVICES", "", 1); /* before the first CUDA call */
    snprintf(tmp_root, sizeof(tmp_root), "/tmp/rf_test_runtime_XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 2;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        snprintf(exe, sizeof(exe), "%s", argv[0]);
    else
        exe[n] = '\0';
    snprintf(fake, sizeof(fake), "%s/librf_test_fake_pkg.so", dirname(exe));

    if (gpu) {
        test_gpu(fake);
    } else {
        test_missing_and_malformed();
        test_fake_library(fake);
        test_no_device();
        test_check_job();
    }
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "note: could not remove %s\n", tmp_root);
    }
    return rf_test_finish();
}
