/* The contract object and the pieces of the verifier that share it: verify.c (driver, op
 * set, shape re-check), rows.c (row-ownership dataflow) and contract.c (the object's
 * reasons, getters and release; JSON and print). */
#ifndef ROWFUSE_VERIFY_INTERNAL_H
#define ROWFUSE_VERIFY_INTERNAL_H

#include "rowfuse/alloc.h"
#include "rowfuse/verify.h"

struct rf_contract {
    rf_allocator_t allocator;
    rf_arena_t arena; /* reason strings */
    const rf_graph_t *graph;
    int row_input; /* value index of the input whose dim 0 is the row dim */
    int64_t rows;  /* extent of the row dim */
    int n_values;
    rf_row_state_t *state; /* per value */
    const char **reason;   /* per value; NULL for values no node or output touches */
};

/* Runs the row-ownership analysis over a graph whose ops and shapes are checked; fills
 * c->row_input, c->rows, c->state and c->reason. */
rf_status_t rf_verify_rows(rf_contract_t *c);

/* Sets value's reason, formatted into the contract's arena (contract.c). */
rf_status_t rf_contract_set_reason(rf_contract_t *c, int value, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
