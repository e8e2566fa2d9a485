/* Kernel geometry of the Hopper family (mode fused_wgmma, schedule persistent-wgmma):
 * warpgroup MMA (wgmma) fed by TMA rings, the hidden dimension streamed through the
 * block in chunks (python/rowfuse/kernels/rowfuse_hopper.py builds exactly what this decides).
 *
 * One block owns whole row tiles of 64 rows per consumer warpgroup along M (wg_m = 1 or
 * 2); wide channel counts split the output channels between two warpgroups (wg_n = 2).
 * Every wgmma is m64nNk16, so the channels are padded to 16 (K of X W1; to 64 when two
 * warpgroups split them) and each chunk of hidden units to 16 per warpgroup. TMA needs 16-byte row
 * strides: C and H must be multiples of 8 (X, W2 and Y rows are C elements, W1 rows H), else the
 * schedule is unavailable and plan.json says why. The Y accumulator lives in registers: a warpgroup
 * holds 64 rows x (C / wg_n) fp32, at most 128 per thread, so C <= 512.
 *
 * When the 64-row tiles would leave more than half of the SMs idle (2 x tiles <= SMs, one
 * warpgroup, H >= 64), a cluster of two blocks shares each tile (cluster_h = 2): block r
 * of the pair runs the chunks of hidden half r, so twice the SMs compute, and the two Y
 * partial sums meet in distributed shared memory: each block stores the half of its
 * accumulator the other block finishes into that block's exchange buffer, and after a
 * cluster barrier finishes (b2, residual, ReLU) its own half of the channels.
 *
 * The weights are resident (every chunk its own buffer, loaded once per block:
 * weight_buffers = chunks) when they fit next to an X buffer, else streamed through a
 * ring of 2..4 chunk buffers (weight_buffers < chunks), every tile re-reading them.
 *
 * Shared memory, in the kernel's allocation order (every TMA / wgmma buffer 1 KB
 * aligned, the 128-byte swizzle's period):
 *   mbarriers  2 (x_stages + w_stages) x 8 B (full + empty per stage)
 *   b1, b2     padded_hidden x 4 B, padded_channels x 4 B (zero past H, C)
 *   X ring     x_stages x tile_rows x padded_channels x 2 B
 *   W1 ring    w_stages x padded_channels x hidden_chunk x 2 B
 *   W2 ring    w_stages x hidden_chunk x padded_channels x 2 B
 *   H          2 x tile_rows x hidden_chunk x 2 B (only with wg_n = 2; with wg_n = 1 the
 *              fp16 H chunk stays in registers as the A operand of the second wgmma)
 *   exchange   tile_rows x padded_channels / 2 x 4 B (only with cluster_h = 2: the
 *              partial Y sums of the channels this block finishes, from the other block)
 * plus 1 KB of alignment slack. */
#include <stdio.h>

#include "compile/compile_internal.h"

enum {
    WG_ROWS = 64,               /* rows of one wgmma (m64) = rows per consumer warpgroup */
    MAX_CHANNELS = 512,         /* 64 rows x 256 fp32 per warpgroup, two warpgroups */
    ACC_BUDGET = 160,           /* fp32 accumulator + fp16 H registers per thread */
    MAX_N = 256,                /* the widest wgmma N */
    ALIGN = 1024,               /* TMA / swizzled buffers */
    MAX_X_STAGES = 4,           /* X tiles in flight per block (weights resident) */
    MAX_RESIDENT_CHUNKS = 16,   /* chunk buffers when the weights are loaded once */
    TILE128_MIN_TILES_PCT = 90, /* 128-row tiles only with >= 0.9 tiles per SM */
    MIN_SPLIT_HIDDEN = 64,      /* a block pair splits H only from 64 hidden units (32 each) */
    BLOCKED_HC = 128,           /* blocked ring: widest chunk (GEMM1 at N = 64 per warpgroup) */
    BLOCK_K = 128,              /* blocked ring: channels of one W1 item (64 where C needs) */
    MAX_ITEM_STAGES = 8,        /* blocked ring: items in flight */
    MIN_ITEM_STAGES = 3 /* one in flight (the kernel's ITEMS_IN_FLIGHT), one issued, one loading */
};

