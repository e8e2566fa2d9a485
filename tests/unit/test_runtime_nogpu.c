/* Tests of the CUDA runtime that need no GPU: loading packages that do not exist or are
 * malformed fails with a clear status naming the file and field; the real shim over
 * stand-in kernels (fake_pkg/rf_pkg_table.h) exercises the library checks; and with no visible
 * device every entry point that needs one returns RF_CODE_NO_DEVICE instead of crashing.
 * CUDA_VISIBLE_DEVICES is emptied first, so the test means the same on a GPU machine.
 *
 * With the argument --gpu (`tests/gpu/gpu run check` runs it so on the GPU) the GPU is left
 * visible and the test checks instead what needs one: the stand-in library loads, its
 * launch enqueues nothing, so capturing it must fail with "no kernel node" (the
 * empty-graph error); buffers round-trip; the cuBLASLt variant captures and times, and
 * computes the block within the one comparison rule: tuned inside a capture, re-tuned
 * eagerly for another row count and other buffers, with the graph captured before the
 * re-tuning still correct. */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness/check.h"
#include "harness/check_chain.h"
#include "rf_test.h"
#include "rowfuse/compile.h"
#include "rowfuse/mlp.h"
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

/* The text of a valid plan.json for a 49x48x96 package (the planner's own output, with the
 * facts the generator would report), with `from` replaced by `to` once when given. */
static char *plan_text(const char *from, const char *to) {
    static char text[65536], out[65536];
    rf_compile_options_t o;
    rf_plan_t p;
    char path[600];
    rf_compile_options_default(&o);
    o.rows = 49;
    CHECK_OK(rf_compile_plan(48, 96, &o, &p));
    for (int i = 0; i < p.kernel_count; i++) {
        p.kernels[i].registers = 96;
        p.kernels[i].blocks_per_sm = 4;
    }
    snprintf(p.generator, sizeof p.generator, "test");
    snprintf(p.library, sizeof p.library, "libk.so");
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++)
        p.weights[i] = (rf_plan_weight_t){"", RF_DTYPE_F32, 1, {96, 0}, 64 * i, 96 * 4};
    snprintf(p.weights[0].name, 8, "w1");
    snprintf(p.weights[1].name, 8, "b1");
    snprintf(p.weights[2].name, 8, "w2");
    snprintf(p.weights[3].name, 8, "b2");
    snprintf(path, sizeof path, "%s/plan_text.json", tmp_root);
    CHECK_OK(rf_plan_write(&p, path));
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    if (!from)
        return text;
    char *hit = strstr(text, from);
    CHECK(hit != NULL);
    if (!hit)
        return text;
    snprintf(out, sizeof out, "%.*s%s%s", (int)(hit - text), text, to, hit + strlen(from));
    return out;
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
    CHECK_ERR(rf_pkg_load(a, make_pkg("other", "{\"format\": \"x\"}"), &pkg), RF_CODE_PARSE_ERROR,
              "not a rowfuse package plan");
    char version[32], reads[64];
    snprintf(version, sizeof version, "\"version\": %d", RF_PLAN_VERSION);
    snprintf(reads, sizeof reads, "version 1 plan; this runtime reads version %d", RF_PLAN_VERSION);
    CHECK_ERR(rf_pkg_load(a, make_pkg("v1", plan_text(version, "\"version\": 1")), &pkg),
              RF_CODE_UNSUPPORTED, reads);
    CHECK_ERR(rf_pkg_load(
                  a, make_pkg("cluster3", plan_text("\"cluster_h\": 2", "\"cluster_h\": 3")), &pkg),
              RF_CODE_PARSE_ERROR, "cluster_h");
    CHECK_ERR(rf_pkg_load(a, make_pkg("nochan", plan_text("\"channels\": 48,", "")), &pkg),
              RF_CODE_PARSE_ERROR, "\"channels\" is missing");
    CHECK_ERR(
        rf_pkg_load(a, make_pkg("strchan", plan_text("\"channels\": 48", "\"channels\": \"48\"")),
                    &pkg),
        RF_CODE_PARSE_ERROR, "\"channels\" is missing or not a number");
    CHECK_ERR(rf_pkg_load(a, make_pkg("negchan", plan_text("\"channels\": 48", "\"channels\": -3")),
                          &pkg),
              RF_CODE_PARSE_ERROR, "\"channels\" is -3");
    CHECK_ERR(
        rf_pkg_load(a, make_pkg("fracrows", plan_text("\"rows\": 49", "\"rows\": 4.5")), &pkg),
        RF_CODE_PARSE_ERROR, "\"rows\" is 4.5");
    CHECK_ERR(rf_pkg_load(a,
                          make_pkg("badsched", plan_text("\"schedule\": \"persistent-smem\"",
                                                         "\"schedule\": \"persistent-tmem\"")),
                          &pkg),
              RF_CODE_INVALID_ARGUMENT, "unknown schedule 'persistent-tmem'");
    CHECK_ERR(rf_pkg_load(a, make_pkg("escape", plan_text("\"libk.so\"", "\"../k.so\"")), &pkg),
              RF_CODE_PARSE_ERROR, "a file name in the package");
    CHECK_ERR(rf_pkg_load(
                  a,
                  make_pkg("badkernel", plan_text("\"blocks_per_sm\": 4", "\"blocks_per_sm\": 0")),
                  &pkg),
              RF_CODE_PARSE_ERROR, "kernels[0].\"blocks_per_sm\" is 0");
    CHECK_ERR(rf_pkg_load(
                  a, make_pkg("badindex", plan_text("\"kernels\": [0]", "\"kernels\": [9]")), &pkg),
              RF_CODE_PARSE_ERROR, "schedules.persistent-smem.kernels[0] is not a kernel index");
    CHECK_ERR(rf_pkg_load(a, make_pkg("nolib", plan_text(NULL, NULL)), &pkg), RF_CODE_NOT_FOUND,
              "cannot load kernel library");
    CHECK(pkg == NULL);
}

