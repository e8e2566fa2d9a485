/* The chain planner and the package files: on seeded random chains the layout keeps the
 * generator's rules (slots 16-byte aligned inside smem_bytes, values alive together never
 * overlap, chunks and pads consistent, weight offsets multiples of 8 inside wh / wf) and the
 * target's shared memory; weights.bin + plan.json read back (rf_chain_load_package) give a
 * chain whose mixed reference equals the original's bit for bit; tiles follow the rows; a
 * chain too wide for shared memory is refused naming its stage; a plan.json whose dtype
 * breaks the precision rule is refused naming the value; the residual MLP as a chain
 * (rf_chain_from_mlp, `compile --mlp ... --schedule chain`) has the MLP's reference; the
 * conventional schedule's segments (rf_chain_conv_plan_make) cover the chain with at most one
 * matmul each, every value a later kernel reads is in the scratch without overlap, every
 * kernel's inputs are staged (with a slot) or read in place (element by element only), and a
 * column split covers its matmul and is followed only by elementwise stages. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/chain_conv.h"
#include "compile/chain_plan.h"
#include "rf_test.h"
#include "rowfuse/mlp.h"
#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"

static int64_t pick(rf_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rf_rng_next(r) % (uint64_t)(hi - lo + 1));
}

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

/* A random chain of every stage kind: [norm] -> linear(+act) | gated -> [act] -> linear
 * (+ residual) -> [add] -> [norm]. */
