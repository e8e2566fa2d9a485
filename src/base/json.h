/* A small streaming JSON writer: objects, arrays, keys, strings (escaped), integers,
 * doubles, booleans and null, written in order to a sink, with nothing buffered. Internal to
 * rowfuse (not an installed header).
 *
 * Used for the row contract, plan.json and benchmark output. The writer checks that calls
 * nest correctly (a key only inside an object, a value after every key, every begin matched
 * by its end) and that the sink accepted every byte. Errors are sticky, like a FILE's error
 * flag: the first one is kept, every later call is a no-op, and rf_json_writer_finish()
 * returns it. So a caller writes a whole document and checks once.
 *
 * Strings are written as UTF-8; control characters, quote and backslash are escaped, and
 * bytes that are not valid UTF-8 become U+FFFD, so the output is always valid JSON.
 * Doubles use the shortest "%.17g"-style form that reads back exactly; NaN and infinities
 * (which JSON cannot hold) are written as null.
 *
 * Ownership: the writer is caller-provided storage (init, no deinit); it lends the sink
 * and allocates nothing.
 */
#ifndef RF_BASE_JSON_H
#define RF_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RF_JSON_MAX_DEPTH 32

/* Writes n bytes; returns 0 on success, non-zero on failure. */
typedef int (*rf_json_sink_fn)(void *ctx, const char *data, size_t n);

typedef struct rf_json_writer {
    rf_json_sink_fn sink;
    void *ctx;
    int indent;                   /* spaces per level; 0 = compact, one line */
    int depth;                    /* open objects/arrays */
    char kind[RF_JSON_MAX_DEPTH]; /* '{' or '[' per open level */
    int count[RF_JSON_MAX_DEPTH]; /* items written at each level */
    int after_key;                /* a key was written, its value is due */
    int flat_from;                /* depth of the outermost flat container, or 0 */
    int done;                     /* a complete top-level value was written */
    rf_status_t error;            /* first error, or RF_OK */
} rf_json_writer_t;

/* Writes to any sink. indent = 0 gives compact output, > 0 pretty-prints. */
void rf_json_writer_init(rf_json_writer_t *w, rf_json_sink_fn sink, void *ctx, int indent);
/* Writes to a stdio stream (the stream is lent, not closed). */
void rf_json_writer_init_file(rf_json_writer_t *w, FILE *f, int indent);
/* Ends the document: a trailing newline when pretty-printing. Returns the first error
 * (misnesting: RF_CODE_INTERNAL; sink failure: RF_CODE_IO_ERROR; an incomplete document:
 * RF_CODE_INTERNAL) and hands it to the caller; the writer is then spent. */
rf_status_t rf_json_writer_finish(rf_json_writer_t *w);

void rf_json_object_begin(rf_json_writer_t *w);
void rf_json_object_end(rf_json_writer_t *w);
void rf_json_array_begin(rf_json_writer_t *w);
void rf_json_array_end(rf_json_writer_t *w);
/* An array kept on one line even when pretty-printing ("[64, 48]"), with everything nested
 * in it: for shapes and other short lists. Closed by rf_json_array_end. */
void rf_json_array_begin_flat(rf_json_writer_t *w);
/* Inside an object: the key of the next value. */
void rf_json_key(rf_json_writer_t *w, const char *key);

void rf_json_string(rf_json_writer_t *w, const char *s); /* NULL writes null */
/* The first n bytes of s (may hold NUL bytes, escaped as \u0000). */
void rf_json_string_n(rf_json_writer_t *w, const char *s, size_t n);
void rf_json_int(rf_json_writer_t *w, int64_t v);
void rf_json_uint(rf_json_writer_t *w, uint64_t v);
void rf_json_double(rf_json_writer_t *w, double v);
void rf_json_bool(rf_json_writer_t *w, int v);
void rf_json_null(rf_json_writer_t *w);

/* key + value in one call. */
void rf_json_key_string(rf_json_writer_t *w, const char *key, const char *s);
void rf_json_key_int(rf_json_writer_t *w, const char *key, int64_t v);
void rf_json_key_double(rf_json_writer_t *w, const char *key, double v);
void rf_json_key_bool(rf_json_writer_t *w, const char *key, int v);

#ifdef __cplusplus
}
#endif
#endif
