/* Kernel geometry: how one kernel of the residual MLP block tiles its work (warps, padded
 * extents, hidden chunks, shared memory) and how many blocks of it an SM holds. This is
 * the generator's layout contract seen from the deciding side:
 * python/rowfuse/kernels/rowfuse_kernels.py allocates shared memory exactly as smem_bytes() counts
 * it (X tile(s), W1 chunk(s) + b1, W2 chunk(s) + b2, H tile(s); every row padded by SMEM_PAD halves
 * against ldmatrix bank conflicts) and checks the total against the spec's smem_bytes when it
 * compiles. */
#include <stdio.h>

#include "compile/compile_internal.h"

enum {
    SMEM_PAD = RF_SMEM_ROW_PAD,
    SMEM_SLACK = 64 * 8,      /* alignment slack of the DSL's shared-memory allocator */
    MAX_ACC_PER_THREAD = 128, /* fp32 accumulator registers per thread we allow */
};

static int roundup(int x, int m) {
    return (x + m - 1) / m * m;
}

static int uses_w1(rf_kernel_mode_t m) {
    return m != RF_KERNEL_PROJ2;
}
static int uses_w2(rf_kernel_mode_t m) {
    return m != RF_KERNEL_PROJ1;
}
static int fused(rf_kernel_mode_t m) {
    return m == RF_KERNEL_FUSED_SMEM || m == RF_KERNEL_FUSED_GMEM;
}

static int smem_bytes(rf_kernel_mode_t mode, int tm, int cp, int hp, int hc, int nbuf, int xpf,
                      int ring) {
    int xbufs = ring ? 3 : (xpf ? 2 : 1);
    int b = xbufs * tm * (cp + SMEM_PAD) * 2; /* X tile(s) */
    if (uses_w1(mode))
        b += nbuf * cp * (hc + SMEM_PAD) * 2 + hp * 4;
    if (uses_w2(mode))
        b += nbuf * hc * (cp + SMEM_PAD) * 2 + cp * 4;
    if (mode != RF_KERNEL_PROJ1)
        b += ((mode == RF_KERNEL_PROJ2 && nbuf > 1) || ring ? 2 : 1) * tm * (hc + SMEM_PAD) * 2;
    return b + SMEM_SLACK;
}

/* Warps along N: the fewest that minimise the padded work per warp (ties within 3% go to
 * fewer warps: fewer idle lanes and barrier participants). */
static int choose_warps_n(int warps_m, int channels, int hidden) {
    int warps_n = 1;
    double best = -1.0;
    for (int wn = 1; wn <= 4 && warps_m * wn <= 8; wn++) {
        double cost = (double)roundup(channels, 16 * wn) * roundup(hidden, 16 * wn) / wn;
        if (best < 0 || cost < best * 0.97) {
            warps_n = wn;
            best = cost;
        }
    }
    return warps_n;
}

/* Fills the chunk fields when hidden chunks of hc columns in nbuf buffers fit. */
static int try_chunk(rf_kernel_spec_t *k, int hc, int nbuf, int x_prefetch, int split_w2, int ring,
                     int limit) {
    int hp = k->padded_hidden, threads = rf_kernel_spec_threads(k);
    if (k->mode != RF_KERNEL_PROJ2 && k->tile_rows * hc / threads > MAX_ACC_PER_THREAD)
        return 0;
    int xpf = x_prefetch && hc == hp && k->mode != RF_KERNEL_PROJ2;
    int rng = ring && xpf && k->mode == RF_KERNEL_FUSED_SMEM;
    int need = smem_bytes(k->mode, k->tile_rows, k->padded_channels, hp, hc, nbuf, xpf, rng);
    if (need > limit)
        return 0;
    k->hidden_chunk = hc;
    k->weight_buffers = nbuf;
    k->smem_bytes = need;
    k->x_prefetch = xpf;
    k->ring = rng;
    k->split_w2 = split_w2 && xpf && fused(k->mode);
    return 1;
}

/* One chunk when everything fits, else the widest double-buffered chunk that fits, else the
 * widest single-buffered one (chunks divide the padded hidden width). */
