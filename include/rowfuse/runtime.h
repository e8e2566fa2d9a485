/* rowfuse C runtime: runs a compiled block on a CUDA GPU: the residual MLP (below) or a
 * chain of row-local stages (rf_chain_pkg_t, further down).
 *
 * Block (M rows, C channels, H hidden; row-major, contiguous device buffers):
 *   H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)
 *   X [M,C] fp16, W1 [C,H] fp16, b1 [H] f32, W2 [H,C] fp16, b2 [C] f32, Y [M,C] f32,
 *   H [M,H] fp16 scratch (used by schedules that route H through global memory).
 *
 * Pieces:
 *   rf_pkg_t       a package directory made by `rowfuse compile`: plan.json (rowfuse/plan.h),
 *                  the kernels' shared library (kernel_abi.h) and weights.bin.
 *   rf_variant_t   one way to enqueue the block on a stream: a package schedule
 *                  (the names of RF_SCHEDULE_LIST in rowfuse/plan.h: "persistent-smem",
 *                  "persistent-gmem", "conventional", "persistent-wgmma") or the vendor
 *                  baseline "cublaslt" (cuBLASLt matmuls with epilogues, see cublaslt.c).
 *   rf_exec_t      a variant captured into a CUDA Graph on a caller's stream, replayable.
 *   rf_mlp_buffers_t  device buffers for one shape (or wrap caller device pointers in a
 *                  plain rf_mlp_args_t instead: every launch takes rf_mlp_args_t).
 *
 * Ownership: what *_create / *_load returns is the caller's and is released by the
 * matching *_destroy (which accepts NULL). Getters lend: strings and pointers stay valid
 * until the owner is destroyed. A variant made from a package retains (borrows) the
 * package: destroy variants and execs before their package. An exec borrows its variant
 * and the device buffers named in the args it was captured with: they must outlive it.
 * Streams are cudaStream_t passed as void*; NULL is the legacy default stream, which
 * cannot be captured (capture needs a stream the caller created).
 *
 * Errors: every fallible function returns rf_status_t (NULL = OK). A failed CUDA, driver
 * or cuBLASLt call becomes RF_CODE_CUDA_ERROR with the call and the library's error name
 * ("cudaMalloc(Y, 784 bytes): cudaErrorMemoryAllocation: out of memory"). No usable GPU
 * (no device, no driver, a stub driver) is RF_CODE_NO_DEVICE. The runtime never prints,
 * exits or aborts. Functions are not thread-safe on the same object.
 */
#ifndef ROWFUSE_RUNTIME_H
#define ROWFUSE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/alloc.h"
#include "rowfuse/kernel_abi.h"
#include "rowfuse/plan.h"
#include "rowfuse/status.h"
#include "rowfuse/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device ---- */

typedef struct rf_device_info {
    int ordinal;
    char name[128];
    int cc_major, cc_minor;
    int sm_count;
    int driver_version;  /* e.g. 13000 */
    int runtime_version; /* the CUDA runtime rowfuse was linked with */
    size_t total_mem;
    int clock_khz;     /* SM clock, 0 when the runtime does not report it */
    int mem_clock_khz; /* memory clock, 0 when not reported */
} rf_device_info_t;

/* Makes device `ordinal` current and fills *out_info. RF_CODE_NO_DEVICE when there is no
 * GPU or no working driver; RF_CODE_INVALID_ARGUMENT for an ordinal out of range. */
rf_status_t rf_device_open(int ordinal, rf_device_info_t *out_info);

/* Number of visible devices (0 without a GPU or driver; never an error). */
int rf_device_count(void);

/* Creates / destroys a non-blocking stream (void* = cudaStream_t). */
rf_status_t rf_stream_create(void **out_stream);
void rf_stream_destroy(void *stream);
rf_status_t rf_stream_sync(void *stream);

/* ---- device buffers for one shape ---- */

typedef struct rf_mlp_buffers {
    rf_mlp_args_t args; /* device pointers, rows filled in */
    int64_t rows, channels, hidden;
} rf_mlp_buffers_t;

/* cudaMalloc's X, W1, b1, W2, b2, H and Y for the shape (init-style: *out is caller
 * storage). rows >= 1, channels and hidden >= 1. */
