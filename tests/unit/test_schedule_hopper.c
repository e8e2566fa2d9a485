/* The Hopper family's geometry (src/compile/tiling_hopper.c, mode fused_wgmma): the
 * development shapes pinned field by field (what kernels/rowfuse_hopper.py builds and
 * notes/kernels.md reasons about), the invariants the generator checks (wgmma and TMA
 * extents, chunks, stages, shared memory counted as the kernel allocates it) over C and
 * H multiples of 8 up to 512 x 4096 (every one fits), the shapes it rules out and why,
 * and the plan:
 * the schedule is in every package it fits, unavailable with the reason otherwise, and
 * chosen only by name. */
#include <stdio.h>
#include <string.h>

#include "rf_test.h"
#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

static rf_target_t h200(void) {
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    return t;
}

/* rows, C, H; tile rows, threads, padded C, chunk, chunks, chunk stages, X stages, smem */
static const struct golden {
    int rows, c, h;
    int tile, threads, cp, hc, nch, ws, xs, smem;
} golden[] = {
    {49, 48, 96, 64, 128, 48, 96, 1, 1, 4, 45056},          /* resident, one chunk */
    {64, 64, 128, 64, 128, 64, 128, 1, 1, 4, 67584},        /* resident, one chunk */
    {1000, 96, 200, 64, 128, 96, 112, 2, 2, 4, 138240},     /* resident, two chunks */
    {4096, 128, 512, 64, 128, 128, 128, 4, 3, 1, 217088},   /* streamed, one tile a block */
    {131072, 32, 64, 128, 256, 32, 64, 1, 1, 4, 43008},     /* 128-row tiles */
    {8192, 512, 2048, 64, 256, 512, 32, 64, 2, 1, 217088},  /* C split over 2 warpgroups */
    {100, 40, 72, 64, 128, 48, 80, 1, 1, 4, 42496},         /* C padded to 48 */
    {4084, 224, 256, 64, 128, 224, 64, 4, 3, 1, 203776},    /* streamed */
    {100, 8, 4096, 64, 128, 16, 192, 22, 4, 1, 69632},      /* many chunks */
    {200000, 256, 208, 128, 256, 256, 32, 7, 3, 2, 232448}, /* smem exactly the limit */
};

static void test_golden(void) {
    rf_target_t t = h200();
    for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
        const struct golden *g = &golden[i];
        rf_kernel_spec_t k;
        CHECK_OK(rf_kernel_geometry_hopper(g->c, g->h, g->rows, 0, &t, &k));
        int ok = k.mode == RF_KERNEL_FUSED_WGMMA && k.tile_rows == g->tile &&
                 rf_kernel_spec_threads(&k) == g->threads && k.padded_channels == g->cp &&
                 k.hidden_chunk == g->hc && k.padded_hidden == g->hc * g->nch &&
                 k.weight_buffers == g->ws && k.x_stages == g->xs && k.smem_bytes == g->smem;
        if (!ok)
            fprintf(stderr,
                    "  %dx%dx%d: tile %d threads %d cp %d chunk %d x%d stages %d/%d smem %d\n",
                    g->rows, g->c, g->h, k.tile_rows, rf_kernel_spec_threads(&k), k.padded_channels,
                    k.hidden_chunk, k.padded_hidden / k.hidden_chunk, k.weight_buffers, k.x_stages,
                    k.smem_bytes);
        CHECK(ok);
    }
    /* --tile-rows 64 forces 64-row tiles; 128 needs C <= 256 */
    rf_kernel_spec_t k;
    CHECK_OK(rf_kernel_geometry_hopper(32, 64, 131072, 64, &t, &k));
    CHECK(k.tile_rows == 64 && k.warps_m == 4);
    CHECK_ERR(rf_kernel_geometry_hopper(512, 512, 131072, 128, &t, &k), RF_CODE_UNSUPPORTED,
              "128-row tiles need C <= 256");
}

/* What the generator (HopperPlan.from_spec) and the wgmma / TMA shapes require. */
static int invariants_hold(const rf_kernel_spec_t *k, const rf_target_t *t) {
    int wg_n = k->warps_n, wg_m = k->warps_m / 4, hc = k->hidden_chunk;
    int nch = k->padded_hidden / hc;
    int acc = k->padded_channels / (2 * wg_n) + hc / (2 * wg_n) + hc / (4 * wg_n);
    return k->warps_m % 4 == 0 && (wg_m == 1 || wg_m == 2) && (wg_n == 1 || wg_n == 2) &&
           wg_m * wg_n <= 2 && k->tile_rows == 64 * wg_m && k->padded_channels >= k->channels &&
           k->padded_channels % 16 == 0 && k->padded_channels / wg_n <= 256 &&
           hc % (16 * wg_n) == 0 && hc / wg_n <= 256 && k->padded_hidden % hc == 0 &&
           k->padded_hidden >= k->hidden && k->padded_hidden - k->hidden < hc &&
           k->weight_buffers >= 1 && k->weight_buffers <= nch && k->weight_buffers <= 16 &&
           (k->weight_buffers == nch || k->weight_buffers >= 2) && k->x_stages >= 1 &&
           k->x_stages <= 4 && k->smem_bytes == rf_hopper_smem_bytes(k) &&
           k->smem_bytes <= t->smem_per_block && acc <= 160;
}

