/* Planted faults against the one correctness gate (rf_mlp_compare with the default
 * tolerance and the per-element bound of rowfuse/mlp.h), on the CPU.
 *
 *     test_gate_faults [--seed S] [--seeds N] [--shapes N] [--verbose]
 *     (or RF_SEED=S in the environment; the default seed is fixed and printed)
 *
 * Two correct kernel models compute the block as the tensor-core kernels may:
 *  - "correct (rn)": per k16 MMA step, 16 exact products summed and added to an fp32
 *    accumulator with one rounding to nearest, blocks in ascending order (mma.sync, wgmma);
 *  - "correct (tc)": the tensor-core model the bound assumes, at its worst: each k16 step
 *    aligns its 17 addends to the largest with 3 extra bits, truncates, sums and truncates
 *    the result to fp32; the dot product split in two halves accumulated apart and added
 *    (a block pair's or a split-K's partial sums).
 * Both add b1 in fp32, apply ReLU, round H to fp16 to nearest even, accumulate H W2 alike,
 * add b2 and the residual in fp32 and apply ReLU. Each plausible bug is then planted in the
 * first model. The gate must accept both correct models at every shape, and catch:
 *  - a gross fault (below) wherever it changes the output by more than twice the bound;
 *  - a rounding-sized fault wherever it moves some element by more than twice the bound
 *    (what a correct kernel may do), since then it is out of bounds whatever the correct
 *    kernel's own error;
 * and prints, for every fault, the fraction of shapes where it was caught and where it is
 * indistinguishable (it moves no element by more than the bound). Where the change lies
 * between one and two bounds the verdict is reported, not required.
 *
 * Shapes: a fixed, seeded set (>= 200) over 1..16,384 rows, channels 1..1,024 (every
 * schedule; wgmma takes multiples of 8 up to 512, so half the draws are multiples of 8) and
 * hidden 1..4,096 (log-uniform), plus the shapes of earlier audits. Rows are independent,
 * so the reference and the models run on a subset of the rows where the block is large
 * (at most ROW_BUDGET = rows x C x H products per stage): always rows 0 and 1 (row tile
 * 0, the stale-H rows), the first and last rows of the last row tile (the partial tile),
 * then rows spread evenly; a fault in the other rows behaves the same as in these. Each
 * shape also runs a large-input variant (X and b1 scaled by 2^a, W2 by 2^b, b2 by 2^(a+b),
 * powers of two so that H stays finite in fp16 and Y exceeds 65,504): the correct models
 * must pass there and "fp16 overflow" (Y through fp16) must be caught. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_test.h"
#include "rowfuse/mlp.h"
#include "rowfuse/tensor.h"

#define DEFAULT_SEED 2212u
#define DEFAULT_SHAPES 216
#define ROW_BUDGET 6000000.0 /* rows x C x H of the subset */
#define MAX_SUBSET 64

enum fault {
    F_OK_RN,
    F_OK_TC,
    /* rounding-sized */
    F_H_FP32,
    F_H_RTZ,
    F_Y_FP16,
    F_ACC1_FP16,
    F_B1_FP16,
    F_ELEM_1PCT,
    /* gross */
    F_NO_RELU_H,
    F_NO_RELU_Y,
    F_NO_B1,
    F_NO_B2,
    F_NO_UNIT,
    F_NO_RESIDUAL,
    F_WRONG_RESIDUAL,
    F_SKIP_LAYER,
    F_TILE_NAN,
    F_TILE_SENTINEL,
    F_LANE_GARBAGE,
    F_ROWS_SWAPPED,
    F_STALE_H,
    F_OVERFLOW, /* large-input variant only */
    F_COUNT
};
static const char *const fault_names[F_COUNT] = {"correct (rn)",
                                                 "correct (tc)",
                                                 "H kept in fp32",
                                                 "H rounded toward zero",
                                                 "Y stored in fp16",
                                                 "fp16 acc. of X W1",
                                                 "b1 in fp16",
                                                 "one element off 1%",
                                                 "missing ReLU (H)",
                                                 "missing ReLU (Y)",
                                                 "b1 dropped",
                                                 "b2 dropped",
                                                 "hidden unit dropped",
                                                 "residual dropped",
                                                 "wrong residual (C+1)",
                                                 "layer skipped",
                                                 "tile unwritten (NaN)",
                                                 "tile unwritten (42)",
                                                 "padded lane garbage",
                                                 "rows swapped",
                                                 "missing barrier (stale H)",
                                                 "fp16 overflow (Y)"};

