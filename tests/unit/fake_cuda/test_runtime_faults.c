/* Fault injection into the C runtime (src/runtime), on a machine without a GPU: the
 * runtime's C sources are linked against a fake CUDA runtime and cuBLASLt (fake_cuda.h),
 * and a package is loaded whose stand-in kernels call the fake (fake_cuda/pkg).
 *
 * One scenario walks the runtime's whole path: open the device, make a stream, allocate
 * and upload buffers, load the package and upload its weights, then for every schedule
 * (persistent-smem, persistent-gmem, conventional and the cuBLASLt baseline): create the
 * variant, capture a graph (cuBLASLt tunes inside the capture), poison the shared memory
 * (the check's kernel before a checked replay), replay it, time replays and eager launches
 * (cuBLASLt re-plans for more rows), capture again, read Y back, destroy.
 * A clean run counts the injection points; then call N fails, for every N, and each run
 * must end with a status whose message names the failed call and its error (or succeed
 * where the runtime absorbs that failure by design: cuBLASLt refusing a configuration or
 * an algorithm, a scratch buffer it cannot get, the clock attributes), with every fake
 * device object released, no misuse of the fake and nothing left in the allocator. The
 * same with allocation N of the counting allocator (rf_test_alloc.h). Built with the
 * sanitizers (`make asan`), a leak of host memory on any of these paths fails the run at
 * exit. */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_pkg.h"
#include "rf_test.h"
#include "rf_test_alloc.h"
#include "rowfuse/runtime.h"
#include "runtime/rt_internal.h"

#define ROWS FAKE_PKG_ROWS
#define CHANNELS FAKE_PKG_CHANNELS
#define HIDDEN FAKE_PKG_HIDDEN
#define CAPTURE_ROWS 20 /* the first capture's rows: the eager launch at ROWS re-plans */

static char tmp_root[256], fake_lib[600], warm_dir[512];

/* ---- the package: the planner's plan for 49x48x96, its weights, the stand-in library ---- */

/* <tmp_root>/<name> with a fresh copy of the stand-in library (fake_pkg.h). */
static const char *make_pkg(const char *name) {
    static char dir[512];
    return fake_pkg_make(tmp_root, name, fake_lib, dir, sizeof dir);
}

/* ---- the scenario ---- */

static int clean_run; /* the counting run: also check what a correct run yields */

static rf_status_t run_variant(rf_allocator_t a, rf_pkg_t *pkg, const char *schedule,
                               rf_mlp_buffers_t *buf, void *stream, float *y) {
    rf_variant_t *v = NULL;
    rf_exec_t *e = NULL, *e2 = NULL;
    rf_mlp_args_t small = buf->args;
    double us = 0.0, host = 0.0, ev = 0.0;
    rf_status_t st;
    small.rows = CAPTURE_ROWS;
    (void)((st = rf_variant_create_pkg(a, pkg, schedule, &v)) ||
           (st = rf_mlp_buffers_poison(buf, stream)) ||
           (st = rf_exec_capture(a, v, &small, stream, &e)) ||
           (st = rf_device_poison_smem(stream)) || (st = rf_exec_replay(e, stream)) ||
           (st = rf_timing_replay_events(e, stream, 2, &us)) ||
           (st = rf_timing_replay_host(e, stream, &host, &ev)) ||
           (st = rf_timing_launch_events(v, &buf->args, stream, 1, &us)) ||
           (st = rf_timing_launch_host(v, &buf->args, stream, &host, NULL)) ||
           (st = rf_mlp_buffers_fill(buf, 0x42, stream)) ||
           (st = rf_exec_capture(a, v, &buf->args, stream, &e2)) ||
           (st = rf_exec_replay(e2, stream)) || (st = rf_stream_sync(stream)) ||
           (st = rf_mlp_buffers_download_y(buf, y)));
    if (clean_run && !st) {
        int min = 0, exact = 0;
        rf_variant_expected_kernels(v, &min, &exact);
        CHECK(rf_exec_kernel_nodes(e) >= 1 && rf_exec_kernel_nodes(e2) == rf_exec_kernel_nodes(e));
        CHECK(exact ? rf_exec_kernel_nodes(e) == min : rf_exec_kernel_nodes(e) >= min);
        CHECK(exact || strstr(rf_variant_note(v), "tuned at 49 rows") != NULL);
        CHECK(us > 0.0 && host > 0.0 && ev > 0.0);
        printf("%s: %d kernel nodes per graph\n", schedule, rf_exec_kernel_nodes(e));
    }
    rf_exec_destroy(e2);
    rf_exec_destroy(e);
    rf_variant_destroy(v);
    return st;
}

