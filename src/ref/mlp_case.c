/* Test data, reference and comparison of the residual MLP block (rowfuse/mlp.h): the one
 * generator, the one reference call and the one pass rule that every gate shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "rowfuse/mlp.h"

void rf_mlp_case_free(rf_allocator_t a, rf_mlp_case_t *k) {
    rf_free(a, k->x);
    rf_free(a, k->w1);
    rf_free(a, k->w2);
    rf_free(a, k->b1);
    rf_free(a, k->b2);
    rf_free(a, k->ref);
    rf_free(a, k->allow);
    memset(k, 0, sizeof(*k));
}

static rf_status_t case_reference(rf_allocator_t a, rf_mlp_case_t *k) {
    rf_tensor_t out;
    RF_RETURN_IF_ERROR_PLAIN(rf_mlp_reference(a, RF_PRECISION_MIXED, k->rows, k->channels,
                                              k->hidden, k->x, k->w1, k->b1, k->w2, k->b2, &out));
    rf_status_t st = RF_OK;
    if (out.dtype != RF_DTYPE_F32 || out.nbytes != (size_t)(k->rows * k->channels) * 4)
        st = RF_ERR(RF_CODE_INTERNAL, "the CPU reference returned %s of %zu bytes, expected f32",
                    rf_dtype_name(out.dtype), out.nbytes);
    else
        memcpy(k->ref, out.data, out.nbytes);
    rf_tensor_free(a, &out);
    return st;
}

rf_status_t rf_mlp_case_create(rf_allocator_t a, int64_t m, int64_t c, int64_t h, uint64_t seed,
                               int with_reference, rf_mlp_case_t *k) {
    rf_rng_t r;
    rf_status_t st = RF_OK;
    memset(k, 0, sizeof(*k));
    if (m < 0 || c < 1 || h < 1 || m > RF_MAX_DIM || c > RF_MAX_DIM || h > RF_MAX_DIM ||
        (m > 0 && (double)m * (double)(c > h ? c : h) > 4e9) || (double)c * (double)h > 4e9)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "residual MLP case %lldx%lldx%lld: rows >= 0, channels and hidden >= 1, "
                      "and every array under 2^32 elements",
                      (long long)m, (long long)c, (long long)h);
    k->rows = m;
    k->channels = c;
    k->hidden = h;
    k->seed = seed;
    if ((st = rf_alloc(a, (size_t)(c * h) * 2, "W1", (void **)&k->w1)) ||
        (st = rf_alloc(a, (size_t)(h * c) * 2, "W2", (void **)&k->w2)) ||
        (st = rf_alloc(a, (size_t)h * 4, "b1", (void **)&k->b1)) ||
        (st = rf_alloc(a, (size_t)c * 4, "b2", (void **)&k->b2)) ||
        (m > 0 && (st = rf_alloc(a, (size_t)(m * c) * 2, "X", (void **)&k->x))) ||
        (m > 0 && with_reference &&
         (st = rf_alloc(a, (size_t)(m * c) * 4, "reference Y", (void **)&k->ref))) ||
        (m > 0 && with_reference &&
         (st = rf_alloc(a, (size_t)(m * c) * 8, "error allowance", (void **)&k->allow)))) {
        rf_mlp_case_free(a, k);
        return st;
    }
    rf_rng_seed(&r, seed);
    rf_rng_fill_f16(&r, 3.0 / sqrt((double)c), k->w1, (size_t)(c * h));
    rf_rng_fill_f32(&r, 0.5, k->b1, (size_t)h);
    rf_rng_fill_f16(&r, 3.0 / sqrt((double)h), k->w2, (size_t)(h * c));
    rf_rng_fill_f32(&r, 0.5, k->b2, (size_t)c);
    if (m > 0)
        rf_rng_fill_f16(&r, 1.0, k->x, (size_t)(m * c));
    if (k->ref && (st = case_reference(a, k)) == RF_OK)
        st = rf_mlp_error_model(a, m, c, h, k->x, k->w1, k->b1, k->w2, k->b2, k->ref, k->allow,
                                &k->step);
    if (st)
        rf_mlp_case_free(a, k);
    return st;
}

/* ---- the per-element error bound (derivation: src/harness/README.md) ---- */

