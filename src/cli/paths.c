/* rf_cli_find_dir: the CLI runs tools that live in the source tree (the kernel generator,
 * the Python report), so it looks for them relative to itself. */
#define _POSIX_C_SOURCE 200809L
#include "paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes "<dir>/<probe>" and checks it is readable; on success copies dir into buf. */
static int rf_try_dir(const char *dir, const char *probe, char *buf, size_t size) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%s/%s", dir, probe);
    if (n < 0 || (size_t)n >= sizeof path || access(path, R_OK) != 0)
        return 0;
    n = snprintf(buf, size, "%s", dir);
    return n > 0 && (size_t)n < size;
}

rf_status_t rf_cli_find_dir(const char *env, const char *subdir, const char *probe, char *buf,
                            size_t size) {
    const char *from_env = getenv(env);
    if (from_env && from_env[0]) {
        if (!rf_try_dir(from_env, probe, buf, size))
            return RF_ERR(RF_CODE_NOT_FOUND, "%s='%s' holds no %s", env, from_env, probe);
        return RF_OK;
    }
    char exe[4096], dir[8192];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            static const char *const ups[] = {"..", "../.."};
            for (int i = 0; i < 2; i++) {
                int m = snprintf(dir, sizeof dir, "%s/%s/%s", exe, ups[i], subdir);
                if (m > 0 && (size_t)m < sizeof dir && rf_try_dir(dir, probe, buf, size))
                    return RF_OK;
            }
        }
    }
    if (rf_try_dir(subdir, probe, buf, size))
        return RF_OK;
    return RF_ERR(RF_CODE_NOT_FOUND, "cannot find %s/%s next to rowfuse; set %s", subdir, probe,
                  env);
}