static rf_status_t scenario(rf_allocator_t a, const char *dir) {
    static const char *schedules[] = {"persistent-smem", "persistent-gmem", "conventional",
                                      "persistent-wgmma", "cublaslt"};
    static uint16_t x[ROWS * CHANNELS];
    static float y[ROWS * CHANNELS];
    rf_device_info_t info;
    rf_mlp_buffers_t buf;
    rf_pkg_t *pkg = NULL;
    void *stream = NULL;
    rf_status_t st;
    memset(&buf, 0, sizeof(buf));
    for (int i = 0; i < ROWS * CHANNELS; i++)
        x[i] = (uint16_t)(0x3c00 + i % 32); /* fp16 values near 1 */
    (void)((st = rf_device_open(0, &info)) || (st = rf_stream_create(&stream)) ||
           (st = rf_mlp_buffers_alloc(ROWS, CHANNELS, HIDDEN, &buf)) ||
           (st = rf_mlp_buffers_upload(&buf, x, NULL, NULL, NULL, NULL)) ||
           (st = rf_pkg_load(a, dir, &pkg)) || (st = rf_pkg_upload_weights(pkg, &buf)));
    for (size_t i = 0; !st && i < sizeof(schedules) / sizeof(schedules[0]); i++)
        st = run_variant(a, pkg, schedules[i], &buf, stream, y);
    if (!st)
        st = rf_stream_sync(stream);
    rf_pkg_destroy(pkg);
    rf_mlp_buffers_free(&buf);
    rf_stream_destroy(stream);
    return st;
}

/* ---- one injected run and what it must leave behind ---- */

typedef struct tally {
    long failed, absorbed;
    struct {
        const char *call;
        long points, absorbed;
    } by_call[64];
    int n_calls;
} tally_t;

static void tally_add(tally_t *t, const char *call, int absorbed) {
    int i = 0;
    while (i < t->n_calls && strcmp(t->by_call[i].call, call) != 0)
        i++;
    if (i == t->n_calls) {
        if (t->n_calls == 64)
            return;
        t->by_call[t->n_calls++].call = call;
    }
    t->by_call[i].points++;
    t->by_call[i].absorbed += absorbed;
}

/* Failures the runtime absorbs by design (src/runtime/cublaslt.c, device.c): cuBLASLt
 * refusing a configuration or an algorithm (the variant note records why), a cuBLASLt
 * scratch buffer it cannot get (that configuration becomes unavailable), the algorithm
 * description and the clock attributes (left 0). */
static int absorbable(const char *call) {
    return !strncmp(call, "cublasLtMatmul", 14) || !strcmp(call, "cublasLtMatrixLayoutCreate") ||
           !strcmp(call, "cudaMalloc") || !strcmp(call, "cudaDeviceGetAttribute");
}

/* The message names the failed call, or the runtime's name for what made it. */
static int names_call(const char *msg, const char *call) {
    if (strstr(msg, call))
        return 1;
    if (!strcmp(call, "cudaLaunchKernel"))
        return strstr(msg, "rf_pkg_launch") != NULL;
    if (!strcmp(call, "cudaLibraryLoadData"))
        return strstr(msg, "rf_pkg_init") != NULL;
    if (!strncmp(call, "rf_glue_", 8))
        return strstr(msg, "glue") != NULL;
    return 0;
}

/* Checks what any run must leave: nothing live in the fake, no misuse, no host memory in
 * the allocator. `what` names the run in failures. */
static void check_clean(const rf_test_alloc_t *c, const char *what) {
    char desc[512];
    int n = fake_cuda_outstanding(desc, sizeof(desc));
    if (n) {
        fprintf(stderr, "%s: %d fake CUDA objects still live: %s\n", what, n, desc);
        CHECK(n == 0);
        fake_cuda_forget();
    }
    n = fake_cuda_misuse(desc, sizeof(desc));
    if (n) {
        fprintf(stderr, "%s: %d misuses of the fake CUDA runtime, first: %s\n", what, n, desc);
        CHECK(n == 0);
    }
    if (c->live) {
        fprintf(stderr, "%s: %ld host allocations still live\n", what, c->live);
        CHECK(c->live == 0);
    }
}

