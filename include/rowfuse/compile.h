/* Compilation of a verified graph into a GPU package.
 *
 * rowfuse's kernels implement the residual MLP block
 *   H = fp16(ReLU(X @ W1 + b1));  Y = ReLU(H @ W2 + b2 + X)
 * rf_mlp_match finds that block in a verified graph (Gemm or MatMul+Add for each
 * projection, with either operand order for the adds) and extracts its weights; any other
 * graph is UNSUPPORTED with a message naming the first node that does not fit.
 *
 * rf_compile_package writes a package directory (rowfuse/plan.h): weights.bin, the
 * kernels (built by the generator rowfuse.kernels.build from the specification this code decides,
 * run as a tool), and plan.json. src/compile is the only code that decides the plan and the only
 * writer of plan.json. Ownership: nothing is retained.
 */
#ifndef ROWFUSE_COMPILE_H
#define ROWFUSE_COMPILE_H

#include <stddef.h>

#include "rowfuse/graph.h"
#include "rowfuse/plan.h"
#include "rowfuse/ref.h"
#include "rowfuse/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_mlp_block {
    int x;      /* value index of the block input X [M, C] */
    int y;      /* value index of the output Y [M, C] */
    int w1, b1; /* constant values */
    int w2, b2;
    int w1_trans; /* 1 if w1 is stored [H, C] (Gemm transB=1 / Linear weight) */
    int w2_trans; /* 1 if w2 is stored [C, H] */
    int64_t rows, channels, hidden;
} rf_mlp_block_t;

rf_status_t rf_mlp_match(const rf_graph_t *graph, rf_mlp_block_t *out_block);

/* The block's constants in the kernels' layout: W1 [C,H] and W2 [H,C] fp16 bit patterns,
 * b1 [H] and b2 [C] f32. Init-style (caller storage); arrays from the allocator. */
typedef struct rf_mlp_weights {
    int64_t channels, hidden;
    uint16_t *w1, *w2;
    float *b1, *b2;
} rf_mlp_weights_t;

/* The matched block's constants, transposed and rounded to the kernels' layout. */
rf_status_t rf_mlp_weights_from_graph(rf_allocator_t allocator, const rf_graph_t *graph,
                                      const rf_mlp_block_t *block, rf_mlp_weights_t *out_weights);
/* Random constants for a synthetic block (rowfuse/mlp.h's generator and scales). */
rf_status_t rf_mlp_weights_random(rf_allocator_t allocator, int64_t channels, int64_t hidden,
                                  uint64_t seed, rf_mlp_weights_t *out_weights);
void rf_mlp_weights_free(rf_allocator_t allocator, rf_mlp_weights_t *weights);

/* Kernel-geometry choices the user may force; -1 (or 0 for tile_rows) means "decide". */
typedef enum rf_grid_rule {
    RF_GRID_AUTO = 0, /* balanced and counting registers for persistent-smem and
                       * persistent-wgmma, smem for the others */
    RF_GRID_SMEM,     /* blocks per SM from shared memory and threads */
    RF_GRID_REGS,     /* ... and the kernel's registers (reported by the generator) */
    RF_GRID_BALANCED  /* regs, then as few blocks as give each the same tile count */
} rf_grid_rule_t;

