/* The package's MLIR (issue: the schedule pass in the pipeline): after `rowfuse compile`
 * built a package, the verified block's row contract goes into PKG/contract.mlir (written
 * by C from the graph, no Python), and where rowfuse-opt is found ($RF_MLIR_BIN_DIR,
 * beside rowfuse or on PATH; `make mlir` builds it) the schedule pass runs on it with the plan's
 * schedule and target: PKG/scheduled.mlir. The pass asks the same planner (src/compile), so its
 * kernels must be the plan's kernels of that schedule, name for name: a difference is an error (the
 * two paths disagree), not a note. Without rowfuse-opt the package is complete and says so. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tool.h"
#include "cli/compile_mlir.h"
#include "cli/paths.h"
#include "rowfuse/mlir.h"

rf_status_t rf_cli_write_contract(const rf_mlp_weights_t *w, int64_t rows, const char *desc,
                                  const char *path) {
    FILE *f = fopen(path, "w");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open '%s' for writing: %s", path, strerror(errno));
    rf_status_t st = rf_mlp_contract_mlir_write(w, rows, desc, f);
    if (fclose(f) != 0 && !st)
        st = RF_ERR(RF_CODE_IO_ERROR, "error writing '%s'", path);
    return st ? rf_status_annotate(st, "%s", path) : RF_OK;
}

/* Every `rowfuse.kernel "NAME"` of the scheduled IR must be a kernel of the plan's
 * schedule, in launch order, and there must be as many. */
static rf_status_t compare_kernels(const rf_plan_t *p, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot read '%s': %s", path, strerror(errno));
    const rf_plan_schedule_t *ps = &p->schedules[p->schedule];
    char line[4096];
    int n = 0;
    rf_status_t st = RF_OK;
    while (!st && fgets(line, sizeof line, f)) {
        const char *k = strstr(line, "rowfuse.kernel \"");
        if (!k)
            continue;
        k += strlen("rowfuse.kernel \"");
        const char *end = strchr(k, '"');
        size_t len = end ? (size_t)(end - k) : 0;
        const char *want = n < ps->kernel_count ? p->kernels[ps->kernel[n]].name : "(none)";
        if (!end || len != strlen(want) || strncmp(k, want, len))
            st = RF_ERR(RF_CODE_MISMATCH,
                        "'%s': the schedule pass's kernel %d is '%.*s', the plan's is '%s'", path,
                        n, end ? (int)len : 40, k, want);
        n++;
    }
    fclose(f);
    if (!st && n != ps->kernel_count)
        st = RF_ERR(RF_CODE_MISMATCH,
                    "'%s': the schedule pass made %d kernels, the plan's %s has %d", path, n,
                    rf_schedule_name(p->schedule), ps->kernel_count);
    return st;
}

rf_status_t rf_compile_package_mlir(const rf_plan_t *p, const rf_mlp_weights_t *w, const char *desc,
                                    const char *dir, int tile_rows, int hidden_split,
                                    int *out_scheduled) {
    char contract[4200], scheduled[4200], bindir[4096], opt[4200], flag[256];
    *out_scheduled = 0;
    snprintf(contract, sizeof contract, "%s/contract.mlir", dir);
    snprintf(scheduled, sizeof scheduled, "%s/scheduled.mlir", dir);
    RF_RETURN_IF_ERROR_PLAIN(rf_cli_write_contract(w, p->rows, desc, contract));
    rf_status_t st = rf_cli_find_tool_dir("RF_MLIR_BIN_DIR", "rowfuse-opt", bindir, sizeof bindir);
    if (st) { /* the MLIR build is optional: the package is complete without it */
        rf_status_free(st);
        return RF_OK;
    }
    snprintf(opt, sizeof opt, "%s/rowfuse-opt", bindir);
    snprintf(flag, sizeof flag, "--rowfuse-schedule=mode=%s target=%s sms=%d",
             rf_schedule_name(p->schedule), p->target.name, p->target.sm_count);
    if (tile_rows) /* the plan's --tile-rows: kernel names carry the tile */
        snprintf(flag + strlen(flag), sizeof flag - strlen(flag), " tile-rows=%d", tile_rows);
    if (hidden_split >= 0) /* the plan's --hidden-split: a pair's kernel name says so */
        snprintf(flag + strlen(flag), sizeof flag - strlen(flag), " hidden-split=%d", hidden_split);
    char *argv[] = {opt, contract, flag, "-o", scheduled, NULL};
    RF_RETURN_IF_ERROR_PLAIN(rf_tool_run(argv, "the schedule pass (rowfuse-opt)"));
    RF_RETURN_IF_ERROR_PLAIN(compare_kernels(p, scheduled));
    *out_scheduled = 1;
    return RF_OK;
}