static void test_fake_library(const char *fake_lib) {
    rf_allocator_t a = rf_allocator_system();
    rf_pkg_t *pkg = NULL;
    rf_variant_t *v = NULL;
    char path[600];
    const char *dir = make_pkg("fake", plan_text(NULL, NULL));
    snprintf(path, sizeof(path), "%s/libk.so", dir);
    if (rf_test_copy_file(fake_lib, path) != 0) {
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
    CHECK(rf_pkg_plan(pkg)->target.sm_count == 132);

    /* Weights: read from weights.bin at the recorded offset; a short file is an error. */
    {
        rf_tensor_t back;
        float w[4 * 96];
        for (int i = 0; i < 4 * 96; i++)
            w[i] = 0.25f * (float)(i + 1);
        snprintf(path, sizeof(path), "%s/weights.bin", dir);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(w, sizeof w, 1, f) == 1);
        if (f)
            fclose(f);
        CHECK_OK(rf_pkg_weight(pkg, "b1", &back)); /* offset 64 bytes = 16 floats */
        CHECK(back.dtype == RF_DTYPE_F32 && back.nbytes == 96 * 4 &&
              memcmp(back.data, w + 16, 96 * 4) == 0);
        rf_tensor_free(a, &back);
        CHECK_ERR(rf_pkg_weight(pkg, "w9", &back), RF_CODE_NOT_FOUND, "no weight \"w9\"");
        f = fopen(path, "wb");
        if (f)
            fclose(f);
        CHECK_ERR(rf_pkg_weight(pkg, "b2", &back), RF_CODE_IO_ERROR, "cut short");
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

    /* Plan and library disagree: the shape, then a kernel name. */
    make_pkg("fake", plan_text("\"channels\": 48,\n  \"hidden\": 96",
                               "\"channels\": 64,\n  \"hidden\": 96"));
    CHECK_ERR(rf_pkg_load_nogpu(a, dir, &pkg), RF_CODE_MISMATCH, "channels=48 hidden=96");
    make_pkg("fake", plan_text("\"rf_c48_h96_proj1_t16\"", "\"rf_c48_h96_proj1_t32\""));
    CHECK_ERR(rf_pkg_load_nogpu(a, dir, &pkg), RF_CODE_MISMATCH,
              "plan.json says \"rf_c48_h96_proj1_t32\"");
    /* A plan may choose the vendor schedule: it needs no kernels of the library. */
    make_pkg("fake", plan_text("\"schedule\": \"persistent-smem\"", "\"schedule\": \"cublaslt\""));
    CHECK_OK(rf_pkg_load_nogpu(a, dir, &pkg));
    CHECK(pkg && strcmp(rf_pkg_schedule(pkg), "cublaslt") == 0);
    rf_pkg_destroy(pkg);
    pkg = NULL;
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
    CHECK_ERR(rf_variant_create_cublaslt(a, 48, 0, &v), RF_CODE_SHAPE_ERROR, "hidden=0");
    CHECK_ERR(rf_variant_create_cublaslt(a, RF_MAX_DIM + 1, 96, &v), RF_CODE_SHAPE_ERROR,
              "cublaslt: channels=");
    CHECK(v == NULL);
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
    CHECK(o.tol.step_fraction == 0.0 && o.tol.allow_factor == 1.0); /* the bound alone */
    CHECK_ERR(rf_check_run(a, &o, &dev, &res, &n), RF_CODE_INVALID_ARGUMENT, "nothing to check");
    {
        rf_check_shape_t one = {49, 48, 96};
        o.shapes = &one;
        o.n_shapes = 1;
        CHECK_ERR(rf_check_run(a, &o, &dev, &res, &n), RF_CODE_NO_DEVICE, "needs a GPU");
        CHECK(res == NULL && n == 0);
    }
}

static cJSON *read_json(const char *path) {
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

/* Both checks' JSON share one frame (rf_check_json_*): job, device, the caller's keys,
 * seed, count, passed (counted from the rows), results; an unwritable path names itself. */
static void test_check_json(void) {
    rf_check_options_t o;
    rf_device_info_t d = {0};
    char path[320];
    rf_check_options_default(&o);
    o.seed = 77;
    snprintf(d.name, sizeof(d.name), "stand-in");
    d.sm_count = 3;
    rf_check_result_t m[2] = {0};
    snprintf(m[0].pkg, sizeof(m[0].pkg), "p0");
    snprintf(m[1].variant, sizeof(m[1].variant), "persistent-smem");
    m[1].passed = 1;
    m[1].max_ratio = 0.25;
    snprintf(path, sizeof(path), "%s/check.json", tmp_root);
    CHECK_OK(rf_check_write_json(path, &o, &d, m, 2));
    cJSON *j = read_json(path);
    CHECK(j != NULL);
    if (j) {
        const cJSON *res = cJSON_GetObjectItem(j, "results");
        CHECK(!strcmp(cJSON_GetObjectItem(j, "job")->valuestring, "rowfuse check"));
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "device"), "sm_count")->valueint == 3);
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(j, "tolerance")));
        CHECK(cJSON_GetObjectItem(j, "seed")->valueint == 77);
        CHECK(cJSON_GetObjectItem(j, "count")->valueint == 2);
        CHECK(cJSON_GetObjectItem(j, "passed")->valueint == 1);
        CHECK(cJSON_GetArraySize(res) == 2);
        CHECK(
            !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "package")->valuestring, "p0"));
        CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "max_allow_ratio")->valuedouble ==
              0.25);
        cJSON_Delete(j);
    }
    rf_check_chain_result_t c[3] = {0};
    c[0].passed = c[2].passed = 1;
    c[2].over_bound = 0;
    c[1].over_bound = 5;
    snprintf(c[1].kernel, sizeof(c[1].kernel), "chain_k");
    snprintf(path, sizeof(path), "%s/chain.json", tmp_root);
    CHECK_OK(rf_check_chain_write_json(path, &o, &d, c, 3));
    j = read_json(path);
    CHECK(j != NULL);
    if (j) {
        const cJSON *res = cJSON_GetObjectItem(j, "results");
        CHECK(strstr(cJSON_GetObjectItem(j, "job")->valuestring, "chain") != NULL);
        CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "reference")));
        CHECK(cJSON_GetObjectItem(j, "count")->valueint == 3);
        CHECK(cJSON_GetObjectItem(j, "passed")->valueint == 2);
        CHECK(cJSON_GetArraySize(res) == 3);
        CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "over_bound")->valueint == 5);
        CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "kernel")->valuestring,
                      "chain_k"));
        cJSON_Delete(j);
    }
    snprintf(path, sizeof(path), "%s/no-such-dir/x.json", tmp_root);
    CHECK_ERR(rf_check_chain_write_json(path, &o, &d, c, 3), RF_CODE_IO_ERROR, "no-such-dir");
    CHECK_ERR(rf_check_write_json(path, &o, &d, m, 2), RF_CODE_IO_ERROR, "no-such-dir");
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
    const char *dir = make_pkg("gpu", plan_text(NULL, NULL));
    snprintf(path, sizeof(path), "%s/libk.so", dir);
    CHECK(rf_test_copy_file(fake_lib, path) == 0);
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

