/* The plan of a chain block (src/compile, internal): every number of its chain_mma kernel,
 * decided here, and the package files written from it (kernel_spec.json, weights.bin,
 * plan.json). The generator (rowfuse.kernels.build, chain_mma.py) reads the spec and decides
 * nothing; the runtime reads plan.json's "chain" object and the kernel entry; src/chain's
 * loader reads the chain back from plan.json + weights.bin.
 *
 * Geometry (rf_chain_plan_make):
 *   tile_rows  64, 32 or 16: the largest whose row tiles still give every SM one
 *              (rows >= tile_rows x SMs) and whose shared memory fits; 16 otherwise. warps:
 *              4 (8 at 64 rows).
 *   chunks     per linear / gated stage: k_chunk = min(64, K rounded up to 16) and k_pad = K
 *              rounded up to k_chunk; n_chunk = min(64, N rounded up to 16) and n_pad = the
 *              dst's padded width rounded up to n_chunk.
 *   values     padded_width = width rounded up to 16, raised to the k_pad of every matmul that
 *              reads it; row_stride = padded_width + 16 bytes (8 fp16 / 4 fp32) against bank
 *              conflicts; slots 128-byte aligned, first fit in stage order, a slot reused by
 *              a value whose lifetime (producing stage .. last reading stage) does not
 *              overlap; Y (the last value) goes from registers to global (smem_offset -1).
 *   ring       weight_smem_offset = end of the value slots (128-aligned); each of the
 *              weight_buffers (2, or 1 when 2 do not fit; deeper on request,
 *              rf_chain_plan_ring_depth) holds the largest W tile of any stage:
 *              mats x k_chunk x (n_chunk + RF_SMEM_ROW_PAD) fp16 (mats 2 for gated).
 *   resident   the whole chain's kernel whose weights take at most RF_CHAIN_RESIDENT_MAX
 *              bytes keeps them all in shared memory instead (weight_buffers 0): each stage's
 *              W at its w_smem (bytes from weight_smem_offset, 128-aligned, in stage order),
 *              [k_pad x (n_pad + RF_SMEM_ROW_PAD)] fp16 per matrix (gated: Wg then Wu), loaded
 *              once per block before its first row tile; no weight traffic and no barrier
 *              per k chunk after that, one barrier per stage.
 *   weights    wh (fp16): each stage's W [K, N] row-major (gated: Wg then Wu); wf (fp32):
 *              biases, gamma, beta; every offset a multiple of 8 elements.
 *   warp rows  (rf_chain_plan_warp_rows) a resident chain of linears with activations, every
 *              width at most RF_CHAIN_WARP_ROWS_MAX, may instead give each warp its own
 *              tiles of warp_tile_rows rows: the hidden values stay in the warp's registers
 *              from one linear to the next (an accumulator tile is the next MMA's A
 *              operand), so no value but X has a slot and no block barrier follows the
 *              weights' load. warp_tile_rows is 32 (two MMA row tiles sharing each B
 *              fragment read from shared memory) where every padded width is at most
 *              RF_CHAIN_WARP_ROWS_PAIR_MAX, else 16; 4 warps, tile_rows = 4 x
 *              warp_tile_rows. X's slot holds x_buffers (2) tiles of tile_rows rows: each
 *              warp stages its next tile's X while it computes the current one.
 * A chain that does not fit the target's shared memory at 16 rows and one buffer is
 * RF_CODE_UNSUPPORTED naming the stage where the values live across need the most.
 */
#ifndef RF_COMPILE_CHAIN_PLAN_H
#define RF_COMPILE_CHAIN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "chain/chain.h"
#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

/* a rounded up to a multiple of b, and a / b rounded up (a >= 0, b > 0): the planners'
 * tile, alignment and grid arithmetic */
static inline int64_t rf_round_up(int64_t a, int64_t b) {
    return (a + b - 1) / b * b;
}

