/* The scheduler behind `--schedule auto`: a two-line cost model fitted to H200 measurements
 * (notes/bench.md, run 3, 2026-12-02, GPU span of one graph replay):
 *
 *   persistent-smem (mma.sync, weights staged or streamed through shared memory):
 *       t ~= F / 180 TFLOP/s      at 8192x512x2048: 34.4 GFLOP in 192 us
 *   cublaslt (four kernels: two Hopper GEMMs with epilogues plus glue):
 *       t ~= 7.5 us + F / 400 TFLOP/s   8192x512x2048: 86 us; 7.3-8.9 us at small shapes
 *
 * with F = 4 M C H, the block's FLOPs. The two lines cross near 2.5 GFLOP: below it the
 * megakernel's single launch wins (every small and medium development shape, by 0.2x-0.9x;
 * 4096x128x512 at 1.07 GFLOP: 11.2 vs 12.7 us), above it the vendor GEMMs' higher rate
 * does (8192x512x2048: 86 vs 192 us). persistent-gmem and conventional lost to
 * persistent-smem at every development shape, so the model leaves them out. The bench
 * report keeps every loser's time, so a shape where this rule loses shows up there. */
#include <stdio.h>

#include "rowfuse/compile.h"

#define RF_SMEM_FLOPS_PER_US 180.0e6     /* 180 TFLOP/s */
#define RF_CUBLASLT_FLOPS_PER_US 400.0e6 /* 400 TFLOP/s */
#define RF_CUBLASLT_FIXED_US 7.5

rf_schedule_t rf_schedule_choose(int64_t rows, int64_t channels, int64_t hidden,
                                 const rf_target_t *target, char *out_reason, size_t size) {
    double flops = 4.0 * (double)rows * (double)channels * (double)hidden;
    double t_smem = flops / RF_SMEM_FLOPS_PER_US;
    double t_lt = RF_CUBLASLT_FIXED_US + flops / RF_CUBLASLT_FLOPS_PER_US;
    if (t_lt < t_smem) {
        snprintf(out_reason, size,
                 "auto: %.2f GFLOP is above ~2.5 GFLOP, where the vendor GEMMs' rate beats the "
                 "megakernel (%s cost model: %.1f us vs %.1f us)",
                 flops * 1e-9, target->name, t_lt, t_smem);
        return RF_SCHEDULE_CUBLASLT;
    }
    snprintf(out_reason, size,
             "auto: one launch, hidden state in shared memory; below ~2.5 GFLOP the megakernel "
             "beats every other schedule (%s cost model: %.1f us vs cuBLASLt %.1f us)",
             target->name, t_smem, t_lt);
    return RF_SCHEDULE_PERSISTENT_SMEM;
}
