/* Reads the facts the kernel generator reports (kernels.json): per kernel, the registers
 * from its cubin; for the package, the generator and its DSL version. Facts only: every
 * decision was made before the generator ran. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"

static rf_status_t slurp(const char *path, char **out) {
    FILE *f = fopen(path, "rb");
    long n;
    *out = NULL;
    if (!f)
        return RF_ERR(RF_CODE_NOT_FOUND, "the kernel generator wrote no '%s'", path);
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (16l << 20) ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return RF_ERR(RF_CODE_IO_ERROR, "'%s': unreadable or over 16 MiB", path);
    }
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        fclose(f);
        return RF_ERR(RF_CODE_IO_ERROR, "'%s': short read", path);
    }
    fclose(f);
    text[n] = '\0';
    *out = text;
    return RF_OK;
}

static const cJSON *find_kernel(const cJSON *kernels, const char *name) {
    const cJSON *k;
    cJSON_ArrayForEach(k, kernels) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(k, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return k;
    }
    return NULL;
}

rf_status_t rf_kernel_facts_read(const char *path, rf_plan_t *p) {
    char *text = NULL;
    RF_RETURN_IF_ERROR_PLAIN(slurp(path, &text));
    cJSON *root = cJSON_Parse(text);
    free(text);
    rf_status_t st = RF_OK;
    const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generator");
    if (!cJSON_IsArray(kernels) || !cJSON_IsString(gen))
        st = RF_ERR(RF_CODE_PARSE_ERROR, "'%s': expected \"kernels\" (array) and \"generator\"",
                    path);
    else
        snprintf(p->generator, sizeof p->generator, "%s", gen->valuestring);
    for (int i = 0; !st && i < p->kernel_count; i++) {
        const cJSON *k = find_kernel(kernels, p->kernels[i].name);
        const cJSON *regs = cJSON_GetObjectItemCaseSensitive(k, "registers");
        const cJSON *local = cJSON_GetObjectItemCaseSensitive(k, "sass_local");
        if (!k)
            st = RF_ERR(RF_CODE_PARSE_ERROR, "'%s' reports no kernel '%s'", path,
                        p->kernels[i].name);
        else {
            if (cJSON_IsNumber(regs) && regs->valuedouble >= 0 && regs->valuedouble <= 255)
                p->kernels[i].registers = (int)regs->valuedouble;
            p->kernels[i].local_ops =
                cJSON_IsNumber(local) && local->valuedouble >= 0 ? (int)local->valuedouble : -1;
        }
    }
    cJSON_Delete(root);
    return st;
}
