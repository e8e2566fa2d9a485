/* The chain reference's per-element bound against a CPU model of a kernel that follows the
 * plan, and against planted stage faults, over seeded random chains.
 *
 * The kernel model computes a chain the way a chain_mma kernel does: W and the stored values
 * in fp16 (nearest even), each dot product accumulated in fp32 sixteen exact products at a
 * time (an m16n8k16 MMA), bias, epilogue, activations (erff, tanhf, expf) and norms
 * (statistics summed in fp32 in order, 1/sqrtf) in fp32. On every random chain its output
 * must lie within the MIXED bound of the reference, element by element. Each planted fault
 * (a dropped bias, GELU tanh where the chain says erf, a LayerNorm epsilon 10x too large, a
 * missing residual, a skipped stage, a value stored in fp16 where the plan says fp32, a
 * softmax whose sum of exponentials is kept in fp16) runs
 * through the same model on the same X and must leave the bound at >= 20 of 40 chains.
 * Also checked: the MIXED reference lies within the FP64 bound of the FP64 reference, and
 * the FP64 reference of a one-linear chain is the exact product. */
#include <math.h>

#include "chain/chain.h"
#include "rf_test.h"
#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"

#define CHAINS 40
#define ROWS 24

typedef enum {
    FAULT_NONE = 0,
    FAULT_DROP_BIAS,
    FAULT_GELU_TANH,
    FAULT_EPS_10X,
    FAULT_NO_RESIDUAL,
    FAULT_SKIP_STAGE,
    FAULT_FP16_VALUE,
    FAULT_SOFTMAX_SUM_F16,
    FAULT_COUNT_
} fault_t;

static const char *const fault_names[FAULT_COUNT_] = {
    "none",        "dropped bias",  "gelu tanh for erf", "layernorm eps x10",
    "no residual", "skipped stage", "fp16 for fp32",     "softmax sum in fp16",
};

/* ---- random chains ---- */

static int64_t pick(rf_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rf_rng_next(r) % (uint64_t)(hi - lo + 1));
}

static float *rand_floats(rf_chain_t *c, rf_rng_t *r, int64_t n, double a, double center) {
    float *p = NULL;
    CHECK_OK(rf_chain_alloc_floats(c, (size_t)n, &p));
    for (int64_t i = 0; p && i < n; i++)
        p[i] = (float)(center + rf_rng_uniform(r, a));
    return p;
}

static rf_chain_stage_t *add(rf_chain_t *c, rf_chain_op_t op, int64_t w) {
    rf_chain_stage_t *s = NULL;
    CHECK_OK(rf_chain_add_stage(c, op, w, &s));
    return s;
}

static rf_chain_stage_t *linear(rf_chain_t *c, rf_rng_t *r, int src, int64_t n, int bias) {
    int64_t k = c->values[src].width;
    rf_chain_stage_t *s = add(c, RF_CHAIN_LINEAR, n);
    s->src = src;
    s->k = k;
    s->n = n;
    s->w = rand_floats(c, r, k * n, 2.0 / sqrt((double)k), 0.0);
    s->b = bias ? rand_floats(c, r, n, 0.5, 0.0) : NULL;
    return s;
}

static rf_chain_stage_t *norm(rf_chain_t *c, rf_rng_t *r, int src, rf_chain_norm_kind_t kind) {
    int64_t w = c->values[src].width;
    rf_chain_stage_t *s = add(c, RF_CHAIN_NORM, w);
    s->src = src;
    s->norm = kind;
    if (kind == RF_CHAIN_SOFTMAX)
        return s;
    s->eps = kind == RF_CHAIN_LAYERNORM ? 1e-5 : 1e-6;
    s->gamma = rand_floats(c, r, w, 0.2, 1.0);
    s->beta = kind == RF_CHAIN_LAYERNORM ? rand_floats(c, r, w, 0.2, 0.0) : NULL;
    return s;
}

static rf_chain_fn_t rand_fn(rf_rng_t *r) {
    static const rf_chain_fn_t fns[] = {RF_CHAIN_FN_RELU,      RF_CHAIN_FN_GELU_ERF,
                                        RF_CHAIN_FN_GELU_TANH, RF_CHAIN_FN_SILU,
                                        RF_CHAIN_FN_SIGMOID,   RF_CHAIN_FN_TANH};
    return fns[pick(r, 0, 5)];
}

