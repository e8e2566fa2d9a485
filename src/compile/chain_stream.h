/* The weight-streaming schedule of a chain (src/compile, internal): one launch of a
 * `chain_stream` kernel splits the hidden dimension of an FFN-shaped chain over every SM, for
 * decode-sized row counts where the block is bound by reading its weights once.
 *
 * Chains it applies to (rf_chain_stream_shape):
 *   [norm v0 -> v1]  first: linear (epilogue: act only) or gated, of X or of the norm's value,
 *   into the hidden value h (fp16)  ->  second: linear of h, epilogue act / add of X (v0),
 *   the last stage (Y fp32). Anything else keeps the chain_mma schedule.
 *
 * The kernel (python/rowfuse/kernels/chain_stream.py reads the plan and decides nothing):
 *   block b of `blocks` owns hidden columns [b * slice, (b + 1) * slice) (the last block's
 *   slice may end past H: zero weights, zero hidden). Per row tile of `tile_rows` rows (rows
 *   padded to 16 for mma.sync m16n8k16; rows above the tile run as further tiles, each
 *   streaming the weights again): X is staged into shared memory (the norm recomputed per
 *   block from X; or, where X does not fit, streamed in k chunks beside W1: x_stream), the
 *   block's slice of W1 (Wg and Wu) streams through a `weight_buffers`-deep
 *   cp.async ring in [k_chunk1 x n_chunk1] tiles, the hidden slice is rounded to fp16 in
 *   shared memory, then multiplied into the block's rows of W2 in [k_chunk2 x n_chunk2]
 *   tiles: per output chunk j (n_chunk2 columns, the blocks start at chunk b mod n_chunks2) a
 *   partial [rows, n_chunk2] fp32 is written to global scratch and the warps go on to the
 *   next chunk, never waiting for another block. After the row tile the block arrives once
 *   at the tile's counter (a release at GPU scope), then reduces its own `reduce_cols`
 *   columns of Y: it waits until every block has arrived, adds the blocks' partials of
 *   those columns in the fixed order 0..blocks-1, adds b2, applies the epilogue and writes Y;
 *   the last block to finish reading resets the counters to 0. So every SM reduces 1/blocks
 *   of Y at once. The wait needs every block resident at once: the plan's grid is at most
 *   the target's SM count, and the runtime refuses a device with another SM count.
 *
 * Weight layout: the plan's row-major W [K, N] (chain_plan.h place_weights), so the package's
 * chain reads back unchanged: a block's W1 slice is K runs of slice * 2 bytes (128 bytes at a
 * slice of 64), its W2 slice one contiguous run of slice * N * 2 bytes.
 *
 * Weight copies (`tma`): either every MMA thread issues cp.async copies of a tile (one group
 * per tile, a barrier of the MMA warps per tile), or one producer warp (a warp beyond `warps`)
 * issues a tile as TMA boxes (the tile's [k_chunk x n_chunk] of the row-major W, swizzled as
 * the Hopper shared-memory atoms of its width) into the ring, whose stages each have a full
 * and an empty mbarrier (at mbar_offset): the MMA warps wait on the full one and release
 * the stage with one arrival a warp, so no tile needs a barrier of the block. The TMA ring's
 * stages and the matrices in a stage are 1 KB aligned (the swizzle atoms' period) and
 * smem_bytes holds 1 KB more for aligning the base; TMA needs H and N multiples of 8 (16-byte
 * global strides).
 *
 * Scratch (the runtime allocates it per row count and zeroes it once; the counters are
 * reset by the kernel): fp32 partials [blocks, rows, N] at element 0, then per row tile the
 * int32 counters (arrivals, reads) and a timeline build's stamps at element blocks * rows * N
 * (rf_chain_stream_counters_per_tile, rf_chain_stream_scratch_bytes).
 *
 * Precision: the first linear's dot products are whole in one block (the chain_mma error
 * model); the second's are split: a block accumulates its slice in fp32 by 16-product MMA
 * steps, the reducer adds the blocks' partials in order; src/chain/split.c proves the
 * split's depth within the reference's bound and the planner refuses a split it does not
 * cover.
 */
#ifndef RF_COMPILE_CHAIN_STREAM_H
#define RF_COMPILE_CHAIN_STREAM_H

#include <stdint.h>

#include "compile/chain_plan.h"

/* Cost line constants, fitted on the GPU (notes/kernels.md: the streaming kernel's spans
 * at 9 MB to 268 MB of weights at one row, chain_mma's at 1.3 and 2 MB in one row tile);
 * the planner compares the two schedules' lines, nothing else reads them. */
