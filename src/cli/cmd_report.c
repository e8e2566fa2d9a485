/* `rowfuse report RUN.json... -o DIR [--no-plot]`: merges benchmark runs (from
 * `rowfuse bench --c` and `python -m rowfuse.bench`) into a report: JSON, markdown tables
 * and a plot. Plots are Python's job (matplotlib), so this runs `python -m rowfuse.report`
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
    char pydir[4096];
    rf_status_t st =
        rf_cli_find_dir("RF_PYTHON_DIR", "python", "rowfuse/report.py", pydir, sizeof pydir);
    if (st)
        return rf_cli_report("report", st);
    /* Prepend our python/ folder to PYTHONPATH for the child. */
    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(pydir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(need);
    if (!path)
        return rf_cli_report("report", RF_ERR(RF_CODE_OUT_OF_MEMORY, "PYTHONPATH"));
    snprintf(path, need, "%s%s%s", pydir, old && old[0] ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", path, 1);
    free(path);

    /* The report asks this binary for the scheduler's choices (`rowfuse schedule`). */
    char exe[4096];
    ssize_t n_exe = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n_exe > 0) {
        exe[n_exe] = '\0';
        setenv("RF_BIN", exe, 0);
    }

    char *args[RF_REPORT_MAX_ARGS];
    int n = 0;
    const char *py = getenv("RF_PYTHON");
    args[n++] = (char *)(py && py[0] ? py : "python3");
    args[n++] = "-m";
    args[n++] = "rowfuse.report";
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    return rf_cli_fail("report", rf_tool_run(args, "report generator"), 2);
}
