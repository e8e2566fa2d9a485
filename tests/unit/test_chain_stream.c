/* The weight-streaming schedule (src/compile/chain_stream.c) and the split reduction
 * (src/chain/split.c), without a GPU:
 *   - the plans of a LLaMA-width SwiGLU FFN (RMSNorm, 2048 -> 8192) at 1, 4, 16 and 64 rows
 *     and of a GELU FFN (LayerNorm, 4096 -> 16384): the split covers the hidden with one
 *     block per slice over nearly every SM, the tiles hold the rows, shared memory fits, the
 *     split is inside the reference's bound and the cost line is below chain_mma's;
 *   - the choice on a 512 -> 2048 SwiGLU FFN with weights: chain_stream at 4 rows, chain_mma
 *     at 4096 rows and with --schedule chain; a stream fault refused with --schedule chain;
 *   - chains of another shape are refused naming the stage;
 *   - a CPU model of the split kernel (fp32, 16-product steps, partials reduced in block
 *     order) lies within the chain's mixed reference bound and its fp64 reference bound on
 *     seeded random FFNs, and the same model reducing before the last partial is written
 *     leaves it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chain/split.h"
#include "compile/chain_conv.h"
#include "compile/chain_stream.h"
#include "rf_test.h"
#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"

#define SEED 24u

static float *floats(rf_chain_t *c, rf_rng_t *r, int64_t n, double a, double center) {
    float *p = NULL;
    CHECK_OK(rf_chain_alloc_floats(c, (size_t)n, &p));
    for (int64_t i = 0; p && i < n; i++)
        p[i] = (float)(center + rf_rng_uniform(r, a));
    return p;
}

static rf_chain_stage_t *stage(rf_chain_t *c, rf_chain_op_t op, int64_t w) {
    rf_chain_stage_t *s = NULL;
    CHECK_OK(rf_chain_add_stage(c, op, w, &s));
    return s;
}

/* norm -> gated silu (or linear + gelu) -> linear + b2 + X. With r NULL the weights are one
 * shared placeholder the planner never reads (the widths alone decide the split). */
