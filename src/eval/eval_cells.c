/* The cells the CSV and .npz readers share (eval_csv.c, eval_npz.c): numeric cells, parsed
 * strictly with errors naming the file, column and row, and the slice-column builder, which
 * interns each distinct value once and sorts the values at the end so reports list them in
 * a stable order (numeric order when every value is a number, else byte order). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

/* Decimal numbers only: an optional sign, then a digit or a point, and nothing but digits,
 * points, signs and exponent letters (strtod alone would take hex and words). */
static int rf_looks_decimal(const char *s) {
    if (*s == '+' || *s == '-')
        s++;
    if (!isdigit((unsigned char)*s) && !(*s == '.' && isdigit((unsigned char)s[1])))
        return 0;
    return strspn(s, "0123456789.eE+-") == strlen(s);
}

static int rf_is_nan_or_inf_word(const char *s) {
    if (*s == '+' || *s == '-')
        s++;
    char w[16];
    size_t n = 0;
    while (s[n] && n < sizeof w - 1) {
        w[n] = (char)tolower((unsigned char)s[n]);
        n++;
    }
    w[n] = '\0';
    return !strcmp(w, "nan") || !strcmp(w, "inf") || !strcmp(w, "infinity");
}

rf_status_t rf_eval_parse_number(const char *path, const char *column, int64_t row,
                                 const char *what, const char *text, double *out_value) {
    *out_value = 0.0;
    while (isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    char buf[64];
    if (len == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s', row %lld: empty %s (a missing value); fill it in or drop "
                      "the row",
                      path, column, (long long)row, what);
    if (len >= sizeof buf)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s', row %lld: %s '%.20s...' is not a number", path, column,
                      (long long)row, what, text);
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (rf_is_nan_or_inf_word(buf))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s', row %lld: %s is %s; rowfuse eval needs finite values", path,
                      column, (long long)row, what, buf);
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (!rf_looks_decimal(buf) || *end)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s', row %lld: %s '%s' is not a number", path, column,
                      (long long)row, what, buf);
    if (!isfinite(v))
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "%s: column '%s', row %lld: %s '%s' overflows to infinity", path, column,
                      (long long)row, what, buf);
    *out_value = v;
    return RF_OK;
}

/* ---- slice columns ---- */

void rf_eval_levels_init(rf_eval_levels_t *lv, rf_allocator_t allocator, rf_arena_t *arena) {
    memset(lv, 0, sizeof *lv);
    lv->allocator = allocator;
    lv->arena = arena;
}

void rf_eval_levels_deinit(rf_eval_levels_t *lv) {
    rf_free(lv->allocator, lv->levels);
    rf_free(lv->allocator, lv->slots);
    rf_free(lv->allocator, lv->codes);
    memset(lv, 0, sizeof *lv);
}

static uint64_t rf_hash(const char *s, size_t len) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static rf_status_t rf_levels_rehash(rf_eval_levels_t *lv) {
    size_t n = lv->n_slots ? lv->n_slots * 2 : 64;
    int32_t *slots;
    RF_RETURN_IF_ERROR_PLAIN(
        rf_alloc_zeroed(lv->allocator, n, sizeof *slots, "slice value table", (void **)&slots));
    for (size_t i = 0; i < lv->n_levels; i++) {
        const char *s = lv->levels[i];
        size_t k = rf_hash(s, strlen(s)) & (n - 1);
        while (slots[k])
            k = (k + 1) & (n - 1);
        slots[k] = (int32_t)i + 1;
    }
    rf_free(lv->allocator, lv->slots);
    lv->slots = slots;
    lv->n_slots = n;
    return RF_OK;
}

rf_status_t rf_eval_levels_add(rf_eval_levels_t *lv, const char *s, size_t len) {
    if (2 * (lv->n_levels + 1) > lv->n_slots)
        RF_RETURN_IF_ERROR_PLAIN(rf_levels_rehash(lv));
    size_t k = rf_hash(s, len) & (lv->n_slots - 1);
    int32_t code = -1;
    while (lv->slots[k]) {
        const char *have = lv->levels[lv->slots[k] - 1];
        if (strlen(have) == len && !memcmp(have, s, len)) {
            code = lv->slots[k] - 1;
            break;
        }
        k = (k + 1) & (lv->n_slots - 1);
    }
    if (code < 0) {
        if (lv->n_levels >= INT32_MAX - 1)
            return RF_ERR(RF_CODE_RESOURCE_EXHAUSTED, "too many distinct slice values");
        RF_RETURN_IF_ERROR_PLAIN(rf_grow(lv->allocator, (void **)&lv->levels, &lv->cap_levels,
                                         lv->n_levels + 1, sizeof *lv->levels, "slice values"));
        RF_RETURN_IF_ERROR_PLAIN(rf_arena_strndup(lv->arena, s, len, &lv->levels[lv->n_levels]));
        code = (int32_t)lv->n_levels++;
        lv->slots[k] = code + 1;
    }
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(lv->allocator, (void **)&lv->codes, &lv->cap_codes,
                                     lv->n_codes + 1, sizeof *lv->codes, "slice codes"));
    lv->codes[lv->n_codes++] = code;
    return RF_OK;
}

typedef struct rf_level_key {
    const char *s;
    double num;
    int32_t old;
} rf_level_key_t;

static int rf_level_cmp_num(const void *a, const void *b) {
    const rf_level_key_t *x = a, *y = b;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return strcmp(x->s, y->s);
}

static int rf_level_cmp_str(const void *a, const void *b) {
    return strcmp(((const rf_level_key_t *)a)->s, ((const rf_level_key_t *)b)->s);
}

rf_status_t rf_eval_levels_finish(rf_eval_levels_t *lv, const char *name,
                                  rf_eval_slice_column_t *out) {
    size_t n = lv->n_levels;
    rf_level_key_t *keys;
    int32_t *renum;
    const char **levels;
    memset(out, 0, sizeof *out);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(lv->allocator, n ? n : 1, sizeof *keys + sizeof *renum,
                                             "slice order", (void **)&keys));
    renum = (int32_t *)(keys + (n ? n : 1));
    rf_status_t st = rf_arena_alloc(lv->arena, (n ? n : 1) * sizeof *levels, (void **)&levels);
    if (st) {
        rf_free(lv->allocator, keys);
        return st;
    }
    int numeric = 1;
    for (size_t i = 0; i < n; i++) {
        char *end;
        keys[i] = (rf_level_key_t){lv->levels[i], strtod(lv->levels[i], &end), (int32_t)i};
        numeric &= end != lv->levels[i] && !*end && isfinite(keys[i].num);
    }
    qsort(keys, n, sizeof *keys, numeric ? rf_level_cmp_num : rf_level_cmp_str);
    for (size_t i = 0; i < n; i++) {
        levels[i] = keys[i].s;
        renum[keys[i].old] = (int32_t)i;
    }
    for (size_t r = 0; r < lv->n_codes; r++)
        lv->codes[r] = renum[lv->codes[r]];
    rf_free(lv->allocator, keys);
    char *nm;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(lv->arena, name, &nm));
    out->name = nm;
    out->n_levels = (int)n;
    out->levels = levels;
    out->codes = lv->codes;
    lv->codes = NULL; /* now the table's */
    lv->n_codes = lv->cap_codes = 0;
    return RF_OK;
}