static void inject_cuda(long n, const char *dir, tally_t *t) {
    rf_test_alloc_t c = {0, 0, 0};
    char what[160];
    fake_cuda_reset(n);
    rf_status_t st = scenario(rf_test_allocator(&c, 0), dir);
    const char *call = fake_cuda_injected_call(), *err = fake_cuda_injected_error();
    const char *msg = rf_status_message(st);
    snprintf(what, sizeof(what), "CUDA call %ld (%s)", n, call ? call : "none");
    if (!call) {
        fprintf(stderr, "%s: the run made only %ld calls\n", what, fake_cuda_calls());
        CHECK(call != NULL);
    } else if (st == RF_OK) {
        t->absorbed++;
        tally_add(t, call, 1);
        if (!absorbable(call)) {
            fprintf(stderr, "%s: %s failed but the scenario succeeded\n", what, err);
            CHECK(absorbable(call));
        }
    } else {
        t->failed++;
        tally_add(t, call, 0);
        if (!msg[0] || !strstr(msg, err) || !names_call(msg, call)) {
            fprintf(stderr, "%s: the message does not say %s in %s: '%s'\n", what, err, call, msg);
            CHECK(0);
        }
    }
    rf_status_free(st);
    check_clean(&c, what);
}

/* Every CUDA and cuBLASLt call of the scenario fails in turn. The package's modules load
 * only in the first run of a library copy (the shim keeps them for the process), so the
 * calls up to the last module load are swept with a fresh copy each, the rest with the
 * copy loaded by the counting run (whose calls are the same less the loads). */
static void sweep_cuda(void) {
    rf_test_alloc_t c = {0, 0, 0};
    static tally_t t;
    char name[64];
    long cold, warm, last_load;
    int before = fake_cuda_libraries(), loads;
    const char *dir = warm_dir;
    fake_cuda_reset(0);
    clean_run = 1;
    CHECK_OK(scenario(rf_test_allocator(&c, 0), dir));
    clean_run = 0;
    check_clean(&c, "the clean run");
    cold = fake_cuda_calls();
    last_load = fake_cuda_last_library_call();
    loads = fake_cuda_libraries() - before;
    CHECK(loads == 5 && last_load > loads); /* one module per kernel of the package */
    for (long n = 1; n <= last_load; n++) {
        snprintf(name, sizeof(name), "cold%ld", n);
        inject_cuda(n, make_pkg(name), &t);
    }
    fake_cuda_reset(0);
    CHECK_OK(scenario(rf_test_allocator(&c, 0), dir));
    warm = fake_cuda_calls();
    CHECK(warm == cold - loads);
    for (long n = last_load - loads + 1; n <= warm; n++)
        inject_cuda(n, dir, &t);
    printf("CUDA/cuBLASLt injection points: %ld (%ld end in an error naming the call, %ld "
           "absorbed by design)\n",
           cold, t.failed, t.absorbed);
    for (int i = 0; i < t.n_calls; i++)
        printf("  %-40s %5ld points, %5ld absorbed\n", t.by_call[i].call, t.by_call[i].points,
               t.by_call[i].absorbed);
    CHECK(t.failed + t.absorbed == cold);
}

/* Every allocation through the runtime's allocator fails in turn. */
static void sweep_alloc(void) {
    rf_test_alloc_t c = {0, 0, 0};
    const char *dir = warm_dir; /* loaded by sweep_cuda: never rewritten */
    long total;
    char what[64];
    fake_cuda_reset(0);
    CHECK_OK(scenario(rf_test_allocator(&c, 0), dir));
    total = c.calls;
    CHECK(total > 0);
    for (long n = 1; n <= total; n++) {
        rf_status_t st;
        fake_cuda_reset(0);
        st = scenario(rf_test_allocator(&c, n), dir);
        snprintf(what, sizeof(what), "allocation %ld of %ld", n, total);
        if (rf_status_code(st) != RF_CODE_OUT_OF_MEMORY ||
            !strstr(rf_status_message(st), "out of memory")) {
            fprintf(stderr, "%s: expected an out-of-memory status, got %s: '%s'\n", what,
                    rf_code_name(rf_status_code(st)), rf_status_message(st));
            CHECK(0);
        }
        rf_status_free(st);
        check_clean(&c, what);
    }
    printf("allocation injection points: %ld\n", total);
}

int main(int argc, char **argv) {
    char exe[512];
    ssize_t n;
    (void)argc;
    snprintf(tmp_root, sizeof(tmp_root), "/tmp/rf_test_faults_XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 2;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        snprintf(exe, sizeof(exe), "%s", argv[0]);
    else
        exe[n] = '\0';
    snprintf(fake_lib, sizeof(fake_lib), "%s/librf_test_fault_pkg.so", dirname(exe));

    snprintf(warm_dir, sizeof(warm_dir), "%s", make_pkg("warm"));
    sweep_cuda();
    sweep_alloc();
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "note: could not remove %s\n", tmp_root);
    }
    return rf_test_finish();
}
