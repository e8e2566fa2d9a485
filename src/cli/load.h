/* Shared front half of the CLI's jobs: import an ONNX file, infer shapes, verify. */
#ifndef RF_CLI_LOAD_H
#define RF_CLI_LOAD_H

#include "rowfuse/graph.h"
#include "rowfuse/verify.h"

/* On success *out_graph and *out_contract are the caller's (destroy contract first). */
rf_status_t rf_cli_load_verified(const char *path, rf_graph_t **out_graph,
                                 rf_contract_t **out_contract);

#endif
