/* The scheduler behind `--schedule auto`: one cost line per schedule, fitted to the H200's
 * GPU spans at the six development shapes (notes/bench.md, C host), and judged on
 * random shapes it was not fitted to by `tests/gpu/gpu run regret` (notes/bench.md, regret):
 *
 *     t_s = fixed_s + F_s / rate_s + B_s / bandwidth_s
 *
 * F = 4 M C H is the block's FLOPs; a rowfuse schedule's blocks own whole row tiles, so
 * with fewer tiles than SMs only that many SMs compute and F_s = F x SMs / tiles (the
 * tile rows come from the planner; cuBLASLt's own tiling is not modelled). B_s is the
 * bytes the schedule moves: X (2 M C) and Y (4 M C) once, the weights (4 C H), and for the
 * schedules that route H through global memory (persistent-gmem, conventional, cuBLASLt)
 * H written and read (4 M H). Fitted by non-negative least squares on relative error:
 *
 *     schedule           fixed (us)  rate (TFLOP/s)  bandwidth (TB/s)
 *     persistent-smem       1.60          176              3.60
 *     persistent-gmem       1.89          156              2.01
 *     conventional          3.49          197              1.69
 *     persistent-wgmma      2.67          322              5.55
 *     cublaslt              6.95         1455 (*)          2.34
 *
 * (*) above the GPU's peak: at the development shapes cuBLASLt's time is its fixed cost and
 * its traffic, and the fit gives FLOPs almost no weight; it is a fit, not a rate.
 * The fit is rough where one wave of tiles runs a long serial chain per tile (1000x96x200:
 * the lines are 20-35% low) and misses 4096x128x512 (persistent-smem predicted faster,
 * persistent-wgmma measured 1.25x faster). Only the schedules the package can build
 * compete, and after the build a schedule whose kernel spills heavily leaves the
 * competition (rf_schedule_rechoose_spills). */
#include <math.h>
#include <stdio.h>

#include "compile/compile_internal.h"

static const struct {
    double fixed_us, mflop_per_us, mb_per_us;
    int h_through_memory;
} rf_cost[RF_SCHEDULE_COUNT] = {
    [RF_SCHEDULE_PERSISTENT_SMEM] = {1.60, 176, 3.60, 0},
    [RF_SCHEDULE_PERSISTENT_GMEM] = {1.89, 156, 2.01, 1},
    [RF_SCHEDULE_CONVENTIONAL] = {3.49, 197, 1.69, 1},
    [RF_SCHEDULE_PERSISTENT_WGMMA] = {2.67, 322, 5.55, 0},
    [RF_SCHEDULE_CUBLASLT] = {6.95, 1455, 2.34, 1},
};

/* The blocked ring's own line (persistent-wgmma at C > 256 with streamed weights), fitted
 * to GPU spans from `rowfuse bench --c` (every variant interleaved, or with cuBLASLt: the
 * L2 as other kernels leave it) at eight shapes: 8192x512x2048 and 20000x384x1536, and a
 * seeded random set of the regime (rowfuse.bench.shapes --regret 6 --align 8 --only blocked
 * --seed 2042). The fixed cost is persistent-wgmma's; the two per-FLOP costs were fitted
 * by least squares on relative error; each shape left out in turn was predicted within
 * 22% (median 11%; notes/kernels.md, "the scheduler's line for the blocked ring"). */
#define RF_BLOCKED_US_PER_MFLOP_128 0.2321 /* items of 128 channels of W1 */
#define RF_BLOCKED_US_PER_MFLOP_64 0.3040  /* items of 64 (C an odd multiple of 64) */

double rf_schedule_blocked_cost_us(int64_t rows, int tile_rows, int padded_channels,
                                   int padded_hidden, int w1_block, int sm_count) {
    double tiles = ceil((double)rows / (tile_rows > 0 ? tile_rows : 64));
    double steps = ceil(tiles / (sm_count > 0 ? sm_count : 1)); /* tiles per busiest block */
    double mflop_tile = 4.0 * tile_rows * padded_channels * (double)padded_hidden * 1e-6;
    double per = w1_block >= 128 ? RF_BLOCKED_US_PER_MFLOP_128 : RF_BLOCKED_US_PER_MFLOP_64;
    return rf_cost[RF_SCHEDULE_PERSISTENT_WGMMA].fixed_us + steps * mflop_tile * per;
}

