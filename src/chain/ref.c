/* The chain's reference and its per-element error bound (chain.h, rf_chain_reference).
 *
 * One pass per row carries, for every value, the reference's own value c (the "center":
 * exact for FP64; for MIXED, rounded to the value's dtype when stored, with W in fp16) and
 * a bound e on |k - c|, where k is what any kernel following the plan holds for that value
 * under the error model of chain.h. Stage by stage:
 *   linear   |acc_k - acc_c| <= sum |wk| e_x + sum |wk - wc| |x_c|
 *                                + g_K sum |wk| (|x_c| + e_x),  g_K = 4 (ceil(K/16)+1) u32
 *            (wk: W in fp16 as the plan stores it; wc: the reference's W), then one fp32
 *            rounding for the bias add;
 *   act F    the image of [t - e, t + e] under F (monotone F: its end points; GELU, SiLU:
 *            sup|F'| e) plus F's fp32 evaluation error;
 *   add, mul the sum / product rules plus one fp32 rounding;
 *   norm     the statistics recomputed from the reference's row (the data-dependent gain
 *            1/sigma is computed here): the error of the mean and of the variance (or mean
 *            square) from the input errors and the reduction's fp32 error, carried through
 *            rsqrt at the lowest variance the errors allow; softmax: the exact softmax of
 *            inputs anywhere in their intervals (monotone in each), then the kernel's fp32
 *            exp, sum and division (rf_softmax_row);
 *   store    rounding to the value's dtype is monotone, so a kernel value within e of t
 *            rounds into [rnd(t - e), rnd(t + e)]: the bound after the store is the larger
 *            distance of those two from c.
 * A kernel that follows the plan therefore lies within the bound of the last value, per
 * element. The bound is first order in nothing: every product of errors is kept.
 */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "chain/chain.h"
#include "rowfuse/tensor.h"

#define RF_U32 (1.0 / 16777216.0) /* 2^-24 */

/* Per-stage weights as the reference uses them: the kernel's (fp16) and the center's. */
typedef struct rf_chain_w {
    float *wk, *wc;   /* linear, gated (gate) */
    float *wku, *wcu; /* gated (up) */
} rf_chain_w_t;

typedef struct rf_chain_run {
    const rf_chain_t *c;
    rf_chain_precision_t p;
    rf_chain_w_t w[RF_CHAIN_MAX_STAGES];
    int64_t off[RF_CHAIN_MAX_STAGES + 1]; /* value v's offset in a row's scratch */
    int64_t row_doubles;                  /* per row: c and e of every value */
    int64_t acc_width;                    /* widest linear output (4 accumulators) */
} rf_chain_run_t;

static double rf_round_to(rf_dtype_t dt, double x) {
    return dt == RF_DTYPE_F16 ? rf_round_f16(x) : rf_round_f32(x);
}

/* The store: t within e of the kernel's pre-rounding value; returns the stored center. */
static double rf_store(rf_chain_precision_t p, rf_dtype_t dt, double t, double e, double *out_e) {
    double c = p == RF_CHAIN_MIXED ? rf_round_to(dt, t) : t;
    double hi = rf_round_to(dt, t + e), lo = rf_round_to(dt, t - e);
    double d1 = fabs(hi - c), d2 = fabs(lo - c);
    *out_e = d1 > d2 ? d1 : d2;
    if (isnan(*out_e))
        *out_e = INFINITY;
    return c;
}

static int rf_fn_monotone(rf_chain_fn_t fn, double alpha) {
    return fn == RF_CHAIN_FN_RELU || fn == RF_CHAIN_FN_SIGMOID || fn == RF_CHAIN_FN_TANH ||
           fn == RF_CHAIN_FN_IDENTITY || fn == RF_CHAIN_FN_SOFTPLUS || fn == RF_CHAIN_FN_EXP ||
           ((fn == RF_CHAIN_FN_LEAKY_RELU || fn == RF_CHAIN_FN_ELU) && alpha >= 0.0);
}

/* F applied to a value t known within e: returns F(t), *io_e becomes the bound on the
 * kernel's fp32 F of its value. */
