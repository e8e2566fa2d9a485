/* Finding the tools the CLI runs (paths.h): from the environment, this executable's own
 * folder and PATH; never from a source tree. */
#define _POSIX_C_SOURCE 200809L
#include "paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This executable's folder into buf; 0 when /proc/self/exe cannot be read. */
static int rf_exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return 0;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return 1;
}

/* 1 when "<dir>/<name>" is an executable file; then dir is copied into buf. */
static int rf_dir_has(const char *dir, size_t dir_len, const char *name, char *buf, size_t size) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%.*s/%s", (int)dir_len, dir, name);
    if (n < 0 || (size_t)n >= sizeof path || access(path, X_OK) != 0)
        return 0;
    n = snprintf(buf, size, "%.*s", (int)dir_len, dir);
    return n > 0 && (size_t)n < size;
}

const char *rf_cli_python(void) {
    static char python[8192];
    const char *env = getenv("RF_PYTHON");
    if (env && env[0])
        return env;
    char dir[4096], found[4096];
    if (rf_exe_dir(dir, sizeof dir) &&
        rf_dir_has(dir, strlen(dir), "python3", found, sizeof found)) {
        int n = snprintf(python, sizeof python, "%s/python3", found);
        if (n > 0 && (size_t)n < sizeof python)
            return python;
    }
    return "python3";
}

rf_status_t rf_cli_find_tool_dir(const char *env, const char *name, char *buf, size_t size) {
    const char *from_env = getenv(env);
    if (from_env && from_env[0]) {
        if (!rf_dir_has(from_env, strlen(from_env), name, buf, size))
            return RF_ERR(RF_CODE_NOT_FOUND, "%s='%s' holds no program %s", env, from_env, name);
        return RF_OK;
    }
    char dir[4096];
    if (rf_exe_dir(dir, sizeof dir) && rf_dir_has(dir, strlen(dir), name, buf, size))
        return RF_OK;
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && rf_dir_has(path, len, name, buf, size))
            return RF_OK;
        path += len + (path[len] == ':');
    }
    return RF_ERR(RF_CODE_NOT_FOUND, "no %s beside rowfuse or on PATH; set %s to its folder", name,
                  env);
}

rf_status_t rf_cli_python_module(const char *module, char **args) {
    if (!module || !module[0])
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "no Python module named");
    args[0] = (char *)rf_cli_python();
    args[1] = "-m";
    args[2] = (char *)module;
    return RF_OK;
}