#define RF_U32 (1.0 / 16777216.0) /* fp32 unit roundoff 2^-24 */
/* fp32 unit roundoffs one k16 MMA step may lose against the largest magnitude it adds
 * (the accumulator and its 16 exact products), under the tensor-core model stated in
 * src/harness/README.md: addends aligned to the largest with >= 3 extra bits and truncated,
 * the result truncated to fp32. One k16 step: 16 x 2^-3 x 2u + 2u = 6u; done as two k8
 * steps: 2 x (8 x 2^-3 x 2u + 2u) = 8u. The larger is taken. Derived, not fitted. */
#define RF_MMA_STEP_ULPS 8.0
/* The reference sums its products in double: at most this much relative to sum |t|
 * (K <= 65536 terms x 2^-53, rounded up). */
#define RF_DOUBLE_SUM_REL 0x1p-36

/* The rounding of a value to fp16 after ReLU, to nearest even (H). */
static double h_of(double v) {
    return rf_round_f16(v > 0.0 ? v : 0.0);
}

/* The accumulation error bound of one dot product under the model `acc` (README.md):
 * k = its length, sum_abs = sum |t|, prefix_max = the largest |partial sum| at a k16
 * block boundary (0 included), term_max = the largest |t|. */
static double acc_bound(rf_mlp_accumulation_t acc, int64_t k, double sum_abs, double prefix_max,
                        double term_max) {
    if (acc == RF_MLP_ACC_ANY_ORDER) { /* gamma_k: any order of fp32 adds or FMAs */
        double ku = (double)k * RF_U32;
        return ku / (1.0 - ku) * sum_abs;
    }
    /* k16 steps, each adding to a partial sum of a contiguous range of blocks (|.| <= 2M);
     * ranges merged by at most `blocks` fp32 adds of sums of size <= 2M. The error is fed
     * back into the addends: delta = delta0 / (1 - blocks (rho + 2) u). */
    double blocks = (double)((k + 15) / 16), m2 = 2.0 * prefix_max;
    double a = m2 > term_max ? m2 : term_max;
    double d0 = blocks * (RF_MMA_STEP_ULPS * a + m2) * RF_U32;
    return d0 / (1.0 - blocks * (RF_MMA_STEP_ULPS + 2.0) * RF_U32);
}

/* The operands in double, laid out so that every inner loop walks memory in order: x one
 * row, w1t = W1^T [h][c], w2t = W2^T [c][h]. */
typedef struct {
    rf_mlp_accumulation_t acc;
    int64_t c, h;
    const uint16_t *x;
    const double *dx;
    const float *b1, *b2, *ref;
    const double *w1t, *w2t;
    double *allow, *row_step2;
} error_job_t;

/* One row: the allowance of each output and its squared distance to the unrounded-H
 * output (the `step`); xd, dxd (c), hq, dh, hfree (h each) are the thread's scratch. */