static rf_chain_t *random_chain(rf_rng_t *r, int64_t C, int64_t H) {
    rf_chain_t *c = NULL;
    CHECK_OK(rf_chain_create(rf_allocator_system(), C, &c));
    int src = 0;
    if (pick(r, 0, 1)) {
        rf_chain_stage_t *n = stage(c, RF_CHAIN_NORM, C);
        n->src = 0;
        n->norm = pick(r, 0, 1) ? RF_CHAIN_LAYERNORM : RF_CHAIN_RMSNORM;
        n->eps = 1e-5;
        n->gamma = floats(c, r, C, 0.2, 1.0);
        n->beta = n->norm == RF_CHAIN_LAYERNORM ? floats(c, r, C, 0.2, 0.0) : NULL;
        src = n->dst;
    }
    rf_chain_stage_t *h;
    if (pick(r, 0, 1)) {
        h = stage(c, RF_CHAIN_GATED, H);
        h->fn = RF_CHAIN_FN_SILU;
        h->wu = floats(c, r, C * H, 1.0 / sqrt((double)C), 0.0);
        h->bu = pick(r, 0, 1) ? floats(c, r, H, 0.5, 0.0) : NULL;
    } else {
        h = stage(c, RF_CHAIN_LINEAR, H);
        h->epi[h->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_GELU_ERF, -1, 0.0f};
    }
    h->src = src;
    h->k = C;
    h->n = H;
    h->w = floats(c, r, C * H, 1.0 / sqrt((double)C), 0.0);
    h->b = pick(r, 0, 1) ? floats(c, r, H, 0.5, 0.0) : NULL;
    int hid = h->dst;
    if (pick(r, 0, 1)) {
        rf_chain_stage_t *a = stage(c, RF_CHAIN_ACT, H);
        a->src = hid;
        /* (no draw: the chains' other draws stay as they were) a parametric act, whose alpha
         * must survive the package's round trip, at every other chain */
        a->fn = hid % 2 ? RF_CHAIN_FN_TANH : RF_CHAIN_FN_LEAKY_RELU;
        a->alpha = a->fn == RF_CHAIN_FN_LEAKY_RELU ? 0.2f : 0.0f;
        hid = a->dst;
    }
    rf_chain_stage_t *o = stage(c, RF_CHAIN_LINEAR, C);
    o->src = hid;
    o->k = H;
    o->n = C;
    o->w = floats(c, r, H * C, 1.0 / sqrt((double)H), 0.0);
    o->b = floats(c, r, C, 0.5, 0.0);
    o->epi[o->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
    int last = o->dst;
    if (pick(r, 0, 1)) {
        rf_chain_stage_t *ad = stage(c, RF_CHAIN_ADD, C);
        ad->src = last;
        ad->src2 = src;
        last = ad->dst;
    }
    if (pick(r, 0, 1)) {
        rf_chain_stage_t *n = stage(c, RF_CHAIN_NORM, C);
        n->src = last;
        n->norm = RF_CHAIN_LAYERNORM;
        n->eps = 1e-12;
        n->gamma = floats(c, r, C, 0.2, 1.0);
    }
    rf_chain_assign_dtypes(c);
    CHECK_OK(rf_chain_validate(c));
    return c;
}

/* The generator's rules (python/rowfuse/kernels/chain_mma.py, ChainPlan.check). */
static int layout_ok(const rf_chain_plan_t *p) {
    const rf_chain_t *c = p->chain;
    int ok = p->smem_bytes <= p->target.smem_per_block && p->weight_smem_offset % 16 == 0;
    ok &= p->smem_bytes >= p->weight_smem_offset + p->weight_buffers * p->ring_bytes;
    for (int v = 0; v < c->n_values; v++) {
        const rf_chain_value_plan_t *a = &p->values[v];
        int64_t eb = c->values[v].dtype == RF_DTYPE_F16 ? 2 : 4;
        ok &= a->padded_width % 16 == 0 && a->padded_width >= c->values[v].width;
        ok &= a->row_stride >= a->padded_width && (a->row_stride * eb) % 16 == 0;
        if (v == c->n_values - 1) {
            ok &= a->smem_offset == -1;
            continue;
        }
        ok &= a->smem_offset >= 0 && a->smem_offset % 16 == 0;
        ok &= a->smem_offset + p->tile_rows * a->row_stride * eb <= p->weight_smem_offset;
        for (int u = 0; u < v; u++) {
            const rf_chain_value_plan_t *b = &p->values[u];
            int together = !(b->last < a->first || a->last < b->first);
            int overlap = a->smem_offset < b->smem_offset + b->slot_bytes &&
                          b->smem_offset < a->smem_offset + a->slot_bytes;
            ok &= !(together && overlap);
        }
    }
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        const rf_chain_stage_plan_t *sp = &p->stages[s];
        if (st->op == RF_CHAIN_LINEAR || st->op == RF_CHAIN_GATED) {
            ok &= sp->k_chunk % 16 == 0 && sp->n_chunk % 16 == 0 && sp->k_chunk > 0;
            ok &= sp->k_pad % sp->k_chunk == 0 && sp->k_pad >= st->k;
            ok &= sp->k_pad <= p->values[st->src].padded_width;
            ok &= sp->n_pad % sp->n_chunk == 0 && sp->n_pad >= st->n;
            if (st->dst != c->n_values - 1)
                ok &= sp->n_pad >= p->values[st->dst].padded_width;
            ok &= sp->w % 8 == 0 && sp->w + st->k * st->n <= p->wh_elems;
        }
        int64_t offs[5] = {sp->wu, sp->b, sp->bu, sp->gamma, sp->beta};
        for (int i = 0; i < 5; i++)
            ok &= offs[i] < 0 || offs[i] % 8 == 0;
        ok &= st->op != RF_CHAIN_NORM || !st->gamma || sp->gamma >= 0;
    }
    return ok;
}