#define RF_STREAM_FIXED_US 11.0     /* launch, X staging, ramp, the wait and the reduction */
#define RF_STREAM_HBM_GBS 2390.0    /* weight bytes per second over every SM, in GB/s */
#define RF_STREAM_REDUCE_GBS 2000.0 /* partial bytes written and read back (mostly L2) */
#define RF_STREAM_SM_GBS 27.0       /* one block streaming weights alone (chain_mma) */
#define RF_STREAM_MMA_FIXED_US 4.0  /* chain_mma's fixed cost */
#define RF_STREAM_MAX_ROWS 64       /* auto: the schedule is a decode schedule */
/* The block's warps: two per SM scheduler, so that one warp's dependent instructions (the
 * copies' addresses, the MMA) can overlap another's between the tiles' barriers */
#define RF_STREAM_WARPS 8
/* The weight ring: the deepest that fits, up to this many buffers (about 8 KB each per
 * matrix): 64 KB or more in flight per SM, what one SM needs to draw its share of the
 * device's copy rate over the memory latency */
#define RF_STREAM_MAX_BUFFERS 12
/* ... and at least this many where X streams beside W1 (x_stream) */
#define RF_STREAM_MIN_BUFFERS 4
/* ... and a TMA ring's (its tiles may be narrower, 16 or 32 columns: more stages for the
 * same bytes in flight; a stage costs two mbarriers) */
#define RF_STREAM_TMA_MAX_BUFFERS 32
/* Scratch counters per row tile: arrivals, reads */
#define RF_STREAM_COUNTERS_PER_TILE 2
/* A timeline build's stamps per block and row tile, after the tile's counters (the low 32
 * bits of the global timer, ns, thread 0 of the block): the row tile's start (its first
 * barrier passed), X staged (the norm's statistics or the normed X ready), the hidden
 * slice done, the partials stored, the arrival, every block's arrival seen, the block's
 * share of Y written; the last is unused */
#define RF_STREAM_STAMPS 8
/* The TMA ring's alignment: its stages, each matrix's tile in a stage, and the base */
#define RF_STREAM_TMA_ALIGN 1024
/* auto (stream_tma -1) takes the TMA ring above this many weight bytes, the L2 of an H100
 * or H200: beyond it the ring streams faster than cp.async, within it slower
 * (notes/kernels.md) */
#define RF_STREAM_TMA_MIN_BYTES 50000000

typedef struct rf_chain_stream_shape {
    int norm;   /* stage index of the norm, -1: none */
    int first;  /* the linear / gated stage producing h */
    int second; /* the linear of h producing Y */
    int64_t c, h, n;
    int gated;
} rf_chain_stream_shape_t;

typedef struct rf_chain_stream_plan {
    rf_chain_stream_shape_t shape;
    int64_t rows;
    int tile_rows, row_tiles;
    int warps;     /* the block's MMA warps (a TMA plan adds one producer warp) */
    int tma;       /* weight copies by TMA from a producer warp (see above), else cp.async */
    int x_stream;  /* a wide-block form (RF_STREAM_PLAN_WIDE): X not resident, each W1
                    * tile's stage of the ring also holds X's [tile_rows x k_chunk1] chunk
                    * (cp.async ring only); the norm's statistics are computed from X in
                    * global memory and the norm applied to each chunk as it is loaded
                    * into registers. Where a row tile of the rows does not fit with X
                    * resident (wide X above 16 rows), so the weights still stream once
                    * (the tile rule in rf_chain_stream_plan_make) */
    int x_lead;    /* TMA: the producer issues this many tiles of a row tile, then waits until
                    * X is in shared memory (every block's first ring fill would otherwise
                    * queue ahead of X); 0: it does not wait (--stream-x-first) */
    int blocks;    /* the grid: one block per hidden slice */
    int64_t slice; /* hidden columns per block */
    int k_chunk1, n_chunk1, k_chunk2, n_chunk2, n_chunks2;
    int weight_buffers;
    int reduce_cols; /* Y columns each block reduces: [b * reduce_cols, (b + 1) * ...) */
    int reduce_rows; /* rows per reduction pass: the rows rounded up to a power of two, at
                      * most the tile (a pass's partials of every block fit the ring at once
                      * at few rows) */
    int64_t x_offset, x_stride, h_offset, h_stride, stats_offset;
    int64_t weight_smem_offset, ring_bytes, smem_bytes;
    int64_t mbar_offset;  /* TMA: full[weight_buffers], then empty[weight_buffers] (8 bytes each) */
    int64_t weight_bytes; /* W1 (Wg + Wu) and W2 in fp16 */
    double cost_us, mma_cost_us;
    char fault[32];  /* the generator's spelling of a planted fault, "" = none */
    int check_delay; /* a checking build (0 = none): cycles the last block's threads spin
                      * before its first partial store of a row tile, so a reducer that does
                      * not wait for every block reads the check's poison; checked, never
                      * timed */
    int timeline;    /* a timeline build: RF_STREAM_STAMPS stamps per block and row tile */
} rf_chain_stream_plan_t;