/* A random block of the suite's shapes, with the feature the fault needs. */
static rf_chain_t *random_chain(rf_rng_t *r, fault_t need) {
    int64_t C = 16 * pick(r, 1, 8), H = 16 * pick(r, 1, 12) + (pick(r, 0, 1) ? 8 : 0);
    rf_chain_t *c = NULL;
    CHECK_OK(rf_chain_create(rf_allocator_system(), C, &c));
    if (!c)
        return NULL;
    int pre = need == FAULT_EPS_10X ? 1 : (int)pick(r, 0, 2); /* 0 none, 1 LN, 2 RMS */
    /* after the block: 0 nothing, 1 a LayerNorm, 2 a softmax over the features (the
     * correct model's chains get one at a third of those without a LayerNorm; the draws of
     * the other faults' chains are those they had before softmax existed) */
    int post = need == FAULT_EPS_10X ? 0 : need == FAULT_SOFTMAX_SUM_F16 ? 2 : pick(r, 0, 3) == 0;
    if (need == FAULT_NONE && !post && pick(r, 0, 2) == 0)
        post = 2;
    int gated = need == FAULT_GELU_TANH || need == FAULT_DROP_BIAS ? 0 : pick(r, 0, 2) == 0;
    int src = 0;
    if (pre)
        src = norm(c, r, src, pre == 1 ? RF_CHAIN_LAYERNORM : RF_CHAIN_RMSNORM)->dst;
    int hidden;
    if (gated) {
        rf_chain_stage_t *g = add(c, RF_CHAIN_GATED, H);
        g->src = src;
        g->k = C;
        g->n = H;
        g->w = rand_floats(c, r, C * H, 2.0 / sqrt((double)C), 0.0);
        g->wu = rand_floats(c, r, C * H, 2.0 / sqrt((double)C), 0.0);
        g->b = pick(r, 0, 1) ? rand_floats(c, r, H, 0.5, 0.0) : NULL;
        g->fn = pick(r, 0, 1) ? RF_CHAIN_FN_SILU : RF_CHAIN_FN_GELU_ERF;
        hidden = g->dst;
    } else {
        rf_chain_stage_t *l = linear(c, r, src, H, need == FAULT_DROP_BIAS || pick(r, 0, 3) > 0);
        l->epi[l->n_epi++] =
            (rf_chain_epi_t){RF_CHAIN_EPI_ACT,
                             need == FAULT_GELU_TANH ? RF_CHAIN_FN_GELU_ERF : rand_fn(r), -1, 0.0f};
        hidden = l->dst;
        if (pick(r, 0, 2) == 0) { /* a separate act stage after a second hidden linear */
            rf_chain_stage_t *l2 = linear(c, r, hidden, H, 1);
            rf_chain_stage_t *a = add(c, RF_CHAIN_ACT, H);
            a->src = l2->dst;
            a->fn = rand_fn(r);
            hidden = a->dst;
        }
    }
    int residual = need == FAULT_NO_RESIDUAL || pick(r, 0, 3) > 0;
    rf_chain_stage_t *out = linear(c, r, hidden, C, pick(r, 0, 3) > 0);
    if (residual)
        out->epi[out->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ADD, RF_CHAIN_FN_IDENTITY, 0, 0.0f};
    if (pick(r, 0, 3) == 0)
        out->epi[out->n_epi++] = (rf_chain_epi_t){RF_CHAIN_EPI_ACT, RF_CHAIN_FN_RELU, -1, 0.0f};
    if (post)
        norm(c, r, out->dst, post == 1 ? RF_CHAIN_LAYERNORM : RF_CHAIN_SOFTMAX);
    rf_chain_assign_dtypes(c);
    CHECK_OK(rf_chain_validate(c));
    return c;
}

/* ---- the kernel model ---- */

static float h16(float x) {
    return rf_f16_to_f32(rf_f32_to_f16(x));
}