rf_status_t rf_mlp_buffers_alloc(int64_t rows, int64_t channels, int64_t hidden,
                                 rf_mlp_buffers_t *out_buffers);
void rf_mlp_buffers_free(rf_mlp_buffers_t *buffers);
/* Copies host data in (synchronously). x, w1, w2 are fp16 bit patterns (uint16_t), b1,
 * b2 f32; any of them may be NULL to leave that buffer as it is. */
rf_status_t rf_mlp_buffers_upload(rf_mlp_buffers_t *buffers, const uint16_t *x, const uint16_t *w1,
                                  const float *b1, const uint16_t *w2, const float *b2);
/* Fills Y and H with NaN bit patterns (all bits set) on `stream`. */
rf_status_t rf_mlp_buffers_poison(rf_mlp_buffers_t *buffers, void *stream);
/* Fills every byte of Y and H with `byte` (0x42: the finite sentinel 48.56 in f32, 3.13 in
 * fp16, which a kernel that skips an element leaves behind without a NaN). */
rf_status_t rf_mlp_buffers_fill(rf_mlp_buffers_t *buffers, unsigned char byte, void *stream);
/* Copies Y [rows*channels] f32 back to host memory (synchronizes the device). */
rf_status_t rf_mlp_buffers_download_y(const rf_mlp_buffers_t *buffers, float *out_y);

/* ---- packages ---- */

typedef struct rf_pkg rf_pkg_t;

/* Loads a package directory: reads plan.json (a plan of another version is UNSUPPORTED),
 * dlopens its kernel library, checks the ABI version and that the library holds the
 * plan's kernels for its shape, that the device has the SM count the plan's grid rule
 * assumes (MISMATCH otherwise), and calls rf_pkg_init (which needs a GPU: without one this
 * is RF_CODE_NO_DEVICE). Weights are read lazily by rf_pkg_weight. Errors name the file
 * and field. */
rf_status_t rf_pkg_load(rf_allocator_t allocator, const char *dir, rf_pkg_t **out_pkg);
/* Same, but only parses plan.json and resolves the library; no CUDA call is made.
 * Used by tools that inspect packages without a GPU. */
rf_status_t rf_pkg_load_nogpu(rf_allocator_t allocator, const char *dir, rf_pkg_t **out_pkg);
void rf_pkg_destroy(rf_pkg_t *pkg);

const char *rf_pkg_dir(const rf_pkg_t *pkg);
int64_t rf_pkg_channels(const rf_pkg_t *pkg);
int64_t rf_pkg_hidden(const rf_pkg_t *pkg);
int64_t rf_pkg_rows(const rf_pkg_t *pkg);         /* rows the plan was made for */
int64_t rf_pkg_tile_rows(const rf_pkg_t *pkg);    /* 0 if the plan does not say */
const char *rf_pkg_schedule(const rf_pkg_t *pkg); /* the scheduler's choice */
/* The package's whole contract, as read from plan.json (lent). */
const rf_plan_t *rf_pkg_plan(const rf_pkg_t *pkg);
/* plan.json's graph_hash: rf_mlp_weights_hash of the weights it was compiled from. */
const char *rf_pkg_graph_hash(const rf_pkg_t *pkg);
/* Kernels one launch of `schedule` enqueues (>= 1), or -1 if the package lacks it. */
int rf_pkg_kernel_count(const rf_pkg_t *pkg, const char *schedule);
/* Reads weight `name` ("w1", "b1", "w2", "b2") from weights.bin, where plan.json says, into
 * *out_tensor (init-style; free with rf_tensor_free and the package's allocator).
 * RF_CODE_NOT_FOUND if plan.json does not name it. */
rf_status_t rf_pkg_weight(const rf_pkg_t *pkg, const char *name, rf_tensor_t *out_tensor);
/* Uploads w1, b1, w2, b2 from the package into `buffers` (shapes must match). */
rf_status_t rf_pkg_upload_weights(const rf_pkg_t *pkg, rf_mlp_buffers_t *buffers);
/* The same into caller-owned device arrays (W1 [C,H] fp16, b1 [H] f32, W2 [H,C] fp16,
 * b2 [C] f32 of the package's shape). */
rf_status_t rf_pkg_upload_weights_to(const rf_pkg_t *pkg, void *w1, void *b1, void *w2, void *b2);

