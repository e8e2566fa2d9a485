/* The package contract: what `rowfuse compile` decides and the runtime executes.
 *
 * A package directory holds
 *   plan.json           this contract (rf_plan_t), written only by src/compile
 *                       (rf_plan_write) and read only by src/runtime (rf_plan_read)
 *   weights.bin         the block's constants; plan.json gives each one's dtype, shape,
 *                       byte offset and size
 *   librowfuse_pkg.so   the kernels plus the checked-in shim src/pkg/rf_pkg_shim.c
 *                       (rowfuse/kernel_abi.h), built by the kernel generator from the
 *                       specification C wrote (kernel_spec.json)
 *   kernels/            each kernel's PTX, DSL IR, cubin and SASS, kept for inspection
 *
 * Every decision lives here once: the schedule and why, each kernel's geometry (tile rows,
 * warps, padded extents, hidden chunk, shared-memory bytes), the persistent-grid rule
 * (blocks per SM, from shared memory, threads and the registers the generator reported),
 * the target device (SM count, shared memory), the kernel entry names in the library's
 * order, and the source graph's hash. The kernel generator receives a complete
 * specification and decides nothing; the runtime computes a launch's grid from the
 * recorded rule and the row count (rows are dynamic) and nothing else.
 *
 * Names shared with Python (schedules, kernel modes) live in the two X-macro lists below;
 * python/rowfuse/capi/names.py parses them out of this header, so no list is copied by hand.
 *
 * Errors: rf_plan_read names the file and the field; a plan of another version is
 * RF_CODE_UNSUPPORTED with both versions. Nothing is retained.
 */
#ifndef ROWFUSE_PLAN_H
#define ROWFUSE_PLAN_H

#include <stdint.h>

#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a field's meaning changes; packages of another version are refused. */
#define RF_PLAN_VERSION 5

/* fp16 elements added to every shared-memory row of a kernel's tiles (16 bytes: ldmatrix
 * rows land in different banks). Part of the layout the planner counts and the generator
 * allocates; kernel_spec.json carries it as "smem_row_pad". */
#define RF_SMEM_ROW_PAD 8

/* ---- the one table of schedule names (Python parses these two lists) ---- */
/* X(ENUM, "name", "what it is"), in report order. */
#define RF_SCHEDULE_LIST(X)                                                                        \
    X(PERSISTENT_SMEM, "persistent-smem", "one launch, H in shared memory")                        \
    X(PERSISTENT_GMEM, "persistent-gmem", "one launch, H through global memory")                   \
    X(CONVENTIONAL, "conventional", "two launches: proj1, proj2")                                  \
    X(PERSISTENT_WGMMA, "persistent-wgmma", "one launch, wgmma + TMA, hidden chunks streamed")     \
    X(CUBLASLT, "cublaslt", "the vendor baseline: cuBLASLt GEMMs with epilogues")

#define RF_SCHEDULE_ENUM_(e, name, what) RF_SCHEDULE_##e,
typedef enum rf_schedule { RF_SCHEDULE_LIST(RF_SCHEDULE_ENUM_) RF_SCHEDULE_COUNT } rf_schedule_t;
#undef RF_SCHEDULE_ENUM_

/* "persistent-smem", ...; NULL for a value out of range. */
const char *rf_schedule_name(rf_schedule_t schedule);
/* Parses a schedule name. INVALID_ARGUMENT listing the known names otherwise. */
rf_status_t rf_schedule_parse(const char *name, rf_schedule_t *out_schedule);

/* ---- the one table of kernel modes (what one generated kernel computes) ---- */
#define RF_KERNEL_MODE_LIST(X)                                                                     \
    X(FUSED_SMEM, "fused_smem", "both projections, H in shared memory")                            \
    X(FUSED_GMEM, "fused_gmem", "both projections, H through global memory")                       \
    X(PROJ1, "proj1", "H = fp16(ReLU(X W1 + b1))")                                                 \
    X(PROJ2, "proj2", "Y = ReLU(H W2 + b2 + X)")                                                   \
    X(FUSED_WGMMA, "fused_wgmma", "both projections, wgmma + TMA rings, H chunk on chip")

