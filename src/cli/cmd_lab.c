/* `rowfuse lab MODEL -o DIR [...]`: the stock-compiler lab (a model through IREE, every
 * stage kept, indexed for `rowfuse inspect DIR`). torch.export, iree-turbine and
 * iree-compile are Python tools, so this execs `python -m rowfuse.lab` with the
 * interpreter of src/cli/paths.h; its exit status is the lab's. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "paths.h"

#define RF_LAB_MAX_ARGS 64

int rf_cmd_lab(int argc, char **argv) {
    if (argc < 1 || argc > RF_LAB_MAX_ARGS - 4)
        return rf_cli_report(
            "lab", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s", rf_cli_synopsis("lab")));
    char *args[RF_LAB_MAX_ARGS];
    int n = 3;
    rf_status_t st = rf_cli_python_module("rowfuse.lab", args);
    if (st)
        return rf_cli_report("lab", st);
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    fflush(NULL);
    execvp(args[0], args);
    return rf_cli_report("lab", RF_ERR(RF_CODE_NOT_FOUND, "cannot run '%s'", args[0]));
}