static void test_layout_and_roundtrip(void) {
    rf_rng_t rng;
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    rf_rng_seed(&rng, 31);
    char dir[] = "/tmp/rf_chain_plan_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int good = 0, same = 0;
    const int chains = 30;
    for (int k = 0; k < chains; k++) {
        int64_t C = 8 * pick(&rng, 1, 40), H = 8 * pick(&rng, 1, 120);
        rf_chain_t *c = random_chain(&rng, C, H);
        rf_chain_plan_t *p = calloc(1, sizeof *p);
        int64_t rows = pick(&rng, 1, 20000);
        CHECK_OK(rf_chain_plan_make(c, rows, &t, 0, p));
        good += layout_ok(p);
        /* the package files, read back */
        char path[256];
        int64_t wh, wf;
        snprintf(path, sizeof path, "%s/weights.bin", dir);
        CHECK_OK(rf_chain_weights_write(p, path, &wh, &wf));
        snprintf(path, sizeof path, "%s/plan.json", dir);
        CHECK_OK(rf_chain_plan_write(p, "test", wh, wf, path));
        rf_chain_t *back = NULL;
        CHECK_OK(rf_chain_load_package(rf_allocator_system(), dir, &back));
        if (back) {
            int64_t n = 5 * C;
            uint16_t *x = malloc(sizeof(uint16_t) * (size_t)n);
            double *y = malloc(sizeof(double) * 4 * (size_t)n);
            rf_rng_fill_f16(&rng, 1.5, x, (size_t)n);
            CHECK_OK(rf_chain_reference(c, x, 5, RF_CHAIN_MIXED, y, y + n));
            CHECK_OK(rf_chain_reference(back, x, 5, RF_CHAIN_MIXED, y + 2 * n, y + 3 * n));
            same += !memcmp(y, y + 2 * n, sizeof(double) * 2 * (size_t)n);
            free(x);
            free(y);
        }
        rf_chain_destroy(back);
        free(p);
        rf_chain_destroy(c);
    }
    CHECK(good == chains);
    CHECK(same == chains);
    printf("layout rules held at %d of %d random chains; %d read back bit-identical\n", good,
           chains, same);
    char path[256];
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    /* a dtype that breaks the precision rule is refused naming the value */
    {
        rf_chain_t *c = random_chain(&rng, 64, 128);
        rf_chain_plan_t *p = calloc(1, sizeof *p);
        int64_t wh, wf;
        CHECK_OK(rf_chain_plan_make(c, 64, &t, 0, p));
        char wpath[256];
        snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
        CHECK_OK(rf_chain_weights_write(p, wpath, &wh, &wf));
        c->values[c->n_values - 1].dtype = RF_DTYPE_F16; /* Y in fp16 */
        CHECK_OK(rf_chain_plan_write(p, "test", wh, wf, path));
        rf_chain_t *back = NULL;
        CHECK_ERR(rf_chain_load_package(rf_allocator_system(), dir, &back), RF_CODE_PARSE_ERROR,
                  "precision rule");
        rf_chain_destroy(back);
        free(p);
        rf_chain_destroy(c);
        unlink(wpath);
    }
    unlink(path);
    rmdir(dir);
}

static void test_tiles_and_fit(void) {
    rf_rng_t rng;
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    rf_rng_seed(&rng, 5);
    rf_chain_t *c = random_chain(&rng, 64, 256);
    rf_chain_plan_t *p = calloc(1, sizeof *p);
    CHECK_OK(rf_chain_plan_make(c, 64, &t, 0, p));
    CHECK(p->tile_rows == 16); /* few rows: the most tiles */
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    CHECK(p->tile_rows == 64); /* many rows: the largest tile that fits */
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 32, p));
    CHECK(p->tile_rows == 32 && layout_ok(p));
    CHECK_ERR(rf_chain_plan_make(c, 64, &t, 48, p), RF_CODE_INVALID_ARGUMENT, "16, 32 or 64");
    rf_chain_destroy(c);
    /* 2048 -> 5632 gated with its input alive: does not fit; the error names the stage */
    CHECK_OK(rf_chain_create(rf_allocator_system(), 2048, &c));
    rf_chain_stage_t *g = stage(c, RF_CHAIN_GATED, 5632);
    g->src = 0;
    g->k = 2048;
    g->n = 5632;
    g->fn = RF_CHAIN_FN_SILU;
    g->w = floats(c, &rng, 2048 * 5632, 0.01, 0.0);
    g->wu = g->w;
    rf_chain_stage_t *d = stage(c, RF_CHAIN_LINEAR, 2048);
    d->src = g->dst;
    d->k = 5632;
    d->n = 2048;
    d->w = g->w;
    d->epi[d->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
    rf_chain_assign_dtypes(c);
    CHECK_ERR(rf_chain_plan_make(c, 64, &t, 0, p), RF_CODE_UNSUPPORTED,
              "stage 0 (gated 2048 -> 5632)");
    rf_chain_destroy(c);
    free(p);
}