static rf_chain_t *ffn(rf_rng_t *r, int64_t C, int64_t H, int gated, const float *placeholder) {
    rf_chain_t *c = NULL;
    CHECK_OK(rf_chain_create(rf_allocator_system(), C, &c));
    rf_chain_stage_t *n = stage(c, RF_CHAIN_NORM, C);
    n->src = 0;
    n->norm = gated ? RF_CHAIN_RMSNORM : RF_CHAIN_LAYERNORM;
    n->eps = 1e-5;
    n->gamma = r ? floats(c, r, C, 0.2, 1.0) : placeholder;
    n->beta = !gated ? (r ? floats(c, r, C, 0.2, 0.0) : placeholder) : NULL;
    rf_chain_stage_t *h = stage(c, gated ? RF_CHAIN_GATED : RF_CHAIN_LINEAR, H);
    h->src = n->dst;
    h->k = C;
    h->n = H;
    h->w = r ? floats(c, r, C * H, 1.0 / sqrt((double)C), 0.0) : placeholder;
    h->b = r ? floats(c, r, H, 0.3, 0.0) : placeholder;
    if (gated) {
        h->fn = RF_CHAIN_FN_SILU;
        h->wu = r ? floats(c, r, C * H, 1.0 / sqrt((double)C), 0.0) : placeholder;
        h->bu = r ? floats(c, r, H, 0.3, 0.0) : placeholder;
    } else {
        h->epi[h->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_GELU_ERF, -1, 0.0f};
    }
    rf_chain_stage_t *o = stage(c, RF_CHAIN_LINEAR, C);
    o->src = h->dst;
    o->k = H;
    o->n = C;
    o->w = r ? floats(c, r, H * C, 1.0 / sqrt((double)H), 0.0) : placeholder;
    o->b = r ? floats(c, r, C, 0.3, 0.0) : placeholder;
    o->epi[o->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
    rf_chain_assign_dtypes(c);
    return c;
}

static void check_plan(const char *what, const rf_chain_t *c, int64_t rows, const rf_target_t *t) {
    rf_chain_stream_plan_t p;
    CHECK_OK(rf_chain_stream_plan_make(c, rows, t, 0, &p));
    const rf_chain_stream_shape_t *s = &p.shape;
    printf("  %s at %lld rows: %d blocks x %lld hidden, tile %d x %d row tiles, %d buffers, "
           "%lld B smem, cost %.1f us (chain_mma %.1f us), %lld weight bytes\n",
           what, (long long)rows, p.blocks, (long long)p.slice, p.tile_rows, p.row_tiles,
           p.weight_buffers, (long long)p.smem_bytes, p.cost_us, p.mma_cost_us,
           (long long)p.weight_bytes);
    CHECK(s->norm == 0 && s->first == 1 && s->second == 2);
    CHECK(p.slice % 16 == 0 && p.blocks * p.slice >= s->h && (p.blocks - 1) * p.slice < s->h);
    /* nearly every SM streams: at least 90% of them hold a slice, all resident at once (the
     * reduction waits for every block) */
    CHECK(p.blocks >= t->sm_count * 9 / 10 && p.blocks <= t->sm_count);
    /* every block reduces a share of Y's columns; together they cover it */
    CHECK(p.reduce_cols % 8 == 0 && (int64_t)p.blocks * p.reduce_cols >= s->n &&
          (int64_t)p.blocks * (p.reduce_cols - 8) < s->n);
    /* a reduction pass: the rows rounded up to a power of two, at most the tile */
    CHECK(p.reduce_rows >= 1 && (p.reduce_rows & (p.reduce_rows - 1)) == 0);
    CHECK(p.tile_rows % p.reduce_rows == 0 &&
          (p.reduce_rows >= rows || p.reduce_rows == p.tile_rows) &&
          (p.reduce_rows == 1 || p.reduce_rows / 2 < rows));
    CHECK(p.tile_rows % 16 == 0 && p.tile_rows <= 64 && p.row_tiles * p.tile_rows >= rows);
    CHECK(p.row_tiles == (rows + p.tile_rows - 1) / p.tile_rows);
    CHECK(p.smem_bytes <= t->smem_per_block && p.weight_buffers >= 2);
    CHECK(p.slice % p.n_chunk1 == 0 && p.slice % p.k_chunk2 == 0);
    CHECK(p.n_chunks2 * p.n_chunk2 >= s->n);
    int64_t mats = s->gated ? 2 : 1;
    CHECK(p.weight_bytes == 2 * (mats * s->c * s->h + s->h * s->n));
    CHECK(p.cost_us < p.mma_cost_us);
    CHECK_OK(rf_chain_split_covered(s->h, p.slice, p.blocks));
    /* the regions the generator checks: ordered, aligned, the ring last */
    CHECK(p.h_offset >= (p.x_stream ? 0 : p.tile_rows * p.x_stride * 2) && p.h_offset % 128 == 0);
    CHECK(p.weight_smem_offset >= p.stats_offset + p.tile_rows * 8 &&
          p.weight_smem_offset % 128 == 0);
    CHECK(p.x_stride >= (p.x_stream ? p.k_chunk1 : s->c) && p.h_stride >= p.slice);
    if (p.x_stream) /* a W1 stage holds its tiles and X's chunk */
        CHECK(p.ring_bytes >= (int64_t)(s->gated ? 2 : 1) * p.k_chunk1 * p.n_chunk1 * 2 +
                                  (int64_t)p.tile_rows * p.x_stride * 2 &&
              p.weight_buffers >= RF_STREAM_MIN_BUFFERS && !p.tma);
    CHECK(rf_chain_stream_counters_per_tile(&p) == 2);
    CHECK(rf_chain_stream_scratch_bytes(p.blocks, s->n, rows, p.tile_rows,
                                        rf_chain_stream_counters_per_tile(&p)) ==
          4 * ((int64_t)p.blocks * rows * s->n + p.row_tiles * 2));
    p.timeline = 1; /* a timeline build: the blocks' stamps after each tile's counters */
    CHECK(rf_chain_stream_counters_per_tile(&p) == 2 + (int64_t)p.blocks * RF_STREAM_STAMPS);
}

static void test_llama_widths(const rf_target_t *t) {
    static const float placeholder[8];
    rf_chain_t *swiglu = ffn(NULL, 2048, 8192, 1, placeholder);
    rf_chain_t *gelu = ffn(NULL, 4096, 16384, 0, placeholder);
    static const int64_t rows[] = {1, 4, 16, 64};
    for (int i = 0; i < 4; i++)
        check_plan("SwiGLU 2048 -> 8192", swiglu, rows[i], t);
    check_plan("GELU 4096 -> 16384", gelu, 4, t);
    check_plan("GELU 4096 -> 16384", gelu, 16, t);
    check_plan("GELU 4096 -> 16384", gelu, 43, t);
    rf_chain_stream_plan_t p;
    /* With the wide forms (--stream-wide on): where a tile of the rows does not fit with X
     * resident (4096 wide above 16 rows, 2048 above 32), the cp.async plan streams X in
     * chunks beside W1, in one row tile, so the weights stream once; the TMA ring keeps X
     * resident, in more tiles; without them (auto, until checked on a GPU) neither does. */
    const int W = RF_STREAM_PLAN_WIDE, T = RF_STREAM_PLAN_TMA;
    static const struct {
        int64_t rows;
        int tile, x_stream[2]; /* SwiGLU, GELU */
    } xs[] = {{16, 16, {0, 0}}, {17, 32, {0, 1}}, {43, 64, {1, 1}}, {64, 64, {1, 1}}};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        for (int g = 0; g < 2; g++) {
            CHECK_OK(rf_chain_stream_plan_make(g ? gelu : swiglu, xs[i].rows, t, W, &p));
            CHECK(p.tile_rows == xs[i].tile && p.x_stream == xs[i].x_stream[g] && p.row_tiles == 1);
            CHECK_OK(rf_chain_stream_plan_make(g ? gelu : swiglu, xs[i].rows, t, W | T, &p));
            CHECK(!p.x_stream && (xs[i].rows > 16 || p.row_tiles == 1));
            CHECK(xs[i].rows < 43 || p.row_tiles > 1); /* X resident: tiles of 16 or 32 */
            CHECK_OK(rf_chain_stream_plan_make(g ? gelu : swiglu, xs[i].rows, t, 0, &p));
            CHECK(!p.x_stream && (p.row_tiles == 1) == !xs[i].x_stream[g]);
        }
    }
    /* 11,136 hidden (a GELU FFN of the decode set): slices of 64 need 174 blocks, of 128
     * leave 45 SMs idle; 116 slices of 96, each one W1 tile wide */
    rf_chain_t *wide = ffn(NULL, 2496, 11136, 0, placeholder);
    CHECK_OK(rf_chain_stream_plan_make(wide, 43, t, 0, &p));
    CHECK(p.blocks == 87 && p.slice == 128 && !p.x_stream); /* without the wide forms */
    CHECK_OK(rf_chain_stream_plan_make(wide, 43, t, W, &p));
    CHECK(p.blocks == 116 && p.slice == 96 && p.n_chunk1 == 96 && p.k_chunk2 == 96);
    CHECK(p.x_stream && p.row_tiles == 1 && p.smem_bytes <= t->smem_per_block);
    CHECK_OK(rf_chain_split_covered(p.shape.h, p.slice, p.blocks));
    rf_chain_destroy(wide);
    CHECK_OK(rf_chain_stream_plan_make(swiglu, 4, t, 0, &p));
    /* 8192 hidden over 132 SMs: 128 slices of 64 is one wave of the fewest columns per block */
    CHECK(p.blocks == 128 && p.slice == 64 && p.shape.gated);
    CHECK_OK(rf_chain_stream_plan_make(gelu, 4, t, 0, &p));
    CHECK(p.blocks == 128 && p.slice == 128 && !p.shape.gated);
    rf_chain_destroy(swiglu);
    rf_chain_destroy(gelu);
}