/* Faults an audit of an earlier gate found passing at these shapes (the first fixed
 * shapes of draw_shape): caught here whatever their measured change, so that a bound
 * loosened anywhere shows up as a failure, not as a fault turned "inert". */
static const struct {
    int64_t m, c, h;
    int fault;
} audit[] = {{10, 512, 200, F_H_FP32},    {10, 512, 200, F_H_RTZ},      {10, 512, 200, F_Y_FP16},
             {10, 512, 200, F_ACC1_FP16}, {7, 256, 256, F_H_FP32},      {7, 256, 256, F_B1_FP16},
             {15, 200, 130, F_B1_FP16},   {256, 512, 2048, F_ELEM_1PCT}};

static int audited(int64_t m, int64_t c, int64_t h, int f) {
    for (size_t i = 0; i < sizeof audit / sizeof audit[0]; i++)
        if (audit[i].m == m && audit[i].c == c && audit[i].h == h && audit[i].fault == f)
            return 1;
    return 0;
}

static int is_gross(int f) {
    return f >= F_NO_RELU_H;
}

static float f16r(float v) { /* round to fp16, nearest even */
    return rf_f16_to_f32(rf_f32_to_f16(v));
}

static float f16_toward_zero(float v) {
    float r = f16r(v);
    if (fabsf(r) > fabsf(v)) /* one fp16 step back toward zero */
        r = rf_f16_to_f32((uint16_t)(rf_f32_to_f16(r) - 1));
    return r;
}

static float garbage(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 8.0 - 4.0);
}

/* fp32 rounding toward zero of an exact double. */
static float f32_rz(double v) {
    float r = (float)v;
    if (fabs((double)r) > fabs(v))
        r = nextafterf(r, 0.0f);
    return r;
}

/* One k16 step of the truncating tensor-core model: acc + sum(t[0..n)), every addend
 * truncated onto the grid of 2^-26 times the largest one's binade (3 bits past fp32),
 * summed exactly, the result truncated to fp32. */
static float tc_step(float acc, const double *t, int n) {
    double big = fabs((double)acc);
    for (int i = 0; i < n; i++)
        big = fabs(t[i]) > big ? fabs(t[i]) : big;
    if (big == 0.0)
        return acc;
    int e = ilogb(big);
    double g = ldexp(1.0, e - 26), inv = ldexp(1.0, 26 - e), s = trunc((double)acc * inv);
    for (int i = 0; i < n; i++)
        s += trunc(t[i] * inv);
    return f32_rz(s * g);
}

/* ---- one shape: the row subset, operands in float, results of every model ---- */

typedef struct {
    int64_t m, c, h, n;             /* full rows, channels, hidden; n rows in the subset */
    int64_t rows[MAX_SUBSET];       /* the subset's row numbers in the full block */
    uint16_t *x16;                  /* [n, c] the subset's X */
    float *x, *w1t, *w2t, *b1, *b2; /* x [n][c], w1t [h][c], w2t [c][h] */
} shape_t;

/* Stage-1 variants that need their own H (and so their own H W2). */
enum hvar { H_RN, H_TC, H_FP32, H_RTZ, H_ACC16, H_B1F16, H_NOB1, H_NORELU, H_GARB, H_STALE, H_N };