/* The residual MLP's seeded block (rowfuse/mlp.h) as a chain: two linear stages, H fp16,
 * and the chain's mixed reference within the MLP's per-element allowance of the MLP's
 * reference (a kernel computing the one passes the other's check). They are not equal: the
 * graph interpreter rounds every node's output to fp32 (the products, the bias and residual
 * adds), the chain reference only what the plan stores. */
static void test_mlp_as_chain(void) {
    static const int64_t shapes[][3] = {{37, 48, 96}, {16, 40, 200}, {5, 128, 64}};
    for (int i = 0; i < 3; i++) {
        int64_t R = shapes[i][0], C = shapes[i][1], H = shapes[i][2];
        rf_mlp_case_t mc = {0};
        CHECK_OK(rf_mlp_case_create(rf_allocator_system(), R, C, H, 11 + (uint64_t)i, 1, &mc));
        rf_mlp_weights_t w = {C, H, mc.w1, mc.w2, mc.b1, mc.b2};
        rf_chain_t *c = NULL;
        CHECK_OK(rf_chain_from_mlp(&w, &c));
        CHECK(c && c->n_stages == 2 && c->values[1].dtype == RF_DTYPE_F16 &&
              c->values[2].dtype == RF_DTYPE_F32);
        double *y = malloc(sizeof(double) * (size_t)(R * C));
        CHECK_OK(rf_chain_reference(c, mc.x, R, RF_CHAIN_MIXED, y, NULL));
        double worst = 0.0, worst_allow = 0.0;
        for (int64_t j = 0; j < R * C; j++) {
            double d = fabs(y[j] - (double)mc.ref[j]);
            CHECK(d <= mc.allow[j]);
            worst = d > worst ? d : worst;
            worst_allow = d / mc.allow[j] > worst_allow ? d / mc.allow[j] : worst_allow;
        }
        printf("  MLP %lldx%lldx%lld as a chain: max |chain - MLP| reference %.3g (%.2g of the "
               "allowance)\n",
               (long long)R, (long long)C, (long long)H, worst, worst_allow);
        free(y);
        rf_chain_destroy(c);
        rf_mlp_case_free(rf_allocator_system(), &mc);
    }
}

static int is_mm_op(rf_chain_op_t op) {
    return op == RF_CHAIN_LINEAR || op == RF_CHAIN_GATED;
}

/* Does stage st read value v whole (as a matmul's or a norm's input)? */
static int reads_rows(const rf_chain_stage_t *st, int v) {
    return (is_mm_op(st->op) || st->op == RF_CHAIN_NORM) && st->src == v;
}

static int reads_value(const rf_chain_stage_t *st, int v) {
    int r = st->src == v || st->src2 == v;
    for (int e = 0; e < st->n_epi; e++)
        r |= st->epi[e].op != RF_CHAIN_EPI_ACT && st->epi[e].src == v;
    return r;
}

