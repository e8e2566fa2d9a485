/* A stand-in kernel library for tests/unit/test_runtime_nogpu.c: exports the
 * rowfuse/kernel_abi.h entry points for channels=48, hidden=96 without any GPU code, so
 * package loading, ABI checks and schedule lookup can be tested on a machine without a
 * GPU. RF_FAKE_ABI in the environment overrides the ABI version it reports. */
#include <stdlib.h>
#include <string.h>

#include "rowfuse/kernel_abi.h"

int rf_pkg_abi_version(void);
int rf_pkg_channels(void);
int rf_pkg_hidden(void);
int rf_pkg_kernel_count(const char *schedule);
int rf_pkg_init(void);
int rf_pkg_launch(const char *schedule, const rf_mlp_args_t *args, void *stream);

int rf_pkg_abi_version(void) {
    const char *v = getenv("RF_FAKE_ABI");
    return v ? atoi(v) : RF_KERNEL_ABI_VERSION;
}
int rf_pkg_channels(void) {
    return 48;
}
int rf_pkg_hidden(void) {
    return 96;
}
int rf_pkg_kernel_count(const char *schedule) {
    if (!strcmp(schedule, "persistent-smem") || !strcmp(schedule, "persistent-gmem"))
        return 1;
    if (!strcmp(schedule, "conventional"))
        return 2;
    return -1;
}
int rf_pkg_init(void) {
    return 0;
}
int rf_pkg_launch(const char *schedule, const rf_mlp_args_t *args, void *stream) {
    (void)schedule;
    (void)args;
    (void)stream;
    return 0;
}