/* Replays `e` into a NaN-poisoned Y and compares Y with the case's reference. */
static void check_replay(rf_exec_t *e, rf_mlp_buffers_t *buf, const rf_mlp_case_t *d, void *stream,
                         const char *what) {
    size_t n = (size_t)(d->rows * d->channels);
    float *y = malloc(n * sizeof(float));
    double us = 0.0;
    rf_mlp_tolerance_t tol = rf_mlp_tolerance_default();
    rf_mlp_compare_result_t r;
    char why[256];
    CHECK(y != NULL);
    if (!y)
        return;
    CHECK_OK(rf_mlp_buffers_poison(buf, stream));
    CHECK_OK(rf_timing_replay_events(e, stream, 1, &us));
    CHECK_OK(rf_stream_sync(stream));
    CHECK_OK(rf_mlp_buffers_download_y(buf, y));
    rf_mlp_compare(y, d->ref, d->allow, d->step, n, &tol, &r);
    rf_mlp_compare_describe(&r, d->channels, why, sizeof(why));
    printf("cublaslt %s %lldx%lldx%lld: %.3f steps, rel. L2 %.2e, max abs %.2e %s\n", what,
           (long long)d->rows, (long long)d->channels, (long long)d->hidden, r.steps, r.rel_l2,
           r.max_abs, why);
    CHECK(r.passed);
    free(y);
}