static void test_conventional_segments(void) {
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    rf_rng_t rng;
    rf_rng_seed(&rng, 41);
    int checked = 0, splits = 0, norm_kernels = 0;
    for (int i = 0; i < 24; i++) {
        int64_t C = 16 * pick(&rng, 1, 12), H = 16 * pick(&rng, 1, 40);
        rf_chain_t *c = random_chain(&rng, C, H);
        for (int k = 0; k < 2; k++) {
            int64_t rows = k ? 5000 : 100;
            rf_chain_plan_t *whole = calloc(1, sizeof *whole);
            rf_chain_conv_plan_t cp;
            CHECK_OK(rf_chain_conv_plan_make(c, rows, &t, 0, 0, whole, &cp));
            int next = 0, seg_of[RF_CHAIN_MAX_STAGES];
            for (int g = 0; g < cp.n_segs; g++) {
                const rf_chain_seg_plan_t *sg = &cp.segs[g];
                const rf_chain_plan_t *p = &sg->plan;
                CHECK(p->first_stage == next && p->end_stage > p->first_stage);
                next = p->end_stage;
                int mm = 0, after_mm_norm = 0;
                for (int s = p->first_stage; s < p->end_stage; s++) {
                    seg_of[s] = g;
                    mm += is_mm_op(c->stages[s].op);
                    after_mm_norm |= mm && c->stages[s].op == RF_CHAIN_NORM;
                }
                CHECK(mm <= 1 && (mm == 1 || g == cp.n_segs - 1 || cp.n_segs == 1 ||
                                  c->stages[p->first_stage].op == RF_CHAIN_NORM));
                /* at few rows a norm after a matmul has a kernel of its own */
                CHECK(!(rows == 100 && after_mm_norm));
                norm_kernels += mm == 0;
                CHECK(p->smem_bytes <= t.smem_per_block);
                if (sg->split_stage >= 0) {
                    const rf_chain_stage_plan_t *m = &p->stages[sg->split_stage];
                    CHECK((int64_t)sg->slices * sg->slice_chunks >= m->n_pad / m->n_chunk);
                    for (int s = sg->split_stage + 1; s < p->end_stage; s++)
                        CHECK(c->stages[s].op == RF_CHAIN_ACT || c->stages[s].op == RF_CHAIN_ADD);
                    splits += sg->slices > 1;
                } else {
                    CHECK(sg->slices == 1);
                }
                for (int j = 0; j < sg->n_inputs; j++)
                    CHECK(p->values[sg->inputs[j]].smem_offset >= 0);
                for (int j = 0; j < sg->n_direct; j++) {
                    int v = sg->direct[j];
                    CHECK(p->values[v].smem_offset < 0);
                    for (int s = p->first_stage; s < p->end_stage; s++)
                        CHECK(!reads_rows(&c->stages[s], v));
                }
            }
            CHECK(next == c->n_stages);
            /* every value crossing a cut is in the scratch (X and Y excepted), no overlap */
            for (int s = 0; s < c->n_stages; s++)
                for (int v = 1; v < c->n_values - 1; v++)
                    if (reads_value(&c->stages[s], v) && seg_of[v - 1] != seg_of[s]) {
                        CHECK(cp.aux_col[v] >= 0);
                        const rf_chain_seg_plan_t *sg = &cp.segs[seg_of[s]];
                        int found = 0;
                        for (int j = 0; j < sg->n_inputs; j++)
                            found += sg->inputs[j] == v;
                        for (int j = 0; j < sg->n_direct; j++)
                            found += sg->direct[j] == v;
                        CHECK(found == 1);
                    }
            for (int v = 0; v < c->n_values; v++) {
                if (cp.aux_col[v] < 0)
                    continue;
                int64_t w =
                    whole->values[v].padded_width * (c->values[v].dtype == RF_DTYPE_F16 ? 1 : 2);
                CHECK(cp.aux_col[v] % 8 == 0 && cp.aux_col[v] + w <= cp.aux_row);
                for (int u = 0; u < v; u++)
                    if (cp.aux_col[u] >= 0)
                        CHECK(cp.aux_col[u] + whole->values[u].padded_width *
                                                  (c->values[u].dtype == RF_DTYPE_F16 ? 1 : 2) <=
                              cp.aux_col[v]);
            }
            checked++;
            rf_chain_conv_plan_free(&cp);
            free(whole);
        }
        rf_chain_destroy(c);
    }
    printf("conventional: %d plans, %d split kernels, %d norm-only kernels\n", checked, splits,
           norm_kernels);
    CHECK(checked == 48 && splits > 0 && norm_kernels > 0);
}

/* A chain of n linears (widths w[0] -> w[1] -> ... -> w[n]) with biases and an activation
 * after every one but the last. */
