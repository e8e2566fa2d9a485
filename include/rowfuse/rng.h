/* The one seeded generator of rowfuse: splitmix64 (Steele, Lea and Flood, 2014). Every
 * random number rowfuse draws (test data, bootstrap resamples) comes from it, so a
 * recorded seed reproduces a run; Python reaches the same functions through
 * librowfuse.so. No allocation, no errors. */
#ifndef ROWFUSE_RNG_H
#define ROWFUSE_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the generator ---- */
typedef struct rf_rng {
    uint64_t state;
} rf_rng_t;

void rf_rng_seed(rf_rng_t *rng, uint64_t seed);
uint64_t rf_rng_next(rf_rng_t *rng); /* splitmix64 */
/* Uniform in [-a, a] with |v| >= a/1000 (never zero after rounding to fp16). */
double rf_rng_uniform(rf_rng_t *rng, double a);
/* n values uniform in [-a, a] (rf_rng_uniform), as fp16 bit patterns or as f32. */
void rf_rng_fill_f16(rf_rng_t *rng, double a, uint16_t *out, size_t n);
void rf_rng_fill_f32(rf_rng_t *rng, double a, float *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