static double rf_act(rf_chain_fn_t fn, double alpha, double t, double *io_e) {
    double e = *io_e, f = rf_chain_fn_eval(fn, alpha, t), L = rf_chain_fn_lipschitz(fn, alpha);
    double moved;
    if (rf_fn_monotone(fn, alpha)) {
        double a = fabs(rf_chain_fn_eval(fn, alpha, t + e) - f);
        double b = fabs(rf_chain_fn_eval(fn, alpha, t - e) - f);
        moved = a > b ? a : b;
    } else {
        moved = L * e;
    }
    double evalerr = 0.0;
    if (fn != RF_CHAIN_FN_RELU && fn != RF_CHAIN_FN_IDENTITY) /* leaky_relu: alpha x rounds */
        evalerr = RF_CHAIN_FN_ULPS * RF_U32 * (fabs(f) + (isinf(L) ? moved : L * e) + fabs(t) + e);
    *io_e = moved + evalerr;
    return f;
}

static double rf_acc_gamma(int64_t k) {
    return RF_CHAIN_ACC_FACTOR * (double)((k + 15) / 16 + 1) * RF_U32;
}

/* acc[j] = sum_i xc[i] wc[i][j]; s_abs[j] = sum |wk| (|xc| + ex); s_err[j] = sum |wk| ex +
 * |wk - wc| |xc|. */
static void rf_dot(const float *wk, const float *wc, int64_t K, int64_t N, const double *xc,
                   const double *ex, double *acc, double *s_abs, double *s_err) {
    for (int64_t j = 0; j < N; j++)
        acc[j] = s_abs[j] = s_err[j] = 0.0;
    for (int64_t i = 0; i < K; i++) {
        double x = xc[i], ax = fabs(x), e = ex[i];
        const float *rk = wk + i * N, *rc = wc + i * N;
        if (rk == rc) {
            for (int64_t j = 0; j < N; j++) {
                double w = rk[j], aw = fabs(w);
                acc[j] += x * w;
                s_abs[j] += aw * (ax + e);
                s_err[j] += aw * e;
            }
        } else {
            for (int64_t j = 0; j < N; j++) {
                double w = rc[j], aw = fabs((double)rk[j]);
                acc[j] += x * w;
                s_abs[j] += aw * (ax + e);
                s_err[j] += aw * e + fabs((double)rk[j] - w) * ax;
            }
        }
    }
}

/* The linear's pre-epilogue value and bound for output j. */
static double rf_lin_out(const double *acc, const double *s_abs, const double *s_err,
                         const float *b, int64_t K, int64_t j, double *out_e) {
    double t = acc[j] + (b ? (double)b[j] : 0.0);
    double e = s_err[j] + rf_acc_gamma(K) * s_abs[j];
    e += RF_U32 * (fabs(t) + e);
    *out_e = e;
    return t;
}

static void rf_norm_row(const rf_chain_stage_t *st, int64_t C, const double *xc, const double *ex,
                        double *yc, double *ye) {
    double gC = (double)(C > 1 ? C - 1 : 1) * RF_U32, invC = 1.0 / (double)C;
    double inv, dinv, mu = 0.0, dmu = 0.0;
    if (st->norm == RF_CHAIN_LAYERNORM) {
        double s = 0.0, sd = 0.0, sa = 0.0;
        for (int64_t i = 0; i < C; i++) {
            s += xc[i];
            sd += ex[i];
            sa += fabs(xc[i]) + ex[i];
        }
        mu = s * invC;
        dmu = sd * invC + gC * sa * invC + RF_U32 * fabs(mu);
    }
    /* var (LayerNorm, of the deviations) or mean square (RMSNorm) and its error. */
    double v = 0.0, dv = 0.0, sq = 0.0;
    for (int64_t i = 0; i < C; i++) {
        double dev = xc[i] - mu, a = fabs(dev);
        double d = ex[i] + dmu + RF_U32 * (a + ex[i] + dmu);
        v += dev * dev;
        dv += 2.0 * a * d + d * d;
        sq += (a + d) * (a + d);
    }
    v *= invC;
    dv = dv * invC + (gC + 2.0 * RF_U32) * sq * invC + RF_U32 * v;
    double lo = v - dv > 0.0 ? v - dv : 0.0;
    inv = 1.0 / sqrt(v + st->eps);
    dinv = 0.5 * pow(lo + st->eps, -1.5) * dv + 4.0 * RF_U32 / sqrt(lo + st->eps);
    if (!isfinite(dinv))
        dinv = INFINITY;
    for (int64_t i = 0; i < C; i++) {
        double dev = xc[i] - mu, a = fabs(dev);
        double d = ex[i] + dmu + RF_U32 * (a + ex[i] + dmu);
        double g = st->gamma ? (double)st->gamma[i] : 1.0;
        double bt = st->beta ? (double)st->beta[i] : 0.0;
        double y = dev * inv * g + bt;
        yc[i] = y;
        ye[i] = fabs(g) * (d * (inv + dinv) + a * dinv) +
                3.0 * RF_U32 * (fabs(dev * inv * g) + fabs(bt));
    }
}

