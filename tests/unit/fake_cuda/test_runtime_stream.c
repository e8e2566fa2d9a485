/* The wrong-stream case, on a machine without a GPU: a launcher that sends its kernel to a
 * stream other than the one being captured. The runtime's C sources and the check job
 * (src/harness/check.c) are linked against the fake CUDA runtime (fake_cuda.h); the packages
 * are the real shim (src/pkg/rf_pkg_shim.c) over the stand-in kernels, built clean and
 * with each planted fault of `rowfuse compile --plant-fault wrong-stream-*`
 * (RF_PKG_FAULT_STREAM_LEGACY, _CREATED, _THREAD).
 *
 * What must hold:
 * - a capture that records no kernel (each planted form, each package schedule) or fewer
 *   than the schedule (one launch of two diverted by the fake) is refused with a message
 *   that names the schedule, the kernel nodes expected and found, and the likely cause
 *   ("a kernel was launched outside the capturing stream"), and the kernel ran eagerly;
 * - where CUDA refuses the launch itself (the legacy default stream while a blocking
 *   stream captures: cudaErrorStreamCaptureImplicit), the error says so and names the
 *   cause, and the stream captures correctly afterwards;
 * - `rowfuse check`'s job records the refusal for every faulty variant, as a failed row
 *   with no kernel node and nothing timed;
 * - a correct package captures exactly its kernels, and the check runs its shared-memory
 *   poison as its own launch right before each checked replay, not as a graph node. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_pkg.h"
#include "harness/check.h"
#include "rf_test.h"
#include "rowfuse/runtime.h"

#define CAUSE "a kernel was launched outside the capturing stream"

enum { CLEAN, LEGACY, CREATED, THREAD, N_PKGS };
static const char *const pkg_names[N_PKGS] = {"clean", "legacy", "created", "per-thread"};
static const char *const pkg_libs[N_PKGS] = {
    "librf_test_fault_pkg.so", "librf_test_stream_legacy.so", "librf_test_stream_created.so",
    "librf_test_stream_thread.so"};
static char pkg_dirs[N_PKGS][512];

static const char *const schedules[] = {"persistent-smem", "persistent-gmem", "conventional",
                                        "persistent-wgmma"};
enum { N_SCHEDULES = (int)(sizeof schedules / sizeof schedules[0]) };

/* Captures `schedule` of `pkg` on `stream`; returns the status (the exec, if any, is
 * destroyed) and its kernel nodes in *nodes (-1 without an exec). */
static rf_status_t capture(rf_pkg_t *pkg, const char *schedule, rf_mlp_buffers_t *buf, void *stream,
                           int *min, int *nodes) {
    rf_allocator_t a = rf_allocator_system();
    rf_variant_t *v = NULL;
    rf_exec_t *e = NULL;
    int exact = 0;
    rf_status_t st = rf_variant_create_pkg(a, pkg, schedule, &v);
    *nodes = -1;
    *min = 0;
    if (st)
        return st;
    rf_variant_expected_kernels(v, min, &exact);
    st = rf_exec_capture(a, v, &buf->args, stream, &e);
    if (e)
        *nodes = rf_exec_kernel_nodes(e);
    if (st && e) {
        fprintf(stderr, "a failed capture returned an exec\n");
        CHECK(e == NULL);
    }
    rf_exec_destroy(e);
    rf_variant_destroy(v);
    return st;
}

/* The message names the schedule, "expected N, found F" and the cause. */
static void check_refusal(rf_status_t st, const char *what, const char *schedule, int expected,
                          int found) {
    char want[64];
    const char *msg = rf_status_message(st);
    snprintf(want, sizeof want, "expected %d, found %d", expected, found);
    if (rf_status_code(st) != RF_CODE_INTERNAL || !strstr(msg, schedule) || !strstr(msg, want) ||
        !strstr(msg, CAUSE)) {
        fprintf(stderr,
                "%s, %s: expected an INTERNAL error naming the schedule, '%s' and '%s', "
                "got %s: '%s'\n",
                what, schedule, want, CAUSE, rf_code_name(rf_status_code(st)), msg);
        CHECK(0);
    } else {
        CHECK(1);
    }
}