static float mma_dot(const float *x, const float *w, int64_t k, int64_t n, int64_t j) {
    float acc = 0.0f;
    for (int64_t i0 = 0; i0 < k; i0 += 16) {
        double part = 0.0;
        for (int64_t i = i0; i < i0 + 16 && i < k; i++)
            part += (double)x[i] * (double)h16(w[i * n + j]);
        acc += (float)part;
    }
    return acc;
}

/* Runs the chain on one row the way a kernel does; fault changes what it computes. */
static void model_row(const rf_chain_t *c, const uint16_t *x, float *vals[], fault_t fault,
                      float *y) {
    for (int64_t i = 0; i < c->values[0].width; i++)
        vals[0][i] = rf_f16_to_f32(x[i]);
    int skipped = 0, fp16_done = 0;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int64_t W = c->values[st->dst].width;
        float *o = vals[st->dst];
        const float *in = st->src >= 0 ? vals[st->src] : NULL;
        switch (st->op) {
        case RF_CHAIN_LINEAR:
            for (int64_t j = 0; j < W; j++) {
                float t = mma_dot(in, st->w, st->k, st->n, j);
                if (st->b && !(fault == FAULT_DROP_BIAS))
                    t += st->b[j];
                for (int e = 0; e < st->n_epi; e++) {
                    const rf_chain_epi_t *ep = &st->epi[e];
                    if (ep->op == RF_CHAIN_EPI_ACT) {
                        rf_chain_fn_t fn = ep->fn;
                        if (fault == FAULT_GELU_TANH && fn == RF_CHAIN_FN_GELU_ERF)
                            fn = RF_CHAIN_FN_GELU_TANH;
                        if (fault == FAULT_SKIP_STAGE && !skipped)
                            fn = RF_CHAIN_FN_IDENTITY;
                        t = rf_chain_fn_eval32(fn, 0.0f, t);
                    } else if (ep->op == RF_CHAIN_EPI_ADD) {
                        if (fault != FAULT_NO_RESIDUAL)
                            t += vals[ep->src][j];
                    } else {
                        t *= vals[ep->src][j];
                    }
                }
                o[j] = t;
            }
            for (int e = 0; e < st->n_epi; e++)
                if (st->epi[e].op == RF_CHAIN_EPI_ACT)
                    skipped = 1;
            break;
        case RF_CHAIN_GATED:
            for (int64_t j = 0; j < W; j++) {
                float g = mma_dot(in, st->w, st->k, st->n, j) + (st->b ? st->b[j] : 0.0f);
                float u = mma_dot(in, st->wu, st->k, st->n, j) + (st->bu ? st->bu[j] : 0.0f);
                rf_chain_fn_t fn = st->fn;
                if (fault == FAULT_GELU_TANH && fn == RF_CHAIN_FN_GELU_ERF)
                    fn = RF_CHAIN_FN_GELU_TANH;
                o[j] = rf_chain_fn_eval32(fn, 0.0f, g) * u;
            }
            break;
        case RF_CHAIN_ACT: {
            rf_chain_fn_t fn =
                fault == FAULT_SKIP_STAGE && !skipped ? RF_CHAIN_FN_IDENTITY : st->fn;
            skipped = 1;
            for (int64_t j = 0; j < W; j++)
                o[j] = rf_chain_fn_eval32(fn, 0.0f, in[j]);
            break;
        }
        case RF_CHAIN_ADD:
            for (int64_t j = 0; j < W; j++)
                o[j] = in[j] + (fault == FAULT_NO_RESIDUAL ? 0.0f : vals[st->src2][j]);
            break;
        case RF_CHAIN_NORM: {
            if (st->norm == RF_CHAIN_SOFTMAX) { /* the row's max, the exp sum, one division */
                float m = -INFINITY, sum = 0.0f;
                for (int64_t j = 0; j < W; j++)
                    m = in[j] > m ? in[j] : m;
                for (int64_t j = 0; j < W; j++) {
                    sum += expf(in[j] - m);
                    if (fault == FAULT_SOFTMAX_SUM_F16)
                        sum = h16(sum);
                }
                for (int64_t j = 0; j < W; j++)
                    o[j] = expf(in[j] - m) / sum;
                break;
            }
            float mu = 0.0f, v = 0.0f;
            if (st->norm == RF_CHAIN_LAYERNORM) {
                for (int64_t j = 0; j < W; j++)
                    mu += in[j];
                mu /= (float)W;
            }
            for (int64_t j = 0; j < W; j++)
                v += (in[j] - mu) * (in[j] - mu);
            v /= (float)W;
            float eps = (float)(fault == FAULT_EPS_10X ? 10.0 * st->eps : st->eps);
            float inv = 1.0f / sqrtf(v + eps);
            for (int64_t j = 0; j < W; j++)
                o[j] = (in[j] - mu) * inv * (st->gamma ? st->gamma[j] : 1.0f) +
                       (st->beta ? st->beta[j] : 0.0f);
            break;
        }
        default:
            break;
        }
        int f16 = c->values[st->dst].dtype == RF_DTYPE_F16;
        if (fault == FAULT_FP16_VALUE && !f16 && !fp16_done) {
            f16 = 1; /* the first fp32 value goes through fp16 */
            fp16_done = 1;
        }
        if (f16)
            for (int64_t j = 0; j < W; j++)
                o[j] = h16(o[j]);
    }
    memcpy(y, vals[c->n_values - 1], sizeof(float) * (size_t)rf_chain_out_width(c));
}

