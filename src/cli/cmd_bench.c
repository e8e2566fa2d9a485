/* `rowfuse bench`: placeholder until the benchmark harness lands (src/bench/). */
#include "commands.h"

int rf_cmd_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return rf_cli_report("bench", RF_ERR(RF_CODE_UNSUPPORTED, "the bench job is not built yet"));
}