static int choose_chunk(rf_kernel_spec_t *k, int x_prefetch, int split_w2, int ring, int limit) {
    int step = 16 * k->warps_n, hp = k->padded_hidden;
    if (try_chunk(k, hp, 1, x_prefetch, split_w2, ring, limit))
        return 1;
    for (int nbuf = 2; nbuf >= 1; nbuf--)
        for (int hc = hp - step; hc > 0; hc -= step)
            if (hp % hc == 0 && try_chunk(k, hc, nbuf, x_prefetch, split_w2, ring, limit))
                return 1;
    return 0;
}

rf_status_t rf_kernel_geometry(rf_kernel_mode_t mode, int channels, int hidden, int tile_rows,
                               int x_prefetch, int split_w2, int y_vec2, int ring,
                               const rf_target_t *t, rf_kernel_spec_t *out) {
    rf_kernel_spec_t k = {0};
    if (!rf_kernel_mode_name(mode))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "unknown kernel mode %d", (int)mode);
    if (tile_rows != 16 && tile_rows != 32 && tile_rows != 64)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "tile rows must be 16, 32 or 64, not %d",
                      tile_rows);
    if (channels < 1 || hidden < 1 || channels > 65536 || hidden > 65536)
        return RF_ERR(RF_CODE_UNSUPPORTED, "channels %d and hidden %d must be in 1..65536",
                      channels, hidden);
    k.mode = mode;
    k.channels = channels;
    k.hidden = hidden;
    k.tile_rows = tile_rows;
    k.cluster_h = 1;
    k.warps_m = tile_rows / 16;
    k.warps_n = choose_warps_n(k.warps_m, channels, hidden);
    k.padded_channels = roundup(channels, 16 * k.warps_n);
    k.padded_hidden = roundup(hidden, 16 * k.warps_n);
    int acc_y =
        mode != RF_KERNEL_PROJ1 ? tile_rows * k.padded_channels / rf_kernel_spec_threads(&k) : 0;
    if (acc_y > MAX_ACC_PER_THREAD)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: channels %d need %d fp32 accumulators per thread (limit %d) at tile "
                      "rows %d; use fewer tile rows",
                      rf_kernel_mode_name(mode), channels, acc_y, MAX_ACC_PER_THREAD, tile_rows);
    if (!choose_chunk(&k, x_prefetch, split_w2, ring, t->smem_per_block))
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: C=%d H=%d tile rows %d does not fit: needs %d bytes of shared memory "
                      "even with hidden chunks of %d, %d available per block on %s",
                      rf_kernel_mode_name(mode), channels, hidden, tile_rows,
                      smem_bytes(mode, tile_rows, k.padded_channels, k.padded_hidden,
                                 16 * k.warps_n, 1, 0, 0),
                      16 * k.warps_n, t->smem_per_block, t->name);
    /* 8-byte Y stores: a thread's accumulator columns (c, c+1), c even, are 8-byte aligned
     * in Y when C is even. */
    k.y_vec2 = y_vec2 && mode != RF_KERNEL_PROJ1 && channels % 2 == 0;
    snprintf(k.name, sizeof k.name, "rf_c%d_h%d_%s_t%d", channels, hidden,
             rf_kernel_mode_name(mode), tile_rows);
    *out = k;
    return RF_OK;
}

int rf_kernel_blocks_per_sm(const rf_kernel_spec_t *k, const rf_target_t *t, int count_registers) {
    int threads = rf_kernel_spec_threads(k);
    int by_smem = t->smem_per_sm / (k->smem_bytes + t->smem_reserved);
    int by_threads = t->threads_per_sm / threads;
    int by_regs = t->max_blocks_per_sm, n;
    if (count_registers && k->registers > 0) {
        /* registers are allocated per warp in units of 256 */
        int per_warp = (k->registers * 32 + 255) / 256 * 256;
        by_regs = t->regs_per_sm / (per_warp * (threads / 32));
    }
    n = by_smem < by_threads ? by_smem : by_threads;
    n = n < by_regs ? n : by_regs;
    n = n < t->max_blocks_per_sm ? n : t->max_blocks_per_sm;
    return n > 1 ? n : 1;
}