static rf_chain_t *mlp_chain(rf_rng_t *r, const int64_t *w, int n) {
    rf_chain_t *c = NULL;
    CHECK_OK(rf_chain_create(rf_allocator_system(), w[0], &c));
    for (int i = 0; i < n; i++) {
        rf_chain_stage_t *s = stage(c, RF_CHAIN_LINEAR, w[i + 1]);
        s->src = i;
        s->k = w[i];
        s->n = w[i + 1];
        s->w = floats(c, r, w[i] * w[i + 1], 0.1, 0.0);
        s->b = floats(c, r, w[i + 1], 0.1, 0.0);
        if (i + 1 < n)
            s->epi[s->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_SILU, -1, 0.0f};
    }
    rf_chain_assign_dtypes(c);
    return c;
}

/* The warp-rows layout (chain_plan.h): applies to a resident chain of linears with
 * activations whose widths stay within RF_CHAIN_WARP_ROWS_MAX, giving X two buffers of 16
 * rows per warp and no other value a slot; a residual, a width above the limit or streamed
 * weights leave the plan as it was, the reason naming the stage. */
static void test_warp_rows(void) {
    rf_rng_t rng;
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    rf_rng_seed(&rng, 43);
    rf_chain_plan_t *p = calloc(1, sizeof *p), *q = calloc(1, sizeof *q);
    char why[160];
    const int64_t ok[] = {48, 96, 96, 10};
    rf_chain_t *c = mlp_chain(&rng, ok, 3);
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    CHECK(p->weight_buffers == 0 && !p->warp_rows);
    int64_t resident = p->ring_bytes;
    CHECK(rf_chain_plan_warp_rows(c, &t, 0, p, why, sizeof why) == 1);
    CHECK(p->warp_rows && p->x_buffers == 2 && p->warps == 4 && p->tile_rows == 64 &&
          p->warp_tile_rows == 16); /* 128 wide (padded): one MMA row tile a warp */
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, q)); /* 32-row tiles forced: too wide */
    CHECK(rf_chain_plan_warp_rows(c, &t, 32, q, why, sizeof why) == 0 && !q->warp_rows &&
          strstr(why, "up to 64"));
    CHECK(p->values[0].smem_offset == 0 &&
          p->values[0].slot_bytes == 2 * 64 * p->values[0].row_stride * 2);
    for (int v = 1; v < c->n_values; v++)
        CHECK(p->values[v].smem_offset == -1);
    CHECK(p->weight_smem_offset == rf_round_up(p->values[0].slot_bytes, 128) &&
          p->smem_bytes == p->weight_smem_offset + resident && p->ring_bytes == resident);
    for (int s = 0; s + 1 < c->n_stages; s++)
        CHECK(p->stages[s].n_pad == p->stages[s + 1].k_pad);
    rf_chain_destroy(c);
    /* every width at most 64: 32-row warp tiles, unless forced to 16 */
    const int64_t narrow[] = {32, 64, 64, 16};
    c = mlp_chain(&rng, narrow, 3);
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    *q = *p;
    CHECK(rf_chain_plan_warp_rows(c, &t, 0, p, why, sizeof why) == 1);
    CHECK(p->warp_tile_rows == 32 && p->tile_rows == 128 &&
          p->values[0].slot_bytes == 2 * 128 * p->values[0].row_stride * 2);
    CHECK(rf_chain_plan_warp_rows(c, &t, 16, q, why, sizeof why) == 1);
    CHECK(q->warp_tile_rows == 16 && q->tile_rows == 64 && strstr(q->reason, "forced"));
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    CHECK(rf_chain_plan_warp_rows(c, &t, 64, p, why, sizeof why) == 0 && strstr(why, "16 or 32"));
    rf_chain_destroy(c);
    /* a hidden width above the registers' limit */
    const int64_t wide[] = {48, 144, 10};
    c = mlp_chain(&rng, wide, 2);
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    *q = *p;
    CHECK(rf_chain_plan_warp_rows(c, &t, 0, p, why, sizeof why) == 0);
    CHECK(strstr(why, "stage 0 (linear)") && strstr(why, "registers"));
    CHECK(!memcmp(p, q, sizeof *p)); /* left as it was */
    rf_chain_destroy(c);
    /* a residual of X in the last linear's epilogue */
    const int64_t res[] = {64, 64, 64};
    c = mlp_chain(&rng, res, 2);
    c->stages[1].epi[c->stages[1].n_epi++] =
        (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    CHECK(rf_chain_plan_warp_rows(c, &t, 0, p, why, sizeof why) == 0);
    CHECK(strstr(why, "stage 1 (linear)") && strstr(why, "reads another value"));
    rf_chain_destroy(c);
    /* weights beyond the resident limit stream: no warp rows */
    const int64_t big[] = {128, 128, 128, 128, 128, 128};
    c = mlp_chain(&rng, big, 5);
    CHECK_OK(rf_chain_plan_make(c, 100000, &t, 0, p));
    CHECK(p->weight_buffers > 0);
    CHECK(rf_chain_plan_warp_rows(c, &t, 0, p, why, sizeof why) == 0);
    CHECK(strstr(why, "not resident"));
    rf_chain_destroy(c);
    free(p);
    free(q);
}

