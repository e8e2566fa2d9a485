/* The check job of chain packages (`rowfuse check` on a package whose plan.json has a "chain"
 * object): per package and row count, fresh seeded fp16 inputs, the chain's CPU reference in
 * the plan's mixed precision with its derived per-element bound (src/chain, ref.c), and the
 * chain kernel captured into a CUDA Graph, replayed into a Y poisoned with NaN and then with a
 * finite sentinel (each time after every SM's shared memory was filled with NaN). A row
 * passes when every element of Y is finite and within its bound of the reference, and the
 * replays agree bit for bit (also `replays` more, when asked). The chain the reference runs
 * is read back from the package (plan.json's "chain" object and weights.bin:
 * rf_chain_load_package), so no ONNX file is needed.
 *
 * Ownership: rf_check_chain_run allocates the results with the given allocator (rf_free).
 * A failure of one package or shape is recorded in its row (error text) and the job goes
 * on; only "no usable GPU" and bad options end it with a status. Never prints.
 */
#ifndef RF_CHECK_CHAIN_H
#define RF_CHECK_CHAIN_H

#include <stdint.h>

#include "harness/check.h"
#include "rowfuse/alloc.h"
#include "rowfuse/runtime.h"
#include "rowfuse/status.h"

typedef struct rf_check_chain_result {
    char pkg[256];
    char kernel[64];
    int64_t rows, in_width, out_width;
    uint64_t seed;
    int passed;
    int kernel_nodes;
    int identical;                 /* every replay gave the same Y, bit for bit */
    int64_t nonfinite, over_bound; /* elements not finite / farther than their bound */
    double max_abs;                /* max |y - ref| */
    double max_ratio;              /* max |y - ref| / bound (pass: <= 1) */
    int64_t worst_index;           /* the element of max_ratio, -1 if none */
    double worst_got, worst_ref, worst_bound;
    char error[512]; /* non-empty when the row could not run */
} rf_check_chain_result_t;

/* Checks every package of options->pkg_dirs (chain packages: rf_chain_pkg_probe) at its
 * shapes: "M" entries of options->shapes and "MxCxN" entries whose C and N are the chain's
 * input and output widths; without one, the plan's rows. options->seed, replays and device
 * apply; variants and tol do not (a chain package has one kernel and one pass rule). */
rf_status_t rf_check_chain_run(rf_allocator_t allocator, const rf_check_options_t *options,
                               rf_device_info_t *out_device, rf_check_chain_result_t **out_results,
                               int *out_count);

/* Writes the chain results as JSON to `path`: job, device, seed, count, passed and one
 * object per row (package, kernel, rows, widths, seed, passed, kernel_nodes, identical,
 * nonfinite, over_bound, max_abs_error, max_bound_ratio, the worst element, error). */
rf_status_t rf_check_chain_write_json(const char *path, const rf_check_options_t *options,
                                      const rf_device_info_t *device,
                                      const rf_check_chain_result_t *results, int count);

#endif