/* cuBLASLt at full strength: its first launch is the captured one, so it tunes inside the
 * capture; then an eager launch with other buffers and another row count re-tunes; the
 * first graph must still replay correctly (its buffers outlive the re-plan). */
static void test_gpu_cublaslt(void) {
    static const int64_t shapes[][4] = {{49, 48, 96, 7}, {300, 37, 200, 11}, {4096, 128, 512, 13}};
    rf_allocator_t a = rf_allocator_system();
    void *stream = NULL;
    CHECK_OK(rf_stream_create(&stream));
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int64_t rows = shapes[s][0], c = shapes[s][1], h = shapes[s][2], rows2 = rows + 57;
        uint64_t seed = (uint64_t)shapes[s][3];
        rf_mlp_case_t d = {0}, d2 = {0};
        rf_mlp_buffers_t buf, buf2;
        rf_variant_t *v = NULL;
        rf_exec_t *e = NULL, *e2 = NULL;
        memset(&buf, 0, sizeof(buf));
        memset(&buf2, 0, sizeof(buf2));
        /* the same seed draws the same weights first, then X: only the rows differ */
        CHECK_OK(rf_mlp_case_create(a, rows, c, h, seed, 1, &d));
        CHECK_OK(rf_mlp_case_create(a, rows2, c, h, seed, 1, &d2));
        CHECK_OK(rf_mlp_buffers_alloc(rows, c, h, &buf));
        CHECK_OK(rf_mlp_buffers_alloc(rows2, c, h, &buf2));
        CHECK_OK(rf_mlp_buffers_upload(&buf, d.x, d.w1, d.b1, d.w2, d.b2));
        CHECK_OK(rf_mlp_buffers_upload(&buf2, d2.x, d2.w1, d2.b1, d2.w2, d2.b2));
        CHECK_OK(rf_variant_create_cublaslt(a, c, h, &v));
        if (v) {
            CHECK(strstr(rf_variant_note(v), "not yet tuned") != NULL);
            CHECK_OK(rf_exec_capture(a, v, &buf.args, stream, &e));
            CHECK(strstr(rf_variant_note(v), "tuned at") != NULL);
            printf("cublaslt %lldx%lldx%lld note: %s\n", (long long)rows, (long long)c,
                   (long long)h, rf_variant_note(v));
            if (e) {
                CHECK(rf_exec_kernel_nodes(e) >= 3);
                check_replay(e, &buf, &d, stream, "tuned inside a capture");
            }
            CHECK_OK(rf_variant_launch(v, &buf2.args, stream)); /* re-plans: rows, pointers */
            CHECK_OK(rf_stream_sync(stream));
            CHECK_OK(rf_exec_capture(a, v, &buf2.args, stream, &e2));
            if (e2)
                check_replay(e2, &buf2, &d2, stream, "re-tuned eagerly");
            if (e)
                check_replay(e, &buf, &d, stream, "graph from before the re-plan");
        }
        rf_exec_destroy(e2);
        rf_exec_destroy(e);
        rf_variant_destroy(v);
        rf_mlp_buffers_free(&buf2);
        rf_mlp_buffers_free(&buf);
        rf_mlp_case_free(a, &d2);
        rf_mlp_case_free(a, &d);
    }
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
        test_gpu_cublaslt();
    } else {
        test_missing_and_malformed();
        test_fake_library(fake);
        test_no_device();
        test_check_job();
        test_check_json();
    }
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "note: could not remove %s\n", tmp_root);
    }
    return rf_test_finish();
}