static double error_row(const error_job_t *j, int64_t r, double *xd, double *dxd, double *hq,
                        double *dh, double *hfree) {
    const int64_t c = j->c, h = j->h;
    const uint16_t *x = j->x + r * c;
    const float *ref = j->ref ? j->ref + r * c : NULL;
    double *allow = j->allow + r * c, step2 = 0.0;
    for (int64_t i = 0; i < c; i++) {
        xd[i] = rf_f16_to_f32(x[i]);
        dxd[i] = j->dx ? j->dx[r * c + i] : 0.0;
    }
    /* ---- stage 1: the interval of pre-activations, and of H, a correct kernel reaches */
    for (int64_t q = 0; q < h; q++) {
        const double *w = j->w1t + q * c;
        double s = 0.0, sum_abs = 0.0, pmax = 0.0, tmax = 0.0, carried = 0.0;
        for (int64_t i0 = 0; i0 < c; i0 += 16) {
            int64_t i1 = i0 + 16 < c ? i0 + 16 : c;
            for (int64_t i = i0; i < i1; i++) {
                double t = xd[i] * w[i], at = fabs(t) + dxd[i] * fabs(w[i]);
                s += t;
                sum_abs += at;
                carried += dxd[i] * fabs(w[i]);
                tmax = at > tmax ? at : tmax;
            }
            double as = fabs(s) + carried;
            pmax = as > pmax ? as : pmax;
        }
        double b = j->b1[q], p = s + b;
        double e_kernel = acc_bound(j->acc, c, sum_abs, pmax, tmax) + carried;
        /* + b1 in fp32 (the kernel); the reference rounds the sum, then the sum plus b1 */
        e_kernel += RF_U32 * (fabs(s) + e_kernel + fabs(b));
        double e_ref =
            RF_U32 * (2.0 * fabs(s) + fabs(b)) * (1.0 + 2.0 * RF_U32) + RF_DOUBLE_SUM_REL * sum_abs;
        double d = e_kernel + e_ref;
        double lo = h_of(p - d), hi = h_of(p + d);
        double href = h_of(rf_round_f32(rf_round_f32(s) + b));
        hq[q] = href < lo ? lo : href > hi ? hi : href;
        dh[q] = hi - lo; /* 0 unless a rounding boundary (or ReLU's kink) lies within d */
        hfree[q] = p > 0.0 ? p : 0.0;
    }
    /* ---- stage 2: the flips carried through W2, the accumulation, the fp32 adds */
    for (int64_t k = 0; k < c; k++) {
        const double *w = j->w2t + k * h;
        double s = 0.0, sum_abs = 0.0, pmax = 0.0, tmax = 0.0, flips = 0.0;
        double yfree = j->b2[k] + xd[k];
        for (int64_t q0 = 0; q0 < h; q0 += 16) {
            int64_t q1 = q0 + 16 < h ? q0 + 16 : h;
            for (int64_t q = q0; q < q1; q++) {
                double aw = fabs(w[q]), t = hq[q] * w[q], at = (fabs(hq[q]) + dh[q]) * aw;
                s += t;
                sum_abs += at;
                flips += dh[q] * aw;
                tmax = at > tmax ? at : tmax;
                yfree += hfree[q] * w[q];
            }
            double as = fabs(s) + flips;
            pmax = as > pmax ? as : pmax;
        }
        double e_acc = acc_bound(j->acc, h, sum_abs, pmax, tmax);
        double ymag = fabs(s) + flips + e_acc + fabs(j->b2[k]) + fabs(xd[k]) + dxd[k];
        /* two fp32 adds in the kernel (b2, X), three roundings in the reference */
        double e_adds = 5.0 * RF_U32 * ymag + RF_DOUBLE_SUM_REL * sum_abs;
        allow[k] = (flips + e_acc + e_adds + dxd[k]) * (1.0 + 0x1p-20) + 1e-300;
        if (ref) {
            double dy = (double)ref[k] - (yfree > 0.0 ? yfree : 0.0);
            step2 += dy * dy;
        }
    }
    return step2;
}

rf_status_t rf_mlp_error_bound(rf_allocator_t a, rf_mlp_accumulation_t acc, int64_t m, int64_t c,
                               int64_t h, const uint16_t *x, const double *dx, const uint16_t *w1,
                               const float *b1, const uint16_t *w2, const float *b2,
                               const float *ref, double *out_allow, double *out_step) {
    double *w1t = NULL, *w2t = NULL, *scratch = NULL, *row_step2 = NULL;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const size_t per_thread = (size_t)(2 * c + 3 * h);
    rf_status_t st;
    if (acc != RF_MLP_ACC_TENSOR_CORE && acc != RF_MLP_ACC_ANY_ORDER)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "error bound: unknown accumulation model %d",
                      (int)acc);
    if (m < 0 || c < 1 || h < 1 || (m > 0 && (!x || !out_allow)) || !w1 || !w2 || !b1 || !b2)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "error bound %lldx%lldx%lld: rows >= 0, channels and hidden >= 1, and "
                      "every operand given",
                      (long long)m, (long long)c, (long long)h);
    if ((st = rf_alloc(a, (size_t)(c * h) * sizeof(double), "error model W1^T", (void **)&w1t)) ||
        (st = rf_alloc(a, (size_t)(c * h) * sizeof(double), "error model W2^T", (void **)&w2t)) ||
        (st = rf_alloc(a, per_thread * (size_t)threads * sizeof(double), "error model scratch",
                       (void **)&scratch)) ||
        (st = rf_alloc(a, (size_t)(m > 0 ? m : 1) * sizeof(double), "error model row sums",
                       (void **)&row_step2)))
        goto done;
    for (int64_t i = 0; i < c; i++)
        for (int64_t q = 0; q < h; q++) {
            w1t[q * c + i] = rf_f16_to_f32(w1[i * h + q]);
            w2t[i * h + q] = rf_f16_to_f32(w2[q * c + i]);
        }
    error_job_t job = {acc, c, h, x, dx, b1, b2, ref, w1t, w2t, out_allow, row_step2};
    /* Rows are independent: each thread takes whole rows with its own scratch; the row sums
     * are added in row order afterwards, so the result does not depend on the threads. */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (m * c * h > (1 << 20))
