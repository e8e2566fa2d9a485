/* Status objects: heap-allocated error records; NULL is success. See rowfuse/status.h.
 * Messages are formatted once, into one allocation, so a status is cheap to pass up. */
#include "rowfuse/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rf_status_s {
    rf_code_t code;
    const char *file;
    int line;
    char *message;
};

/* Returned when even the status cannot be allocated; never freed. */
static struct rf_status_s rf_oom_status = {RF_CODE_OUT_OF_MEMORY, __FILE__, __LINE__,
                                           (char *)"out of memory"};

static char *rf_vformat(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

rf_status_t rf_status_make(rf_code_t code, const char *file, int line, const char *fmt, ...) {
    struct rf_status_s *s = malloc(sizeof *s);
    if (!s)
        return &rf_oom_status;
    va_list ap;
    va_start(ap, fmt);
    s->message = rf_vformat(fmt, ap);
    va_end(ap);
    if (!s->message) {
        free(s);
        return &rf_oom_status;
    }
    s->code = code == RF_CODE_OK ? RF_CODE_INTERNAL : code;
    s->file = file;
    s->line = line;
    return s;
}

rf_status_t rf_status_annotate(rf_status_t status, const char *fmt, ...) {
    if (status == RF_OK || status == &rf_oom_status)
        return status;
    va_list ap;
    va_start(ap, fmt);
    char *prefix = rf_vformat(fmt, ap);
    va_end(ap);
    if (!prefix)
        return status;
    size_t np = strlen(prefix), nm = strlen(status->message);
    char *joined = malloc(np + 2 + nm + 1);
    if (joined) {
        memcpy(joined, prefix, np);
        memcpy(joined + np, ": ", 2);
        memcpy(joined + np + 2, status->message, nm + 1);
        free(status->message);
        status->message = joined;
    }
    free(prefix);
    return status;
}

rf_code_t rf_status_code(rf_status_t status) {
    return status ? status->code : RF_CODE_OK;
}

const char *rf_status_message(rf_status_t status) {
    return status ? status->message : "";
}

const char *rf_code_name(rf_code_t code) {
    switch (code) {
    case RF_CODE_OK:
        return "ok";
    case RF_CODE_INVALID_ARGUMENT:
        return "invalid argument";
    case RF_CODE_PARSE_ERROR:
        return "parse error";
    case RF_CODE_UNSUPPORTED:
        return "unsupported";
    case RF_CODE_ROW_VIOLATION:
        return "row violation";
    case RF_CODE_SHAPE_ERROR:
        return "shape error";
    case RF_CODE_OUT_OF_MEMORY:
        return "out of memory";
    case RF_CODE_IO_ERROR:
        return "i/o error";
    case RF_CODE_NOT_FOUND:
        return "not found";
    case RF_CODE_RESOURCE_EXHAUSTED:
        return "resource exhausted";
    case RF_CODE_CUDA_ERROR:
        return "cuda error";
    case RF_CODE_NO_DEVICE:
        return "no device";
    case RF_CODE_MISMATCH:
        return "mismatch";
    case RF_CODE_INTERNAL:
        return "internal error";
    }
    return "unknown";
}

void rf_status_free(rf_status_t status) {
    if (!status || status == &rf_oom_status)
        return;
    free(status->message);
    free(status);
}