static int roundup(int x, int m) {
    return (x + m - 1) / m * m;
}

static int64_t add(int64_t off, int64_t bytes, int align) {
    return (off + align - 1) / align * align + bytes;
}

int rf_hopper_stage_bytes(const rf_kernel_spec_t *k) {
    int64_t w1 = (int64_t)k->w1_block * k->hidden_chunk,
            w2 = (int64_t)k->w2_block * k->padded_channels;
    return (int)add(0, 2 * (w1 > w2 ? w1 : w2), ALIGN) / ALIGN * ALIGN;
}

int rf_hopper_smem_bytes(const rf_kernel_spec_t *k) {
    int wg_n = k->warps_n, bm = k->tile_rows, cp = k->padded_channels, hc = k->hidden_chunk;
    int64_t off = add(0, 16 * (int64_t)(k->x_stages + k->weight_buffers), 8);
    off = add(off, 4 * (int64_t)k->padded_hidden, 16);
    off = add(off, 4 * (int64_t)cp, 16);
    off = add(off, 2 * (int64_t)bm * cp * k->x_stages, ALIGN);
    if (k->w1_block > 0) {
        off = add(off, (int64_t)rf_hopper_stage_bytes(k) * k->weight_buffers, ALIGN);
    } else {
        off = add(off, 2 * (int64_t)cp * hc * k->weight_buffers, ALIGN);
        off = add(off, 2 * (int64_t)hc * cp * k->weight_buffers, ALIGN);
    }
    if (wg_n > 1)
        off = add(off, 2 * 2 * (int64_t)bm * hc, ALIGN);
    if (k->cluster_h > 1)
        off = add(off, 4 * (int64_t)bm * cp / 2, 16);
    off += ALIGN;
    return off > (1 << 30) ? (1 << 30) : (int)off;
}

/* fp32 accumulator and fp16 H registers per thread for a chunk of hc hidden units:
 * Y (64 x cp / wg_n), the chunk's X W1 part (64 x hc / wg_n) and its fp16 copy. */
static int acc_registers(int cp, int hc, int wg_n) {
    return cp / (2 * wg_n) + hc / (2 * wg_n) + hc / (4 * wg_n);
}

/* Fills stages and smem when they fit in `limit`; 1 on success. */
static int try_stages(rf_kernel_spec_t *k, int w_stages, int x_stages, int limit) {
    k->weight_buffers = w_stages;
    k->x_stages = x_stages;
    k->smem_bytes = rf_hopper_smem_bytes(k);
    return k->smem_bytes <= limit;
}

/* The chunk of at most `top` hidden units that splits hp16 evenly into the fewest chunks
 * (every chunk a multiple of `step`, none wholly in the padding); 0 when there is none. */
static int balanced_chunk(int hp16, int top, int step, int *out_nch) {
    int nch = (hp16 + top - 1) / top;
    int hc = roundup((hp16 + nch - 1) / nch, step);
    if (hc > top || (nch - 1) * hc >= hp16)
        return 0;
    *out_nch = nch;
    return hc;
}

/* The widest chunk the registers allow (a multiple of step, at most MAX_N per warpgroup). */
static int widest_chunk(int cp, int wg_n) {
    int step = 16 * wg_n, hc = MAX_N * wg_n;
    while (hc > step && acc_registers(cp, hc, wg_n) > ACC_BUDGET)
        hc -= step;
    return hc;
}

/* Resident weights: every chunk in its own buffer, loaded once per block and never
 * released (w_stages = chunks), with as many X stages as fit (4 down to 1). */
static int try_resident(rf_kernel_spec_t *k, int hp16, int limit) {
    int nch = 0, step = 16 * k->warps_n, top = widest_chunk(k->padded_channels, k->warps_n);
    /* With two warpgroups, at least two chunks when H allows: a single chunk makes every
     * wgmma descriptor and shared H address loop-invariant, and at C > 448 the compiler
     * keeps them all live (255 registers and spills); two chunks index them by the chunk. */
    if (k->warps_n == 2 && hp16 >= 2 * step && top >= hp16)
        top = roundup(hp16 / 2, step);
    int hc = balanced_chunk(hp16, top, step, &nch);
    if (!hc || nch > MAX_RESIDENT_CHUNKS)
        return 0;
    k->hidden_chunk = hc;
    k->padded_hidden = nch * hc;
    for (int xs = MAX_X_STAGES; xs >= 1; xs--)
        if (try_stages(k, nch, xs, limit))
            return 1;
    return 0;
}

