/* `rowfuse check`: placeholder until the GPU check job lands (src/check/). */
#include "commands.h"

int rf_cmd_check(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return rf_cli_report("check", RF_ERR(RF_CODE_UNSUPPORTED, "the check job is not built yet"));
}
