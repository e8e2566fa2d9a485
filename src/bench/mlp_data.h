/* Inputs and the CPU fp64 reference for benchmarking the residual MLP block from C.
 *
 *   H = ReLU(X @ W1 + b1);   Y = ReLU(H @ W2 + b2 + X)
 *   X [M,C], W1 [C,H], W2 [H,C] fp16 bit patterns; b1 [H], b2 [C] f32; reference in fp64
 *
 * Inputs are random (never zeros) from a seeded generator, scaled like the Python side
 * (rowfuse.bench.make_inputs): X ~ N(0,1), W ~ N(0,1)/sqrt(fan_in), b ~ 0.1 N(0,1). The
 * reference computes in double on the fp16 values (H is not rounded), so rel. L2 error of
 * a correct fp16 kernel lands between 1e-4 and 1e-2.
 *
 * Ownership: rf_bench_mlp_data_create allocates every array with the given allocator;
 * rf_bench_mlp_data_destroy frees them (accepts NULL).
 */
#ifndef RF_BENCH_MLP_DATA_H
#define RF_BENCH_MLP_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/alloc.h"
#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_bench_mlp_data {
    rf_allocator_t allocator;
    int64_t rows, channels, hidden;
    uint64_t seed;
    uint16_t *x, *w1, *w2; /* fp16 bit patterns */
    float *b1, *b2;
    double *y_ref; /* [rows, channels] */
} rf_bench_mlp_data_t;

/* Random inputs for the shape and their fp64 reference output. Errors: a non-positive
 * dimension or a size that overflows (INVALID_ARGUMENT), OUT_OF_MEMORY. */
rf_status_t rf_bench_mlp_data_create(rf_allocator_t allocator, int64_t rows, int64_t channels,
                                     int64_t hidden, uint64_t seed, rf_bench_mlp_data_t **out_data);
void rf_bench_mlp_data_destroy(rf_bench_mlp_data_t *data);

/* The fp64 reference of the block for given inputs, into y [rows*channels]. Takes
 * scratch (the weights widened to double) from the allocator: OUT_OF_MEMORY. */
rf_status_t rf_bench_mlp_reference(rf_allocator_t allocator, int64_t rows, int64_t channels,
                                   int64_t hidden, const uint16_t *x, const uint16_t *w1,
                                   const float *b1, const uint16_t *w2, const float *b2, double *y);

/* ||out - ref|| / ||ref|| over n values; *out_finite = 0 (and the result +inf) if any
 * out value is NaN or infinite. */
double rf_bench_rel_l2(const float *out, const double *ref, size_t n, int *out_finite);

/* Standard normal variate from a xorshift64* state (Box-Muller); state must be non-zero. */
double rf_bench_normal(uint64_t *state);

#ifdef __cplusplus
}
#endif
#endif