/* H of row i under every stage-1 variant: h[v * hp + q] (hp >= h + 16). */
static void stage1(const shape_t *s, int64_t i, float *h, int64_t hp, double *t) {
    const int64_t c = s->c, nb = (c + 15) / 16;
    const float *x = s->x + i * c;
    uint64_t gs = 0x9e3779b97f4a7c15ull ^ (uint64_t)s->rows[i];
    for (int64_t q = 0; q < s->h; q++) {
        const float *w = s->w1t + q * c;
        float acc = 0.0f, a16 = 0.0f, tc[2] = {0.0f, 0.0f};
        for (int64_t b = 0; b < nb; b++) {
            int64_t i0 = b * 16, n = c - i0 < 16 ? c - i0 : 16;
            double bs = 0.0;
            for (int64_t k = 0; k < n; k++) {
                t[k] = (double)x[i0 + k] * w[i0 + k];
                bs += t[k];
            }
            acc = (float)((double)acc + bs);
            a16 = f16r((float)((double)a16 + bs));
            tc[b >= (nb + 1) / 2] = tc_step(tc[b >= (nb + 1) / 2], t, (int)n);
        }
        float b1 = s->b1[q], v = acc + b1;
        float garb = acc;
        for (int64_t k = c; k < (c + 15) / 16 * 16; k++)
            garb += garbage(&gs) * garbage(&gs);
        h[H_RN * hp + q] = f16r(fmaxf(v, 0.0f));
        h[H_TC * hp + q] = f16r(fmaxf((tc[0] + tc[1]) + b1, 0.0f));
        h[H_FP32 * hp + q] = fmaxf(v, 0.0f);
        h[H_RTZ * hp + q] = f16_toward_zero(fmaxf(v, 0.0f));
        h[H_ACC16 * hp + q] = f16r(fmaxf(a16 + b1, 0.0f));
        h[H_B1F16 * hp + q] = f16r(fmaxf(acc + f16r(b1), 0.0f));
        h[H_NOB1 * hp + q] = f16r(fmaxf(acc, 0.0f));
        h[H_NORELU * hp + q] = f16r(v);
        h[H_GARB * hp + q] = f16r(fmaxf(garb + b1, 0.0f));
    }
}

/* acc2[k] = H W2 (ascending k16 blocks, rn) or the tc model (two halves); garbage in the
 * padded hidden lanes when `garb`. */
static void stage2(const shape_t *s, const float *h, int tc, int garb, uint64_t *gs, float *acc2,
                   double *t) {
    const int64_t c = s->c, hd = s->h, nb = (hd + 15) / 16;
    for (int64_t k = 0; k < c; k++) {
        const float *w = s->w2t + k * hd;
        float acc = 0.0f, part[2] = {0.0f, 0.0f};
        for (int64_t b = 0; b < nb; b++) {
            int64_t q0 = b * 16, n = hd - q0 < 16 ? hd - q0 : 16;
            double bs = 0.0;
            for (int64_t q = 0; q < n; q++) {
                t[q] = (double)h[q0 + q] * w[q0 + q];
                bs += t[q];
            }
            if (tc)
                part[b >= (nb + 1) / 2] = tc_step(part[b >= (nb + 1) / 2], t, (int)n);
            else
                acc = (float)((double)acc + bs);
        }
        if (tc)
            acc = part[0] + part[1];
        if (garb)
            for (int64_t q = hd; q < nb * 16; q++)
                acc += garbage(gs) * garbage(gs);
        acc2[k] = acc;
    }
}

static float epilogue(float acc2, float b2, float x) {
    return fmaxf((acc2 + b2) + x, 0.0f);
}

/* Every model's output over the subset: y[f * n * c + i * c + k]. large: only the correct
 * models and the overflow fault are computed (the others left NaN and not used). */
