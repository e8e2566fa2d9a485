/* The package's MLIR: contract.mlir always, scheduled.mlir where rowfuse-opt is built
 * (compile_mlir.c). Internal to the CLI. */
#ifndef RF_CLI_COMPILE_MLIR_H
#define RF_CLI_COMPILE_MLIR_H

#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

/* Writes the block's row contract as MLIR (rf_mlp_contract_mlir_write) to path: the one
 * writer of contract.mlir, for `rowfuse compile` and `rowfuse iree`. */
rf_status_t rf_cli_write_contract(const rf_mlp_weights_t *weights, int64_t rows, const char *desc,
                                  const char *path);

/* Writes DIR/contract.mlir and, with rowfuse-opt found, DIR/scheduled.mlir from the schedule
 * pass run at the plan's schedule and target (*out_scheduled = 1), checked kernel for kernel
 * against the plan. tile_rows, hidden_split: the --tile-rows (0 = auto) and --hidden-split
 * (-1 = auto) the plan was made with. */
rf_status_t rf_compile_package_mlir(const rf_plan_t *plan, const rf_mlp_weights_t *weights,
                                    const char *desc, const char *dir, int tile_rows,
                                    int hidden_split, int *out_scheduled);

#endif