/* The chunked line of a fused kernel (rf_schedule_chunked_cost_us), fitted to GPU spans
 * of persistent-smem (double-buffered chunks of 64 hidden columns, one row tile per SM)
 * at three shapes of the out-of-sample set of seed 2051 on an H100: 14x59x1087 (17
 * chunks of 16 KB, 24.4 us), 363x379x712 (12 of 96 KB, 43.1 us) and 1142x297x1104 (18 of
 * 80 KB, 55.8 us), each within 1% (notes/kernels.md, "the chunked line"). One SM pulls a
 * chunk's weights from the L2 at about 39 GB/s after a fixed ~0.9 us: far below the
 * per-SM share of the fitted rates above, which assume every SM busy. */
#define RF_CHUNK_US 0.921         /* per chunk */
#define RF_CHUNK_US_PER_KB 0.0257 /* per 1,000 bytes of the chunk's W1 and W2 */

double rf_schedule_chunked_cost_us(int64_t rows, int tile_rows, int chunks, double chunk_bytes,
                                   int sm_count) {
    if (tile_rows <= 0 || chunks <= 0)
        return 0.0; /* weights staged once: no chain of chunks per tile */
    double tiles = ceil((double)rows / tile_rows);
    double steps = ceil(tiles / (sm_count > 0 ? sm_count : 1)); /* tiles per busiest block */
    return steps * (chunks * RF_CHUNK_US + chunk_bytes * 1e-3 * RF_CHUNK_US_PER_KB);
}

double rf_schedule_cost_us(rf_schedule_t s, int64_t rows, int64_t channels, int64_t hidden,
                           int tile_rows, int sm_count) {
    double m = (double)rows, c = (double)channels, h = (double)hidden;
    double mflop = 4.0 * m * c * h * 1e-6;
    /* a block owns whole row tiles: with fewer tiles than SMs, only that many SMs compute */
    if (tile_rows > 0 && sm_count > 0) {
        double tiles = ceil(m / tile_rows);
        if (tiles < sm_count)
            mflop *= sm_count / tiles;
    }
    double mb =
        (6.0 * m * c + 4.0 * c * h + (rf_cost[s].h_through_memory ? 4.0 * m * h : 0.0)) * 1e-6;
    return rf_cost[s].fixed_us + mflop / rf_cost[s].mflop_per_us + mb / rf_cost[s].mb_per_us;
}

rf_schedule_t rf_schedule_choose(int64_t rows, int64_t channels, int64_t hidden,
                                 const rf_target_t *target, const rf_schedule_fit_t *fit,
                                 char *out_reason, size_t size) {
    rf_schedule_t best = RF_SCHEDULE_CUBLASLT; /* always available: the runtime's variant */
    double t_best = rf_schedule_cost_us(best, rows, channels, hidden, 0, 0), t_next = INFINITY;
    int next = -1;
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        if (s == RF_SCHEDULE_CUBLASLT || (fit && !fit[s].available))
            continue;
        double t = fit && s == RF_SCHEDULE_PERSISTENT_WGMMA && fit[s].w1_block > 0
                       ? rf_schedule_blocked_cost_us(rows, fit[s].tile_rows, fit[s].padded_channels,
                                                     fit[s].padded_hidden, fit[s].w1_block,
                                                     target->sm_count)
                       : rf_schedule_cost_us((rf_schedule_t)s, rows, channels, hidden,
                                             fit ? fit[s].tile_rows : 0, target->sm_count);
        if (fit && fit[s].chunks > 0) { /* the busiest block's chain of chunks */
            double chain = rf_cost[s].fixed_us +
                           rf_schedule_chunked_cost_us(rows, fit[s].tile_rows, fit[s].chunks,
                                                       fit[s].chunk_bytes, target->sm_count);
            t = chain > t ? chain : t;
        }
        if (t < t_best) {
            t_next = t_best;
            next = best;
            t_best = t;
            best = (rf_schedule_t)s;
        } else if (t < t_next) {
            t_next = t;
            next = s;
        }
    }
    if (next < 0)
        snprintf(out_reason, size,
                 "auto: no rowfuse kernel fits this shape, so the vendor baseline (%s cost "
                 "model: %.1f us)",
                 target->name, t_best);
    else
        snprintf(out_reason, size,
                 "auto: %s is the cheapest of the schedules that fit (%s cost model: %.1f us; "
                 "next %s %.1f us; %.3f GFLOP)",
                 rf_schedule_name(best), target->name, t_best,
                 rf_schedule_name((rf_schedule_t)next), t_next,
                 4.0 * (double)rows * (double)channels * (double)hidden * 1e-9);
    return best;
}

