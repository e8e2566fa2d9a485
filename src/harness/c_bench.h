/* `rowfuse bench PKGDIR --c`: the benchmark of docs/benchmarking.md run from a C host.
 *
 * Loads a package made by `rowfuse compile`, makes fresh random inputs and weights for
 * (rows, channels, hidden) from the seed, and measures, in one process, the empty-kernel
 * floor, each schedule the package holds (conventional, persistent-smem,
 * persistent-gmem, persistent-wgmma) and the runtime's cuBLASLt baseline. Each is captured
 * in a CUDA Graph and checked first (poisoned Y, one replay, against the CPU reference in
 * mixed precision), then timed by bench_loop.c. A GPU span whose CUPTI records do not match
 * the observations' graphs fails the run (after the JSON, which names the reason, is
 * written). After the variants, the copy and GEMM ceilings (ceilings.c) are measured. The
 * result is written as JSON, schema rowfuse-bench/1 with tool "c", the same schema as
 * `python -m rowfuse.bench`, so `rowfuse.bench.report` merges both.
 *
 * The library does not print: progress lines go to the caller's callback (may be NULL).
 * A variant that cannot be built or fails its check is recorded with its error and the
 * others still run; only a failure of the whole run (no GPU, unreadable package, a CUDA
 * error while timing) is returned as a status.
 */
#ifndef RF_BENCH_C_BENCH_H
#define RF_BENCH_C_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "harness/bench_loop.h"
#include "rowfuse/alloc.h"
#include "rowfuse/mlp.h"
#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_bench_c_options {
    const char *pkg_dir;
    int64_t rows;             /* 0: the rows the package was planned for */
    uint64_t seed;            /* recorded in the JSON */
    rf_mlp_tolerance_t tol;   /* the check's tolerances (rf_mlp_tolerance_default) */
    const char *git_revision; /* recorded; NULL -> "unknown" */
    rf_bench_options_t timing;
    int ceilings; /* measure the copy and GEMM ceilings after the variants (default 1) */
    /* comma-separated schedule names to time (the floor is always timed); NULL = all. The
     * others are left out of the timing and the JSON: each observation is interleaved with
     * the selected variants only, so a variant's sensitivity to what ran before it (the
     * L2 its predecessors leave) can be isolated */
    const char *variants;
    /* cold L2 (--cold-l2): RF_BENCH_FLUSH_BYTES written before every observation (see
     * bench_loop.h), recorded in the JSON's method; 0: warm */
    int cold_l2;
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
} rf_bench_c_options_t;

/* Fills the defaults of docs/benchmarking.md: 5 rounds x 200 (GPU span from CUPTI over those
 * same graph observations, attributed by correlation id), a control round of 200 per
 * variant without CUPTI, 50 replays x 20 b2b samples, rf_mlp_tolerance_default(). With
 * timing.span = 0 CUPTI is not even loaded. */
void rf_bench_c_options_default(rf_bench_c_options_t *options);

/* The cold-L2 flush: 256 MiB, five times the H200's 50 MB L2 (and any Hopper's). */
#define RF_BENCH_FLUSH_BYTES (256ll << 20)

/* Runs the whole benchmark and writes the JSON document to `json_out` (lent). A chain
 * package (rf_chain_pkg_probe) is timed as two items, the floor and its chain kernel's graph
 * (fresh seeded X, its weights from the package), after a replay into a NaN-poisoned Y that
 * must be finite and identical to a second replay (the per-element bound is `rowfuse
 * check`'s); its run also records the fp16 weight bytes and the rate they stream at. */
rf_status_t rf_bench_c_run(rf_allocator_t allocator, const rf_bench_c_options_t *options,
                           FILE *json_out);

#ifdef __cplusplus
}
#endif
#endif
