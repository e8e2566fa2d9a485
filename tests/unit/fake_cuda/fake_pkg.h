/* A package directory for the tests that load the stand-in kernels (fake_cuda/pkg) into
 * the runtime over the fake CUDA runtime: the planner's plan for 49x48x96 (registers and
 * blocks per SM filled in as a generator would), small finite weights and a copy of the
 * stand-in library as libk.so. A new directory holds a new copy of the library, which the
 * dynamic loader loads afresh: its modules are not loaded yet. */
#ifndef RF_FAKE_PKG_H
#define RF_FAKE_PKG_H

#include <stdio.h>
#include <sys/stat.h>

#include "rf_test.h"
#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

#define FAKE_PKG_ROWS 49
#define FAKE_PKG_CHANNELS 48
#define FAKE_PKG_HIDDEN 96

/* Writes <root>/<name>/{plan.json, weights.bin, libk.so (a copy of `library`)} and the
 * directory's path into dir; returns dir. Failures count as failed CHECKs. */
static inline const char *fake_pkg_make(const char *root, const char *name, const char *library,
                                        char *dir, size_t dir_size) {
    static const int64_t dims[4][2] = {{FAKE_PKG_CHANNELS, FAKE_PKG_HIDDEN},
                                       {FAKE_PKG_HIDDEN, 0},
                                       {FAKE_PKG_HIDDEN, FAKE_PKG_CHANNELS},
                                       {FAKE_PKG_CHANNELS, 0}};
    static const char *names[4] = {"w1", "b1", "w2", "b2"};
    static unsigned char weights[32768];
    rf_compile_options_t o;
    rf_plan_t p;
    char path[2100];
    int64_t offset = 0;
    snprintf(dir, dir_size, "%s/%s", root, name);
    mkdir(dir, 0755);
    rf_compile_options_default(&o);
    o.rows = FAKE_PKG_ROWS;
    CHECK_OK(rf_compile_plan(FAKE_PKG_CHANNELS, FAKE_PKG_HIDDEN, &o, &p));
    for (int i = 0; i < p.kernel_count; i++) {
        p.kernels[i].registers = 96;
        p.kernels[i].blocks_per_sm = 4;
    }
    snprintf(p.generator, sizeof p.generator, "test");
    snprintf(p.library, sizeof p.library, "libk.so");
    for (int i = 0; i < RF_PLAN_WEIGHTS; i++) {
        int rank = dims[i][1] ? 2 : 1;
        int64_t elems = dims[i][0] * (rank == 2 ? dims[i][1] : 1);
        int64_t bytes = elems * (i % 2 ? 4 : 2);
        p.weights[i] = (rf_plan_weight_t){
            "", i % 2 ? RF_DTYPE_F32 : RF_DTYPE_F16, rank, {dims[i][0], dims[i][1]}, offset, bytes};
        snprintf(p.weights[i].name, sizeof(p.weights[i].name), "%s", names[i]);
        offset += (bytes + 63) / 64 * 64;
    }
    snprintf(path, sizeof path, "%s/plan.json", dir);
    CHECK_OK(rf_plan_write(&p, path));
    for (size_t i = 0; i < sizeof(weights); i++)
        weights[i] = (unsigned char)(i * 7 % 61); /* small finite fp16 and f32 values */
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && offset <= (int64_t)sizeof(weights) &&
          fwrite(weights, 1, (size_t)offset, f) == (size_t)offset);
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/libk.so", dir);
    CHECK(rf_test_copy_file(library, path) == 0);
    return dir;
}

#endif
