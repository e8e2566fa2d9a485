/* `rowfuse inspect PKG [ARTIFACT] [--sass]`: lists a package's files (plan, weights,
 * kernels, PTX, SASS, DSL IR) or prints one. --sass disassembles every kernel cubin in the
 * package with cuobjdump (on a machine that has it, e.g. the GPU machine) into
 * <kernel>.cubin.sass, for packages built where no disassembler was found. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"

static int rf_has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Walks dir (depth-limited); lists files, or disassembles binaries when sass is set. */
static rf_status_t rf_walk(const char *root, const char *rel, int depth, int sass, int *count) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    struct dirent **entries = NULL;
    int n = scandir(path, &entries, NULL, alphasort); /* sorted: stable listings */
    if (n < 0)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot open package directory '%s'", path);
    rf_status_t st = RF_OK;
    for (int i = 0; i < n && !st; i++) {
        const struct dirent *e = entries[i];
        if (e->d_name[0] == '.')
            continue;
        char child_rel[4096], child[8192];
        snprintf(child_rel, sizeof child_rel, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(child, sizeof child, "%s/%s", root, child_rel);
        struct stat sb;
        if (stat(child, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth < 4)
                st = rf_walk(root, child_rel, depth + 1, sass, count);
            continue;
        }
        if (!sass) {
            printf("  %-60s %10lld bytes\n", child_rel, (long long)sb.st_size);
            (*count)++;
        } else if (rf_has_suffix(child, ".cubin")) {
            /* The kernel objects embed their cubins as plain data, not as fatbin
             * sections, so cuobjdump finds nothing in .o/.so: disassemble the cubins the
             * package keeps beside them. */
            char cmd[17000];
            snprintf(cmd, sizeof cmd, "cuobjdump --dump-sass '%s' > '%s.sass' 2>/dev/null", child,
                     child);
            if (strchr(child, '\'') || system(cmd) != 0)
                st = RF_ERR(RF_CODE_NOT_FOUND,
                            "cuobjdump failed on '%s' (is the CUDA toolkit on PATH?)", child_rel);
            else {
                printf("  wrote %s.sass\n", child_rel);
                (*count)++;
            }
        }
    }
    for (int i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
    return st;
}

int rf_cmd_inspect(int argc, char **argv) {
    const char *pkg = NULL, *artifact = NULL;
    int sass = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--sass"))
            sass = 1;
        else if (argv[i][0] != '-' && !pkg)
            pkg = argv[i];
        else if (argv[i][0] != '-' && !artifact)
            artifact = argv[i];
        else
            return rf_cli_report(
                "inspect", RF_ERR(RF_CODE_INVALID_ARGUMENT, "unexpected argument '%s'", argv[i]));
    }
    if (!pkg)
        return rf_cli_report(
            "inspect",
            RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse inspect PKGDIR [ARTIFACT] [--sass]"));
    if (artifact) {
        if (strstr(artifact, ".."))
            return rf_cli_report("inspect",
                                 RF_ERR(RF_CODE_INVALID_ARGUMENT,
                                        "artifact path '%s' leaves the package", artifact));
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", pkg, artifact);
        FILE *f = fopen(path, "rb");
        if (!f)
            return rf_cli_report(
                "inspect",
                RF_ERR(RF_CODE_NOT_FOUND, "package '%s' has no artifact '%s'", pkg, artifact));
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            fwrite(buf, 1, n, stdout);
        fclose(f);
        return 0;
    }
    int count = 0;
    if (!sass)
        printf("package %s:\n", pkg);
    rf_status_t st = rf_walk(pkg, "", 0, sass, &count);
    if (!st && sass && count == 0)
        st = RF_ERR(RF_CODE_NOT_FOUND, "package '%s' holds no .cubin to disassemble", pkg);
    return rf_cli_report("inspect", st);
}