/* Streamed chunks: the widest balanced chunk whose ring fits with at least two stages
 * (and at least two chunks), then as many chunk stages as fit, with two X stages if they
 * fit, or (`one_tile`: at most one tile per block at the planned rows, so a second X
 * buffer would never be filled) with one X stage and the room given to the chunks. */
static int try_streamed(rf_kernel_spec_t *k, int hp16, int limit, int one_tile) {
    static const int order[][2] = {{4, 2}, {3, 2}, {2, 2}, {2, 1}};
    static const int order_one_tile[][2] = {{4, 1}, {3, 1}, {2, 1}, {2, 1}};
    int step = 16 * k->warps_n;
    for (int top = widest_chunk(k->padded_channels, k->warps_n); top >= step; top -= step) {
        int nch = 0, hc = balanced_chunk(hp16, top, step, &nch);
        if (!hc || nch < 2)
            continue;
        k->hidden_chunk = hc;
        k->padded_hidden = nch * hc;
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
            const int *o = one_tile ? order_one_tile[i] : order[i];
            if (o[0] < nch && try_stages(k, o[0], o[1], limit))
                return 1;
        }
    }
    return 0;
}

/* Blocked ring (two warpgroups along the channels, streamed weights): whole-chunk stages
 * of W1 and W2 at C = 512 leave room for chunks of 32 hidden units only (GEMM1 at N = 16
 * per warpgroup, the X tile re-read from shared memory for every 16 hidden units). Items
 * of BLOCK_K channels of W1 x the chunk and of W2 rows x C let the chunk be BLOCKED_HC
 * wide (GEMM1 at N = 64 per warpgroup) and keep several items in flight. Each item is
 * one ring stage; the W2 items as many hidden units as fit in the W1 item's bytes. The
 * items are as large as three fit (32 KB at C = 512): each costs the consumers a full-barrier
 * wait, a release and the producer's refill, and at 16 KB items that overhead, not the
 * weight stream, set the pace (notes/kernels.md, the blocked weight ring). */
static int try_blocked(rf_kernel_spec_t *k, int hp16, int limit, int one_tile) {
    int cp = k->padded_channels, step = 32;
    for (int top = BLOCKED_HC; top >= step; top -= step) {
        int nch = 0, hc = balanced_chunk(hp16, top, step, &nch);
        if (!hc || nch < 2)
            continue;
        k->hidden_chunk = hc;
        k->padded_hidden = nch * hc;
        k->w1_block = cp % BLOCK_K ? BLOCK_K / 2 : BLOCK_K; /* cp is a multiple of 64 */
        k->w2_block = 16;
        while (hc % (2 * k->w2_block) == 0 && 2 * k->w2_block * cp <= k->w1_block * hc)
            k->w2_block *= 2;
        /* a second X buffer (the next tile's X loads during this one) only beside at least
         * 6 items in flight; one X buffer when no block gets a second tile */
        for (int xs = one_tile ? 1 : 2; xs >= 1; xs--)
            for (int ws = MAX_ITEM_STAGES; ws >= (xs == 2 ? 6 : MIN_ITEM_STAGES); ws--)
                if (try_stages(k, ws, xs, limit))
                    return 1;
    }
    k->w1_block = k->w2_block = 0;
    return 0;
}

/* The chunks of one block's hidden units (hp_block, a multiple of 16 wg_n): resident if
 * they fit, else streamed (two warpgroups along the channels: a blocked ring);
 * padded_hidden counts the whole tile's (cluster_h blocks). */
static int plan_chunks(rf_kernel_spec_t *k, int hp_block, int limit, int one_tile) {
    int blocked = k->warps_n == 2 && k->cluster_h == 1 && k->warps_m == 4;
    if (!try_resident(k, hp_block, limit) &&
        !(blocked ? try_blocked(k, hp_block, limit, one_tile)
                  : try_streamed(k, hp_block, limit, one_tile)))
        return 0;
    k->padded_hidden *= k->cluster_h;
    k->smem_bytes = rf_hopper_smem_bytes(k); /* b1 of the whole tile */
    return k->smem_bytes <= limit;
}

