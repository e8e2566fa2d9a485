/* rf_tool_run: posix_spawnp + waitpid, no shell, so arguments need no quoting. */
#define _POSIX_C_SOURCE 200809L
#include "base/tool.h"

#include <errno.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

rf_status_t rf_tool_run(char *const argv[], const char *what) {
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc != 0)
        return RF_ERR(RF_CODE_NOT_FOUND, "cannot start %s '%s': %s", what, argv[0], strerror(rc));
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0)
        if (errno != EINTR)
            return RF_ERR(RF_CODE_INTERNAL, "waiting for %s '%s': %s", what, argv[0],
                          strerror(errno));
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
        return RF_ERR(RF_CODE_INTERNAL, "%s '%s %s' failed (exit status %d)", what, argv[0],
                      argv[1] ? argv[1] : "", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    return RF_OK;
}
