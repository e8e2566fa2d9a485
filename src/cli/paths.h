/* The programs the CLI runs as tools: rowfuse's Python modules (the kernel generator, the
 * report, plots, the lab) and rowfuse-opt. Nothing is looked up in a source tree: Python
 * modules come from the interpreter that has the rowfuse package installed, programs from
 * $ENV, this executable's folder or PATH. */
#ifndef RF_CLI_PATHS_H
#define RF_CLI_PATHS_H

#include <stddef.h>

#include "rowfuse/status.h"

/* The interpreter that runs rowfuse's Python modules: $RF_PYTHON if set, else the python3
 * beside this executable (an install puts both in one bin/: a virtual environment or a
 * prefix), else "python3" from PATH. The string lives until the process ends. */
const char *rf_cli_python(void);

/* Fills buf with the folder holding the program `name` (e.g. "rowfuse-opt"): $<env> if set
 * (NOT_FOUND when it holds no such program), else this executable's folder, else the first
 * PATH entry that holds it; NOT_FOUND names env when none does. */
rf_status_t rf_cli_find_tool_dir(const char *env, const char *name, char *buf, size_t size);

/* Prepares running `python -m module` (a module of the installed rowfuse package): fills
 * args[0..2] with rf_cli_python(), "-m" and `module`. The caller appends its arguments
 * after args[2] and a NULL. */
rf_status_t rf_cli_python_module(const char *module, char **args);

#endif
