/* Running another program as a tool, the way a compiler driver runs its assembler: the
 * kernel generator (python/rowfuse/kernels/build.py) and the Python report are run this way.
 * Internal. */
#ifndef RF_BASE_TOOL_H
#define RF_BASE_TOOL_H

#include "rowfuse/status.h"

/* Runs argv (argv[0] looked up on PATH) with the current environment and waits for it.
 * Errors: NOT_FOUND if it cannot start, INTERNAL naming `what` if it exits non-zero. */
rf_status_t rf_tool_run(char *const argv[], const char *what);

#endif