/* Softmax over a row of C values known within ex, and its bound. The kernel: m = the max of
 * its values; d_j = fl(x_j - m); p_j = its fp32 exp(d_j); s = their fp32 sum in any order;
 * y_j = fl(p_j / s). Every |x_j - m| <= R (the spread of the intervals), so the rounding of
 * d_j moves x_j by at most u R: inputs within e_j + u R. With P_j the exact exp of d_j,
 * P_j / sum P lies between lo_i = E-_i / (E-_i + sum_{j!=i} E+_j) and hi_i (the other way),
 * E+-_j = exp(c_j +- e_j' - M): softmax rises with its own input and falls with the others.
 * Then p_j = P_j + eta_j, |eta_j| <= h = ULPS u (1 + R) (chain.h's model of an elementwise
 * function, P_j <= 1, |d_j| <= R), sum P >= 1 (the max's own term is exp(0)), the sum within
 * (C - 1) u of exact and the division within u:
 *   |y_k - q| <= (h (1 + u) + q (u + a + g + a g)) / ((1 - a)(1 - g)),  a = C h, g = (C - 1) u,
 * with q <= hi_i. The bound is infinite when the intervals are too wide for it (a or g >= 1/2,
 * or an exp overflows). */
static void rf_softmax_row(int64_t C, const double *xc, const double *ex, double *yc, double *ye) {
    double M = -INFINITY, top = -INFINITY, bottom = INFINITY;
    for (int64_t i = 0; i < C; i++) {
        M = xc[i] > M ? xc[i] : M;
        top = xc[i] + ex[i] > top ? xc[i] + ex[i] : top;
        bottom = xc[i] - ex[i] < bottom ? xc[i] - ex[i] : bottom;
    }
    double R = top - bottom, sc = 0.0, slo = 0.0, shi = 0.0;
    for (int64_t i = 0; i < C; i++) {
        double e = ex[i] + RF_U32 * R;
        sc += exp(xc[i] - M);
        slo += exp(xc[i] - e - M);
        shi += exp(xc[i] + e - M);
    }
    double h = RF_CHAIN_FN_ULPS * RF_U32 * (1.0 + R), a = (double)C * h;
    double g = (double)(C > 1 ? C - 1 : 0) * RF_U32;
    int ok = a < 0.5 && g < 0.5 && isfinite(shi) && isfinite(R);
    for (int64_t i = 0; i < C; i++) {
        double e = ex[i] + RF_U32 * R;
        double elo = exp(xc[i] - e - M), ehi = exp(xc[i] + e - M);
        double lo = elo / (elo + (shi - ehi)), hi = ehi / (ehi + (slo - elo));
        yc[i] = exp(xc[i] - M) / sc;
        double moved = hi - yc[i] > yc[i] - lo ? hi - yc[i] : yc[i] - lo;
        double evalerr =
            (h * (1.0 + RF_U32) + hi * (RF_U32 + a + g + a * g)) / ((1.0 - a) * (1.0 - g));
        ye[i] = ok && isfinite(moved) ? moved + evalerr : INFINITY;
    }
}

/* Runs one row through every stage. rc/re: the row's centers and bounds (off[] layout);
 * acc: scratch of 4 * acc_width doubles. */