/* Does the chain have what the fault changes? */
static int fault_applies(const rf_chain_t *c, fault_t f) {
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (f == FAULT_DROP_BIAS && st->op == RF_CHAIN_LINEAR && st->b)
            return 1;
        if (f == FAULT_EPS_10X && st->op == RF_CHAIN_NORM && st->norm == RF_CHAIN_LAYERNORM)
            return 1;
        if (f == FAULT_SOFTMAX_SUM_F16 && st->op == RF_CHAIN_NORM && st->norm == RF_CHAIN_SOFTMAX)
            return 1;
        if (f == FAULT_SKIP_STAGE && (st->op == RF_CHAIN_ACT || st->n_epi > 0))
            return 1;
        for (int e = 0; e < st->n_epi; e++) {
            if (f == FAULT_GELU_TANH && st->epi[e].op == RF_CHAIN_EPI_ACT &&
                st->epi[e].fn == RF_CHAIN_FN_GELU_ERF)
                return 1;
            if (f == FAULT_NO_RESIDUAL && st->epi[e].op == RF_CHAIN_EPI_ADD)
                return 1;
        }
    }
    return f == FAULT_FP16_VALUE || f == FAULT_NONE;
}

/* Number of elements of the model's output outside the bound (NaN counts). */
static int64_t outside(const rf_chain_t *c, const uint16_t *x, fault_t f, const double *ref,
                       const double *bound, double *worst) {
    int64_t cout = rf_chain_out_width(c), bad = 0;
    float *vals[RF_CHAIN_MAX_STAGES + 1], *y = malloc(sizeof(float) * (size_t)cout);
    for (int v = 0; v < c->n_values; v++)
        vals[v] = malloc(sizeof(float) * (size_t)c->values[v].width);
    *worst = 0.0;
    for (int64_t r = 0; r < ROWS; r++) {
        model_row(c, x + r * c->values[0].width, vals, f, y);
        for (int64_t j = 0; j < cout; j++) {
            double d = fabs((double)y[j] - ref[r * cout + j]), b = bound[r * cout + j];
            if (!(d <= b))
                bad++;
            double ratio = b > 0.0 ? d / b : (d > 0.0 ? INFINITY : 0.0);
            if (ratio > *worst || isnan(ratio))
                *worst = ratio;
        }
    }
    for (int v = 0; v < c->n_values; v++)
        free(vals[v]);
    free(y);
    return bad;
}

