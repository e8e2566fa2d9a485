/* Planted faults against the one correctness gate (rf_mlp_compare with the default
 * tolerance and the error model of rowfuse/mlp.h), on the CPU.
 *
 * A kernel model computes the block the way the tensor-core kernels do (fp16 operands; per
 * MMA, 16 products summed exactly and added to an fp32 accumulator; b1 added in fp32, ReLU,
 * H rounded to fp16 to nearest even, the second product accumulated in fp32, b2 and the residual
 * added in fp32, Y stored in fp32), then each plausible bug is planted in it: H kept in fp32, H
 * rounded toward zero, Y stored in fp16, b1 rounded to fp16, b1 / b2 / the residual dropped, one
 * row tile never written (NaN poison, then a finite sentinel), a padded channel or hidden
 * lane holding garbage instead of zeros, two rows swapped, and a missing barrier (a third
 * of the H values of a row read before they were written: the previous row's). At 40
 * seeded random shapes (a fresh seed each run, printed; partial tiles in every shape) the
 * gate must accept the correct model everywhere and reject every fault at 20 or more of
 * them. The rounding-sized faults (H in fp32 or rounded toward zero, Y in fp16, b1 in
 * fp16) are required only where the block has RF_MLP_NORM_MIN_H = 512 H values or more,
 * where the norm test applies; below that the per-element allowance alone may admit them. Two more
 * shapes with accumulations of 1000 and 2047 channels and 10 rows check acceptance only: there
 * nearly every H value lies within the accumulation bound of a rounding boundary, so the
 * per-element allowance cannot tell a kept-fp32 H from a rounded one, and 400 H values are
 * too few for the norm test (a limit of the gate, stated in src/check/README.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rf_test.h"
#include "rowfuse/mlp.h"
#include "rowfuse/tensor.h"

enum fault {
    F_NONE,
    F_H_FP32,
    F_H_RTZ,
    F_Y_FP16,
    F_B1_FP16,
    F_NO_B1,
    F_NO_B2,
    F_NO_RESIDUAL,
    F_TILE_NAN,
    F_TILE_SENTINEL,
    F_LANE_GARBAGE,
    F_ROWS_SWAPPED,
    F_STALE_H,
    F_COUNT
};
static const char *const fault_names[F_COUNT] = {"correct",
                                                 "H kept in fp32",
                                                 "H rounded toward zero",
                                                 "Y stored in fp16",
                                                 "b1 in fp16",
                                                 "b1 dropped",
                                                 "b2 dropped",
                                                 "residual dropped",
                                                 "tile unwritten (NaN)",
                                                 "tile unwritten (sentinel)",
                                                 "padded lane garbage",
                                                 "rows swapped",
                                                 "missing barrier (stale H)"};

static float f16r(float v) { /* round to fp16, nearest even */
    return rf_f16_to_f32(rf_f32_to_f16(v));
}

static float f16_toward_zero(float v) {
    float r = f16r(v);
    if (fabsf(r) > fabsf(v)) { /* one fp16 step back toward zero */
        uint16_t b = rf_f32_to_f16(r);
        r = rf_f16_to_f32((uint16_t)(b - 1));
    }
    return r;
}

static float garbage(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 8.0 - 4.0);
}

/* H of one row as the kernel model computes it (h has room for the padded width). */
static void model_h(const rf_mlp_case_t *k, int64_t r, enum fault f, uint64_t *gs, float *h) {
    int64_t c = k->channels, hid = k->hidden, cpad = (c + 15) / 16 * 16;
    for (int64_t j = 0; j < hid; j++) {
        float acc = 0.0f;
        for (int64_t i0 = 0; i0 < c; i0 += 16) { /* one m16n8k16 MMA per 16 products */
            double part = 0.0;
            for (int64_t i = i0; i < c && i < i0 + 16; i++)
                part += (double)rf_f16_to_f32(k->x[r * c + i]) * rf_f16_to_f32(k->w1[i * hid + j]);
            acc += (float)part;
        }
        if (f == F_LANE_GARBAGE)
            for (int64_t i = c; i < cpad; i++)
                acc += garbage(gs) * garbage(gs);
        float b = f == F_NO_B1 ? 0.0f : f == F_B1_FP16 ? f16r(k->b1[j]) : k->b1[j];
        float v = fmaxf(acc + b, 0.0f);
        h[j] = f == F_H_FP32 ? v : f == F_H_RTZ ? f16_toward_zero(v) : f16r(v);
    }
}

static void model_y(const rf_mlp_case_t *k, int64_t r, enum fault f, uint64_t *gs, const float *h,
                    float *y) {
    int64_t c = k->channels, hid = k->hidden, hpad = (hid + 15) / 16 * 16;
    for (int64_t o = 0; o < c; o++) {
        float acc = 0.0f;
        for (int64_t j0 = 0; j0 < hid; j0 += 16) {
            double part = 0.0;
            for (int64_t j = j0; j < hid && j < j0 + 16; j++)
                part += (double)h[j] * rf_f16_to_f32(k->w2[j * c + o]);
            acc += (float)part;
        }
        if (f == F_LANE_GARBAGE)
            for (int64_t j = hid; j < hpad; j++)
                acc += garbage(gs) * garbage(gs);
        float v = acc + (f == F_NO_B2 ? 0.0f : k->b2[o]);
        v = fmaxf(v + (f == F_NO_RESIDUAL ? 0.0f : rf_f16_to_f32(k->x[r * c + o])), 0.0f);
        y[r * c + o] = f == F_Y_FP16 ? f16r(v) : v;
    }
}