static void rf_chain_row(const rf_chain_run_t *run, const uint16_t *x, double *rc, double *re,
                         double *acc) {
    const rf_chain_t *c = run->c;
    int64_t C0 = c->values[0].width;
    for (int64_t i = 0; i < C0; i++) {
        rc[i] = rf_f16_to_f32(x[i]);
        re[i] = 0.0;
    }
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int d = st->dst;
        rf_dtype_t dt = c->values[d].dtype;
        int64_t W = c->values[d].width;
        double *yc = rc + run->off[d], *ye = re + run->off[d];
        const double *xc = st->src >= 0 ? rc + run->off[st->src] : NULL;
        const double *xe = st->src >= 0 ? re + run->off[st->src] : NULL;
        double *a0 = acc, *a1 = acc + run->acc_width, *a2 = acc + 2 * run->acc_width;
        switch (st->op) {
        case RF_CHAIN_LINEAR:
            rf_dot(run->w[s].wk, run->w[s].wc, st->k, st->n, xc, xe, a0, a1, a2);
            for (int64_t j = 0; j < W; j++) {
                double e, t = rf_lin_out(a0, a1, a2, st->b, st->k, j, &e);
                for (int q = 0; q < st->n_epi; q++) {
                    const rf_chain_epi_t *ep = &st->epi[q];
                    if (ep->op == RF_CHAIN_EPI_ACT) {
                        t = rf_act(ep->fn, ep->alpha, t, &e);
                        continue;
                    }
                    double oc = rc[run->off[ep->src] + j], oe = re[run->off[ep->src] + j];
                    if (ep->op == RF_CHAIN_EPI_ADD) {
                        t += oc;
                        e += oe;
                    } else {
                        e = fabs(t) * oe + fabs(oc) * e + e * oe;
                        t *= oc;
                    }
                    e += RF_U32 * (fabs(t) + e);
                }
                yc[j] = rf_store(run->p, dt, t, e, &ye[j]);
            }
            break;
        case RF_CHAIN_GATED: {
            double *g0 = acc + 3 * run->acc_width;
            /* gate into a0..a2, then fold it to (value, bound) pairs in a0/g0 */
            rf_dot(run->w[s].wk, run->w[s].wc, st->k, st->n, xc, xe, a0, a1, a2);
            for (int64_t j = 0; j < W; j++) {
                double e, t = rf_lin_out(a0, a1, a2, st->b, st->k, j, &e);
                a0[j] = rf_act(st->fn, st->alpha, t, &e);
                g0[j] = e;
            }
            /* the up projection into yc/ye (free until the store) and a1/a2 */
            rf_dot(run->w[s].wku, run->w[s].wcu, st->k, st->n, xc, xe, yc, a1, a2);
            for (int64_t j = 0; j < W; j++) {
                double eu, u = rf_lin_out(yc, a1, a2, st->bu, st->k, j, &eu);
                double g = a0[j], eg = g0[j];
                double t = g * u, e = fabs(g) * eu + fabs(u) * eg + eg * eu;
                e += RF_U32 * (fabs(t) + e);
                yc[j] = rf_store(run->p, dt, t, e, &ye[j]);
            }
            break;
        }
        case RF_CHAIN_ACT:
            for (int64_t j = 0; j < W; j++) {
                double e = xe[j], t = rf_act(st->fn, st->alpha, xc[j], &e);
                yc[j] = rf_store(run->p, dt, t, e, &ye[j]);
            }
            break;
        case RF_CHAIN_ADD:
        case RF_CHAIN_MUL: {
            const double *bc = rc + run->off[st->src2], *be = re + run->off[st->src2];
            for (int64_t j = 0; j < W; j++) {
                double t, e;
                if (st->op == RF_CHAIN_ADD) {
                    t = xc[j] + bc[j];
                    e = xe[j] + be[j];
                } else {
                    t = xc[j] * bc[j];
                    e = fabs(xc[j]) * be[j] + fabs(bc[j]) * xe[j] + xe[j] * be[j];
                }
                e += RF_U32 * (fabs(t) + e);
                yc[j] = rf_store(run->p, dt, t, e, &ye[j]);
            }
            break;
        }
        case RF_CHAIN_NORM:
            if (st->norm == RF_CHAIN_SOFTMAX)
                rf_softmax_row(W, xc, xe, a0, a1);
            else
                rf_norm_row(st, W, xc, xe, a0, a1);
            for (int64_t j = 0; j < W; j++)
                yc[j] = rf_store(run->p, dt, a0[j], a1[j], &ye[j]);
            break;
        default:
            break;
        }
    }
}