static void test_choice(const rf_target_t *t) {
    rf_rng_t r;
    rf_rng_seed(&r, SEED);
    rf_chain_t *c = ffn(&r, 512, 2048, 1, NULL);
    rf_compile_options_t o;
    rf_compile_options_default(&o);
    static rf_chain_plan_t p;
    rf_chain_stream_plan_t s;
    int chosen = -1;
    struct {
        int64_t rows;
        const char *schedule, *fault;
        int want;
    } cases[] = {{4, "auto", NULL, 1},
                 {1, NULL, NULL, 1},
                 {64, "auto", NULL, 1},
                 {4096, "auto", NULL, 0},
                 {4, "chain", NULL, 0},
                 {4096, "chain-stream", NULL, 1},
                 {4, "auto", "stream-early-reduce", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.schedule = cases[i].schedule;
        o.fault = cases[i].fault;
        rf_status_t mma = rf_chain_plan_make(c, cases[i].rows, t, 0, &p);
        CHECK_OK(rf_chain_stream_choose(c, &o, cases[i].rows, t, mma, &p, &s, &chosen));
        CHECK(chosen == cases[i].want);
        CHECK(!chosen || !strncmp(p.name, "stream_", 7));
        CHECK(!chosen || (p.smem_bytes == s.smem_bytes && p.tile_rows == s.tile_rows));
        CHECK(!cases[i].fault || !strcmp(s.fault, "stream_early_reduce"));
    }
    o.schedule = "chain";
    o.fault = "stream-no-fence";
    CHECK_ERR(
        rf_chain_stream_choose(c, &o, 4, t, rf_chain_plan_make(c, 4, t, 0, &p), &p, &s, &chosen),
        RF_CODE_INVALID_ARGUMENT, "stream-no-fence");
    rf_chain_destroy(c);
}

/* The lines auto weighs above the decode rows, against their closed forms: the GEMMs' (a
 * kernel each for the norm, the gated and the down projection; the matmuls at the GEMM
 * rate, or the weights at the streaming rate where that is longer) and chain_mma's (each
 * row tile's block streams every weight alone). */
static void test_large_row_lines(const rf_target_t *t) {
    rf_rng_t r;
    rf_rng_seed(&r, SEED + 4);
    const double C = 256, H = 1024;
    rf_chain_t *c = ffn(&r, (int64_t)C, (int64_t)H, 1, NULL);
    double bytes = 2.0 * (2 * C * H + H * C);
    for (int64_t rows = 1; rows <= 1 << 20; rows *= 32) {
        double math = 2.0 * (double)rows * 3 * C * H / (RF_CHAIN_WGMMA_TFLOPS * 1e6);
        double weights = bytes / (RF_STREAM_HBM_GBS * 1e3);
        double want = 3 * RF_CHAIN_WGMMA_KERNEL_US + (math > weights ? math : weights);
        CHECK(fabs(rf_chain_wgmma_cost_us(c, rows) - want) < 1e-9 * want);
    }
    /* 10,000 rows in 16-row tiles: 625 tiles, 5 waves of 132 SMs streaming alone, or every
     * tile's weights at the device's rate, whichever is longer */
    double alone = 5 * bytes / (RF_STREAM_SM_GBS * 1e3);
    double together = 625 * bytes / (RF_STREAM_HBM_GBS * 1e3);
    double want = RF_STREAM_MMA_FIXED_US + (alone > together ? alone : together);
    CHECK(fabs(rf_chain_mma_cost_us((int64_t)bytes, 10000, 16, t) - want) < 1e-9 * want);
    rf_chain_destroy(c);
}

static void test_refusals(const rf_target_t *t) {
    rf_rng_t r;
    rf_rng_seed(&r, SEED + 1);
    rf_chain_t *c = ffn(&r, 64, 128, 0, NULL);
    rf_chain_stream_plan_t p;
    /* a third linear: not the FFN shape */
    rf_chain_stage_t *x = stage(c, RF_CHAIN_LINEAR, 64);
    x->src = 3;
    x->k = 64;
    x->n = 64;
    x->w = floats(c, &r, 64 * 64, 0.1, 0.0);
    rf_chain_assign_dtypes(c);
    CHECK_ERR(rf_chain_stream_plan_make(c, 4, t, 0, &p), RF_CODE_UNSUPPORTED, "4 stages");
    rf_chain_destroy(c);
    /* a residual of the norm's value, not X */
    c = ffn(&r, 64, 128, 1, NULL);
    c->stages[2].epi[0].src = 1;
    CHECK_ERR(rf_chain_stream_plan_make(c, 4, t, 0, &p), RF_CODE_UNSUPPORTED,
              "stage 2: epilogue add of value 1");
    rf_chain_destroy(c);
    /* a split that leaves a block empty */
    CHECK_ERR(rf_chain_split_covered(8192, 16, 600), RF_CODE_UNSUPPORTED, "600 slices");
}

/* The TMA ring's plan beside the cp.async ring's at the same shape: the same split and tiles,
 * a producer warp more, the mbarriers between the statistics and the ring, the ring, its
 * stages and each matrix's tile 1 KB aligned and unpadded, the base's alignment inside the
 * shared memory; chosen only where asked for (or by its planted fault), refused where a
 * width is not a multiple of 8. */
static void test_tma_ring(const rf_target_t *t) {
    static const float placeholder[8];
    struct {
        int64_t c, h, rows;
        int gated;
    } shapes[] = {{2048, 5632, 1, 1}, {4096, 16384, 4, 0}, {768, 3072, 16, 0}, {512, 2048, 64, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        rf_chain_t *c = ffn(NULL, shapes[i].c, shapes[i].h, shapes[i].gated, placeholder);
        rf_chain_stream_plan_t a, b;
        CHECK_OK(rf_chain_stream_plan_make(c, shapes[i].rows, t, 0, &a));
        CHECK_OK(rf_chain_stream_plan_make(c, shapes[i].rows, t, 1, &b));
        int64_t mats = shapes[i].gated ? 2 : 1, al = RF_STREAM_TMA_ALIGN;
        printf("  TMA ring, %lld -> %lld at %lld rows: %d buffers of %lld B (cp.async: %d of "
               "%lld B), %lld B smem\n",
               (long long)shapes[i].c, (long long)shapes[i].h, (long long)shapes[i].rows,
               b.weight_buffers, (long long)b.ring_bytes, a.weight_buffers, (long long)a.ring_bytes,
               (long long)b.smem_bytes);
        CHECK(!a.tma && b.tma && rf_chain_stream_threads(&a) == 32 * a.warps &&
              rf_chain_stream_threads(&b) == 32 * (b.warps + 1));
        CHECK(a.blocks == b.blocks && a.slice == b.slice && a.n_chunk1 == b.n_chunk1 &&
              a.k_chunk1 == b.k_chunk1 && a.n_chunk2 == b.n_chunk2 && a.k_chunk2 == b.k_chunk2);
        CHECK(b.mbar_offset % 8 == 0 && b.mbar_offset >= b.stats_offset + b.tile_rows * 8);
        CHECK(b.weight_smem_offset >= b.mbar_offset + 16 * b.weight_buffers);
        CHECK(b.weight_smem_offset % al == 0 && b.ring_bytes % al == 0);
        int64_t t1 = (int64_t)b.k_chunk1 * b.n_chunk1 * 2,
                t2 = (int64_t)b.k_chunk2 * b.n_chunk2 * 2;
        CHECK(b.ring_bytes >= mats * ((t1 + al - 1) / al * al) && b.ring_bytes >= t2);
        CHECK(b.ring_bytes < mats * ((t1 + al - 1) / al * al) + al || b.ring_bytes < t2 + al);
        CHECK(b.smem_bytes == b.weight_smem_offset + b.weight_buffers * b.ring_bytes + al);
        CHECK(b.smem_bytes <= t->smem_per_block && b.weight_buffers >= 2 &&
              b.weight_buffers <= RF_STREAM_TMA_MAX_BUFFERS);
        rf_chain_destroy(c);
    }
    /* asked for, or planted: the TMA ring; auto within the L2: cp.async */
    rf_rng_t r;
    rf_rng_seed(&r, SEED + 3);
    rf_chain_t *c = ffn(&r, 256, 1024, 1, NULL);
    rf_compile_options_t o;
    rf_compile_options_default(&o);
    static rf_chain_plan_t p;
    rf_chain_stream_plan_t s;
    int chosen = 0;
    struct {
        int stream_tma;
        const char *fault;
        int tma;
    } cases[] = {{-1, NULL, 0}, {0, NULL, 0}, {1, NULL, 1}, {-1, "stream-ring-no-wait", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.stream_tma = cases[i].stream_tma;
        o.fault = cases[i].fault;
        CHECK_OK(rf_chain_stream_choose(c, &o, 4, t, rf_chain_plan_make(c, 4, t, 0, &p), &p, &s,
                                        &chosen));
        CHECK(chosen && s.tma == cases[i].tma);
        CHECK(p.warps * 32 == rf_chain_stream_threads(&s));
    }
    rf_chain_destroy(c);
    /* auto above the L2's bytes of weights (a 4096 -> 8192 GELU FFN, 134 MB): the TMA ring;
     * off keeps cp.async there */
    c = ffn(&r, 4096, 8192, 0, NULL);
    for (int off = 0; off < 2; off++) {
        o.stream_tma = off ? 0 : -1;
        o.fault = NULL;
        CHECK_OK(rf_chain_stream_choose(c, &o, 1, t, rf_chain_plan_make(c, 1, t, 0, &p), &p, &s,
                                        &chosen));
        CHECK(chosen && s.weight_bytes > RF_STREAM_TMA_MIN_BYTES && s.tma == !off);
    }
    /* ... but not at 43 rows with the wide forms, where only cp.async's X streamed beside W1
     * holds the rows in one tile (the ring would stream the weights three times); auto
     * leaves the wide forms out (not yet checked on a GPU) */
    o.stream_tma = -1;
    o.stream_wide = 1;
    CHECK_OK(
        rf_chain_stream_choose(c, &o, 43, t, rf_chain_plan_make(c, 43, t, 0, &p), &p, &s, &chosen));
    CHECK(chosen && !s.tma && s.x_stream && s.row_tiles == 1);
    o.stream_wide = -1;
    CHECK_OK(
        rf_chain_stream_choose(c, &o, 43, t, rf_chain_plan_make(c, 43, t, 0, &p), &p, &s, &chosen));
    CHECK(chosen && s.tma && !s.x_stream && s.row_tiles == 3);
    rf_chain_destroy(c);
    /* a hidden width TMA cannot stride over */
    c = ffn(&r, 64, 100, 0, NULL);
    rf_chain_stream_plan_t q;
    CHECK_OK(rf_chain_stream_plan_make(c, 4, t, 0, &q));
    CHECK_ERR(rf_chain_stream_plan_make(c, 4, t, 1, &q), RF_CODE_UNSUPPORTED, "multiples of 8");
    rf_chain_destroy(c);
}

/* The model of the split kernel against the references, and its planted early reduction. */
static void test_split_model(void) {
    rf_rng_t r;
    rf_rng_seed(&r, SEED + 2);
    printf("test_chain_stream: split model seed %u\n", SEED + 2);
    for (int trial = 0; trial < 6; trial++) {
        int gated = trial % 2;
        int64_t C = 32 + 32 * (trial % 3), H = 96 + 80 * trial, rows = 5;
        int64_t slice = 16 * (1 + trial % 3);
        rf_chain_t *c = ffn(&r, C, H, gated, NULL);
        int64_t blocks = (H + slice - 1) / slice;
        CHECK_OK(rf_chain_split_covered(H, slice, blocks));
        CHECK(rf_chain_split_depth(H, slice, blocks) <= rf_chain_bound_depth(H));
        uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(rows * C));
        float *y = malloc(sizeof(float) * (size_t)(rows * C));
        float *bad = malloc(sizeof(float) * (size_t)(rows * C));
        double *mix = malloc(sizeof(double) * (size_t)(rows * C));
        double *mixb = malloc(sizeof(double) * (size_t)(rows * C));
        double *f64 = malloc(sizeof(double) * (size_t)(rows * C));
        double *f64b = malloc(sizeof(double) * (size_t)(rows * C));
        CHECK(x && y && bad && mix && mixb && f64 && f64b);
        for (int64_t i = 0; i < rows * C; i++)
            x[i] = rf_f32_to_f16((float)rf_rng_uniform(&r, 2.0));
        CHECK_OK(rf_chain_split_emulate(c, x, rows, 2, slice, RF_CHAIN_SPLIT_OK, y));
        CHECK_OK(rf_chain_split_emulate(c, x, rows, 2, slice, RF_CHAIN_SPLIT_EARLY_REDUCE, bad));
        CHECK_OK(rf_chain_reference(c, x, rows, RF_CHAIN_MIXED, mix, mixb));
        CHECK_OK(rf_chain_reference(c, x, rows, RF_CHAIN_FP64, f64, f64b));
        int64_t over_mix = 0, over_f64 = 0, caught = 0;
        double worst = 0.0;
        for (int64_t i = 0; i < rows * C; i++) {
            double d = fabs((double)y[i] - mix[i]);
            over_mix += !(d <= mixb[i]);
            over_f64 += !(fabs((double)y[i] - f64[i]) <= f64b[i]);
            caught += !(fabs((double)bad[i] - mix[i]) <= mixb[i]);
            worst = mixb[i] > 0 && d / mixb[i] > worst ? d / mixb[i] : worst;
        }
        printf("  %s %lld -> %lld, %lld slices of %lld: worst |model - mixed| / bound %.3g; "
               "early reduce out of bound at %lld of %lld\n",
               gated ? "SwiGLU" : "GELU", (long long)C, (long long)H, (long long)blocks,
               (long long)slice, worst, (long long)caught, (long long)(rows * C));
        CHECK(over_mix == 0 && over_f64 == 0);
        CHECK(caught >= rows * C / 2);
        free(x);
        free(y);
        free(bad);
        free(mix);
        free(mixb);
        free(f64);
        free(f64b);
        rf_chain_destroy(c);
    }
}

int main(void) {
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    test_llama_widths(&t);
    test_choice(&t);
    test_large_row_lines(&t);
    test_refusals(&t);
    test_tma_ring(&t);
    test_split_model();
    return rf_test_finish();
}
