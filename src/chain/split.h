/* The split reduction of a chain's linear (internal header of src/chain, used by src/compile
 * and the tests): a dot product of length k cut into `blocks` slices of `slice` terms, each
 * slice accumulated in fp32 by one block's 16-product MMA steps, the blocks' partial sums
 * then added in block order 0, 1, ..., blocks - 1 by one thread (the chain_stream kernel's
 * second linear, compile/chain_stream.h).
 *
 * The reference's bound (chain.h, RF_CHAIN_ACC_FACTOR) charges a dot product of length k
 * K' = ceil(k/16) + 1 fp32 additions on any term's path. A split term passes through at most
 * ceil(r/16) additions in its block (r: the block's real terms; steps past k add exact zeros)
 * and blocks - 1 in the ordered reduction. With slice a multiple of 16 and every block holding
 * a real term ((blocks - 1) slice < k <= blocks slice), ceil(k/16) >= (blocks - 1) slice/16 + 1,
 * and the depth exceeds K' by at most -((blocks - 2)(slice/16 - 1) + 1) < 0 for blocks >= 2:
 * the reference and its bound cover the split unchanged. rf_chain_split_covered states the
 * comparison for a given split, and the planner refuses a split it does not cover.
 *
 * rf_chain_split_emulate is a CPU model of a kernel that follows the plan with the split:
 * fp32 throughout, each MMA step's 16 products summed exactly then rounded once into the
 * fp32 accumulator, values rounded to their dtype when stored, the split stage's partials
 * reduced in block order. The tests hold it within the reference's bound, and hold a model
 * that reduces before every partial is written outside it.
 *
 * Ownership: nothing is retained; out_y is the caller's. */
#ifndef ROWFUSE_CHAIN_SPLIT_H
#define ROWFUSE_CHAIN_SPLIT_H

#include <stdint.h>

#include "chain/chain.h"

/* fp32 additions on a term's longest path: the split's (length k) and the bound's. */
int64_t rf_chain_split_depth(int64_t k, int64_t slice, int64_t blocks);
int64_t rf_chain_bound_depth(int64_t k);

/* RF_OK when the reference's bound covers the split of a length-k dot product into `blocks`
 * slices of `slice` terms (slice a positive multiple of 16, blocks * slice >= k, every block
 * with at least one real term); UNSUPPORTED with the two depths otherwise. */
rf_status_t rf_chain_split_covered(int64_t k, int64_t slice, int64_t blocks);

/* Faults of the model (tests of the bound only). */
typedef enum rf_chain_split_fault {
    RF_CHAIN_SPLIT_OK = 0,
    RF_CHAIN_SPLIT_EARLY_REDUCE, /* the reducer reads the last block's partial before it is
                                    written (the scratch's zeros) */
} rf_chain_split_fault_t;

/* Runs chain c on X (fp16 bits, [rows, in_width]) as the model above into out_y ([rows,
 * out_width], fp32), the linear stage `split_stage` (its k cut into slices of `slice`)
 * reduced in block order. Stages: linear, gated, act, add, norm. */
rf_status_t rf_chain_split_emulate(const rf_chain_t *c, const uint16_t *x, int64_t rows,
                                   int split_stage, int64_t slice, rf_chain_split_fault_t fault,
                                   float *out_y);

#endif