static void test_runtime(void *stream, rf_mlp_buffers_t *buf) {
    rf_allocator_t a = rf_allocator_system();
    for (int p = 0; p < N_PKGS; p++) {
        rf_pkg_t *pkg = NULL;
        CHECK_OK(rf_pkg_load(a, pkg_dirs[p], &pkg));
        if (!pkg)
            continue;
        for (int s = 0; s < N_SCHEDULES; s++) {
            int min = 0, nodes = 0;
            fake_cuda_reset(0);
            rf_status_t st = capture(pkg, schedules[s], buf, stream, &min, &nodes);
            long eager = fake_cuda_eager_kernels();
            if (p == CLEAN) {
                if (st)
                    fprintf(stderr, "clean %s: %s\n", schedules[s], rf_status_message(st));
                CHECK(st == RF_OK && nodes == min && eager == 0);
            } else {
                check_refusal(st, pkg_names[p], schedules[s], min, 0);
                CHECK(eager == min); /* each kernel ran once, eagerly, during the capture */
                if (s == 0)
                    printf("%s: %s\n", pkg_names[p], rf_status_message(st));
            }
            rf_status_free(st);
        }
        rf_pkg_destroy(pkg);
    }
}

/* One of the schedule's two launches goes elsewhere: the graph holds fewer than expected. */
static void test_fewer(void *stream, rf_mlp_buffers_t *buf) {
    rf_pkg_t *pkg = NULL;
    int min = 0, nodes = 0;
    CHECK_OK(rf_pkg_load(rf_allocator_system(), pkg_dirs[CLEAN], &pkg));
    if (!pkg)
        return;
    fake_cuda_reset(0);
    fake_cuda_divert(1);
    rf_status_t st = capture(pkg, "conventional", buf, stream, &min, &nodes);
    CHECK(min == 2);
    check_refusal(st, "one launch diverted", "conventional", 2, 1);
    printf("one of two launches diverted: %s\n", rf_status_message(st));
    rf_status_free(st);
    rf_pkg_destroy(pkg);
}

/* The legacy stream while a blocking stream captures: CUDA refuses the launch. */
static void test_implicit(rf_mlp_buffers_t *buf) {
    cudaStream_t blocking = NULL;
    rf_pkg_t *legacy = NULL, *clean = NULL;
    int min = 0, nodes = 0;
    CHECK(cudaStreamCreateWithFlags(&blocking, cudaStreamDefault) == cudaSuccess);
    CHECK_OK(rf_pkg_load(rf_allocator_system(), pkg_dirs[LEGACY], &legacy));
    CHECK_OK(rf_pkg_load(rf_allocator_system(), pkg_dirs[CLEAN], &clean));
    if (blocking && legacy && clean) {
        fake_cuda_reset(0);
        rf_status_t st = capture(legacy, "persistent-smem", buf, blocking, &min, &nodes);
        const char *msg = rf_status_message(st);
        if (!st || !strstr(msg, "cudaErrorStreamCaptureImplicit") || !strstr(msg, CAUSE) ||
            !strstr(msg, "legacy default stream") || !strstr(msg, "persistent-smem")) {
            fprintf(stderr, "legacy stream, blocking capture: got '%s'\n", msg);
            CHECK(0);
        } else {
            CHECK(1);
        }
        CHECK(fake_cuda_eager_kernels() == 0); /* refused: it did not run either */
        printf("legacy stream while a blocking stream captures: %s\n", msg);
        rf_status_free(st);
        /* The capture was ended: the stream captures a correct package afterwards. */
        fake_cuda_reset(0);
        CHECK_OK(capture(clean, "persistent-smem", buf, blocking, &min, &nodes));
        CHECK(nodes == min);
    }
    rf_pkg_destroy(clean);
    rf_pkg_destroy(legacy);
    if (blocking)
        CHECK(cudaStreamDestroy(blocking) == cudaSuccess);
}

/* The check job: every faulty variant a failed row with its reason, nothing timed; the
 * clean package's graphs hold its kernels, each replay right after the shared-memory poison. */