/* The whole output of the kernel model with fault f planted. */
static void model(const rf_mlp_case_t *k, enum fault f, float *h, float *prev_h, float *y) {
    uint64_t gs = 0x9e3779b97f4a7c15ull ^ (uint64_t)f;
    int64_t m = k->rows, c = k->channels, hid = k->hidden;
    for (int64_t r = 0; r < m; r++) {
        model_h(k, r, f, &gs, h);
        if (f == F_STALE_H && (r == 1 || (r > 0 && r % 16 == 0))) /* H not yet written */
            for (int64_t j = 0; j < hid; j += 3)
                h[j] = prev_h[j];
        memcpy(prev_h, h, (size_t)hid * sizeof(float));
        model_y(k, r, f, &gs, h, y);
    }
    if (f == F_TILE_NAN || f == F_TILE_SENTINEL) { /* the last row tile never written */
        float poison = f == F_TILE_NAN ? NAN : 48.5625f;
        for (int64_t i = (m - 1) / 16 * 16 * c; i < m * c; i++)
            y[i] = poison;
    }
    if (f == F_ROWS_SWAPPED && m > 1)
        for (int64_t o = 0; o < c; o++) {
            float t = y[o];
            y[o] = y[(m - 1) * c + o];
            y[(m - 1) * c + o] = t;
        }
}

/* rows 1..160 (one in four below 16), C and H 8..256 with at least one not a multiple of
 * 16, and two wide-accumulation shapes. Rows reach 160 so that most shapes have the
 * RF_MLP_NORM_MIN_H H values the norm test (and the rounding-sized faults) needs. */
static void draw_shape(rf_rng_t *r, int i, int64_t *m, int64_t *c, int64_t *h) {
    if (i == 0 || i == 1) {
        *m = 9 + i;
        *c = i ? 2047 : 1000;
        *h = i ? 40 : 70;
        return;
    }
    *m = rf_rng_next(r) % 4 == 0 ? 1 + (int64_t)(rf_rng_next(r) % 15)
                                 : 16 + (int64_t)(rf_rng_next(r) % 145);
    *c = 8 + (int64_t)(rf_rng_next(r) % 249);
    *h = 8 + (int64_t)(rf_rng_next(r) % 249);
    if (*c % 16 == 0 && *h % 16 == 0)
        *c += 1;
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    rf_allocator_t a = rf_allocator_system();
    rf_mlp_tolerance_t tol = rf_mlp_tolerance_default();
    rf_rng_t r;
    double worst_ok = 0.0, closest_fault = INFINITY;
    int closest = 0, rejected[F_COUNT] = {0};
    printf("test_gate_faults: seed %llu (rerun: test_gate_faults %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    rf_rng_seed(&r, seed);
    for (int s = 0; s < 40; s++) {
        int64_t m, c, h;
        rf_mlp_case_t k;
        draw_shape(&r, s, &m, &c, &h);
        CHECK_OK(rf_mlp_case_create(a, m, c, h, rf_rng_next(&r), 1, &k));
        float *y = malloc((size_t)(m * c) * sizeof(float));
        float *hb = malloc((size_t)(2 * h + 32) * sizeof(float));
        for (int f = 0; y && hb && k.ref && f < F_COUNT; f++) {
            rf_mlp_compare_result_t v;
            model(&k, (enum fault)f, hb, hb + h + 16, y);
            rf_mlp_compare(y, k.ref, k.allow, k.step, (size_t)(m * c), &tol, &v);
            int want = f == F_NONE;
            if ((f == F_ROWS_SWAPPED || f == F_STALE_H) && m == 1)
                continue; /* one row: nothing to swap, no earlier H to read */
            int subtle = f == F_H_FP32 || f == F_H_RTZ || f == F_Y_FP16 || f == F_B1_FP16;
            if (subtle && m * h < RF_MLP_NORM_MIN_H)
                continue; /* a rounding-sized fault needs the norm test's H values */
            if (f != F_NONE && s < 2)
                continue; /* the wide shapes: acceptance only (see below) */
            if (v.passed != want) {
                char why[256];
                rf_mlp_compare_describe(&v, c, why, sizeof why);
                fprintf(stderr, "  %lldx%lldx%lld %s: %s (%.3g steps, worst ratio %.3g) %s\n",
                        (long long)m, (long long)c, (long long)h, fault_names[f],
                        v.passed ? "PASSED the gate" : "rejected", v.steps, v.max_ratio, why);
            }
            CHECK(v.passed == want);
            rejected[f] += !v.passed;
            if (f == F_NONE)
                worst_ok = fmax(worst_ok, v.steps);
            else if (!want && v.nonfinite == 0 && m * h >= RF_MLP_NORM_MIN_H &&
                     v.steps < closest_fault) {
                closest_fault = v.steps;
                closest = f;
            }
        }
        free(y);
        free(hb);
        rf_mlp_case_free(a, &k);
    }
    printf("correct model: at most %.3f steps; closest fault: %s at %.3f steps; gate %.2f\n",
           worst_ok, fault_names[closest], closest_fault, tol.step_fraction);
    CHECK(rejected[F_NONE] == 0);
    for (int f = 1; f < F_COUNT; f++) {
        if (rejected[f] < 20)
            fprintf(stderr, "  %s rejected at only %d shapes\n", fault_names[f], rejected[f]);
        CHECK(rejected[f] >= 20); /* every fault caught at >= 20 random shapes */
    }
    return rf_test_finish();
}
