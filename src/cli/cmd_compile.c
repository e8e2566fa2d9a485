/* `rowfuse compile MODEL.onnx --rows N --schedule S [--tile-rows T] [--arch sm_90a] -o PKG`:
 * verifies the model, matches the residual MLP block and writes a GPU package. The
 * kernel generator is kernels/build.py (found through $RF_KERNELS_DIR, else next to the
 * executable's source tree, else ./kernels), run with $RF_PYTHON (default python3). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "load.h"
#include "rowfuse/compile.h"

static int rf_file_exists(const char *path) {
    return access(path, R_OK) == 0;
}

/* Fills buf with the folder holding build.py. */
static rf_status_t rf_find_kernels_dir(char *buf, size_t size) {
    char probe[4096 + 16];
    const char *env = getenv("RF_KERNELS_DIR");
    if (env && env[0]) {
        snprintf(probe, sizeof probe, "%s/build.py", env);
        if (!rf_file_exists(probe))
            return RF_ERR(RF_CODE_NOT_FOUND, "RF_KERNELS_DIR='%s' holds no build.py", env);
        snprintf(buf, size, "%s", env);
        return RF_OK;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            /* build/rowfuse -> ../kernels; build/x/rowfuse -> ../../kernels */
            const char *ups[] = {"/../kernels", "/../../kernels"};
            for (int i = 0; i < 2; i++) {
                int n1 = snprintf(probe, sizeof probe, "%s%s/build.py", exe, ups[i]);
                if (n1 > 0 && (size_t)n1 < sizeof probe && rf_file_exists(probe)) {
                    int n2 = snprintf(buf, size, "%s%s", exe, ups[i]);
                    if (n2 > 0 && (size_t)n2 < size)
                        return RF_OK;
                }
            }
        }
    }
    if (rf_file_exists("kernels/build.py")) {
        snprintf(buf, size, "kernels");
        return RF_OK;
    }
    return RF_ERR(RF_CODE_NOT_FOUND,
                  "cannot find the kernel generator kernels/build.py; set RF_KERNELS_DIR");
}

int rf_cmd_compile(int argc, char **argv) {
    const char *model = NULL;
    rf_compile_options_t o = {0};
    o.schedule = "persistent-smem";
    o.tile_rows = 16;
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
        else if (!strcmp(a, "--tile-rows") && has)
            o.tile_rows = atoi(argv[++i]);
        else if ((!strcmp(a, "--arch") || !strcmp(a, "--gpu-arch")) && has)
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
    rf_status_t st = rf_find_kernels_dir(kdir, sizeof kdir);
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
    if (!st)
        st = rf_compile_package(g, &block, &o);
    if (!st)
        printf("compiled %s: residual MLP C=%lld H=%lld, rows %lld, schedule %s, tile %d rows, "
               "%s -> %s/\n",
               model, (long long)block.channels, (long long)block.hidden, (long long)o.rows,
               o.schedule, o.tile_rows, o.arch, o.out_dir);
    rf_contract_destroy(c);
    rf_graph_destroy(g);
    return rf_cli_report("compile", st);
}