/* int32 words of scratch per row tile after the partials: its counters, and a timeline
 * build's stamps of every block. */
int64_t rf_chain_stream_counters_per_tile(const rf_chain_stream_plan_t *p);

/* Whether chain c has the FFN shape above (RF_OK, *out filled) or why not (UNSUPPORTED
 * naming the stage). */
rf_status_t rf_chain_stream_shape(const rf_chain_t *c, rf_chain_stream_shape_t *out);

/* chain_mma's cost line where it streams its weights (us): each block of `tile_rows` rows
 * streams every weight alone (RF_STREAM_SM_GBS, one SM's rate), the tiles together at most
 * at the device's (RF_STREAM_HBM_GBS), plus RF_STREAM_MMA_FIXED_US. */
double rf_chain_mma_cost_us(int64_t weight_bytes, int64_t rows, int tile_rows,
                            const rf_target_t *t);

/* rf_chain_stream_plan_make's flags: the weights copied by TMA (else cp.async); the forms
 * for wide blocks (--stream-wide): X streamed beside W1 where a row tile of the rows does
 * not fit with it resident (cp.async only), and slices of 96 columns */
#define RF_STREAM_PLAN_TMA 1
#define RF_STREAM_PLAN_WIDE 2

/* The split, tiles, shared memory and cost of chain c at `rows` on target t with `flags`
 * (RF_STREAM_PLAN_*); UNSUPPORTED when the shape does not apply, nothing fits, or TMA
 * cannot copy the weights (H or N not a multiple of 8). */
rf_status_t rf_chain_stream_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                      int flags, rf_chain_stream_plan_t *out);

/* Threads of the kernel's block: the MMA warps, and the producer warp of a TMA plan. */
int rf_chain_stream_threads(const rf_chain_stream_plan_t *p);

/* Bytes of scratch a launch at `rows` rows needs (partials, then per row tile
 * counters_per_tile int32 words: rf_chain_stream_counters_per_tile). */
int64_t rf_chain_stream_scratch_bytes(int blocks, int64_t n, int64_t rows, int tile_rows,
                                      int64_t counters_per_tile);

/* The schedule decision (compile_chain's hook), given chain_mma's plan p at `rows` on t and
 * its status `mma` (consumed: returned, annotated, or freed). With options->schedule
 * "chain-stream" the stream plan is forced (its refusal is the error); "chain" keeps
 * chain_mma; "auto" (or none) chooses chain_stream when rows <= RF_STREAM_MAX_ROWS and its
 * cost line is below chain_mma's, or
 * whenever chain_mma does not fit and the stream plan does. *out_chosen says which; when
 * chosen, p holds the chain's hash and weight offsets (planned as for chain_mma, which do
 * not depend on shared memory) and its name, warps, tile rows, shared memory and reason
 * become the stream kernel's, so the generator's facts and the grid rule read them. A
 * planted stream fault (options->fault "stream-no-fence", "stream-early-reduce",
 * "stream-no-reset" or "stream-ring-no-wait", the last with the TMA ring) forces the stream
 * plan and is refused with --schedule chain;
 * options->check_delay (a checking build) needs --schedule chain-stream. options->stream_tma
 * chooses the weight copies (1: TMA, refused where it does not apply; 0: cp.async; -1: TMA
 * above RF_STREAM_TMA_MIN_BYTES of weights where it applies, else cp.async). */
rf_status_t rf_chain_stream_choose(const rf_chain_t *c, const rf_compile_options_t *o, int64_t rows,
                                   const rf_target_t *t, rf_status_t mma, rf_chain_plan_t *p,
                                   rf_chain_stream_plan_t *out, int *out_chosen);

/* kernel_spec.json and plan.json of a chain_stream package (the chain's stages and weight
 * offsets as chain_mma's, the kernel entry mode "chain_stream"). */
rf_status_t rf_chain_stream_spec_write(const rf_chain_plan_t *p, const rf_chain_stream_plan_t *s,
                                       const char *path);
rf_status_t rf_chain_stream_plan_write(const rf_chain_plan_t *p, const rf_chain_stream_plan_t *s,
                                       const char *model, int64_t wh_offset, int64_t wf_offset,
                                       const char *path);

#endif
