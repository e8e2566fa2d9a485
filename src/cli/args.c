/* The CLI's value parsers (args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowfuse/graph.h"

/* strtoll on the whole text: 0 when it is not one base-10 integer (or overflows). */
static int rf_cli_whole_int64(const char *text, long long *out) {
    char *end = NULL;
    if (!text[0] || text[0] == ' ' || text[0] == '\t')
        return 0;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        return 0;
    *out = v;
    return 1;
}

rf_status_t rf_cli_parse_int64(const char *flag, const char *text, int64_t lo, int64_t hi,
                               int64_t *out) {
    long long v = 0;
    if (!rf_cli_whole_int64(text, &v) || v < lo || v > hi) {
        if (hi == INT64_MAX)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s wants an integer >= %lld, not '%s'", flag,
                          (long long)lo, text);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s wants an integer in %lld..%lld, not '%s'", flag,
                      (long long)lo, (long long)hi, text);
    }
    *out = (int64_t)v;
    return RF_OK;
}

rf_status_t rf_cli_parse_int(const char *flag, const char *text, int lo, int hi, int *out) {
    int64_t v = 0;
    RF_RETURN_IF_ERROR_PLAIN(rf_cli_parse_int64(flag, text, lo, hi, &v));
    *out = (int)v;
    return RF_OK;
}

rf_status_t rf_cli_parse_double(const char *flag, const char *text, double lo, double hi,
                                double *out) {
    char *end = NULL;
    errno = 0;
    double v = text[0] && text[0] != ' ' ? strtod(text, &end) : NAN;
    if (end == text || (end && *end) || errno || !isfinite(v) || !(v > lo) || !(v < hi)) {
        if (isinf(hi))
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s wants a number > %g, not '%s'", flag, lo,
                          text);
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s wants a number in (%g, %g), not '%s'", flag, lo,
                      hi, text);
    }
    *out = v;
    return RF_OK;
}

/* One dimension of a shape: text[0..n) a plain positive integer up to RF_MAX_DIM. */
static int rf_cli_dim(const char *text, size_t n, int64_t *out) {
    char part[32];
    long long v = 0;
    if (n == 0 || n >= sizeof part || text[0] < '0' || text[0] > '9')
        return 0;
    memcpy(part, text, n);
    part[n] = '\0';
    if (!rf_cli_whole_int64(part, &v) || v < 1 || v > RF_MAX_DIM)
        return 0;
    *out = (int64_t)v;
    return 1;
}

rf_status_t rf_cli_parse_shape(const char *flag, const char *text, int64_t dims[3]) {
    int64_t d[3];
    const char *p = text;
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
        const char *x = i < 2 ? strchr(p, 'x') : p + strlen(p);
        ok = x && rf_cli_dim(p, (size_t)(x - p), &d[i]);
        p = ok ? x + 1 : p;
    }
    if (!ok)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s wants ROWSxCHANNELSxHIDDEN with each in 1..%lld, not '%s'", flag,
                      (long long)RF_MAX_DIM, text);
    memcpy(dims, d, sizeof d);
    return RF_OK;
}

rf_status_t rf_cli_parse_choice(const char *flag, const char *text, const char *const *names,
                                int *out) {
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; names[i]; i++) {
        if (!strcmp(text, names[i])) {
            *out = i;
            return RF_OK;
        }
        if (n < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? "|" : "", names[i]);
    }
    return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s takes %s, not '%s'", flag, list, text);
}