/* rf_chain_plan_ring_depth: a streamed plan's ring deepens to the depth asked, capped by
 * RF_CHAIN_MAX_BUFFERS and by the target's shared memory (the layout rules still hold); a
 * resident plan and a shallower request leave the plan as it was. */
static void test_ring_depth(void) {
    rf_rng_t rng;
    rf_target_t t;
    CHECK_OK(rf_target_lookup("h200", &t));
    rf_rng_seed(&rng, 47);
    rf_chain_plan_t *p = calloc(1, sizeof *p), *was = calloc(1, sizeof *was);
    const int64_t big[] = {128, 256, 128, 256, 128};
    rf_chain_t *c = mlp_chain(&rng, big, 4);
    CHECK_OK(rf_chain_plan_make(c, 1000, &t, 0, p));
    CHECK(p->weight_buffers == 2 && p->ring_bytes > 0);
    *was = *p;
    CHECK(rf_chain_plan_ring_depth(p, &t, 1) == 2 && p->smem_bytes == was->smem_bytes);
    CHECK(!p->ring_ahead);
    CHECK(rf_chain_plan_ring_depth(p, &t, 6) == 6 && p->ring_ahead);
    CHECK(p->smem_bytes == p->weight_smem_offset + 6 * p->ring_bytes && layout_ok(p));
    CHECK(rf_chain_plan_ring_depth(p, &t, 99) == RF_CHAIN_MAX_BUFFERS && layout_ok(p));
    /* a target with less shared memory: the deepest that fits */
    rf_target_t small = t;
    small.smem_per_block = (int)(was->weight_smem_offset + 5 * was->ring_bytes + 100);
    *p = *was;
    CHECK(rf_chain_plan_ring_depth(p, &small, 12) == 5 && p->smem_bytes <= small.smem_per_block);
    rf_chain_destroy(c);
    /* resident weights: no ring to deepen */
    const int64_t tiny[] = {32, 64, 16};
    c = mlp_chain(&rng, tiny, 2);
    CHECK_OK(rf_chain_plan_make(c, 1000, &t, 0, p));
    *was = *p;
    CHECK(p->weight_buffers == 0 && rf_chain_plan_ring_depth(p, &t, 8) == 0 && !p->ring_ahead);
    CHECK(p->smem_bytes == was->smem_bytes);
    rf_chain_destroy(c);
    free(p);
    free(was);
}

int main(void) {
    printf("seeds 31, 5, 11..13, 41, 43, 47\n");
    test_layout_and_roundtrip();
    test_tiles_and_fit();
    test_mlp_as_chain();
    test_conventional_segments();
    test_warp_rows();
    test_ring_depth();
    return rf_test_finish();
}
