/* The Hopper family's geometry (src/compile/tiling_hopper.c, mode fused_wgmma): the
 * development shapes pinned field by field (what python/rowfuse/kernels/rowfuse_hopper.py builds
 * and notes/kernels.md reasons about), the invariants the generator checks (wgmma and TMA extents,
 * chunks, stages, shared memory counted as the kernel allocates it) over C and H multiples of 8 up
 * to 512 x 4096 (every one fits), the shapes it rules out and why, and the plan: the schedule is in
 * every package it fits, unavailable with the reason otherwise, and chosen only by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "rf_test.h"
#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

static rf_target_t h200(void) {
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    return t;
}

/* rows, C, H; tile rows, threads, blocks per tile, padded C, chunk, chunks (of the whole
 * tile), chunk stages (of one block), X stages, smem */
static const struct golden {
    int rows, c, h;
    int tile, threads, pair, cp, hc, nch, ws, xs, smem;
} golden[] = {
    /* few tiles: a block pair per tile, half the chunks each (resident) */
    {49, 48, 96, 64, 128, 2, 48, 48, 2, 1, 4, 42496},
    {64, 64, 128, 64, 128, 2, 64, 64, 2, 1, 4, 59392},
    {1000, 96, 200, 64, 128, 2, 96, 112, 2, 1, 4, 107520},
    {4096, 128, 512, 64, 128, 2, 128, 128, 4, 2, 4, 217088},
    {100, 40, 72, 64, 128, 2, 48, 48, 2, 1, 4, 42496},      /* C padded to 48 */
    {4084, 224, 256, 64, 128, 2, 224, 64, 4, 2, 3, 232448}, /* smem exactly the limit */
    {100, 8, 4096, 64, 128, 2, 16, 192, 22, 11, 4, 163840}, /* many chunks */
    /* a tile per SM or more: one block per tile */
    {131072, 32, 64, 128, 256, 1, 32, 64, 1, 1, 4, 43008},     /* 128-row tiles */
    {8192, 512, 2048, 64, 384, 1, 512, 128, 16, 3, 1, 208896}, /* C over 2 warpgroups: blocked */
    {50000, 264, 1000, 64, 384, 1, 320, 128, 8, 6, 2, 220160}, /* blocked, C padded to 320 */
    {200000, 256, 208, 128, 256, 1, 256, 32, 7, 3, 2, 232448}, /* smem exactly the limit */
    {8448, 128, 512, 64, 128, 1, 128, 128, 4, 3, 1, 217088},   /* streamed, 132 tiles */
};

