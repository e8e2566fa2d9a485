/* `rowfuse report RUN.json... -o DIR [--no-plot]`: merges benchmark runs (from
 * `rowfuse bench --c` and `python -m rowfuse.bench`) into a report: JSON, markdown tables
 * and a plot. Plots are Python's job (matplotlib), so this runs `python -m rowfuse.bench.report`
 * with the interpreter of src/cli/paths.h, in this process's place:
 * its exit status is the report's (2 for a file that is not a benchmark run). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "paths.h"

#define RF_REPORT_MAX_ARGS 256

int rf_cmd_report(int argc, char **argv) {
    if (argc < 1 || argc > RF_REPORT_MAX_ARGS - 4)
        return rf_cli_report("report", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s",
                                              rf_cli_synopsis("report")));
    char *args[RF_REPORT_MAX_ARGS];
    int n = 3;
    rf_status_t st = rf_cli_python_module("rowfuse.bench.report", args);
    if (st)
        return rf_cli_report("report", st);
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    /* exec, not a child: the report's own one-line error and exit status are the answer */
    fflush(NULL);
    execvp(args[0], args);
    return rf_cli_report("report", RF_ERR(RF_CODE_NOT_FOUND, "cannot run '%s'", args[0]));
}