void rf_schedule_fits(const rf_plan_t *p, rf_schedule_fit_t fit[RF_SCHEDULE_COUNT]) {
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        const rf_plan_schedule_t *ps = &p->schedules[s];
        fit[s].available = ps->available;
        /* rows per block: a cluster of cluster_h blocks shares each tile */
        const rf_kernel_spec_t *k = ps->kernel_count > 0 ? &p->kernels[ps->kernel[0]] : NULL;
        fit[s].tile_rows =
            ps->available && k ? k->tile_rows / rf_kernel_spec_blocks_per_tile(k) : 0;
        int blocked = ps->available && k && k->mode == RF_KERNEL_FUSED_WGMMA && k->w1_block > 0;
        fit[s].w1_block = blocked ? k->w1_block : 0;
        fit[s].padded_channels = blocked ? k->padded_channels : 0;
        fit[s].padded_hidden = blocked ? k->padded_hidden : 0;
        fit[s].chunks = 0;
        fit[s].chunk_bytes = 0.0;
        for (int i = 0; ps->available && i < ps->kernel_count; i++) {
            const rf_kernel_spec_t *ki = &p->kernels[ps->kernel[i]];
            int fused = ki->mode == RF_KERNEL_FUSED_SMEM || ki->mode == RF_KERNEL_FUSED_GMEM;
            int proj = ki->mode == RF_KERNEL_PROJ1 || ki->mode == RF_KERNEL_PROJ2;
            int mats = fused ? 2 : proj ? 1 : 0; /* weight matrices a chunk carries */
            if (!mats || ki->hidden_chunk <= 0 || ki->padded_hidden <= ki->hidden_chunk)
                continue; /* not an mma.sync chain of chunks, or its weights staged once */
            fit[s].chunks += ki->padded_hidden / ki->hidden_chunk;
            fit[s].chunk_bytes += 2.0 * mats * ki->padded_channels * (double)ki->padded_hidden;
        }
    }
}

void rf_schedule_rechoose_spills(rf_plan_t *p) {
    rf_schedule_fit_t fit[RF_SCHEDULE_COUNT];
    int worst[RF_SCHEDULE_COUNT] = {0}, dropped = 0;
    rf_schedule_fits(p, fit);
    for (int s = 0; s < RF_SCHEDULE_COUNT; s++) {
        for (int i = 0; i < p->schedules[s].kernel_count; i++) {
            int ops = p->kernels[p->schedules[s].kernel[i]].local_ops;
            worst[s] = ops > worst[s] ? ops : worst[s];
        }
        if (fit[s].available && worst[s] > RF_SPILL_LOCAL_OPS) {
            fit[s].available = 0;
            dropped++;
        }
    }
    if (!dropped || fit[p->schedule].available)
        return; /* the choice does not spill: it stands */
    rf_schedule_t was = p->schedule;
    char reason[256];
    p->schedule =
        rf_schedule_choose(p->rows, p->channels, p->hidden, &p->target, fit, reason, sizeof reason);
    snprintf(p->reason, sizeof p->reason,
             "%.150s; %s left out: its kernel spills (%d local-memory instructions > %d)", reason,
             rf_schedule_name(was), worst[was], RF_SPILL_LOCAL_OPS);
}
