/* rowfuse status values: how every fallible function in rowfuse reports failure.
 *
 * A status is a pointer: NULL (RF_OK) means success; anything else is an error object
 * that carries a code and a message (and, for a debugger, the file/line that made it).
 * Callers add context on the way up with RF_RETURN_IF_ERROR / rf_status_annotate.
 *
 * Ownership: a non-NULL status returned to you is yours; free it with rf_status_free()
 * (or pass it on by returning it). rf_status_message() lends a string valid until the
 * status is freed. If memory for a status cannot be allocated, a static out-of-memory
 * status is returned instead; freeing it is a no-op.
 *
 * The library never prints, exits or aborts: only main functions print statuses.
 */
#ifndef ROWFUSE_STATUS_H
#define ROWFUSE_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_code {
    RF_CODE_OK = 0,
    RF_CODE_INVALID_ARGUMENT, /* a caller passed something malformed */
    RF_CODE_PARSE_ERROR,      /* a file's bytes do not decode (ONNX, .npy, JSON) */
    RF_CODE_UNSUPPORTED,      /* well-formed but outside what rowfuse handles */
    RF_CODE_ROW_VIOLATION,    /* the graph mixes rows: not row-owned */
    RF_CODE_SHAPE_ERROR,      /* shapes inconsistent, dynamic or too large */
    RF_CODE_OUT_OF_MEMORY,
    RF_CODE_IO_ERROR,           /* open/read/write failed */
    RF_CODE_NOT_FOUND,          /* a named thing (file, value, kernel) is missing */
    RF_CODE_RESOURCE_EXHAUSTED, /* does not fit: shared memory, registers, limits */
    RF_CODE_CUDA_ERROR,         /* a CUDA driver/runtime/library call failed */
    RF_CODE_NO_DEVICE,          /* no usable GPU */
    RF_CODE_MISMATCH,           /* a check failed: results differ from the reference */
    RF_CODE_INTERNAL,           /* an invariant broke: a rowfuse bug */
} rf_code_t;

typedef struct rf_status_s *rf_status_t;
#define RF_OK ((rf_status_t)0)

/* Makes an error status. Use the RF_ERR macro so file and line are filled in. */
rf_status_t rf_status_make(rf_code_t code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Prefixes context to an error ("while loading x: <old message>"). Returns the same
 * status (NULL stays NULL). Never fails: on allocation failure the old message is kept. */
rf_status_t rf_status_annotate(rf_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

rf_code_t rf_status_code(rf_status_t status);
const char *rf_status_message(rf_status_t status); /* "" for RF_OK */
const char *rf_code_name(rf_code_t code);
void rf_status_free(rf_status_t status);

#define RF_ERR(code, ...) rf_status_make((code), __FILE__, __LINE__, __VA_ARGS__)

/* Evaluates expr; on error annotates it with the printf-style context and returns it. */
#define RF_RETURN_IF_ERROR(expr, ...)                                                              \
    do {                                                                                           \
        rf_status_t rf_status_tmp_ = (expr);                                                       \
        if (rf_status_tmp_ != RF_OK)                                                               \
            return rf_status_annotate(rf_status_tmp_, __VA_ARGS__);                                \
    } while (0)

/* Same, without extra context. */
#define RF_RETURN_IF_ERROR_PLAIN(expr)                                                             \
    do {                                                                                           \
        rf_status_t rf_status_tmp_ = (expr);                                                       \
        if (rf_status_tmp_ != RF_OK)                                                               \
            return rf_status_tmp_;                                                                 \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