typedef struct rf_compile_options {
    const char *model;    /* recorded in plan.json */
    const char *out_dir;  /* the package directory */
    const char *schedule; /* "auto" or a schedule name (rowfuse/plan.h) */
    int64_t rows;         /* the row count the plan is made for (any count runs) */
    int tile_rows;        /* 0 = auto, else 16, 32 or 64 */
    const char *target;   /* rf_target_lookup name, default "h200" */
    int sm_count;         /* 0 = the target's */
    int x_prefetch;       /* -1 auto (fused schedules from 1000 rows), 0, 1 */
    int y_vec2;           /* -1 auto (persistent-smem), 0, 1 */
    int hidden_split;     /* persistent-wgmma: -1 auto (a block pair per tile when the
                           * tiles leave half the SMs idle), 0 off, 1 on where it fits */
    rf_grid_rule_t grid;
    int ring, min_blocks; /* experimental kernel variants (notes/kernels.md) */
    int max_grid;         /* tests: cap blocks per launch (0 = none) */
    int stream_wide;      /* chain_stream's forms for wide blocks: X streamed beside W1
                           * where a row tile of the rows does not fit with X resident,
                           * and 96-column slices; -1 auto (off until checked on a GPU),
                           * 0 off, 1 on */
    int warp_rows;        /* chain_mma's warp-rows layout (each warp its own row tiles, the
                           * hidden values in registers): -1 auto (where the chain allows it
                           * and the rows give every SM a warp tile), 0 off, 1 on where the
                           * chain allows it */
    int stream_x_first;   /* chain_stream's TMA ring: the producer waits for X after its first
                           * tiles, so X does not queue behind the grid's first ring fill; -1
                           * auto (off until checked on a GPU), 0 off, 1 on */
    int weight_buffers;   /* chain_mma's weight ring where its weights stream: 0 auto (8
                           * buffers where every row tile has a block of its own, else 2),
                           * else that many (at most 16, fewer where shared memory ends) */
    int stream_tma;       /* chain_stream's weight copies: -1 auto (the TMA ring where the
                           * weights outgrow the L2, else cp.async), 0 cp.async by every
                           * MMA thread, 1 TMA by a producer warp into an mbarrier ring */
    const char *fault;    /* tests of the checks: a planted fault by name (src/compile/plan.c's
                             table; NULL = none) */
    int check_delay;      /* tests of the checks: rf_kernel_spec_t.check_delay, 0 = none */
    int timeline;         /* a timeline build of the weight-streaming kernel (chain_stream):
                           * each block stamps the GPU's global timer at the phases of each
                           * row tile into the scratch (python -m rowfuse.bench.timeline
                           * reads them); measured for the stamps, never timed */
    const char *python;   /* the interpreter that has the rowfuse Python package, which runs
                             the kernel generator (rowfuse.kernels.build); NULL = "python3" */
} rf_compile_options_t;

void rf_compile_options_default(rf_compile_options_t *options);

/* The planted faults (tests of the checks only), for `rowfuse compile --plant-fault list`:
 * fault i's name, what it plants and the schedules whose kernels carry it (static strings);
 * 0 when i is past the last. */
int rf_compile_fault_info(int i, const char **out_name, const char **out_what,
                          const char **out_schedules);

/* Resident blocks per SM of a kernel: shared memory and threads, and registers when
 * count_registers (and the spec knows them). */
int rf_kernel_blocks_per_sm(const rf_kernel_spec_t *spec, const rf_target_t *target,
                            int count_registers);

/* Every decision for the block (C, H from `weights`) at options->rows: the schedule and
 * why, each package schedule's kernels (or why the shape rejects it), the target. Grid
 * fields stay 0 until the generator has reported registers. No file is touched. */
rf_status_t rf_compile_plan(int64_t channels, int64_t hidden, const rf_compile_options_t *options,
                            rf_plan_t *out_plan);

/* Makes the package: decides the plan, writes weights.bin and kernel_spec.json, runs the
 * kernel generator (python -m rowfuse.kernels.build) as a tool, reads back the facts it reports
 * (kernels.json: registers, files), completes the grid rule and writes plan.json.
 * *out_plan (may be NULL) receives the plan written. */
rf_status_t rf_compile_package(const rf_mlp_weights_t *weights, const char *graph_hash,
                               const rf_compile_options_t *options, rf_plan_t *out_plan);

/* FNV-1a 64 of the weights and shape, as 16 hex digits (plan.json "graph_hash"). */
void rf_mlp_weights_hash(const rf_mlp_weights_t *weights, char out_hex[17]);

#ifdef __cplusplus
}
#endif
#endif
