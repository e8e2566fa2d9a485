/* `rowfuse lab MODEL -o DIR [...]`: the stock-compiler lab (a model through IREE, every
 * stage kept, indexed for `rowfuse inspect DIR`). torch.export, iree-turbine and
 * iree-compile are Python tools, so this execs `python -m rowfuse.lab` from rowfuse's
 * python/ folder with $RF_PYTHON (default python3); its exit status is the lab's. */
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
        return rf_cli_report("lab", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                           "usage: rowfuse lab MODEL -o DIR [--targets T,...] "
                                           "[--cuda-target SM] [--no-check]"));
    char pydir[4096];
    rf_status_t st =
        rf_cli_find_dir("RF_PYTHON_DIR", "python", "rowfuse/lab/__main__.py", pydir, sizeof pydir);
    if (st)
        return rf_cli_report("lab", st);
    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(pydir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(need);
    if (!path)
        return rf_cli_report("lab", RF_ERR(RF_CODE_OUT_OF_MEMORY, "PYTHONPATH"));
    snprintf(path, need, "%s%s%s", pydir, old && old[0] ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", path, 1);
    free(path);

    char *args[RF_LAB_MAX_ARGS];
    int n = 0;
    const char *py = getenv("RF_PYTHON");
    args[n++] = (char *)(py && py[0] ? py : "python3");
    args[n++] = "-m";
    args[n++] = "rowfuse.lab";
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    fflush(NULL);
    execvp(args[0], args);
    return rf_cli_report("lab", RF_ERR(RF_CODE_NOT_FOUND, "cannot run '%s'", args[0]));
}
