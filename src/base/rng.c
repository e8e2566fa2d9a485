/* The one seeded generator of rowfuse (rowfuse/rng.h): splitmix64. */
#include <math.h>

#include "rowfuse/rng.h"
#include "rowfuse/tensor.h"

void rf_rng_seed(rf_rng_t *r, uint64_t seed) {
    r->state = seed;
}

uint64_t rf_rng_next(rf_rng_t *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rf_rng_uniform(rf_rng_t *r, double a) {
    double u = (double)(rf_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    double v = (2.0 * u - 1.0) * a;
    /* Zeros could hide a kernel that skips work. */
    if (fabs(v) < a * 1e-3)
        v = v < 0 ? -a * 1e-3 : a * 1e-3;
    return v;
}

void rf_rng_fill_f16(rf_rng_t *r, double a, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++)
        out[i] = rf_f32_to_f16((float)rf_rng_uniform(r, a));
}

void rf_rng_fill_f32(rf_rng_t *r, double a, float *out, size_t n) {
    for (size_t i = 0; i < n; i++)
        out[i] = (float)rf_rng_uniform(r, a);
}
