/* Shared front half of the CLI's jobs: import an ONNX file, infer shapes, verify. */
#ifndef RF_CLI_LOAD_H
#define RF_CLI_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/compile.h"
#include "rowfuse/graph.h"
#include "rowfuse/verify.h"

/* On success *out_graph and *out_contract are the caller's (destroy contract first). */
rf_status_t rf_cli_load_verified(const char *path, rf_graph_t **out_graph,
                                 rf_contract_t **out_contract);

/* The residual MLP block a compile works on: from the verified model at `model`, or (when
 * `mlp` is set) a synthetic block of that ROWSxCHANNELSxHIDDEN shape with weights seeded
 * by `seed`. Fills *w (the caller frees it with rf_mlp_weights_free, also on error), its
 * hash, a one-line description, and *rows when it is 0 (the model's or the shape's rows). */
rf_status_t rf_cli_block_weights(const char *model, const char *mlp, uint64_t seed, int64_t *rows,
                                 rf_mlp_weights_t *w, char hash[17], char *desc, size_t desc_size);

#endif
