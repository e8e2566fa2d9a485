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

/* Prepares running a module of rowfuse's Python package as a tool: finds the python/
 * folder (holding `probe`, e.g. "rowfuse/bench/report.py"; $RF_PYTHON_DIR overrides), puts it
 * first on PYTHONPATH, and fills args[0..2] with $RF_PYTHON (default python3), "-m" and
 * `module`. The caller appends its arguments after args[2] and a NULL. */
rf_status_t rf_cli_python_module(const char *module, const char *probe, char **args);

#endif