static void test_check(void) {
    rf_allocator_t a = rf_allocator_system();
    for (int p = 0; p < N_PKGS; p++) {
        rf_check_options_t o;
        rf_device_info_t dev;
        rf_check_result_t *res = NULL;
        const char *dirs[1] = {pkg_dirs[p]};
        int n = 0;
        rf_check_options_default(&o);
        o.pkg_dirs = dirs;
        o.n_pkgs = 1;
        o.variants = "persistent-smem,persistent-gmem,conventional,persistent-wgmma";
        fake_cuda_reset(0);
        CHECK_OK(rf_check_run(a, &o, &dev, &res, &n));
        CHECK(n == N_SCHEDULES);
        for (int i = 0; i < n; i++) {
            const rf_check_result_t *r = &res[i];
            CHECK(!r->passed); /* the stand-in kernels compute nothing: even clean fails */
            if (p == CLEAN) {
                CHECK(r->error[0] == '\0' && r->kernel_nodes >= 1 && r->replay_us > 0.0);
                continue;
            }
            if (!strstr(r->error, CAUSE) || !strstr(r->error, r->variant) ||
                !strstr(r->error, "found 0") || r->kernel_nodes != 0 || r->replay_us != 0.0) {
                fprintf(stderr, "check, %s, %s: error '%s', %d kernel nodes, %.3f us\n",
                        pkg_names[p], r->variant, r->error, r->kernel_nodes, r->replay_us);
                CHECK(0);
            } else {
                CHECK(1);
            }
        }
        if (p == CLEAN) {
            /* Two checked replays per variant, each right after its own poison launch. */
            const char *t = fake_cuda_trace();
            int replays = 0, poisoned = 0;
            for (const char *q = strstr(t, "cudaGraphLaunch"); q;
                 q = strstr(q + 1, "cudaGraphLaunch"))
                replays++;
            for (const char *q = strstr(t, "rf_glue_poison_smem cudaGraphLaunch"); q;
                 q = strstr(q + 1, "rf_glue_poison_smem cudaGraphLaunch"))
                poisoned++;
            CHECK(replays == 2 * N_SCHEDULES && poisoned == replays);
            CHECK(strstr(t, "rf_glue_poison_smem[graph]") == NULL);
            printf("check, clean package: %d checked replays, %d right after the shared-memory "
                   "poison\n",
                   replays, poisoned);
        } else {
            printf("check, %s: %s\n", pkg_names[p], res[0].error);
        }
        rf_free(a, res);
    }
}

int main(int argc, char **argv) {
    char exe[512], root[256], lib[700];
    rf_device_info_t info;
    rf_mlp_buffers_t buf;
    void *stream = NULL;
    ssize_t n;
    (void)argc;
    snprintf(root, sizeof(root), "/tmp/rf_test_stream_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        snprintf(exe, sizeof(exe), "%s", argv[0]);
    else
        exe[n] = '\0';
    const char *bin = dirname(exe);
    for (int p = 0; p < N_PKGS; p++) {
        snprintf(lib, sizeof lib, "%s/%s", bin, pkg_libs[p]);
        fake_pkg_make(root, pkg_names[p], lib, pkg_dirs[p], sizeof pkg_dirs[p]);
    }
    memset(&buf, 0, sizeof(buf));
    fake_cuda_reset(0);
    CHECK_OK(rf_device_open(0, &info));
    CHECK_OK(rf_stream_create(&stream)); /* non-blocking, as the check's and the bench's */
    CHECK_OK(rf_mlp_buffers_alloc(FAKE_PKG_ROWS, FAKE_PKG_CHANNELS, FAKE_PKG_HIDDEN, &buf));
    test_runtime(stream, &buf);
    test_fewer(stream, &buf);
    test_implicit(&buf);
    test_check();
    rf_mlp_buffers_free(&buf);
    rf_stream_destroy(stream);
    {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        if (system(cmd) != 0)
            fprintf(stderr, "note: could not remove %s\n", root);
    }
    return rf_test_finish();
}