#endif
    for (int64_t r = 0; r < m; r++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        double *s = scratch + per_thread * (size_t)t;
        row_step2[r] = error_row(&job, r, s, s + c, s + 2 * c, s + 2 * c + h, s + 2 * c + 2 * h);
    }
    double step2 = 0.0;
    for (int64_t r = 0; r < m; r++)
        step2 += row_step2[r];
    if (out_step)
        *out_step = sqrt(step2);
done:
    rf_free(a, w1t);
    rf_free(a, w2t);
    rf_free(a, scratch);
    rf_free(a, row_step2);
    return st;
}

rf_status_t rf_mlp_error_model(rf_allocator_t a, int64_t m, int64_t c, int64_t h, const uint16_t *x,
                               const uint16_t *w1, const float *b1, const uint16_t *w2,
                               const float *b2, const float *ref, double *out_allow,
                               double *out_step) {
    return rf_mlp_error_bound(a, RF_MLP_ACC_TENSOR_CORE, m, c, h, x, NULL, w1, b1, w2, b2, ref,
                              out_allow, out_step);
}

rf_mlp_tolerance_t rf_mlp_tolerance_default(void) {
    rf_mlp_tolerance_t t = {0.0, 1.0}; /* the per-element bound alone */
    return t;
}

void rf_mlp_compare(const float *y, const float *ref, const double *allow, double step, size_t n,
                    const rf_mlp_tolerance_t *tol, rf_mlp_compare_result_t *r) {
    double num = 0.0, den = 0.0, worst_q = -1.0;
    int64_t first_bad = -1, worst = -1;
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < n; i++) {
        double got = y[i], want = ref[i], d, q;
        den += want * want;
        if (!isfinite(got) || !isfinite(want)) {
            if (first_bad < 0)
                first_bad = (int64_t)i;
            r->nonfinite++;
            continue;
        }
        d = fabs(got - want);
        q = d / allow[i];
        num += d * d;
        r->max_abs = d > r->max_abs ? d : r->max_abs;
        if (q > tol->allow_factor)
            r->out_of_tol++;
        if (q > worst_q) {
            worst_q = q;
            worst = (int64_t)i;
        }
    }
    r->worst_index = first_bad >= 0 ? first_bad : worst;
    if (r->worst_index >= 0) {
        r->worst_got = y[r->worst_index];
        r->worst_ref = ref[r->worst_index];
    }
    r->max_ratio = worst_q > 0.0 ? worst_q : 0.0;
    r->rel_l2 = den > 0.0 ? sqrt(num / den) : sqrt(num);
    r->steps = step > 0.0 ? sqrt(num) / step : (num > 0.0 ? INFINITY : 0.0);
    r->passed = n > 0 && r->nonfinite == 0 && r->out_of_tol == 0 &&
                (tol->step_fraction <= 0.0 || r->steps <= tol->step_fraction);
}

void rf_mlp_compare_describe(const rf_mlp_compare_result_t *r, int64_t channels, char *out,
                             size_t size) {
    int64_t c = channels > 0 ? channels : 1, i = r->worst_index;
    if (r->passed) {
        snprintf(out, size, "%s", "");
        return;
    }
    if (i < 0) {
        snprintf(out, size, "no values to compare");
        return;
    }
    snprintf(out, size,
             "%lld non-finite, %lld over their allowance (worst %.3g x), %.3g steps from the "
             "reference (rel. L2 %.3g); %s at [%lld, %lld]: got %.6g, want %.6g",
             (long long)r->nonfinite, (long long)r->out_of_tol, r->max_ratio, r->steps, r->rel_l2,
             r->nonfinite ? "first non-finite" : "worst element", (long long)(i / c),
             (long long)(i % c), r->worst_got, r->worst_ref);
}
