/* Random inputs and the fp64 CPU reference of the residual MLP block, for the C bench
 * (see mlp_data.h). The generator is a tiny xorshift64* so runs are reproducible from
 * the recorded seed without depending on libc's rand. */
#include "bench/mlp_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rowfuse/compile.h"
#include "rowfuse/tensor.h"

static uint64_t rf_bench_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

double rf_bench_normal(uint64_t *state) {
    /* 53-bit uniforms in (0, 1]; Box-Muller keeps the first of the pair. */
    double u1 = ((double)(rf_bench_next(state) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(rf_bench_next(state) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Converts n fp16 values to double; transposes [r, c] to [c, r] when t is set. */
rf_status_t rf_bench_mlp_reference(rf_allocator_t a, int64_t rows, int64_t channels, int64_t hidden,
                                   const uint16_t *x, const uint16_t *w1, const float *b1,
                                   const uint16_t *w2, const float *b2, double *y) {
    /* The CPU reference interpreter in fp64 on the fp16 values (H is not rounded). */
    rf_tensor_t out;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_mlp_reference(a, RF_PRECISION_FP64, rows, channels, hidden, x, w1, b1, w2, b2, &out));
    size_t n = (size_t)rows * (size_t)channels;
    rf_status_t st = RF_OK;
    if (out.dtype != RF_DTYPE_F64 || out.nbytes != n * sizeof(double))
        st = RF_ERR(RF_CODE_INTERNAL, "the CPU reference returned %s of %zu bytes",
                    rf_dtype_name(out.dtype), out.nbytes);
    else
        memcpy(y, out.data, out.nbytes);
    rf_tensor_free(a, &out);
    return st;
}

double rf_bench_rel_l2(const float *out, const double *ref, size_t n, int *out_finite) {
    double num = 0.0, den = 0.0;
    *out_finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) {
            *out_finite = 0;
            return INFINITY;
        }
        double d = (double)out[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : INFINITY;
}

void rf_bench_mlp_data_destroy(rf_bench_mlp_data_t *d) {
    if (!d)
        return;
    rf_allocator_t a = d->allocator;
    rf_free(a, d->x);
    rf_free(a, d->w1);
    rf_free(a, d->w2);
    rf_free(a, d->b1);
    rf_free(a, d->b2);
    rf_free(a, d->y_ref);
    rf_free(a, d);
}

static rf_status_t rf_bench_array(rf_allocator_t a, int64_t n, size_t elem, const char *what,
                                  void **out) {
    size_t bytes;
    if (rf_mul_size((size_t)n, elem, &bytes))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: %lld elements overflow size_t", what,
                      (long long)n);
    return rf_alloc(a, bytes, what, out);
}

rf_status_t rf_bench_mlp_data_create(rf_allocator_t a, int64_t rows, int64_t channels,
                                     int64_t hidden, uint64_t seed,
                                     rf_bench_mlp_data_t **out_data) {
    rf_bench_mlp_data_t *d = NULL;
    rf_status_t st;
    *out_data = NULL;
    if (rows < 1 || channels < 1 || hidden < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "bench shape %lldx%lldx%lld: rows, channels and hidden must be >= 1",
                      (long long)rows, (long long)channels, (long long)hidden);
    if (rows > (INT64_C(1) << 40) / channels || channels > (INT64_C(1) << 40) / hidden)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "bench shape %lldx%lldx%lld is too large",
                      (long long)rows, (long long)channels, (long long)hidden);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(*d), "bench data", (void **)&d));
    d->allocator = a;
    d->rows = rows;
    d->channels = channels;
    d->hidden = hidden;
    d->seed = seed;
    if ((st = rf_bench_array(a, rows * channels, 2, "X", (void **)&d->x)) ||
        (st = rf_bench_array(a, channels * hidden, 2, "W1", (void **)&d->w1)) ||
        (st = rf_bench_array(a, hidden * channels, 2, "W2", (void **)&d->w2)) ||
        (st = rf_bench_array(a, hidden, 4, "b1", (void **)&d->b1)) ||
        (st = rf_bench_array(a, channels, 4, "b2", (void **)&d->b2)) ||
        (st = rf_bench_array(a, rows * channels, 8, "Y reference", (void **)&d->y_ref))) {
        rf_bench_mlp_data_destroy(d);
        return rf_status_annotate(st, "while making bench inputs");
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    if (s == 0)
        s = 1;
    double s1 = 1.0 / sqrt((double)channels), s2 = 1.0 / sqrt((double)hidden);
    for (int64_t i = 0; i < rows * channels; i++)
        d->x[i] = rf_f32_to_f16((float)rf_bench_normal(&s));
    for (int64_t i = 0; i < channels * hidden; i++)
        d->w1[i] = rf_f32_to_f16((float)(rf_bench_normal(&s) * s1));
    for (int64_t i = 0; i < hidden; i++)
        d->b1[i] = (float)(0.1 * rf_bench_normal(&s));
    for (int64_t i = 0; i < hidden * channels; i++)
        d->w2[i] = rf_f32_to_f16((float)(rf_bench_normal(&s) * s2));
    for (int64_t i = 0; i < channels; i++)
        d->b2[i] = (float)(0.1 * rf_bench_normal(&s));
    st = rf_bench_mlp_reference(a, rows, channels, hidden, d->x, d->w1, d->b1, d->w2, d->b2,
                                d->y_ref);
    if (st) {
        rf_bench_mlp_data_destroy(d);
        return rf_status_annotate(st, "while computing the fp64 reference");
    }
    *out_data = d;
    return RF_OK;
}