static rf_status_t reject(int channels, int hidden, const char *why) {
    return RF_ERR(RF_CODE_UNSUPPORTED, "fused_wgmma: C=%d H=%d: %s", channels, hidden, why);
}

rf_status_t rf_kernel_geometry_hopper(int channels, int hidden, int64_t rows, int tile_rows,
                                      int hidden_split, const rf_target_t *t,
                                      rf_kernel_spec_t *out) {
    rf_kernel_spec_t k = {0};
    if (channels < 1 || hidden < 1 || channels > 65536 || hidden > 65536)
        return reject(channels, hidden, "channels and hidden must be in 1..65536");
    if (channels % 8 || hidden % 8)
        return reject(channels, hidden,
                      "TMA needs 16-byte row strides: channels and hidden must be multiples of "
                      "8 (the mma.sync schedules take any width)");
    if (channels > MAX_CHANNELS)
        return reject(channels, hidden,
                      "the Y accumulator (64 rows x C fp32 over two warpgroups) fits registers "
                      "only for C <= 512");
    if (tile_rows != 0 && tile_rows != WG_ROWS && tile_rows != 2 * WG_ROWS)
        return reject(channels, hidden, "tile rows must be 64 or 128 (auto)");
    k.mode = RF_KERNEL_FUSED_WGMMA;
    k.channels = channels;
    k.hidden = hidden;
    k.warps_n = channels > MAX_N ? 2 : 1; /* consumer warpgroups along the channels */
    int64_t min_tiles = ((int64_t)t->sm_count * TILE128_MIN_TILES_PCT + 99) / 100;
    int wg_m = 1;
    if (tile_rows == 2 * WG_ROWS || (tile_rows == 0 && (rows + 127) / 128 >= min_tiles))
        wg_m = 2;
    if (k.warps_n * wg_m > 2) {
        if (tile_rows == 2 * WG_ROWS)
            return reject(channels, hidden, "128-row tiles need C <= 256 (two warpgroups)");
        wg_m = 1;
    }
    k.tile_rows = WG_ROWS * wg_m;
    k.warps_m = 4 * wg_m;
    /* K of X W1 in steps of 16; with two warpgroups each half of the channels a multiple
     * of 32, so W2's TMA boxes are at least 64 bytes wide (narrower swizzle-free boxes
     * multiply the ring's TMA instructions and their live addresses: spills) */
    k.padded_channels = roundup(channels, k.warps_n == 2 ? 64 : 16);
    int64_t tiles = (rows + k.tile_rows - 1) / k.tile_rows;
    int one_tile = tiles <= t->sm_count;
    /* a pair of blocks per tile when the tiles alone would leave half the SMs idle */
    int can_split = k.warps_n == 1 && wg_m == 1 && hidden >= MIN_SPLIT_HIDDEN;
    if (hidden_split == 1 || (hidden_split < 0 && can_split && 2 * tiles <= t->sm_count)) {
        k.cluster_h = 2;
        if (can_split && plan_chunks(&k, roundup(hidden, 32) / 2, t->smem_per_block, one_tile) &&
            k.padded_hidden - hidden < k.hidden_chunk)
            goto planned;
        if (hidden_split == 1)
            return reject(channels, hidden,
                          "a block pair per tile needs 64-row tiles of one warpgroup (C <= "
                          "256), H >= 64, and both halves' chunks in shared memory");
    }
    k.cluster_h = 1;
    if (!plan_chunks(&k, roundup(hidden, 16 * k.warps_n), t->smem_per_block, one_tile)) {
        char why[160];
        snprintf(why, sizeof why,
                 "no hidden chunk fits %d bytes of shared memory per block on %s with two "
                 "chunk buffers",
                 t->smem_per_block, t->name);
        return reject(channels, hidden, why);
    }
planned:
    snprintf(k.name, sizeof k.name, "rf_c%d_h%d_fused_wgmma_t%d%s", channels, hidden, k.tile_rows,
             k.cluster_h > 1 ? "_pair" : "");
    *out = k;
    return RF_OK;
}