/* ---- variants ---- */

typedef struct rf_variant rf_variant_t;

/* A package schedule. RF_CODE_NOT_FOUND if the package does not contain it. "cublaslt"
 * (which a plan may choose) gives the cuBLASLt variant for the package's shape. */
rf_status_t rf_variant_create_pkg(rf_allocator_t allocator, rf_pkg_t *pkg, const char *schedule,
                                  rf_variant_t **out_variant);
/* The cuBLASLt baseline for (channels, hidden). Allocates a workspace on the device. The
 * first launch for a row count (eager or captured) tunes it on the caller's buffers: the
 * heuristic's top 8 algorithms timed, the best kept, the record in rf_variant_note; W1
 * and b1 are then constants and must not change under the same pointers (cublaslt.c). */
rf_status_t rf_variant_create_cublaslt(rf_allocator_t allocator, int64_t channels, int64_t hidden,
                                       rf_variant_t **out_variant);
void rf_variant_destroy(rf_variant_t *variant);

const char *rf_variant_name(const rf_variant_t *variant); /* the schedule name */
/* Free-form note on how the variant computes (e.g. cuBLASLt's bias types); "" if none. */
const char *rf_variant_note(const rf_variant_t *variant);
/* Kernel nodes a capture must hold: at least *out_min and, when *out_exact is 1, exactly
 * that many (packages say exactly; cuBLASLt may pick algorithms of several kernels). */
void rf_variant_expected_kernels(const rf_variant_t *variant, int *out_min, int *out_exact);

/* Enqueues the block on `stream` (eager: no graph). args->rows >= 1. */
rf_status_t rf_variant_launch(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream);

/* ---- CUDA Graph capture and replay ---- */

typedef struct rf_exec rf_exec_t;

/* Captures one launch of `variant` with `args` on `stream` (a stream the caller created),
 * instantiates it, and checks that the graph holds the expected number of kernel nodes:
 * a graph with none (e.g. the kernels went to another stream) is RF_CODE_INTERNAL with a
 * message saying so. The args' buffers must outlive the exec. */
rf_status_t rf_exec_capture(rf_allocator_t allocator, rf_variant_t *variant,
                            const rf_mlp_args_t *args, void *stream, rf_exec_t **out_exec);
void rf_exec_destroy(rf_exec_t *exec);
/* Enqueues one replay on `stream` (any stream of the same device). */
rf_status_t rf_exec_replay(rf_exec_t *exec, void *stream);
int rf_exec_kernel_nodes(const rf_exec_t *exec); /* kernel nodes found after capture */
int rf_exec_nodes(const rf_exec_t *exec);        /* all nodes */

/* ---- chain packages (chain.c) ----
 *
 * A chain package (plan.json with a "chain" object) holds one chain_mma kernel: a chain of
 * row-local stages mapping X [M, C] fp16 to Y [M, N_out] f32 (kernel_abi.h), its weights in
 * two arrays wh (fp16) and wf (f32) in weights.bin; or one chain_stream kernel; or, for the
 * chain's conventional schedule, one chain_mma kernel per segment, launched in order, with
 * the values between them in a scratch buffer (args.scratch: 2 * rows * chain.aux_row bytes,
 * at least 16). An rf_chain_exec_t owns the device
 * buffers of one row count (X, Y, wh, wf, the weights uploaded once) and one launch of the
 * kernel, on the plan's grid for that row count, captured into a CUDA Graph; it borrows its
 * package, which must outlive it. */
typedef struct rf_chain_pkg rf_chain_pkg_t;
typedef struct rf_chain_exec rf_chain_exec_t;

/* 1 when `dir` holds a plan.json with a "chain" object, else 0 (unreadable plans too:
 * rf_chain_pkg_load says what is wrong with them). No CUDA call. */
int rf_chain_pkg_probe(const char *dir);
/* Reads the chain part of plan.json, dlopens the kernel library, checks its ABI version,
 * widths and kernel name against the plan and the device's SM count against the plan's
 * target, and initialises the kernels (needs a GPU: RF_CODE_NO_DEVICE without one). */
