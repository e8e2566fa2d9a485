/* `rowfuse schedule --rows M --channels C --hidden H`: prints what `--schedule auto` picks
 * for a residual MLP of that shape, and why (the cost model of src/compile/schedule.c),
 * as one line "schedule<TAB>reason". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "rowfuse/compile.h"

int rf_cmd_schedule(int argc, char **argv) {
    long long v[3] = {0, 0, 0};
    static const char *const names[3] = {"--rows", "--channels", "--hidden"};
    for (int i = 0; i < argc; i++) {
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (!strcmp(argv[i], names[j]))
                k = j;
        char *end = NULL;
        if (k < 0 || i + 1 >= argc || (v[k] = strtoll(argv[i + 1], &end, 10)) < 1 || *end)
            return rf_cli_report("schedule", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                                    "usage: rowfuse schedule --rows M --channels C "
                                                    "--hidden H (each >= 1); bad argument '%s'",
                                                    argv[i]));
        i++;
    }
    if (!v[0] || !v[1] || !v[2])
        return rf_cli_report("schedule", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                                "usage: rowfuse schedule --rows M --channels C "
                                                "--hidden H"));
    rf_target_t t;
    char reason[256];
    rf_status_t st = rf_target_lookup("h200", &t);
    if (st)
        return rf_cli_report("schedule", st);
    rf_schedule_t s = rf_schedule_choose(v[0], v[1], v[2], &t, reason, sizeof reason);
    printf("%s\t%s\n", rf_schedule_name(s), reason);
    return 0;
}
