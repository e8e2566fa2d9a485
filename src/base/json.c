/* Streaming JSON writer (base/json.h). Keeps only a stack of open containers and a
 * count per level; every value goes straight to the sink. Misuse and sink failures are
 * recorded once and reported by rf_json_writer_finish, so callers stay linear. */
#include "base/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rf_json_file_sink(void *ctx, const char *data, size_t n) {
    return fwrite(data, 1, n, (FILE *)ctx) == n ? 0 : -1;
}

void rf_json_writer_init(rf_json_writer_t *w, rf_json_sink_fn sink, void *ctx, int indent) {
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->ctx = ctx;
    w->indent = indent < 0 ? 0 : indent;
}

void rf_json_writer_init_file(rf_json_writer_t *w, FILE *f, int indent) {
    rf_json_writer_init(w, rf_json_file_sink, f, indent);
}

static void rf_json_fail(rf_json_writer_t *w, rf_status_t st) {
    if (w->error == RF_OK)
        w->error = st;
    else
        rf_status_free(st);
}

static void rf_json_put(rf_json_writer_t *w, const char *data, size_t n) {
    if (w->error || n == 0)
        return;
    if (w->sink(w->ctx, data, n) != 0)
        rf_json_fail(w, RF_ERR(RF_CODE_IO_ERROR, "JSON writer: the output refused %zu bytes", n));
}

static void rf_json_puts(rf_json_writer_t *w, const char *s) {
    rf_json_put(w, s, strlen(s));
}

/* Line break and indent before an item or a closing bracket. Inside a flat container
 * items are separated by one space instead, and closers follow directly. */
static void rf_json_newline(rf_json_writer_t *w, int depth) {
    if (!w->indent)
        return;
    if (w->flat_from && w->depth >= w->flat_from) {
        if (depth == w->depth && w->count[w->depth - 1] > 1)
            rf_json_put(w, " ", 1);
        return;
    }
    rf_json_put(w, "\n", 1);
    for (int i = 0; i < depth * w->indent; i++)
        rf_json_put(w, " ", 1);
}

/* Everything a value needs before it: checks the position and writes the separator. */
static int rf_json_before_value(rf_json_writer_t *w, const char *what) {
    if (w->error)
        return 0;
    if (w->depth == 0) {
        if (w->done) {
            rf_json_fail(
                w, RF_ERR(RF_CODE_INTERNAL, "JSON writer: %s after the document ended", what));
            return 0;
        }
        return 1;
    }
    if (w->kind[w->depth - 1] == '{') {
        if (!w->after_key) {
            rf_json_fail(w, RF_ERR(RF_CODE_INTERNAL,
                                   "JSON writer: %s inside an object without a key", what));
            return 0;
        }
        w->after_key = 0;
        return 1;
    }
    if (w->count[w->depth - 1]++)
        rf_json_put(w, ",", 1);
    rf_json_newline(w, w->depth);
    return 1;
}

static void rf_json_after_value(rf_json_writer_t *w) {
    if (w->depth == 0)
        w->done = 1;
}

static void rf_json_begin(rf_json_writer_t *w, char kind, int flat) {
    if (!rf_json_before_value(w, kind == '{' ? "an object" : "an array"))
        return;
    if (w->depth >= RF_JSON_MAX_DEPTH) {
        rf_json_fail(
            w, RF_ERR(RF_CODE_INTERNAL, "JSON writer: nesting deeper than %d", RF_JSON_MAX_DEPTH));
        return;
    }
    rf_json_put(w, &kind, 1);
    w->kind[w->depth] = kind;
    w->count[w->depth] = 0;
    w->depth++;
    if (flat && !w->flat_from)
        w->flat_from = w->depth;
}

static void rf_json_end(rf_json_writer_t *w, char kind) {
    if (w->error)
        return;
    if (w->depth == 0 || w->kind[w->depth - 1] != kind || w->after_key) {
        rf_json_fail(w, RF_ERR(RF_CODE_INTERNAL, "JSON writer: '%c' does not close what is open",
                               kind == '{' ? '}' : ']'));
        return;
    }
    if (w->count[w->depth - 1])
        rf_json_newline(w, w->depth - 1);
    if (w->flat_from == w->depth)
        w->flat_from = 0;
    w->depth--;
    char close = kind == '{' ? '}' : ']';
    rf_json_put(w, &close, 1);
    rf_json_after_value(w);
}