#define RF_KERNEL_MODE_ENUM_(e, name, what) RF_KERNEL_##e,
typedef enum rf_kernel_mode {
    RF_KERNEL_MODE_LIST(RF_KERNEL_MODE_ENUM_) RF_KERNEL_MODE_COUNT
} rf_kernel_mode_t;
#undef RF_KERNEL_MODE_ENUM_

const char *rf_kernel_mode_name(rf_kernel_mode_t mode); /* "fused_smem", ... */
rf_status_t rf_kernel_mode_parse(const char *name, rf_kernel_mode_t *out_mode);

/* The kernels of a schedule, in launch order; returns how many (0 for cublaslt). */
int rf_schedule_kernel_modes(rf_schedule_t schedule, rf_kernel_mode_t out_modes[2]);

/* ---- the device a package is built for ---- */
typedef struct rf_target {
    char name[32];         /* "h200" */
    char arch[16];         /* "sm_90a" */
    int sm_count;          /* multiprocessors */
    int smem_per_block;    /* dynamic shared memory one block may use, bytes */
    int smem_per_sm;       /* shared memory of one SM, bytes */
    int smem_reserved;     /* bytes the driver reserves per resident block */
    int regs_per_sm;       /* 32-bit registers per SM */
    int threads_per_sm;    /* resident threads per SM */
    int max_blocks_per_sm; /* resident blocks per SM */
} rf_target_t;

/* Known targets by name ("h200", "h100-sxm", "h100-pcie"). NOT_FOUND lists them. */
rf_status_t rf_target_lookup(const char *name, rf_target_t *out_target);

/* ---- one kernel: the complete specification the generator receives ---- */
#define RF_KERNEL_NAME_MAX 64
typedef struct rf_kernel_spec {
    char name[RF_KERNEL_NAME_MAX]; /* entry prefix, also the file stem under kernels/ */
    rf_kernel_mode_t mode;
    int channels, hidden;
    int tile_rows;        /* rows per tile (16, 32, 64; fused_wgmma: 64, 128) */
    int warps_m, warps_n; /* warp grid of the MMA tile: threads = 32 warps_m warps_n
                           * (fused_wgmma: warps_m / 4 warpgroups along the rows, each
                           * 64 rows, times warps_n warpgroups along the channels; with
                           * the blocked ring one producer warpgroup more) */
    int padded_channels;  /* channels padded to 16 warps_n (fused_wgmma: to 16) */
    int padded_hidden;    /* hidden padded to 16 warps_n (fused_wgmma: whole chunks) */
    int hidden_chunk;     /* hidden columns per chunk (divides padded_hidden) */
    int weight_buffers;   /* 1: staged once or single-buffered; 2: double-buffered
                           * (fused_wgmma: the stages of the chunk ring, 1 = resident) */
    int x_stages;         /* fused_wgmma: X tiles in the TMA ring (0 for other modes) */
    int cluster_h;        /* fused_wgmma: blocks of a cluster that split a tile's hidden
                           * units (1, or 2: each runs half the chunks, the Y partial sums
                           * meet through distributed shared memory); 1 for other modes */
    int w1_block;         /* fused_wgmma, two warpgroups along the channels, streamed
                           * weights: a ring of blocks of a chunk (0 = of whole chunks):
                           * W1 items of w1_block channels x hidden_chunk, */
    int w2_block;         /* and W2 items of w2_block hidden units x padded_channels */
    int smem_bytes;       /* dynamic shared memory of one block */
    int x_prefetch;       /* double-buffer X across a block's tiles */
    int split_w2;         /* W2/b2 in their own cp.async group */
    int y_vec2;           /* 8-byte Y stores */
    int ring;             /* 3 X / 2 H buffers, 2 barriers a tile (experimental) */
    int min_blocks;       /* ptxas launch bound, 0 = none (experimental) */
    char fault[16];       /* tests of the gates only: a planted fault ("" = none) */
    int check_delay;      /* a checking build (0 = none): cycles half the copying warps
                           * (every TMA producer) spin before each asynchronous copy, so
                           * a read that skips its wait sees the check's poison; such a
                           * package is checked, never timed */
    /* facts the generator reports back (kernels.json) */
    int registers; /* per thread, from the cubin; 0 = unknown */
    int local_ops; /* SASS instructions on local memory (spills), from the cubin; -1 = unknown */
    /* the persistent grid, decided in C once the registers are known */
    int blocks_per_sm; /* resident blocks per SM this kernel gets */
    int grid_balanced; /* 1: as few blocks as give each the same tile count */
} rf_kernel_spec_t;

