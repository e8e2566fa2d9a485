/* Internal to src/compile: the generator's input file and the reading of its report. */
#ifndef RF_COMPILE_INTERNAL_H
#define RF_COMPILE_INTERNAL_H

#include "rowfuse/compile.h"
#include "rowfuse/plan.h"

/* kernel_spec.json: the target and every kernel's complete specification. */
rf_status_t rf_kernel_spec_write(const rf_plan_t *plan, const char *path);

/* Reads the facts the generator reported in `path` (kernels.json): each kernel's
 * registers (matched by name) and the generator's name and version. */
rf_status_t rf_kernel_facts_read(const char *path, rf_plan_t *plan);

#endif