static void test_golden(void) {
    rf_target_t t = h200();
    for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
        const struct golden *g = &golden[i];
        rf_kernel_spec_t k;
        CHECK_OK(rf_kernel_geometry_hopper(g->c, g->h, g->rows, 0, -1, &t, &k));
        int ok = k.mode == RF_KERNEL_FUSED_WGMMA && k.tile_rows == g->tile &&
                 rf_kernel_spec_threads(&k) == g->threads && k.cluster_h == g->pair &&
                 k.padded_channels == g->cp && k.hidden_chunk == g->hc &&
                 k.padded_hidden == g->hc * g->nch && k.weight_buffers == g->ws &&
                 k.x_stages == g->xs && k.smem_bytes == g->smem;
        if (!ok)
            fprintf(stderr,
                    "  %dx%dx%d: tile %d threads %d pair %d cp %d chunk %d x%d stages %d/%d smem "
                    "%d\n",
                    g->rows, g->c, g->h, k.tile_rows, rf_kernel_spec_threads(&k), k.cluster_h,
                    k.padded_channels, k.hidden_chunk, k.padded_hidden / k.hidden_chunk,
                    k.weight_buffers, k.x_stages, k.smem_bytes);
        CHECK(ok);
    }
    /* the blocked ring's items: 128 channels of W1 (64 where C is an odd multiple of 64), as
     * many hidden units of W2 as fit in the same bytes (32 KB at C = 512, 16 KB at C = 320);
     * whole-chunk stages elsewhere */
    rf_kernel_spec_t k;
    CHECK_OK(rf_kernel_geometry_hopper(512, 2048, 8192, 0, -1, &t, &k));
    CHECK(k.w1_block == 128 && k.w2_block == 32 && rf_hopper_stage_bytes(&k) == 32768);
    CHECK_OK(rf_kernel_geometry_hopper(264, 1000, 50000, 0, -1, &t, &k));
    CHECK(k.w1_block == 64 && k.w2_block == 16 && rf_hopper_stage_bytes(&k) == 16384);
    CHECK_OK(rf_kernel_geometry_hopper(320, 4096, 50000, 0, -1, &t, &k));
    CHECK(k.w1_block == 64 && k.w2_block == 16);
    CHECK_OK(rf_kernel_geometry_hopper(128, 512, 8448, 0, -1, &t, &k));
    CHECK(k.w1_block == 0 && k.w2_block == 0);
    /* --tile-rows 64 forces 64-row tiles; 128 needs C <= 256 */
    CHECK_OK(rf_kernel_geometry_hopper(32, 64, 131072, 64, -1, &t, &k));
    CHECK(k.tile_rows == 64 && k.warps_m == 4);
    CHECK_ERR(rf_kernel_geometry_hopper(512, 512, 131072, 128, -1, &t, &k), RF_CODE_UNSUPPORTED,
              "128-row tiles need C <= 256");
    /* --hidden-split off: one block per tile (the first streamed geometry measured) */
    CHECK_OK(rf_kernel_geometry_hopper(128, 512, 4096, 0, 0, &t, &k));
    CHECK(k.cluster_h == 1 && k.hidden_chunk == 128 && k.padded_hidden == 512 &&
          k.weight_buffers == 3 && k.x_stages == 1 && k.smem_bytes == 217088 &&
          !strcmp(k.name, "rf_c128_h512_fused_wgmma_t64"));
    /* --hidden-split on where auto would not, and where it cannot apply */
    CHECK_OK(rf_kernel_geometry_hopper(128, 512, 8448, 0, 1, &t, &k));
    CHECK(k.cluster_h == 2 && !strcmp(k.name, "rf_c128_h512_fused_wgmma_t64_pair"));
    CHECK_ERR(rf_kernel_geometry_hopper(32, 64, 131072, 0, 1, &t, &k), RF_CODE_UNSUPPORTED,
              "a block pair per tile needs");
    CHECK_ERR(rf_kernel_geometry_hopper(512, 512, 64, 0, 1, &t, &k), RF_CODE_UNSUPPORTED,
              "a block pair per tile needs");
    CHECK_ERR(rf_kernel_geometry_hopper(64, 56, 64, 0, 1, &t, &k), RF_CODE_UNSUPPORTED, "H >= 64");
}

