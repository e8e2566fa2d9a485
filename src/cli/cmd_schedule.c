/* `rowfuse schedule --rows M --channels C --hidden H`: prints what `--schedule auto` picks
 * for a residual MLP of that shape, and why (the cost model of src/compile/schedule.c),
 * as one line "schedule<TAB>reason". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "compile/compile_internal.h"

int rf_cmd_schedule(int argc, char **argv) {
    int64_t v[3] = {0, 0, 0};
    static const char *const names[3] = {"--rows", "--channels", "--hidden"};
    for (int i = 0; i < argc; i++) {
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (!strcmp(argv[i], names[j]))
                k = j;
        if (k < 0 || i + 1 >= argc)
            return rf_cli_report("schedule", RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                                    "bad argument '%s'; usage: rowfuse %s", argv[i],
                                                    rf_cli_synopsis("schedule")));
        rf_status_t st = rf_cli_parse_int64(names[k], argv[++i], 1, RF_MAX_DIM, &v[k]);
        if (st)
            return rf_cli_report("schedule", st);
    }
    if (!v[0] || !v[1] || !v[2])
        return rf_cli_report("schedule", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s",
                                                rf_cli_synopsis("schedule")));
    /* the planner itself, so the schedules that cannot fit the shape do not compete */
    rf_compile_options_t o;
    rf_compile_options_default(&o);
    o.rows = v[0];
    rf_plan_t plan;
    rf_status_t st = rf_compile_plan(v[1], v[2], &o, &plan);
    if (st && rf_status_code(st) != RF_CODE_UNSUPPORTED)
        return rf_cli_report("schedule", st);
    if (st) { /* no rowfuse kernel fits: the choice is still defined (the vendor baseline) */
        rf_status_free(st);
        rf_schedule_fit_t none[RF_SCHEDULE_COUNT] = {{0}};
        char reason[256];
        rf_schedule_t s =
            rf_schedule_choose(v[0], v[1], v[2], &plan.target, none, reason, sizeof reason);
        printf("%s\t%s\n", rf_schedule_name(s), reason);
        return 0;
    }
    printf("%s\t%s\n", rf_schedule_name(plan.schedule), plan.reason);
    return 0;
}
