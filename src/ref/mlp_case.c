/* Test data, reference and comparison of the residual MLP block (rowfuse/mlp.h): the one
 * generator, the one reference call and the one pass rule that every gate shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rowfuse/mlp.h"

void rf_mlp_case_free(rf_allocator_t a, rf_mlp_case_t *k) {
    rf_free(a, k->x);
    rf_free(a, k->w1);
    rf_free(a, k->w2);
    rf_free(a, k->b1);
    rf_free(a, k->b2);
    rf_free(a, k->ref);
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
         (st = rf_alloc(a, (size_t)(m * c) * 4, "reference Y", (void **)&k->ref)))) {
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
    if (k->ref && (st = case_reference(a, k)) != RF_OK)
        rf_mlp_case_free(a, k);
    return st;
}

rf_mlp_tolerance_t rf_mlp_tolerance_default(void) {
    rf_mlp_tolerance_t t = {1e-3, 1e-2, 1e-2};
    return t;
}

void rf_mlp_compare(const float *y, const float *ref, size_t n, const rf_mlp_tolerance_t *tol,
                    rf_mlp_compare_result_t *r) {
    double num = 0.0, den = 0.0, worst_d = -1.0;
    int64_t first_bad = -1, worst = -1;
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < n; i++) {
        double got = y[i], want = ref[i], d;
        den += want * want;
        if (!isfinite(got) || !isfinite(want)) {
            if (first_bad < 0)
                first_bad = (int64_t)i;
            r->nonfinite++;
            continue;
        }
        d = fabs(got - want);
        num += d * d;
        if (d > tol->atol + tol->rtol * fabs(want))
            r->out_of_tol++;
        if (d > worst_d) {
            worst_d = d;
            worst = (int64_t)i;
        }
    }
    r->worst_index = first_bad >= 0 ? first_bad : worst;
    if (r->worst_index >= 0) {
        r->worst_got = y[r->worst_index];
        r->worst_ref = ref[r->worst_index];
    }
    r->max_abs = worst_d > 0.0 ? worst_d : 0.0;
    r->rel_l2 = den > 0.0 ? sqrt(num / den) : sqrt(num);
    r->passed = n > 0 && r->nonfinite == 0 && r->out_of_tol == 0 && r->rel_l2 <= tol->rel_l2;
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
             "%lld non-finite, %lld out of tolerance, rel. L2 %.3g; %s at [%lld, %lld]: got %.6g, "
             "want %.6g",
             (long long)r->nonfinite, (long long)r->out_of_tol, r->rel_l2,
             r->nonfinite ? "first non-finite" : "largest error", (long long)(i / c),
             (long long)(i % c), r->worst_got, r->worst_ref);
}