/* What the generator (HopperPlan.from_spec) and the wgmma / TMA shapes require. */
static int invariants_hold(const rf_kernel_spec_t *k, const rf_target_t *t) {
    int wg_n = k->warps_n, wg_m = k->warps_m / 4, hc = k->hidden_chunk;
    int nch = k->padded_hidden / hc / k->cluster_h; /* chunks of one block */
    int acc = k->padded_channels / (2 * wg_n) + hc / (2 * wg_n) + hc / (4 * wg_n);
    int cp = k->padded_channels, ws = k->weight_buffers;
    if (k->w1_block > 0) /* blocked ring: items of W1 channels and W2 hidden units */
        return wg_n == 2 && wg_m == 1 && k->cluster_h == 1 && k->w1_block % 16 == 0 &&
               cp % k->w1_block == 0 && k->w2_block % 16 == 0 && hc % k->w2_block == 0 && ws >= 3 &&
               ws <= 16 && hc % 32 == 0 && hc <= 128 && cp / 2 <= 256 && cp >= k->channels &&
               k->padded_hidden % hc == 0 && k->padded_hidden - k->hidden < hc &&
               k->x_stages >= 1 && k->x_stages <= 2 && k->smem_bytes == rf_hopper_smem_bytes(k) &&
               k->smem_bytes <= t->smem_per_block && acc <= 176;
    return k->w2_block == 0 && k->warps_m % 4 == 0 && (wg_m == 1 || wg_m == 2) &&
           (wg_n == 1 || wg_n == 2) && wg_m * wg_n <= 2 && k->tile_rows == 64 * wg_m &&
           k->padded_channels >= k->channels && k->padded_channels % 16 == 0 &&
           k->padded_channels / wg_n <= 256 && hc % (16 * wg_n) == 0 && hc / wg_n <= 256 &&
           k->padded_hidden % hc == 0 && k->padded_hidden >= k->hidden &&
           k->padded_hidden - k->hidden < hc && k->weight_buffers >= 1 &&
           k->weight_buffers <= nch && k->weight_buffers <= 16 &&
           (k->weight_buffers == nch || k->weight_buffers >= 2) && k->x_stages >= 1 &&
           k->x_stages <= 4 && k->smem_bytes == rf_hopper_smem_bytes(k) &&
           (k->cluster_h == 1 ||
            (k->cluster_h == 2 && wg_m == 1 && wg_n == 1 && k->padded_hidden % (2 * hc) == 0)) &&
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
                rf_status_t st = rf_kernel_geometry_hopper(c, hiddens[i], rows, 0, -1, &t, &k);
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
    CHECK_ERR(rf_kernel_geometry_hopper(36, 80, 17, 0, -1, &t, &k), RF_CODE_UNSUPPORTED,
              "multiples of 8");
    CHECK_ERR(rf_kernel_geometry_hopper(48, 100, 17, 0, -1, &t, &k), RF_CODE_UNSUPPORTED,
              "16-byte row strides");
    CHECK_ERR(rf_kernel_geometry_hopper(520, 512, 17, 0, -1, &t, &k), RF_CODE_UNSUPPORTED,
              "C <= 512");
    CHECK_ERR(rf_kernel_geometry_hopper(64, 64, 17, 32, -1, &t, &k), RF_CODE_UNSUPPORTED,
              "64 or 128");
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
    CHECK(!strcmp(k->name, "rf_c48_h96_fused_wgmma_t64_pair") && k->cluster_h == 2);
    /* the grid counts blocks: a pair per tile, at most a pair per two SMs' worth */
    CHECK(rf_plan_grid(&p, k, 49) == 2 && rf_plan_grid(&p, k, 4096) == 128);
    rf_kernel_spec_t one = *k;
    one.blocks_per_sm = 1; /* 66 pairs fit; 1000 tiles balanced: 16 each, 63 pairs */
    CHECK(rf_plan_grid(&p, &one, 64 * 1000) == 126);
    CHECK(p.schedule != RF_SCHEDULE_PERSISTENT_WGMMA); /* auto does not choose it (yet) */
    /* the blocked ring's own cost line: one step of 64-row tiles at 8192 rows, 268 MFLOP
     * per tile at 0.2321 us per MFLOP plus the fixed 2.67 us; auto picks it over cuBLASLt
     * there (measured 65.8 against 71.8 us) and leaves cuBLASLt where it measured faster */
    double t = rf_schedule_blocked_cost_us(8192, 64, 512, 2048, 128, 132);
    CHECK(fabs(t - (2.67 + 4.0 * 64 * 512 * 2048 * 1e-6 * 0.2321)) < 1e-9);
    CHECK(rf_schedule_blocked_cost_us(8192 * 2, 64, 512, 2048, 128, 132) > 2 * t - 3.0);
    CHECK(rf_schedule_blocked_cost_us(8192, 64, 512, 2048, 64, 132) > t); /* 64-ch items */
    rf_compile_options_t ob;
    rf_plan_t pb;
    rf_compile_options_default(&ob);
    ob.rows = 8192;
    CHECK_OK(rf_compile_plan(512, 2048, &ob, &pb));
    CHECK(pb.schedule == RF_SCHEDULE_PERSISTENT_WGMMA);
    ob.rows = 3142;
    CHECK_OK(rf_compile_plan(288, 1872, &ob, &pb));
    CHECK(pb.schedule == RF_SCHEDULE_CUBLASLT);
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