static inline int64_t rf_div_up(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

typedef struct rf_chain_value_plan {
    int64_t padded_width, row_stride;
    int64_t smem_offset; /* bytes; -1: not in shared memory (Y) */
    int64_t slot_bytes;
    int first, last; /* lifetime in stages: produced at `first` (-1 for X), last read at `last` */
} rf_chain_value_plan_t;

/* Weights of at most this many bytes (padded tiles) stay resident in the whole chain's kernel. */
#define RF_CHAIN_RESIDENT_MAX (64 * 1024)
/* The warp-rows layout's widest value (padded): a warp's 16 x 128 fp32 accumulators take 64
 * registers a thread; and the widest with 32-row warp tiles (32 x 64: 64 registers). */
#define RF_CHAIN_WARP_ROWS_MAX 128
#define RF_CHAIN_WARP_ROWS_PAIR_MAX 64
/* The deepest weight ring of a chain_mma kernel (rf_chain_plan_ring_depth; the generator's
 * MAX_BUFFERS) */
#define RF_CHAIN_MAX_BUFFERS 16
/* ... and auto's depth where every row tile has a block of its own (chain_package.c) */
#define RF_CHAIN_AUTO_BUFFERS 8

typedef struct rf_chain_stage_plan {
    int64_t w_smem; /* resident weights (weight_buffers 0): bytes from weight_smem_offset */
    int64_t k_pad, n_pad;
    int k_chunk, n_chunk;
    int64_t w, wu;              /* element offsets into wh; -1: none */
    int64_t b, bu, gamma, beta; /* element offsets into wf; -1: none */
    int a_stream;               /* a range kernel's matmul whose input streams through the ring in
                                   [tile_rows x k_chunk] tiles beside W (no slot): rf_chain_plan_range */
} rf_chain_stage_plan_t;

typedef struct rf_chain_plan {
    const rf_chain_t *chain;    /* borrowed */
    int first_stage, end_stage; /* the kernel runs stages [first_stage, end_stage) */
    char name[RF_KERNEL_NAME_MAX];
    char hash[17]; /* FNV-1a 64 of the chain's structure and weights */
    rf_target_t target;
    int64_t rows;
    int tile_rows, warps, weight_buffers;
    int warp_rows, x_buffers, warp_tile_rows; /* the warp-rows layout (above); else all 0 */
    int ring_ahead; /* rf_chain_plan_ring_depth: the ring runs ahead across the stages */
    int64_t smem_bytes, weight_smem_offset, ring_bytes;
    rf_chain_value_plan_t values[RF_CHAIN_MAX_STAGES + 1];
    rf_chain_stage_plan_t stages[RF_CHAIN_MAX_STAGES];
    int64_t wh_elems, wf_elems;
    int64_t aux_row; /* the conventional schedule's scratch, fp16 elements per row; else 0 */
    char reason[384];
    /* facts from the generator and the grid rule */
    int registers, local_ops, blocks_per_sm, grid_balanced;
    char generator[128];
} rf_chain_plan_t;

/* A linear or gated stage (a matmul). */
int rf_chain_stage_is_mm(const rf_chain_stage_t *s);
/* Every value stage s reads into out (its input first, then the second operand, then the
 * epilogue's operands); returns how many (at most 2 + RF_CHAIN_MAX_EPILOGUE). */
int rf_chain_stage_reads(const rf_chain_stage_t *s, int *out);

/* Decides the plan of chain c for `rows` rows on target t; tile_rows 0 = auto, else 16,
 * 32 or 64 (UNSUPPORTED when that tile does not fit). No file is touched. */
rf_status_t rf_chain_plan_make(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                               int tile_rows, rf_chain_plan_t *out_plan);

/* Deepens the weight ring of plan p (one that streams its weights: weight_buffers 1 or 2)
 * to `buffers` buffers, or to the deepest below that which fits target t's shared memory,
 * at most RF_CHAIN_MAX_BUFFERS: the ring then runs that many tiles minus one ahead
 * (python/rowfuse/kernels/chain_mma.py), so one block has more weight bytes in flight;
 * within a stage, or (ring_ahead) across the row tile's stages in the whole chain's kernel
 * without a streamed input, the first tiles in flight beside X. Returns the depth p has
 * after (unchanged where resident or already as deep). */
int rf_chain_plan_ring_depth(rf_chain_plan_t *p, const rf_target_t *t, int buffers);

/* Lays out the whole chain's plan p (rf_chain_plan_make's, resident) in the warp-rows layout
 * (above) with warp tiles of warp_tile_rows rows (0: the rule above, else 16 or 32) and
 * returns 1; returns 0 and leaves p as it was, with why saying which rule the chain breaks,
 * where the layout does not apply or does not fit the target. */
int rf_chain_plan_warp_rows(const rf_chain_t *c, const rf_target_t *t, int warp_tile_rows,
                            rf_chain_plan_t *p, char *why, size_t why_size);

/* The kernel of stages [first, end) of c (the conventional schedule's kernels,
 * compile/chain_conv.h), laid out as rf_chain_plan_make lays out the whole chain: only the
 * values the range reads get a slot, a value produced before `first` is staged from global
 * memory at each tile's start and lives from the range's start. With stream_inputs, a tile
 * that does not fit so may stream a matmul's input instead, when that input comes from
 * before the range and nothing else in the range reads it: its [tile_rows x k_chunk] tiles
 * go through the weight ring beside W (each ring buffer grows by one such tile) and it has
 * no slot; the largest tile that fits either way wins, without streaming at a tie.
 * rf_chain_plan_make is the range [0, n_stages) without streaming. */
rf_status_t rf_chain_plan_range(const rf_chain_t *c, int64_t rows, const rf_target_t *t,
                                int tile_rows, int first, int end, int stream_inputs,
                                rf_chain_plan_t *out_plan);

/* The files (chain_package.c). The JSON pieces are shared with the chain_stream writer
 * (chain_stream.c): the "values" list (with the shared-memory layout or not) and the
 * "stages" list, each as a key of the open object. */
void rf_chain_json_values(rf_json_writer_t *w, const rf_chain_plan_t *p, int with_layout);
void rf_chain_json_stages(rf_json_writer_t *w, const rf_chain_plan_t *p);
/* The files (chain_package.c). */
rf_status_t rf_chain_weights_write(const rf_chain_plan_t *p, const char *path,
                                   int64_t *out_wh_offset, int64_t *out_wf_offset);
rf_status_t rf_chain_spec_write(const rf_chain_plan_t *p, const char *path);
/* The two files for any chain kernel mode: `entry` writes the kernel's entry object (with
 * the generator's facts when with_facts), everything else is the chain's. */
typedef void (*rf_chain_entry_fn)(rf_json_writer_t *w, const rf_chain_plan_t *p, const void *ctx,
                                  int with_facts);
rf_status_t rf_chain_spec_write_entry(const rf_chain_plan_t *p, rf_chain_entry_fn entry,
                                      const void *ctx, const char *path);
rf_status_t rf_chain_plan_write_entry(const rf_chain_plan_t *p, const char *schedule,
                                      rf_chain_entry_fn entry, const void *ctx, const char *model,
                                      int64_t wh_offset, int64_t wf_offset, const char *path);
rf_status_t rf_chain_plan_write(const rf_chain_plan_t *p, const char *model, int64_t wh_offset,
                                int64_t wf_offset, const char *path);

/* `rowfuse compile MODEL` for a model that is a chain and not the residual MLP (which keeps
 * its schedules): verifies, matches, plans, writes weights.bin and kernel_spec.json, runs
 * the generator, reads its facts and writes plan.json. *out_handled = 0 (and RF_OK) when
 * the model is the residual MLP, for the MLP path to take it; a model that is neither is
 * the chain matcher's refusal. out_plan (may be NULL) receives the plan (its chain pointer
 * is not valid after the call). */
rf_status_t rf_compile_chain_model(const char *model, const rf_compile_options_t *options,
                                   int *out_handled, rf_chain_plan_t *out_plan);

/* --schedule chain or chain-stream: the schedules of a chain package. */
int rf_compile_is_chain_schedule(const char *schedule);

/* The residual MLP of `weights` (a model's or --mlp's seeded ones) as the chain
 * linear(+ b1, relu) -> fp16 H -> linear(+ b2, + X, relu) -> fp32 Y (the caller destroys
 * it), and that chain compiled into a chain package like rf_compile_chain_model's
 * (options->schedule chain or chain-stream). */
rf_status_t rf_chain_from_mlp(const rf_mlp_weights_t *weights, rf_chain_t **out_chain);
rf_status_t rf_compile_chain_mlp(const rf_mlp_weights_t *weights,
                                 const rf_compile_options_t *options, rf_chain_plan_t *out_plan);

#endif
