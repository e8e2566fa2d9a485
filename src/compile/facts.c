/* Reads the facts the kernel generator reports (kernels.json): per kernel, the registers
 * from its cubin; for the package, the generator and its DSL version. Facts only: every
 * decision was made before the generator ran. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"
#include "compile/compile_internal.h"

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
    cJSON *root;
    rf_status_t st = rf_json_read_file(path, 16l << 20, &root);
    if (st && rf_status_code(st) == RF_CODE_NOT_FOUND) {
        rf_status_free(st);
        return RF_ERR(RF_CODE_NOT_FOUND, "the kernel generator wrote no '%s'", path);
    }
    RF_RETURN_IF_ERROR_PLAIN(st);
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
