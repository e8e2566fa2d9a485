/* Internal to src/compile: the planner's pieces (the scheduler and its cost lines, each
 * kernel's geometry and shared memory) and the generator's input file and the reading of its
 * report. Beside src/compile only the `rowfuse schedule` command and the planner's unit tests
 * include it; everything else plans through rowfuse/compile.h. */
#ifndef RF_COMPILE_INTERNAL_H
#define RF_COMPILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

/* ---- planted faults (plan.c's table; tests of the checks only) ---- */

/* The generator's spelling of fault `name` when the fault is planted in `schedules` (its
 * entry's schedules, e.g. "chain-stream"); NULL for any other fault or a NULL name. */
const char *rf_fault_spelling(const char *name, const char *schedules);

/* ---- the scheduler (schedule.c) ---- */

/* 1 when the grid rule auto counts registers and balances tiles for schedule s. */
int rf_schedule_grid_balanced(rf_schedule_t schedule);

/* What the planner knows of one schedule at a shape: whether its kernels fit, and their
 * row tile (0: unknown, then the cost assumes every SM busy); for persistent-wgmma with
 * the blocked weight ring (w1_block > 0) the padded widths and the item width, which its
 * own cost line needs (rf_schedule_blocked_cost_us). */
typedef struct rf_schedule_fit {
    int available;
    int tile_rows;
    int w1_block, padded_channels, padded_hidden; /* 0 unless the blocked ring */
    /* the mma.sync kernels that stream their weights per row tile in more than one hidden
     * chunk (persistent-smem, -gmem, conventional at wide H): their chunks per row tile
     * over all the schedule's kernels, and those chunks' weight bytes (0: staged once) */
    int chunks;
    double chunk_bytes;
} rf_schedule_fit_t;

/* The scheduler: the schedule "auto" stands for at this shape on this target, and why
 * (written into out_reason, at most reason_size bytes). fit[s] for every schedule (NULL:
 * all available, tiles unknown); cuBLASLt is always available. */
rf_schedule_t rf_schedule_choose(int64_t rows, int64_t channels, int64_t hidden,
                                 const rf_target_t *target, const rf_schedule_fit_t *fit,
                                 char *out_reason, size_t reason_size);
/* After the generator reported its facts: with --schedule auto, a schedule whose kernels
 * spill heavily (more than RF_SPILL_LOCAL_OPS local-memory instructions in one kernel)
 * leaves the competition and the choice is made again among the others; the reason says
 * so. The cost lines assume kernels that keep their accumulators in registers. */
#define RF_SPILL_LOCAL_OPS 100
void rf_schedule_rechoose_spills(rf_plan_t *plan);
/* persistent-wgmma's cost line when its kernel runs the blocked weight ring: steps of one
 * tile per SM, each 4 x tile_rows x padded_channels x padded_hidden FLOPs at the rate of
 * its item width (w1_block 128 or 64 channels). */
double rf_schedule_blocked_cost_us(int64_t rows, int tile_rows, int padded_channels,
                                   int padded_hidden, int w1_block, int sm_count);
/* The mma.sync kernels whose weights stream per row tile in hidden chunks (more than one:
 * persistent-smem, -gmem and conventional at wide H): the serial time of the busiest
 * block, each of its ceil(tiles / SMs) row tiles a chain of `chunks` chunks, each a fixed
 * latency, and `chunk_bytes` of weights in all at one SM's rate. */
double rf_schedule_chunked_cost_us(int64_t rows, int tile_rows, int chunks, double chunk_bytes,
                                   int sm_count);
/* The fit of every schedule of a plan whose kernels are decided. */
void rf_schedule_fits(const rf_plan_t *plan, rf_schedule_fit_t fit[RF_SCHEDULE_COUNT]);
/* The cost model's predicted GPU span of schedule s at this shape, in microseconds, with
 * row tiles of tile_rows (0: unknown) on sm_count SMs. */
double rf_schedule_cost_us(rf_schedule_t schedule, int64_t rows, int64_t channels, int64_t hidden,
                           int tile_rows, int sm_count);

/* ---- kernel geometry (tiling.c, tiling_hopper.c) ---- */

/* The geometry of one kernel (the generator builds exactly this). UNSUPPORTED with the
 * reason when the shape does not fit the target (accumulator registers, shared memory). */
rf_status_t rf_kernel_geometry(rf_kernel_mode_t mode, int channels, int hidden, int tile_rows,
                               int x_prefetch, int split_w2, int y_vec2, int ring,
                               const rf_target_t *target, rf_kernel_spec_t *out_spec);
/* The geometry of the Hopper kernel (mode fused_wgmma, src/compile/tiling_hopper.c) at
 * `rows` rows: tile_rows 0 = auto (64 or 128), else 64 or 128; hidden_split -1 = auto, 0 =
 * one block per tile, 1 = a block pair per tile (UNSUPPORTED where it does not apply). UNSUPPORTED
 * with the reason when TMA's stride rule, the registers or the shared memory rule the shape out. */
rf_status_t rf_kernel_geometry_hopper(int channels, int hidden, int64_t rows, int tile_rows,
                                      int hidden_split, const rf_target_t *target,
                                      rf_kernel_spec_t *out_spec);
/* Dynamic shared memory of a fused_wgmma kernel, counted as the kernel allocates it. */
int rf_hopper_smem_bytes(const rf_kernel_spec_t *spec);
/* Bytes of one stage of a blocked weight ring (w1_block > 0), whole swizzle periods. */
int rf_hopper_stage_bytes(const rf_kernel_spec_t *spec);

/* ---- the generator's files (plan_write.c, facts.c) ---- */

/* kernel_spec.json: the target and every kernel's complete specification. */
rf_status_t rf_kernel_spec_write(const rf_plan_t *plan, const char *path);
/* The "target" key and object of a package's JSON files (plan.json, kernel_spec.json), for
 * the MLP's writer and the chains'. */
void rf_target_json_write(rf_json_writer_t *w, const rf_target_t *t);
/* Creates `path` and its missing parents (mkdir -p); an existing folder is fine. */
rf_status_t rf_compile_mkdir_p(const char *path);
/* Runs the kernel generator (`python -m rowfuse.kernels.build`, options->python or python3)
 * on OUT_DIR/kernel_spec.json; it writes the kernels, the library and kernels.json (facts)
 * into the package. */
rf_status_t rf_compile_run_generator(const rf_compile_options_t *options);

/* Reads the facts the generator reported in `path` (kernels.json): each kernel's
 * registers (matched by name) and the generator's name and version. */
rf_status_t rf_kernel_facts_read(const char *path, rf_plan_t *plan);

#endif