rf_status_t rf_chain_pkg_load(rf_allocator_t allocator, const char *dir, rf_chain_pkg_t **out_pkg);
void rf_chain_pkg_destroy(rf_chain_pkg_t *pkg);
const char *rf_chain_pkg_dir(const rf_chain_pkg_t *pkg);
const char *rf_chain_pkg_kernel_name(const rf_chain_pkg_t *pkg);
int64_t rf_chain_pkg_rows(const rf_chain_pkg_t *pkg); /* the rows the plan was made for */
int64_t rf_chain_pkg_in_width(const rf_chain_pkg_t *pkg);
int64_t rf_chain_pkg_out_width(const rf_chain_pkg_t *pkg);
/* Blocks of one launch for `rows` under the plan's grid rule (rf_plan_grid). */
int32_t rf_chain_pkg_grid(const rf_chain_pkg_t *pkg, int64_t rows);
/* Enqueues one launch of the chain kernel on `stream` over the caller's device buffers
 * (args: X [rows, C] fp16, the package's wh / wf, Y [rows, N_out] f32; kernel_abi.h), on
 * the plan's grid for args->rows (>= 1). Allocates and synchronises nothing, so a caller
 * may capture it into its own CUDA Graph. */
rf_status_t rf_chain_pkg_launch(const rf_chain_pkg_t *pkg, const rf_chain_args_t *args,
                                void *stream);

/* Allocates the buffers for `rows`, uploads wh and wf from weights.bin and captures one
 * launch on `stream` (a stream the caller created) into a CUDA Graph holding exactly one
 * kernel node per kernel of the package (RF_CODE_INTERNAL otherwise). X and Y are left unset. */
rf_status_t rf_chain_exec_create(rf_allocator_t allocator, rf_chain_pkg_t *pkg, int64_t rows,
                                 void *stream, rf_chain_exec_t **out_exec);
void rf_chain_exec_destroy(rf_chain_exec_t *exec);
/* Copies X [rows, C] (fp16 bit patterns) to the device, synchronously. */
rf_status_t rf_chain_exec_upload_x(rf_chain_exec_t *exec, const uint16_t *x);
/* Fills every byte of Y with `byte` on `stream` (0xFF: NaN; 0x42: a finite sentinel), then
 * the shared memory of every SM with NaN (a launch of its own, not part of the graph), so a
 * kernel that reads shared memory it did not write reads NaN. */
rf_status_t rf_chain_exec_fill_y(rf_chain_exec_t *exec, unsigned char byte, void *stream);
/* Enqueues one replay of the captured graph on `stream`. */
rf_status_t rf_chain_run(rf_chain_exec_t *exec, void *stream);
/* Enqueues one eager launch (no graph) on `stream`. */
rf_status_t rf_chain_launch(rf_chain_exec_t *exec, void *stream);
/* Waits for `stream`, then copies Y [rows, N_out] f32 to host memory. */
rf_status_t rf_chain_exec_download_y(rf_chain_exec_t *exec, void *stream, float *out_y);
int32_t rf_chain_exec_grid(const rf_chain_exec_t *exec); /* blocks of the captured launch */
int rf_chain_exec_kernel_nodes(const rf_chain_exec_t *exec);

/* ---- timing primitives (timing.c) ---- */

/* CUDA-event interval around `n` back-to-back replays on `stream`; *out_us is the total
 * in microseconds (divide by n for per-replay). n >= 1. */
rf_status_t rf_timing_replay_events(rf_exec_t *exec, void *stream, int n, double *out_us);
/* Host clock (CLOCK_MONOTONIC) from just before the replay launch to the return of the
 * stream synchronize, in microseconds. When out_event_us is not NULL, two events are also
 * recorded around the replay (inside the host interval) and their interval returned;
 * pass NULL for the purest host measure. */
rf_status_t rf_timing_replay_host(rf_exec_t *exec, void *stream, double *out_host_us,
                                  double *out_event_us);
/* The same two measures around an eager launch of `variant` (no graph). */
rf_status_t rf_timing_launch_events(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream,
                                    int n, double *out_us);
rf_status_t rf_timing_launch_host(rf_variant_t *variant, const rf_mlp_args_t *args, void *stream,
                                  double *out_host_us, double *out_event_us);

/* Monotonic host clock in microseconds (for callers timing their own spans). */
double rf_timing_now_us(void);

#ifdef __cplusplus
}
#endif
#endif
