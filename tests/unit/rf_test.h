/* A tiny test harness for rowfuse's C unit tests: CHECK macros that count failures and
 * print the first few with file and line, and a closing "N passed, N failed" line. */
#ifndef RF_TEST_H
#define RF_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowfuse/status.h"

static int rf_test_passed, rf_test_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            rf_test_passed++;                                                                      \
        } else {                                                                                   \
            rf_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* Expects an OK status; prints the message otherwise. Frees the status. */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        rf_status_t st_ = (expr);                                                                  \
        if (st_ == RF_OK) {                                                                        \
            rf_test_passed++;                                                                      \
        } else {                                                                                   \
            rf_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                   \
                    rf_status_message(st_));                                                       \
            rf_status_free(st_);                                                                   \
        }                                                                                          \
    } while (0)

/* Expects an error with the given code whose message contains `needle`. */
#define CHECK_ERR(expr, code, needle)                                                              \
    do {                                                                                           \
        rf_status_t st_ = (expr);                                                                  \
        if (st_ != RF_OK && rf_status_code(st_) == (code) &&                                       \
            strstr(rf_status_message(st_), (needle))) {                                            \
            rf_test_passed++;                                                                      \
        } else {                                                                                   \
            rf_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: %s: expected %s containing '%s', got %s: '%s'\n", __FILE__,    \
                    __LINE__, #expr, rf_code_name(code), (needle),                                 \
                    rf_code_name(rf_status_code(st_)), rf_status_message(st_));                    \
        }                                                                                          \
        rf_status_free(st_);                                                                       \
    } while (0)

/* Copies the file `from` to `to` (the tests' package folders); 0 on success. */
static inline int rf_test_copy_file(const char *from, const char *to) {
    char buf[65536];
    size_t n;
    FILE *in = fopen(from, "rb"), *out;
    if (!in)
        return -1;
    out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

static inline int rf_test_finish(void) {
    printf("%d passed, %d failed\n", rf_test_passed, rf_test_failed);
    return rf_test_failed ? 1 : 0;
}

#endif