static void test_faults(void) {
    for (int f = 0; f < FAULT_COUNT_; f++) {
        rf_rng_t rng;
        rf_rng_seed(&rng, 1000 + (uint64_t)f);
        int rejected = 0, tried = 0;
        double worst_ok = 0.0;
        for (int k = 0; k < CHAINS; k++) {
            rf_chain_t *c = random_chain(&rng, (fault_t)f);
            if (!c)
                continue;
            int64_t cin = c->values[0].width, cout = rf_chain_out_width(c);
            uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(ROWS * cin));
            double scale = exp(rf_rng_uniform(&rng, 1.5)); /* inputs of scale 0.2 .. 4.5 */
            rf_rng_fill_f16(&rng, scale, x, (size_t)(ROWS * cin));
            double *ref = malloc(sizeof(double) * (size_t)(ROWS * cout));
            double *bound = malloc(sizeof(double) * (size_t)(ROWS * cout));
            CHECK_OK(rf_chain_reference(c, x, ROWS, RF_CHAIN_MIXED, ref, bound));
            double worst;
            int64_t bad = outside(c, x, (fault_t)f, ref, bound, &worst);
            if (f == FAULT_NONE) {
                CHECK(bad == 0);
                if (bad) {
                    char d[2048];
                    rf_chain_describe(c, d, sizeof d);
                    fprintf(stderr, "  correct model outside the bound at %lld elements:\n%s",
                            (long long)bad, d);
                }
                worst_ok = worst > worst_ok ? worst : worst_ok;
            } else if (fault_applies(c, (fault_t)f)) {
                tried++;
                rejected += bad > 0;
            }
            free(x);
            free(ref);
            free(bound);
            rf_chain_destroy(c);
        }
        if (f == FAULT_NONE) {
            printf("correct kernel model: within the bound at %d chains (worst |y - ref| / bound "
                   "%.3f)\n",
                   CHAINS, worst_ok);
        } else {
            printf("fault %-18s rejected at %d of %d chains\n", fault_names[f], rejected, tried);
            CHECK(rejected >= 20);
        }
    }
}

/* MIXED lies within the FP64 bound of FP64; FP64 of one linear is the exact product. */
static void test_fp64(void) {
    rf_rng_t rng;
    rf_rng_seed(&rng, 77);
    int within = 0;
    for (int k = 0; k < CHAINS; k++) {
        rf_chain_t *c = random_chain(&rng, FAULT_NONE);
        int64_t cin = c->values[0].width, cout = rf_chain_out_width(c);
        uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(ROWS * cin));
        rf_rng_fill_f16(&rng, 1.0, x, (size_t)(ROWS * cin));
        double *y64 = malloc(sizeof(double) * (size_t)(ROWS * cout) * 3);
        double *b64 = y64 + ROWS * cout, *ymx = b64 + ROWS * cout;
        CHECK_OK(rf_chain_reference(c, x, ROWS, RF_CHAIN_FP64, y64, b64));
        CHECK_OK(rf_chain_reference(c, x, ROWS, RF_CHAIN_MIXED, ymx, NULL));
        int ok = 1;
        for (int64_t i = 0; i < ROWS * cout; i++)
            ok &= fabs(ymx[i] - y64[i]) <= b64[i];
        within += ok;
        free(x);
        free(y64);
        rf_chain_destroy(c);
    }
    CHECK(within == CHAINS);
    /* One linear, FP64: y = x W + b exactly (double sums of fp16 x and f32 W). */
    rf_chain_t *c = NULL;
    CHECK_OK(rf_chain_create(rf_allocator_system(), 16, &c));
    rf_chain_stage_t *l = linear(c, &rng, 0, 8, 1);
    rf_chain_assign_dtypes(c);
    uint16_t x[3 * 16];
    double y[3 * 8];
    rf_rng_fill_f16(&rng, 1.0, x, 3 * 16);
    CHECK_OK(rf_chain_reference(c, x, 3, RF_CHAIN_FP64, y, NULL));
    int bad = 0;
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 8; j++) {
            double want = l->b[j];
            for (int i = 0; i < 16; i++)
                want += (double)rf_f16_to_f32(x[r * 16 + i]) * (double)l->w[i * 8 + j];
            bad += fabs(y[r * 8 + j] - want) > 1e-12;
        }
    CHECK(bad == 0);
    rf_chain_destroy(c);
}

int main(void) {
    printf("seeds 1000..%d (faults), 77 (fp64); %d chains x %d rows each\n", 999 + FAULT_COUNT_,
           CHAINS, ROWS);
    test_faults();
    test_fp64();
    return rf_test_finish();
}
