/* `rowfuse report RUN.json... -o DIR [--no-plot]`: merges benchmark runs (from
 * `rowfuse bench --c` and `python -m rowfuse.bench`) into a report: JSON, markdown tables
 * and a plot. Plots are Python's job (matplotlib), so this runs `python -m rowfuse.bench.report`
 * from rowfuse's python/ folder as a tool, with $RF_PYTHON (default python3). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tool.h"
#include "commands.h"
#include "paths.h"

#define RF_REPORT_MAX_ARGS 256

int rf_cmd_report(int argc, char **argv) {
    if (argc < 1 || argc > RF_REPORT_MAX_ARGS - 4)
        return rf_cli_report("report", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                              "usage: rowfuse report RUN.json... -o DIR "
                                              "[--no-plot]"));
    char *args[RF_REPORT_MAX_ARGS];
    int n = 3;
    rf_status_t st = rf_cli_python_module("rowfuse.bench.report", "rowfuse/bench/report.py", args);
    if (st)
        return rf_cli_report("report", st);
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    return rf_cli_fail("report", rf_tool_run(args, "report generator"), 2);
}