static void run_models(const shape_t *s, int large, float *y) {
    const int64_t n = s->n, c = s->c, hd = s->h, hp = hd + 16, nc = n * c;
    float *h = malloc((size_t)(H_N * hp) * sizeof(float));
    float *prev = calloc((size_t)hp, sizeof(float));
    float *acc2 = malloc((size_t)c * sizeof(float)), *accok = malloc((size_t)c * sizeof(float));
    double *t = malloc((size_t)(c > hd ? c + 16 : hd + 16) * sizeof(double));
    int64_t unit = -1;
    if (!h || !prev || !acc2 || !accok || !t)
        abort();
    for (size_t i = 0; i < (size_t)(F_COUNT * nc); i++)
        y[i] = NAN;
    for (int64_t i = 0; i < n; i++) { /* the dropped unit: the last one active in the subset */
        stage1(s, i, h, hp, t);
        for (int64_t q = hd - 1; q > unit; q--)
            if (h[H_RN * hp + q] != 0.0f) {
                unit = q;
                break;
            }
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = s->rows[i];
        const float *x = s->x + i * c;
        uint64_t gs = 0x51ed2701u ^ (uint64_t)r;
        stage1(s, i, h, hp, t);
        /* missing barrier: rows 1 and every 16th read a third of H from the row before */
        memcpy(h + H_STALE * hp, h + H_RN * hp, (size_t)hd * sizeof(float));
        if (r == 1 || (r > 0 && r % 16 == 0))
            for (int64_t q = 0; q < hd; q += 3)
                h[H_STALE * hp + q] = prev[q];
        memcpy(prev, h + H_RN * hp, (size_t)hd * sizeof(float));
        stage2(s, h + H_RN * hp, 0, 0, &gs, accok, t);
        for (int64_t k = 0; k < c; k++)
            y[F_OK_RN * nc + i * c + k] = epilogue(accok[k], s->b2[k], x[k]);
        stage2(s, h + H_TC * hp, 1, 0, &gs, acc2, t);
        for (int64_t k = 0; k < c; k++)
            y[F_OK_TC * nc + i * c + k] = epilogue(acc2[k], s->b2[k], x[k]);
        for (int64_t k = 0; k < c; k++)
            y[F_OVERFLOW * nc + i * c + k] = f16r(y[F_OK_RN * nc + i * c + k]);
        if (large)
            continue;
        static const struct {
            int fault, hv, garb;
        } via_h[] = {{F_H_FP32, H_FP32, 0},       {F_H_RTZ, H_RTZ, 0},
                     {F_ACC1_FP16, H_ACC16, 0},   {F_B1_FP16, H_B1F16, 0},
                     {F_NO_B1, H_NOB1, 0},        {F_NO_RELU_H, H_NORELU, 0},
                     {F_LANE_GARBAGE, H_GARB, 1}, {F_STALE_H, H_STALE, 0}};
        for (size_t v = 0; v < sizeof via_h / sizeof via_h[0]; v++) {
            stage2(s, h + via_h[v].hv * hp, 0, via_h[v].garb, &gs, acc2, t);
            for (int64_t k = 0; k < c; k++)
                y[via_h[v].fault * nc + i * c + k] = epilogue(acc2[k], s->b2[k], x[k]);
        }
        for (int64_t k = 0; k < c; k++) {
            float a = accok[k], b2 = s->b2[k], xv = x[k], *o = y + i * c + k;
            float hu = unit >= 0 ? h[H_RN * hp + unit] * s->w2t[k * hd + unit] : 0.0f;
            o[F_Y_FP16 * nc] = f16r(o[F_OK_RN * nc]);
            o[F_ELEM_1PCT * nc] = o[F_OK_RN * nc];
            o[F_NO_RELU_Y * nc] = (a + b2) + xv;
            o[F_NO_B2 * nc] = fmaxf(a + xv, 0.0f);
            o[F_NO_UNIT * nc] = epilogue(a - hu, b2, xv);
            o[F_NO_RESIDUAL * nc] = fmaxf(a + b2, 0.0f);
            o[F_WRONG_RESIDUAL * nc] = epilogue(a, b2, x[(k + 1) % c]);
            o[F_SKIP_LAYER * nc] = fmaxf(b2 + xv, 0.0f);
            o[F_TILE_NAN * nc] = o[F_OK_RN * nc];
            o[F_TILE_SENTINEL * nc] = o[F_OK_RN * nc];
            o[F_ROWS_SWAPPED * nc] = o[F_OK_RN * nc];
        }
    }
    if (!large) {
        /* one element off by 1%: the one of largest |y| (a fixed rule, never a zero) */
        int64_t best = 0;
        for (int64_t i = 1; i < nc; i++)
            if (fabsf(y[F_OK_RN * nc + i]) > fabsf(y[F_OK_RN * nc + best]))
                best = i;
        y[F_ELEM_1PCT * nc + best] *= 1.01f;
        /* the last row tile (16 rows) never written: NaN poison, then the finite sentinel */
        for (int64_t i = 0; i < n; i++)
            if (s->rows[i] >= (s->m - 1) / 16 * 16)
                for (int64_t k = 0; k < c; k++) {
                    y[F_TILE_NAN * nc + i * c + k] = NAN;
                    y[F_TILE_SENTINEL * nc + i * c + k] = 48.5625f;
                }
        /* the first and last rows swapped (same values when the block has one row) */
        for (int64_t k = 0; k < c && n > 1; k++) {
            float *o = y + F_ROWS_SWAPPED * nc, tmp = o[k];
            o[k] = o[(n - 1) * c + k];
            o[(n - 1) * c + k] = tmp;
        }
    }
    free(h);
    free(prev);
    free(acc2);
    free(accok);
    free(t);
}