static void test_every_width(void) {
    rf_target_t t = h200();
    static const int hiddens[] = {8,   16,  24,  40,  64,   72,   96,  200,
                                  248, 256, 264, 512, 1000, 2048, 4096};
    int built = 0, broken = 0;
    for (int c = 8; c <= 512; c += 8)
        for (size_t i = 0; i < sizeof hiddens / sizeof hiddens[0]; i++)
            for (int rows = 49; rows <= 131072; rows *= 50) {
                rf_kernel_spec_t k;
                rf_status_t st = rf_kernel_geometry_hopper(c, hiddens[i], rows, 0, &t, &k);
                if (st) { /* every multiple of 8 up to 512 x 4096 fits */
                    if (broken++ < 5)
                        fprintf(stderr, "  C=%d H=%d: %s\n", c, hiddens[i], rf_status_message(st));
                    rf_status_free(st);
                    continue;
                }
                built++;
                if (!invariants_hold(&k, &t) && broken++ < 5)
                    fprintf(stderr, "  C=%d H=%d rows %d: invariants broken\n", c, hiddens[i],
                            rows);
            }
    CHECK(broken == 0 && built == 64 * 15 * 3);
}

static void test_rejections(void) {
    rf_target_t t = h200();
    rf_kernel_spec_t k;
    CHECK_ERR(rf_kernel_geometry_hopper(36, 80, 17, 0, &t, &k), RF_CODE_UNSUPPORTED,
              "multiples of 8");
    CHECK_ERR(rf_kernel_geometry_hopper(48, 100, 17, 0, &t, &k), RF_CODE_UNSUPPORTED,
              "16-byte row strides");
    CHECK_ERR(rf_kernel_geometry_hopper(520, 512, 17, 0, &t, &k), RF_CODE_UNSUPPORTED, "C <= 512");
    CHECK_ERR(rf_kernel_geometry_hopper(64, 64, 17, 32, &t, &k), RF_CODE_UNSUPPORTED, "64 or 128");
}

static void test_plan(void) {
    rf_compile_options_t o;
    rf_plan_t p;
    rf_compile_options_default(&o);
    o.rows = 49;
    CHECK_OK(rf_compile_plan(48, 96, &o, &p));
    const rf_plan_schedule_t *ps = &p.schedules[RF_SCHEDULE_PERSISTENT_WGMMA];
    CHECK(ps->available && ps->kernel_count == 1);
    const rf_kernel_spec_t *k = &p.kernels[ps->kernel[0]];
    CHECK(k->mode == RF_KERNEL_FUSED_WGMMA && k->grid_balanced);
    CHECK(!strcmp(k->name, "rf_c48_h96_fused_wgmma_t64"));
    CHECK(p.schedule != RF_SCHEDULE_PERSISTENT_WGMMA); /* auto does not choose it (yet) */
    /* a package whose widths TMA cannot stride: the schedule is out, the plan says why */
    o.rows = 17;
    CHECK_OK(rf_compile_plan(36, 80, &o, &p));
    ps = &p.schedules[RF_SCHEDULE_PERSISTENT_WGMMA];
    CHECK(!ps->available && ps->kernel_count == 0 && strstr(ps->rejected, "multiples of 8"));
    CHECK(p.schedules[RF_SCHEDULE_PERSISTENT_SMEM].available);
    o.schedule = "persistent-wgmma";
    CHECK_ERR(rf_compile_plan(36, 80, &o, &p), RF_CODE_UNSUPPORTED, "multiples of 8");
    o.rows = 4096;
    CHECK_OK(rf_compile_plan(128, 512, &o, &p));
    CHECK(p.schedule == RF_SCHEDULE_PERSISTENT_WGMMA &&
          !strcmp(p.reason, "chosen with --schedule"));
    /* blocks per SM from shared memory, threads and registers */
    rf_kernel_spec_t w = p.kernels[p.schedules[RF_SCHEDULE_PERSISTENT_WGMMA].kernel[0]];
    w.registers = 168;
    CHECK(rf_kernel_blocks_per_sm(&w, &p.target, 1) == 1); /* 217088 B of smem */
    CHECK_OK(rf_compile_plan(32, 64,
                             &(rf_compile_options_t){.rows = 131072,
                                                     .schedule = "persistent-wgmma",
                                                     .target = "h200",
                                                     .x_prefetch = -1,
                                                     .y_vec2 = -1},
                             &p));
    w = p.kernels[p.schedules[RF_SCHEDULE_PERSISTENT_WGMMA].kernel[0]];
    w.registers = 68; /* 256 threads x 72 (allocation granule) = 18432 per block */
    CHECK(rf_kernel_blocks_per_sm(&w, &p.target, 1) == 3);
}

int main(void) {
    test_golden();
    test_every_width();
    test_rejections();
    test_plan();
    return rf_test_finish();
}