/* Threads of one block: the MMA warps, plus (fused_wgmma with the blocked ring) one
 * producer warpgroup that only issues the TMA loads, so the consumers never wait for each
 * other to refill the ring. */
static inline int rf_kernel_spec_threads(const rf_kernel_spec_t *k) {
    int producer = k->mode == RF_KERNEL_FUSED_WGMMA && k->w1_block > 0 ? 128 : 0;
    return 32 * k->warps_m * k->warps_n + producer;
}

/* Blocks that share one row tile (cluster_h; 1 for a spec that leaves it unset). */
static inline int rf_kernel_spec_blocks_per_tile(const rf_kernel_spec_t *k) {
    return k->cluster_h > 1 ? k->cluster_h : 1;
}

/* ---- the plan ---- */
#define RF_PLAN_MAX_KERNELS 8
#define RF_PLAN_WEIGHTS 4 /* w1, b1, w2, b2 */

typedef struct rf_plan_schedule {
    int available;      /* 1 when the package can run it */
    int kernel_count;   /* kernels one launch enqueues */
    int kernel[2];      /* indices into rf_plan_t.kernels, launch order */
    char rejected[256]; /* why the package lacks it ("" when available) */
} rf_plan_schedule_t;

typedef struct rf_plan_weight {
    char name[8]; /* "w1", "b1", "w2", "b2" */
    int dtype;    /* rf_dtype_t */
    int rank;
    int64_t dims[2];
    int64_t offset; /* byte offset in weights.bin (64-byte aligned) */
    int64_t bytes;
} rf_plan_weight_t;

typedef struct rf_plan {
    int version;         /* RF_PLAN_VERSION */
    char model[256];     /* source model path, or "mlp:RxCxH seed S" */
    char graph_hash[17]; /* FNV-1a 64 of the block's constants and shape, hex */
    int64_t rows, channels, hidden;
    rf_schedule_t schedule; /* the scheduler's (or the user's) choice */
    char reason[256];       /* why */
    rf_target_t target;
    int max_grid; /* cap on blocks per launch, 0 = none (tests) */
    rf_plan_schedule_t schedules[RF_SCHEDULE_COUNT];
    int kernel_count;
    rf_kernel_spec_t kernels[RF_PLAN_MAX_KERNELS]; /* the library's order */
    rf_plan_weight_t weights[RF_PLAN_WEIGHTS];
    char library[64];    /* "librowfuse_pkg.so" */
    char generator[128]; /* the generator and its DSL version */
} rf_plan_t;

/* Blocks of a persistent launch for `rows` under kernel k's recorded rule:
 * min(tiles, sm_count * blocks_per_sm [, max_grid]), balanced when the kernel says so. */
int32_t rf_plan_grid(const rf_plan_t *plan, const rf_kernel_spec_t *k, int64_t rows);

/* Writes plan.json (src/compile only). */
rf_status_t rf_plan_write(const rf_plan_t *plan, const char *path);
/* Reads plan.json into *out_plan (src/runtime only). */
rf_status_t rf_plan_read(const char *path, rf_plan_t *out_plan);

#ifdef __cplusplus
}
#endif
#endif
