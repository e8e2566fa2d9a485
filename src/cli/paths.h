/* Finding rowfuse's own source folders (kernels/, python/) from the CLI. */
#ifndef RF_CLI_PATHS_H
#define RF_CLI_PATHS_H

#include <stddef.h>

#include "rowfuse/status.h"

/* Fills buf with the folder `subdir` (e.g. "kernels") that holds the file `probe`
 * (e.g. "build.py"): $<env> if set, else next to the executable's source tree
 * (build/rowfuse -> ../subdir, build/x/rowfuse -> ../../subdir), else ./subdir. */
rf_status_t rf_cli_find_dir(const char *env, const char *subdir, const char *probe, char *buf,
                            size_t size);

#endif
