/* The check job behind `rowfuse check`: runs every variant of every package (and the
 * cuBLASLt baseline) at a set of shapes on fresh random inputs, each captured into a
 * CUDA Graph (holding exactly the expected kernel nodes) and replayed into a poisoned Y
 * (NaN, then a finite sentinel), and compares Y with the CPU reference interpreter in
 * mixed precision with the one comparison rule (rowfuse/mlp.h, src/harness/README.md): every
 * element finite and within its derived allowance, and the whole output within a quarter
 * of the fp16-rounding step of the reference. Optionally, many replays must give
 * bit-identical outputs.
 *
 * Ownership: rf_check_run allocates the results array with the given allocator; free it
 * with rf_free. A failure of one variant is recorded in its result (error text) and the
 * job goes on; only "no usable GPU" and bad options end the job with a status. The job
 * never prints: the CLI prints the table.
 */
#ifndef RF_CHECK_H
#define RF_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "base/json.h"
#include "rowfuse/alloc.h"
#include "rowfuse/mlp.h"
#include "rowfuse/runtime.h"
#include "rowfuse/status.h"

typedef struct rf_check_shape {
    int64_t rows, channels, hidden; /* channels = hidden = 0: rows for every package */
} rf_check_shape_t;

typedef struct rf_check_options {
    const char *const *pkg_dirs;
    int n_pkgs;
    /* Shapes: "M" entries apply to every package; "MxCxH" entries apply to packages of
     * that C and H and, if no package has that C and H, run the cuBLASLt baseline alone.
     * With no entry that applies, a package is checked at its plan's rows. */
    const rf_check_shape_t *shapes;
    int n_shapes;
    const char *variants; /* comma-separated schedule names to run; NULL = all */
    uint64_t seed;
    rf_mlp_tolerance_t tol; /* rf_mlp_tolerance_default() */
    int replays;            /* extra replays that must reproduce Y bit for bit (0 = none) */
    int device;
} rf_check_options_t;

/* Fills the defaults: tolerances above, seed 1, device 0. */
void rf_check_options_default(rf_check_options_t *options);

typedef struct rf_check_result {
    char pkg[256];    /* package directory, "" for a cuBLASLt-only shape */
    char variant[32]; /* schedule name */
    int64_t rows, channels, hidden;
    uint64_t seed;
    int passed;
    int kernel_nodes, graph_nodes;
    int64_t nonfinite, out_of_tol;
    double max_abs, rel_l2;
    double steps, max_ratio; /* the gated figures (rf_mlp_compare_result_t) */
    int identical;           /* replays reproduced Y bit for bit (1 when not asked) */
    int64_t worst_index;     /* element with the largest |y - ref|, -1 if none */
    double worst_got, worst_ref;
    double replay_us; /* CUDA-event interval of the checked replay (not a benchmark) */
    char note[256];
    char error[512]; /* non-empty when the variant could not run */
} rf_check_result_t;

rf_status_t rf_check_run(rf_allocator_t allocator, const rf_check_options_t *options,
                         rf_device_info_t *out_device, rf_check_result_t **out_results,
                         int *out_count);

/* The frame of both checks' JSON (the MLP's and the chain's): {"job", "device", the
 * caller's keys, "seed", "count", "passed", "results": [the caller's objects]}. begin opens
 * `path` and writes the job and the device; results_begin writes the counts and opens the
 * array; end closes both, the file, and returns the first error (naming `path`). */
typedef struct rf_check_json {
    rf_json_writer_t w;
    FILE *f;
} rf_check_json_t;
rf_status_t rf_check_json_begin(rf_check_json_t *j, const char *path, const char *job,
                                const rf_device_info_t *device);
void rf_check_json_results_begin(rf_check_json_t *j, uint64_t seed, int count, int passed);
rf_status_t rf_check_json_end(rf_check_json_t *j, const char *path);

/* Writes the results as JSON (device, options, results) to `path`. */
rf_status_t rf_check_write_json(const char *path, const rf_check_options_t *options,
                                const rf_device_info_t *device, const rf_check_result_t *results,
                                int count);

/* Parses "49,1x48x96,5000x37x200" into shapes (allocated with `allocator`). */
rf_status_t rf_check_parse_shapes(rf_allocator_t allocator, const char *text,
                                  rf_check_shape_t **out_shapes, int *out_count);

#endif