void rf_json_object_begin(rf_json_writer_t *w) {
    rf_json_begin(w, '{', 0);
}
void rf_json_object_end(rf_json_writer_t *w) {
    rf_json_end(w, '{');
}
void rf_json_array_begin(rf_json_writer_t *w) {
    rf_json_begin(w, '[', 0);
}
void rf_json_array_begin_flat(rf_json_writer_t *w) {
    rf_json_begin(w, '[', 1);
}
void rf_json_array_end(rf_json_writer_t *w) {
    rf_json_end(w, '[');
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is not valid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t rf_utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        cp = c & 0x1F;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        cp = c & 0x0F;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static void rf_json_quoted(rf_json_writer_t *w, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0; /* start of the pending run of bytes that need no escaping */
    rf_json_put(w, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        const char *esc = NULL;
        char buf[8];
        size_t step = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            snprintf(buf, sizeof buf, "\\u%04x", c);
            esc = buf;
        } else if (c >= 0x80) {
            step = rf_utf8_len(s + i, n - i);
            if (step == 0) {
                esc = "\\ufffd";
                step = 1;
            }
        }
        if (esc) {
            rf_json_put(w, str + run, i - run);
            rf_json_puts(w, esc);
            run = i + step;
        }
        i += step;
    }
    rf_json_put(w, str + run, n - run);
    rf_json_put(w, "\"", 1);
}

void rf_json_key(rf_json_writer_t *w, const char *key) {
    if (w->error)
        return;
    if (w->depth == 0 || w->kind[w->depth - 1] != '{' || w->after_key) {
        rf_json_fail(w, RF_ERR(RF_CODE_INTERNAL,
                               "JSON writer: key '%s' outside an object or "
                               "where a value is due",
                               key ? key : "(null)"));
        return;
    }
    if (w->count[w->depth - 1]++)
        rf_json_put(w, ",", 1);
    rf_json_newline(w, w->depth);
    rf_json_quoted(w, key ? key : "", key ? strlen(key) : 0);
    rf_json_put(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
    w->after_key = 1;
}

static void rf_json_raw_value(rf_json_writer_t *w, const char *text, const char *what) {
    if (!rf_json_before_value(w, what))
        return;
    rf_json_puts(w, text);
    rf_json_after_value(w);
}

void rf_json_string_n(rf_json_writer_t *w, const char *s, size_t n) {
    if (!s) {
        rf_json_null(w);
        return;
    }
    if (!rf_json_before_value(w, "a string"))
        return;
    rf_json_quoted(w, s, n);
    rf_json_after_value(w);
}

void rf_json_string(rf_json_writer_t *w, const char *s) {
    rf_json_string_n(w, s, s ? strlen(s) : 0);
}

void rf_json_int(rf_json_writer_t *w, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    rf_json_raw_value(w, buf, "a number");
}

void rf_json_uint(rf_json_writer_t *w, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    rf_json_raw_value(w, buf, "a number");
}

void rf_json_double(rf_json_writer_t *w, double v) {
    char buf[40];
    if (!isfinite(v)) {
        rf_json_raw_value(w, "null", "a number");
        return;
    }
    /* The shortest of 15..17 significant digits that reads back to the same double. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    rf_json_raw_value(w, buf, "a number");
}

void rf_json_bool(rf_json_writer_t *w, int v) {
    rf_json_raw_value(w, v ? "true" : "false", "a boolean");
}

void rf_json_null(rf_json_writer_t *w) {
    rf_json_raw_value(w, "null", "null");
}

void rf_json_key_string(rf_json_writer_t *w, const char *key, const char *s) {
    rf_json_key(w, key);
    rf_json_string(w, s);
}
void rf_json_key_int(rf_json_writer_t *w, const char *key, int64_t v) {
    rf_json_key(w, key);
    rf_json_int(w, v);
}
void rf_json_key_double(rf_json_writer_t *w, const char *key, double v) {
    rf_json_key(w, key);
    rf_json_double(w, v);
}
void rf_json_key_bool(rf_json_writer_t *w, const char *key, int v) {
    rf_json_key(w, key);
    rf_json_bool(w, v);
}

rf_status_t rf_json_writer_finish(rf_json_writer_t *w) {
    if (!w->error && (w->depth != 0 || !w->done))
        rf_json_fail(w, RF_ERR(RF_CODE_INTERNAL,
                               "JSON writer: document incomplete (%d container(s) still open)",
                               w->depth));
    if (!w->error && w->indent)
        rf_json_put(w, "\n", 1);
    rf_status_t st = w->error;
    /* Spent: a later value fails ("after the document ended") instead of writing more. */
    w->error = RF_OK;
    w->done = 1;
    w->depth = 0;
    w->flat_from = 0;
    return st;
}
