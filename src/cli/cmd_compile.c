/* `rowfuse compile MODEL.onnx --rows N --schedule S [--tile-rows T] [--arch sm_90a] -o PKG`:
 * verifies the model, matches the residual MLP block and writes a GPU package. The
 * kernel generator is kernels/build.py (found through $RF_KERNELS_DIR, else next to the
 * executable's source tree, else ./kernels), run with $RF_PYTHON (default python3). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "load.h"
#include "paths.h"
#include "rowfuse/compile.h"

int rf_cmd_compile(int argc, char **argv) {
    const char *model = NULL;
    rf_compile_options_t o = {0};
    o.schedule = "auto";
    o.tile_rows = 0; /* auto */
    o.arch = "sm_90a";
    o.rows = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--rows") && has) {
            char *end;
            o.rows = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i])
                o.rows = 0;
        } else if (!strcmp(a, "--schedule") && has)
            o.schedule = argv[++i];
        else if (!strcmp(a, "--tile-rows") && has) {
            const char *t = argv[++i];
            o.tile_rows = !strcmp(t, "auto") ? 0 : atoi(t);
            if (o.tile_rows == 0 && strcmp(t, "auto"))
                o.tile_rows = -1;
        } else if ((!strcmp(a, "--arch") || !strcmp(a, "--gpu-arch")) && has)
            o.arch = argv[++i];
        else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has)
            o.out_dir = argv[++i];
        else if (a[0] != '-' && !model)
            model = a;
        else
            return rf_cli_report("compile",
                                 RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'", a));
    }
    if (!model || !o.out_dir)
        return rf_cli_report("compile",
                             RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                    "usage: rowfuse compile MODEL.onnx --rows N --schedule "
                                    "persistent-smem|persistent-gmem|conventional -o PKGDIR"));
    char kdir[4096];
    rf_status_t st = rf_cli_find_dir("RF_KERNELS_DIR", "kernels", "build.py", kdir, sizeof kdir);
    if (st)
        return rf_cli_report("compile", st);
    o.kernels_dir = kdir;
    o.python = getenv("RF_PYTHON") && getenv("RF_PYTHON")[0] ? getenv("RF_PYTHON") : "python3";
    o.model_path = model;

    rf_graph_t *g;
    rf_contract_t *c;
    st = rf_cli_load_verified(model, &g, &c);
    if (st)
        return rf_cli_report("compile", st);
    rf_mlp_block_t block;
    st = rf_mlp_match(g, &block);
    if (!st && o.rows < 0)
        o.rows = block.rows;
    rf_compile_result_t res;
    if (!st)
        st = rf_compile_package(g, &block, &o, &res);
    if (!st)
        printf("compiled %s: residual MLP C=%lld H=%lld, rows %lld, schedule %s (%s), tile %lld "
               "rows%s, %s -> %s/\n",
               model, (long long)block.channels, (long long)block.hidden, (long long)o.rows,
               res.schedule, res.reason, (long long)res.tile_rows, o.tile_rows ? "" : " (auto)",
               o.arch, o.out_dir);
    rf_contract_destroy(c);
    rf_graph_destroy(g);
    return rf_cli_report("compile", st);
}