/* ---- drawing shapes ---- */

static int64_t log_uniform(rf_rng_t *r, int64_t lo, int64_t hi) {
    double u = (double)(rf_rng_next(r) >> 11) / 9007199254740992.0;
    int64_t v =
        (int64_t)floor(exp(log((double)lo) + u * (log((double)hi + 1.0) - log((double)lo))));
    return v < lo ? lo : v > hi ? hi : v;
}

static void draw_shape(rf_rng_t *r, int i, int64_t *m, int64_t *c, int64_t *h) {
    static const int64_t fixed[][3] = {
        {10, 512, 200},  {7, 256, 256}, {15, 200, 130},     {256, 512, 2048}, {9, 1000, 70},
        {10, 2047, 40},  {1, 1, 1},     {16384, 512, 2048}, {777, 24, 200},   {16384, 1024, 4096},
        {1, 1024, 4096}, {41, 90, 25},  {4731, 225, 189},   {49, 48, 96}};
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    if (i < nfixed) {
        *m = fixed[i][0];
        *c = fixed[i][1];
        *h = fixed[i][2];
        return;
    }
    *m = log_uniform(r, 1, 16384);
    uint64_t k = rf_rng_next(r) % 20;
    *c = k < 6    ? 1 + (int64_t)(rf_rng_next(r) % 64)
         : k < 15 ? 65 + (int64_t)(rf_rng_next(r) % 448)
                  : 513 + (int64_t)(rf_rng_next(r) % 512);
    *h = log_uniform(r, 1, 4096);
    if (rf_rng_next(r) % 2) { /* the wgmma schedule's multiples of 8 */
        *c = (*c + 7) / 8 * 8;
        *h = (*h + 7) / 8 * 8;
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The subset of rows (sorted, distinct): rows 0 and 1, the first and last rows of the last
 * row tile, then rows spread evenly, `want` in all (at least the four named ones). */
static int64_t pick_rows(int64_t m, int64_t c, int64_t h, int64_t *rows) {
    double cap = floor(ROW_BUDGET / ((double)c * (double)h));
    int64_t want = cap < 4 ? 4 : cap > MAX_SUBSET ? MAX_SUBSET : (int64_t)cap, n = 0;
    if (m <= want) {
        for (int64_t i = 0; i < m; i++)
            rows[i] = i;
        return m;
    }
    int64_t cand[2 * MAX_SUBSET + 4] = {0, 1, (m - 1) / 16 * 16, m - 1};
    int64_t nc = 4;
    for (int64_t i = 0; i < want; i++)
        cand[nc++] = i * (m - 1) / (want - 1);
    for (int64_t i = 0; i < nc && n < want; i++) { /* named first, then spread, distinct */
        int dup = 0;
        for (int64_t j = 0; j < n; j++)
            dup |= rows[j] == cand[i];
        if (!dup)
            rows[n++] = cand[i];
    }
    qsort(rows, (size_t)n, sizeof rows[0], cmp_i64);
    return n;
}

/* The subset's operands (large: scaled as the header says); returns 0 when the large
 * variant cannot reach fp16 overflow without overflowing H or W2. */
static int make_shape(const rf_mlp_case_t *k, const int64_t *rows, int64_t n, int large,
                      shape_t *s) {
    const int64_t c = k->channels, h = k->hidden;
    double sx = 1.0, sw = 1.0;
    memset(s, 0, sizeof(*s));
    s->m = k->rows;
    s->c = c;
    s->h = h;
    s->n = n;
    memcpy(s->rows, rows, (size_t)n * sizeof(int64_t));
    s->x16 = malloc((size_t)(n * c) * 2);
    s->x = malloc((size_t)(n * c) * sizeof(float));
    s->w1t = malloc((size_t)(c * h) * sizeof(float));
    s->w2t = malloc((size_t)(c * h) * sizeof(float));
    s->b1 = malloc((size_t)h * sizeof(float));
    s->b2 = malloc((size_t)c * sizeof(float));
    if (!s->x16 || !s->x || !s->w1t || !s->w2t || !s->b1 || !s->b2)
        abort();
    if (large) { /* 2^a: the largest exact |pre-activation| bound below 2^14; 2^b: Y > 2^17 */
        double pre = 0.0, w2max = 0.0;
        for (int64_t q = 0; q < h; q++) {
            double p = fabs(k->b1[q]);
            for (int64_t i = 0; i < c; i++)
                p += fabs(rf_f16_to_f32(k->w1[i * h + q]));
            pre = p > pre ? p : pre;
        }
        for (int64_t i = 0; i < c * h; i++)
            w2max = fmax(w2max, fabs(rf_f16_to_f32(k->w2[i])));
        int a = (int)floor(log2(16384.0 / pre));
        a = a > 14 ? 14 : a;
        if (a < 0)
            return 0;
        sx = ldexp(1.0, a);
        /* |Y| reaches about 2^a * sum over H of |h w2|; aim Y's bound at 2^20 */
        int b = (int)floor(log2(32768.0 / w2max));
        if (b < 0)
            return 0;
        sw = ldexp(1.0, b);
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++) {
            float v = (float)(rf_f16_to_f32(k->x[rows[i] * c + j]) * sx);
            s->x16[i * c + j] = rf_f32_to_f16(v);
            s->x[i * c + j] = v;
        }
    for (int64_t i = 0; i < c; i++)
        for (int64_t q = 0; q < h; q++) {
            s->w1t[q * c + i] = rf_f16_to_f32(k->w1[i * h + q]);
            s->w2t[i * h + q] = (float)(rf_f16_to_f32(k->w2[q * c + i]) * sw);
        }
    for (int64_t q = 0; q < h; q++)
        s->b1[q] = (float)(k->b1[q] * sx);
    for (int64_t i = 0; i < c; i++)
        s->b2[i] = (float)(k->b2[i] * sx * sw);
    return 1;
}

static void free_shape(shape_t *s) {
    free(s->x16);
    free(s->x);
    free(s->w1t);
    free(s->w2t);
    free(s->b1);
    free(s->b2);
}

/* The subset's reference and bound (the gate's own functions). */
static void reference_and_bound(const shape_t *s, float *ref, double *allow) {
    rf_allocator_t a = rf_allocator_system();
    uint16_t *w1 = malloc((size_t)(s->c * s->h) * 2), *w2 = malloc((size_t)(s->c * s->h) * 2);
    rf_tensor_t out;
    for (int64_t i = 0; i < s->c; i++)
        for (int64_t q = 0; q < s->h; q++) {
            w1[i * s->h + q] = rf_f32_to_f16(s->w1t[q * s->c + i]);
            w2[q * s->c + i] = rf_f32_to_f16(s->w2t[i * s->h + q]);
        }
    CHECK_OK(rf_mlp_reference(a, RF_PRECISION_MIXED, s->n, s->c, s->h, s->x16, w1, s->b1, w2, s->b2,
                              &out));
    memcpy(ref, out.data, (size_t)(s->n * s->c) * sizeof(float));
    rf_tensor_free(a, &out);
    CHECK_OK(
        rf_mlp_error_model(a, s->n, s->c, s->h, s->x16, w1, s->b1, w2, s->b2, ref, allow, NULL));
    free(w1);
    free(w2);
}

/* ---- the run ---- */

typedef struct {
    int shapes, caught, inert, unchanged, between, between_caught, required_missed;
    double worst_ratio; /* correct models: max |y - ref| / bound */
} tally_t;

static void judge(int f, const float *yf, const float *yok, const float *ref, const double *allow,
                  int64_t nc, const shape_t *s, int verbose, tally_t *t) {
    rf_mlp_tolerance_t tol = rf_mlp_tolerance_default();
    rf_mlp_compare_result_t v;
    rf_mlp_compare(yf, ref, allow, INFINITY, (size_t)nc, &tol, &v);
    double change = 0.0; /* max |y_fault - y_correct| / bound */
    for (int64_t i = 0; i < nc; i++) {
        double d = fabs((double)yf[i] - (double)yok[i]);
        if (!isfinite(yf[i]) || !isfinite(d))
            d = INFINITY;
        change = fmax(change, d / allow[i]);
    }
    int correct = f == F_OK_RN || f == F_OK_TC, caught = !v.passed;
    t->shapes++;
    if (correct) {
        t->worst_ratio = fmax(t->worst_ratio, v.max_ratio);
        if (caught) {
            char why[256];
            rf_mlp_compare_describe(&v, s->c, why, sizeof why);
            fprintf(stderr, "  %lldx%lldx%lld: %s REJECTED: %s\n", (long long)s->m, (long long)s->c,
                    (long long)s->h, fault_names[f], why);
            t->required_missed++;
        }
        CHECK(!caught);
        return;
    }
    t->caught += caught;
    t->inert += change <= 1.0;
    t->unchanged += change == 0.0;
    if (change > 1.0 && change <= 2.0) {
        t->between++;
        t->between_caught += caught;
    }
    int required = change > 2.0 || audited(s->m, s->c, s->h, f);
    if (required && !caught) {
        t->required_missed++;
        fprintf(stderr,
                "  %lldx%lldx%lld (%lld rows used): %s PASSED the gate, change %.3g bounds\n",
                (long long)s->m, (long long)s->c, (long long)s->h, (long long)s->n, fault_names[f],
                change);
    } else if (verbose && !caught)
        printf("    %lldx%lldx%lld: %s not caught (change %.3g bounds)\n", (long long)s->m,
               (long long)s->c, (long long)s->h, fault_names[f], change);
    CHECK(!required || caught);
}

static int run(uint64_t seed, int n_shapes, int verbose) {
    rf_allocator_t a = rf_allocator_system();
    rf_rng_t r;
    tally_t t[F_COUNT];
    int fails0 = rf_test_failed, gross_inert = 0, large_skipped = 0;
    memset(t, 0, sizeof t);
    printf("test_gate_faults: seed %llu, %d shapes (rerun: test_gate_faults --seed %llu)\n",
           (unsigned long long)seed, n_shapes, (unsigned long long)seed);
    rf_rng_seed(&r, seed);
    for (int si = 0; si < n_shapes; si++) {
        int64_t m, c, h, rows[MAX_SUBSET];
        rf_mlp_case_t k;
        draw_shape(&r, si, &m, &c, &h);
        uint64_t case_seed = rf_rng_next(&r);
        CHECK_OK(rf_mlp_case_create(a, m, c, h, case_seed, 0, &k));
        int64_t n = pick_rows(m, c, h, rows);
        for (int large = 0; large <= 1; large++) {
            shape_t s;
            if (!make_shape(&k, rows, n, large, &s)) {
                large_skipped++;
                free_shape(&s);
                continue;
            }
            int64_t nc = n * c;
            float *y = malloc((size_t)(F_COUNT * nc) * sizeof(float));
            float *ref = malloc((size_t)nc * sizeof(float));
            double *allow = malloc((size_t)nc * sizeof(double));
            if (!y || !ref || !allow)
                abort();
            reference_and_bound(&s, ref, allow);
            run_models(&s, large, y);
            for (int f = 0; f < F_COUNT; f++) {
                if (large != (f == F_OVERFLOW) && f != F_OK_RN && f != F_OK_TC)
                    continue;
                if (f == F_OVERFLOW) { /* the inputs must reach fp16 overflow */
                    int reached = 0;
                    for (int64_t i = 0; i < nc; i++)
                        reached |= fabsf(ref[i]) > 65520.0f;
                    if (!reached) {
                        large_skipped++;
                        continue;
                    }
                }
                int before = t[f].caught;
                judge(f, y + f * nc, y + F_OK_RN * nc, ref, allow, nc, &s, verbose, &t[f]);
                if (is_gross(f) && t[f].caught == before)
                    gross_inert++;
            }
            free(y);
            free(ref);
            free(allow);
            free_shape(&s);
        }
        rf_mlp_case_free(a, &k);
    }
    printf("%-26s %7s %8s %8s %10s %14s %7s\n", "fault", "shapes", "caught", "inert", "unchanged",
           "1-2x (caught)", "missed");
    for (int f = 0; f < F_COUNT; f++) {
        const tally_t *q = &t[f];
        if (f == F_OK_RN || f == F_OK_TC) {
            printf("%-26s %7d accepted at %d, worst |y - ref| / bound %.3f\n", fault_names[f],
                   q->shapes, q->shapes - q->required_missed, q->worst_ratio);
            continue;
        }
        printf("%-26s %7d %7.1f%% %7.1f%% %10d %10d (%d) %7d%s\n", fault_names[f], q->shapes,
               q->shapes ? 100.0 * q->caught / q->shapes : 0.0,
               q->shapes ? 100.0 * q->inert / q->shapes : 0.0, q->unchanged, q->between,
               q->between_caught, q->required_missed, is_gross(f) ? "  gross" : "");
        CHECK(q->shapes > 0);
    }
    printf("gross faults not caught at a shape (inert there): %d; large-input variants skipped "
           "(overflow not reachable): %d\n",
           gross_inert, large_skipped);
    return rf_test_failed == fails0;
}

int main(int argc, char **argv) {
    const char *env = getenv("RF_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : DEFAULT_SEED;
    int seeds = 1, shapes = DEFAULT_SHAPES, verbose = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            shapes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else {
            fprintf(stderr, "usage: test_gate_faults [--seed S] [--seeds N] [--shapes N] "
                            "[--verbose]\n");
            return 2;
        }
    }
    if (seeds < 1 || shapes < 1) {
        fprintf(stderr, "test_gate_faults: --seeds and --shapes must be >= 1\n");
        return 2;
    }
    for (int i = 0; i < seeds; i++) {
        if (!run(seed + (uint64_t)i, shapes, verbose)) {
            printf("seed %llu FAILED\n", (unsigned long long)(seed + (uint64_t)i));
            failed++;
        }
    }
    if (seeds > 1)
        printf("%d of %d seeds failed\n", failed, seeds);
    return rf_test_finish();
}
