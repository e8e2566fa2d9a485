/* The scheduler behind `--schedule auto`. It is a measured rule, not a cost model: on
 * the H200 (notes/kernels.md, run of 2026-12-02 with per-shape tile rows), persistent-smem
 * had the shortest GPU span of the three rowfuse schedules at every development shape,
 * from 49x48x96 (1.63 us vs 1.95 gmem, 3.17 conventional) to 8192x512x2048 (191 us vs
 * 252 gmem, 219 conventional, with 64-row tiles). The bench report keeps every loser's
 * time, so a shape where this rule loses shows up there. */
#include "rowfuse/compile.h"

const char *rf_schedule_choose(const rf_mlp_block_t *block, int64_t rows, const char **out_reason) {
    (void)block;
    (void)rows;
    *out_reason = "persistent-smem had the shortest GPU span of the rowfuse schedules at every "
                  "development shape measured on the H200 (notes/kernels.md)";
    return "persistent-smem";
}
