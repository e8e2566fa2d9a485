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

rf_status_t rf_cli_python_module(const char *module, const char *probe, char **args) {
    char pydir[4096];
    RF_RETURN_IF_ERROR_PLAIN(
        rf_cli_find_dir("RF_PYTHON_DIR", "python", probe, pydir, sizeof pydir));
    const char *old = getenv("PYTHONPATH");
    size_t need = strlen(pydir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(need);
    if (!path)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "PYTHONPATH");
    snprintf(path, need, "%s%s%s", pydir, old && old[0] ? ":" : "", old ? old : "");
    setenv("PYTHONPATH", path, 1);
    free(path);
    const char *py = getenv("RF_PYTHON");
    args[0] = (char *)(py && py[0] ? py : "python3");
    args[1] = "-m";
    args[2] = (char *)module;
    return RF_OK;
}
