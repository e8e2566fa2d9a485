/* rowfuse-check: the `rowfuse check` subcommand as a program of its own, built with the
 * runtime (src/runtime/CMakeLists.txt) so the GPU check can run from a build that holds
 * only the runtime and the check job. Same arguments and exit statuses as
 * `rowfuse check`; this file supplies the CLI's error printer. */
#include <stdio.h>

#include "cli/commands.h"

int rf_cli_report(const char *cmd, rf_status_t status) {
    rf_code_t code;
    if (status == RF_OK)
        return 0;
    code = rf_status_code(status);
    fprintf(stderr, "rowfuse %s: %s: %s\n", cmd, rf_code_name(code), rf_status_message(status));
    rf_status_free(status);
    return code == RF_CODE_MISMATCH ? 1 : 2;
}

int main(int argc, char **argv) {
    return rf_cmd_check(argc - 1, argv + 1);
}
