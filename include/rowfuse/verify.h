/* Verification: is a graph a row-owned block rowfuse can compile?
 *
 * rf_verify checks (a) every op is in the supported set, (b) shapes are static and
 * consistent, (c) row ownership: every output row depends only on the same input row,
 * with dim 0 of the (first) model input as the row dim. The analysis gives each value a
 * row state (constant: depends on no row; row-owned: axis 0 is the row axis and row i
 * depends only on input row i) and a reason; any op that would mix rows is rejected with
 * a message naming the node, the op, the shapes and the rule broken, e.g.
 *   node 7 'mean' (ReduceMean over axis 0): output row depends on every input row;
 *   row-owned graphs may reduce only over features
 *
 * Shapes: rf_verify takes a const graph and does not infer; call rf_graph_infer_shapes
 * first (the CLI does). Check (b) then re-runs every node's shape rule and rejects any value
 * without a static shape or whose stored shape/dtype differs (RF_CODE_SHAPE_ERROR). The
 * row dim is dim 0 of the first graph input that is not an initializer; every other input
 * must have the same extent on axis 0. Check order: (a) for all nodes, then (b), then (c),
 * so an unknown op is reported before anything downstream of it.
 *
 * Status codes: RF_CODE_ROW_VIOLATION / RF_CODE_UNSUPPORTED / RF_CODE_SHAPE_ERROR for a
 * rejected graph (CLI exit 1); other codes mean unusable input (CLI exit 2).
 *
 * Ownership: *out_contract is the caller's (rf_contract_destroy); it keeps a pointer to
 * the graph, which must outlive it.
 */
#ifndef ROWFUSE_VERIFY_H
#define ROWFUSE_VERIFY_H

#include <stdio.h>

#include "rowfuse/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_row_state {
    RF_ROW_CONST = 0, /* depends on no input row (weights, constants) */
    RF_ROW_OWNED,     /* axis 0 is the row axis; row i depends only on input row i */
} rf_row_state_t;

typedef struct rf_contract rf_contract_t;

rf_status_t rf_verify(const rf_graph_t *graph, rf_contract_t **out_contract);
void rf_contract_destroy(rf_contract_t *contract);

int64_t rf_contract_rows(const rf_contract_t *contract); /* extent of the row dim */
rf_row_state_t rf_contract_row_state(const rf_contract_t *contract, int value);
const char *rf_contract_reason(const rf_contract_t *contract, int value);

/* Writes the contract as JSON (inputs, outputs, weights with shapes and dtypes, the op
 * sequence, the row dim, and for each value why its rows are owned). */
rf_status_t rf_contract_write_json(const rf_contract_t *contract, FILE *f);
/* Human-readable summary for the CLI. */
rf_status_t rf_contract_print(const rf_contract_t *contract, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