/* Fills run->w: the kernel's fp16 W and the center's W (the same array for MIXED). */
static rf_status_t rf_chain_weights(rf_chain_run_t *run, rf_allocator_t a, float **owned,
                                    int *n_owned) {
    const rf_chain_t *c = run->c;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (st->op != RF_CHAIN_LINEAR && st->op != RF_CHAIN_GATED)
            continue;
        for (int part = 0; part < (st->op == RF_CHAIN_GATED ? 2 : 1); part++) {
            const float *w = part ? st->wu : st->w;
            size_t n = (size_t)(st->k * st->n);
            void *p;
            RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, n * sizeof(float), "fp16 weights", &p));
            float *wk = p;
            owned[(*n_owned)++] = wk;
            for (size_t i = 0; i < n; i++)
                wk[i] = (float)rf_round_f16(w[i]);
            float *wc = run->p == RF_CHAIN_MIXED ? wk : (float *)w;
            if (part) {
                run->w[s].wku = wk;
                run->w[s].wcu = wc;
            } else {
                run->w[s].wk = wk;
                run->w[s].wc = wc;
            }
        }
    }
    return RF_OK;
}

rf_status_t rf_chain_reference(const rf_chain_t *c, const uint16_t *x, int64_t rows,
                               rf_chain_precision_t p, double *out_y, double *out_bound) {
    if (!c || (rows > 0 && (!x || !out_y)) || rows < 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_reference: bad arguments");
    if (p != RF_CHAIN_FP64 && p != RF_CHAIN_MIXED)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "rf_chain_reference: precision %d", (int)p);
    RF_RETURN_IF_ERROR(rf_chain_validate(c), "chain reference");
    rf_allocator_t a = c->allocator;
    void *mem;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(rf_chain_run_t), "chain run", &mem));
    rf_chain_run_t *run = mem;
    run->c = c;
    run->p = p;
    int64_t off = 0;
    for (int v = 0; v < c->n_values; v++) {
        run->off[v] = off;
        off += c->values[v].width;
        if (c->values[v].width > run->acc_width)
            run->acc_width = c->values[v].width;
    }
    run->row_doubles = 2 * off;
    float *owned[2 * RF_CHAIN_MAX_STAGES];
    int n_owned = 0;
    int threads = omp_get_max_threads();
    int64_t Cin = c->values[0].width, Cout = rf_chain_out_width(c);
    size_t per_thread = (size_t)(run->row_doubles + 4 * run->acc_width);
    double *scratch = NULL;
    rf_status_t st = rf_chain_weights(run, a, owned, &n_owned);
    if (!st)
        st = rf_alloc(a, per_thread * (size_t)threads * sizeof(double), "chain reference rows",
                      &mem);
    if (!st) {
        scratch = mem;
        int64_t work = rows * (run->row_doubles + 1);
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (work > (1 << 18))
        for (int64_t r = 0; r < rows; r++) {
            double *rc = scratch + (size_t)omp_get_thread_num() * per_thread;
            double *re = rc + run->row_doubles / 2, *acc = rc + run->row_doubles;
            rf_chain_row(run, x + r * Cin, rc, re, acc);
            int last = c->n_values - 1;
            for (int64_t j = 0; j < Cout; j++) {
                out_y[r * Cout + j] = rc[run->off[last] + j];
                if (out_bound)
                    out_bound[r * Cout + j] = re[run->off[last] + j];
            }
        }
    }
    rf_free(a, scratch);
    for (int i = 0; i < n_owned; i++)
        rf_free(a, owned[i]);
    rf_free(a, run);
    return st;
}
