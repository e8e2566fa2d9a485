/* `rowfuse inspect PKG [ARTIFACT] [--sass]`: lists a package's files (plan, weights,
 * kernels, PTX, SASS, DSL IR) or prints one. --sass prints the kernels' SASS: the .sass
 * files the package holds (written at compile time where nvdisasm was found). A package
 * without them has its kernel cubins disassembled with cuobjdump (on a machine that has
 * it) into <kernel>.cubin.sass, which are then printed. A lab folder (`rowfuse lab`) is
 * listed from its index.json: each artifact with its stage and size. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/json_read.h"
#include "commands.h"

static int rf_has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

typedef enum rf_walk_mode {
    RF_WALK_LIST,  /* print each file's path and size */
    RF_WALK_SASS,  /* print each .sass file */
    RF_WALK_CUBIN, /* disassemble each .cubin with cuobjdump, then print it */
} rf_walk_mode_t;

/* Copies the file at path to stdout. */
static rf_status_t rf_cat(const char *path, const char *what) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "cannot read '%s'", what);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(f);
    return RF_OK;
}

/* Disassembles one cubin into <cubin>.sass with cuobjdump and prints it. */
static rf_status_t rf_disassemble(const char *cubin, const char *rel) {
    char cmd[17000], out[8200];
    snprintf(out, sizeof out, "%s.sass", cubin);
    snprintf(cmd, sizeof cmd, "cuobjdump --dump-sass '%s' > '%s' 2>/dev/null", cubin, out);
    if (strchr(cubin, '\''))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "'%s': a quote in the path", rel);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) == 127) {
        remove(out);
        return RF_ERR(RF_CODE_NOT_FOUND,
                      "the package holds no .sass files and cuobjdump (CUDA toolkit) is not on "
                      "PATH to disassemble '%s'; compile where nvdisasm is, or run this where "
                      "the CUDA toolkit is",
                      rel);
    }
    if (WEXITSTATUS(rc) != 0) {
        remove(out);
        return RF_ERR(RF_CODE_INTERNAL, "cuobjdump failed on '%s'", rel);
    }
    printf("// %s (cuobjdump)\n", rel);
    return rf_cat(out, rel);
}

/* Walks dir (depth-limited) doing `mode` to each file; counts the files it acted on. */
static rf_status_t rf_walk(const char *root, const char *rel, int depth, rf_walk_mode_t mode,
                           int *count) {
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
                st = rf_walk(root, child_rel, depth + 1, mode, count);
            continue;
        }
        if (mode == RF_WALK_LIST) {
            printf("  %-60s %10lld bytes\n", child_rel, (long long)sb.st_size);
            (*count)++;
        } else if (mode == RF_WALK_SASS && rf_has_suffix(child, ".sass")) {
            printf("// %s\n", child_rel);
            st = rf_cat(child, child_rel);
            (*count)++;
        } else if (mode == RF_WALK_CUBIN && rf_has_suffix(child, ".cubin")) {
            /* The kernel objects embed their cubins as plain data, not as fatbin
             * sections, so cuobjdump finds nothing in .o/.so: disassemble the cubins the
             * package keeps beside them. */
            st = rf_disassemble(child, child_rel);
            (*count)++;
        }
    }
    for (int i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
    return st;
}

/* Lists a lab folder's index.json; sets *listed when dir has a lab index. */
static rf_status_t rf_list_lab(const char *dir, int *listed) {
    char path[8192];
    snprintf(path, sizeof path, "%s/index.json", dir);
    *listed = 0;
    cJSON *index;
    /* no index.json: not a lab folder; an unreadable one: some other index (both: list) */
    rf_status_free(rf_json_read_file(path, 64L << 20, &index));
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(index, "schema");
    const cJSON *arts = cJSON_GetObjectItemCaseSensitive(index, "artifacts");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "rowfuse-lab/1") != 0) {
        cJSON_Delete(index);
        return RF_OK; /* some other index.json: list the files */
    }
    if (!cJSON_IsArray(arts)) {
        cJSON_Delete(index);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "'%s' has no artifact list", path);
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(index, "model");
    printf("lab %s (model %s):\n", dir, cJSON_IsString(model) ? model->valuestring : "?");
    const cJSON *a;
    cJSON_ArrayForEach(a, arts) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");
        const cJSON *stage = cJSON_GetObjectItemCaseSensitive(a, "stage");
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(a, "bytes");
        if (cJSON_IsString(name) && cJSON_IsString(stage) && cJSON_IsNumber(bytes))
            printf("  %-34s %10.0f bytes  %s\n", stage->valuestring, bytes->valuedouble,
                   name->valuestring);
    }
    cJSON_Delete(index);
    *listed = 1;
    return RF_OK;
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
        return rf_cli_report("inspect", RF_ERR(RF_CODE_INVALID_ARGUMENT, "usage: rowfuse %s",
                                               rf_cli_synopsis("inspect")));
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
        fclose(f);
        return rf_cli_report("inspect", rf_cat(path, artifact));
    }
    int count = 0, lab = 0;
    if (!sass) {
        rf_status_t st = rf_list_lab(pkg, &lab);
        if (st || lab)
            return rf_cli_report("inspect", st);
        printf("package %s:\n", pkg);
    }
    rf_status_t st = rf_walk(pkg, "", 0, sass ? RF_WALK_SASS : RF_WALK_LIST, &count);
    if (!st && sass && count == 0)
        st = rf_walk(pkg, "", 0, RF_WALK_CUBIN, &count);
    if (!st && sass && count == 0)
        st = RF_ERR(RF_CODE_NOT_FOUND, "package '%s' holds no .sass and no .cubin files", pkg);
    return rf_cli_report("inspect", st);
}
