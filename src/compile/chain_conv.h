/* The conventional schedule of a chain (src/compile, internal): one kernel per linear or gated
 * stage with its epilogue, the values between kernels in global memory. The peer the
 * persistent chain kernel is measured against, and the schedule of a chain whose values do
 * not fit one block's shared memory at large row counts (no kernel holds more than its own
 * stages' values).
 *
 * Segments (rf_chain_conv_plan_make): the chain's stages are cut before every linear or gated
 * stage that follows another one in the same segment; a norm whose output is that stage's
 * input goes with it (computed in the kernel's prologue, from whole input rows). Stages
 * before the first matmul join the first segment; act, add and norm stages after a matmul
 * stay with it (its epilogue side), except that at few rows (fewer 16-row tiles than SMs) a
 * norm after a matmul starts a kernel of its own, so that the matmul's columns can be split
 * over blocks (a norm needs whole rows). A prologue norm also gets a kernel of its own when
 * its kernel does not fit, or when the matmul alone would run larger row tiles: a matmul
 * whose input comes from an earlier kernel and is read by nothing else streams that input
 * in k chunks through the weight ring (rf_chain_plan_range), so its row tile is bounded by
 * the ring alone, and each row tile streams every weight once.
 *
 * Values between kernels: X stays in the caller's X and Y goes to the caller's Y; every other
 * value produced in one segment and read in a later one lives in a scratch buffer, "aux":
 * [rows, aux_row] fp16 elements, the value at column aux_col (fp16 elements; an fp32 value
 * takes two per element), its padded width of columns, stored at the value's dtype, so
 * each kernel computes exactly what the persistent kernel computes (same dtypes, same
 * order of operations per value): one reference and one bound check both.
 *
 * Column split: a segment whose matmul is followed only by elementwise stages of its width
 * splits the matmul's n chunks over `slices` blocks per row tile (slice_chunks chunks each),
 * so a kernel has tiles x slices work items; a segment with a norm after its matmul keeps
 * whole rows (slices 1). Each segment's kernel is a chain_mma kernel over its stage range
 * (rf_chain_plan_range) with these fields added to its entry (chain_package.c). */
#ifndef RF_COMPILE_CHAIN_CONV_H
#define RF_COMPILE_CHAIN_CONV_H

#include "compile/chain_plan.h"

/* Most kernels of a conventional chain (one per linear; a guard). */
#define RF_CHAIN_CONV_MAX_SEGS 64

typedef struct rf_chain_seg_plan {
    rf_chain_plan_t plan; /* the kernel: stage range, layout, name */
    int split_stage;      /* the matmul whose columns are split; -1: whole rows */
    int slices;           /* blocks per row tile (1: no split) */
    int slice_chunks;     /* n chunks per slice */
    int n_inputs;         /* values staged from global memory at each tile's start */
    int inputs[RF_CHAIN_MAX_STAGES + 1];
    int n_direct; /* values read from global memory where they are used */
    int direct[RF_CHAIN_MAX_STAGES + 1];
    int n_streamed; /* matmul inputs streamed through the ring (rf_chain_plan_range) */
    int streamed[RF_CHAIN_MAX_STAGES + 1];
    /* a Hopper GEMM (mode chain_wgmma, rf_chain_conv_plan_make with wgmma) instead of the
     * chain_mma kernel: tile_m x tile_n tiles of the output (plan.tile_rows = tile_m, slices =
     * the column tiles), k_block-deep steps through a `stages`-deep TMA ring; 0: chain_mma */
    int wg_tile_m, wg_tile_n, wg_k_block, wg_stages;
} rf_chain_seg_plan_t;

typedef struct rf_chain_conv_plan {
    int n_segs;
    rf_chain_seg_plan_t *segs; /* [n_segs], heap: rf_chain_conv_plan_free */
    int64_t aux_row;           /* fp16 elements per row of the scratch (0: none needed) */
    int64_t aux_col[RF_CHAIN_MAX_STAGES + 1]; /* per value; -1: not in the scratch */
    char fault[32]; /* a planted fault's generator spelling (conv_no_store), else "" */
    int wgmma;      /* planned for conventional-wgmma (rf_chain_conv_plan_make) */
} rf_chain_conv_plan_t;

/* Plans every segment's kernel for `rows` rows on target t (tile_rows as for chain_mma: 0 auto).
 * `whole` receives the chain's plan for the package's chain object (hash, weight offsets,
 * name "conv_<hash>", reason); it needs no shared-memory fit. UNSUPPORTED names the segment
 * whose kernel does not fit.
 *
 * wgmma (schedule conventional-wgmma, an sm_90 target): every norm gets a kernel of its own,
 * so each matmul's kernel is the matmul and its fused epilogue alone, and such a kernel
 * becomes a Hopper GEMM (python/rowfuse/kernels/chain_wgmma.py) where TMA can read its
 * operands: src fp16 in X or the scratch, K and N multiples of 8, weights and scratch columns
 * 16-byte aligned, dst in Y or the scratch. Tiles: 128 or 64 rows by 128 or 64 columns
 * (narrower N: N rounded up to 16), the largest that still gives every SM a tile; 64-deep k
 * steps; the deepest ring (2..8 stages) that fits. The others stay chain_mma kernels. */
rf_status_t rf_chain_conv_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                    int tile_rows, int wgmma, rf_chain_plan_t *whole,
                                    rf_chain_conv_plan_t *out);

/* The cost line of conventional-wgmma (us), fitted on the suite's FFNs at 16,384 rows
 * (notes/kernels.md): RF_CHAIN_WGMMA_KERNEL_US per kernel (one per linear or gated
 * stage, one per norm) and the matmuls' 2 x rows x K x N (twice for a gated stage) at
 * RF_CHAIN_WGMMA_TFLOPS, or their fp16 weights at the device's streaming rate
 * (RF_STREAM_HBM_GBS) where that takes longer. auto weighs it against chain_mma's line
 * above the decode rows. The per-kernel cost is refitted on the small chains at 1,000 rows
 * (notes/kernels.md, 2026-12-08), where the FFNs' fit put the stacked MLPs and the
 * classifier on GEMMs slower than chain_mma. */
#define RF_CHAIN_WGMMA_KERNEL_US 4.5
#define RF_CHAIN_WGMMA_TFLOPS 320.0
double rf_chain_wgmma_cost_us(const rf_chain_t *c, int64_t rows);

/* Bytes of shared memory a chain_wgmma kernel takes (its generator counts the same): full and
 * empty mbarriers per stage, the src ring and `mats` weight rings, each 1 KB aligned, and the
 * allocator's 1 KB alignment. */
int64_t rf_chain_wgmma_smem(int tile_m, int tile_n, int k_block, int stages, int mats);
void rf_chain_conv_plan_free(rf_chain_conv_plan_t *cp);

/* kernel_spec.json / plan.json of the schedule (chain_package.c): every segment's chain_mma
 * entry, in launch order. */
rf_status_t rf_chain_conv_spec_write(const rf_chain_plan_t *whole, const rf_chain_conv_plan_t *cp,
                                     const char *path);
rf_status_t rf_chain_conv_plan_write(const rf_chain_plan_t *whole, const rf_chain_conv_plan_t *cp,
                                     const char *model, int64_t wh_offset, int64_t wf_offset,
                                     const char *path);

#endif
