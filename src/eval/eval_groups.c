/* The per-group statistics: one pass over the rows adds each row to the overall group, to
 * its value of every slice column and (with --cross) to its combination of values; then
 * each group's accumulator becomes an rf_eval_group_t (accuracy with Wilson intervals or
 * MAE/RMSE, flips, discordant pairs, exact McNemar p, deviation), and Holm's correction is
 * applied across the judged slices (every non-overall group with at least min_count rows;
 * the overall group is tested on its own). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

typedef struct rf_acc {
    int64_t count, correct_a, correct_b, flips, ref_only, compiled_only, nonfinite_a, nonfinite_b;
    double abs_a, sq_a, abs_b, sq_b, dev_max, dev_sum;
} rf_acc_t;

/* numpy's argmax: the first maximum, or the first NaN if there is one. */
static int64_t rf_argmax(const double *y, int64_t k) {
    int64_t best = 0;
    for (int64_t j = 0; j < k; j++) {
        if (isnan(y[j]))
            return j;
        if (y[j] > y[best])
            best = j;
    }
    return best;
}

static int rf_all_finite(const double *y, int64_t k) {
    for (int64_t j = 0; j < k; j++)
        if (!isfinite(y[j]))
            return 0;
    return 1;
}

static void rf_acc_add(rf_acc_t *acc, int classify, const rf_eval_rows_t *rows, int64_t r) {
    int64_t k = rows->k;
    const double *ya = rows->ya + r * k, *yb = rows->yb + r * k;
    double label = rows->labels[r];
    acc->count++;
    acc->nonfinite_a += !rf_all_finite(ya, k);
    acc->nonfinite_b += !rf_all_finite(yb, k);
    for (int64_t j = 0; j < k; j++) {
        /* A non-finite output on either side counts as an infinite deviation. */
        double d = isfinite(ya[j]) && isfinite(yb[j]) ? fabs(ya[j] - yb[j]) : INFINITY;
        acc->dev_max = fmax(acc->dev_max, d);
        acc->dev_sum += d;
    }
    if (classify) {
        int64_t pa = rf_argmax(ya, k), pb = rf_argmax(yb, k);
        int ca = (double)pa == label, cb = (double)pb == label;
        acc->correct_a += ca;
        acc->correct_b += cb;
        acc->flips += pa != pb;
        acc->ref_only += ca && !cb;
        acc->compiled_only += !ca && cb;
    } else {
        double ea = ya[0] - label, eb = yb[0] - label;
        acc->abs_a += fabs(ea);
        acc->sq_a += ea * ea;
        acc->abs_b += fabs(eb);
        acc->sq_b += eb * eb;
    }
}

static void rf_side(const rf_acc_t *acc, int classify, int compiled, rf_eval_side_t *s) {
    double n = (double)acc->count;
    memset(s, 0, sizeof *s);
    s->nonfinite = compiled ? acc->nonfinite_b : acc->nonfinite_a;
    s->mae = s->rmse = s->accuracy = s->low = s->high = NAN;
    if (classify) {
        s->correct = compiled ? acc->correct_b : acc->correct_a;
        s->accuracy = n > 0 ? (double)s->correct / n : NAN;
        rf_eval_wilson(s->correct, acc->count, RF_EVAL_Z95, &s->low, &s->high);
    } else if (n > 0) {
        s->mae = (compiled ? acc->abs_b : acc->abs_a) / n;
        s->rmse = sqrt((compiled ? acc->sq_b : acc->sq_a) / n);
    }
}

static void rf_group_stats(const rf_acc_t *acc, int classify, int64_t k, int64_t min_count,
                           rf_eval_group_t *g) {
    g->count = acc->count;
    rf_side(acc, classify, 0, &g->reference);
    rf_side(acc, classify, 1, &g->compiled);
    g->max_abs_dev = acc->dev_max;
    g->mean_abs_dev = acc->count ? acc->dev_sum / ((double)acc->count * (double)k) : NAN;
    g->too_small = acc->count < min_count;
    g->p_value = g->p_holm = g->flip_rate = g->flip_low = g->flip_high = NAN;
    if (classify) {
        g->flips = acc->flips;
        g->flip_rate = acc->count ? (double)acc->flips / (double)acc->count : NAN;
        rf_eval_wilson(acc->flips, acc->count, RF_EVAL_Z95, &g->flip_low, &g->flip_high);
        g->reference_only = acc->ref_only;
        g->compiled_only = acc->compiled_only;
        g->p_value = rf_eval_mcnemar_p(acc->ref_only, acc->compiled_only);
    }
}

/* ---- group layout: overall, slice values, crossings ---- */

typedef struct rf_layout {
    int n_groups;
    int *slice_base;     /* group index of value 0 of each slice column */
    int cross_base;      /* group index of the first crossing */
    int64_t *cross_keys; /* sorted distinct keys of the observed combinations */
    int64_t n_cross;
    int64_t *row_key; /* per row: its combination key (when crossing) */
} rf_layout_t;

static int rf_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static rf_status_t rf_layout_cross(rf_allocator_t a, const rf_eval_table_t *t, rf_layout_t *l) {
    int64_t radix = 1;
    for (int s = 0; s < t->n_slices; s++) {
        if (radix > INT64_MAX / 4 / (t->slices[s].n_levels + 1))
            return RF_ERR(RF_CODE_RESOURCE_EXHAUSTED,
                          "--cross: the slice columns have too many combinations to enumerate");
        radix *= t->slices[s].n_levels;
    }
    int64_t *sorted;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, (size_t)t->rows * 2 * sizeof(int64_t), "slice crossings",
                                      (void **)&l->row_key));
    sorted = l->row_key + t->rows;
    for (int64_t r = 0; r < t->rows; r++) {
        int64_t key = 0;
        for (int s = 0; s < t->n_slices; s++) /* first column most significant */
            key = key * t->slices[s].n_levels + t->slices[s].codes[r];
        l->row_key[r] = sorted[r] = key;
    }
    qsort(sorted, (size_t)t->rows, sizeof *sorted, rf_cmp_i64);
    int64_t n = 0;
    for (int64_t r = 0; r < t->rows; r++)
        if (r == 0 || sorted[r] != sorted[n - 1])
            sorted[n++] = sorted[r];
    l->cross_keys = sorted;
    l->n_cross = n;
    return RF_OK;
}

static int64_t rf_cross_index(const rf_layout_t *l, int64_t key) {
    const int64_t *p = bsearch(&key, l->cross_keys, (size_t)l->n_cross, sizeof key, rf_cmp_i64);
    return p - l->cross_keys;
}

/* Names and keys of group g. */
static rf_status_t rf_group_label(rf_eval_report_t *rep, const rf_eval_table_t *t,
                                  const rf_layout_t *l, int g, rf_eval_group_t *out) {
    rf_arena_t *ar = &rep->arena;
    int n_keys = 0;
    int32_t codes[64];
    int cols[64];
    if (g == 0) {
        out->kind = RF_EVAL_GROUP_OVERALL;
    } else if (g < l->cross_base) {
        out->kind = RF_EVAL_GROUP_SLICE;
        int s = t->n_slices - 1;
        while (l->slice_base[s] > g)
            s--;
        cols[0] = s;
        codes[0] = g - l->slice_base[s];
        n_keys = 1;
    } else {
        out->kind = RF_EVAL_GROUP_CROSS;
        int64_t key = l->cross_keys[g - l->cross_base];
        n_keys = t->n_slices;
        for (int s = t->n_slices - 1; s >= 0; s--) {
            cols[s] = s;
            codes[s] = (int32_t)(key % t->slices[s].n_levels);
            key /= t->slices[s].n_levels;
        }
    }
    const char **c, **v;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(ar, sizeof *c * (size_t)(2 * n_keys + 1), (void **)&c));
    v = c + n_keys;
    size_t len = 8;
    for (int i = 0; i < n_keys; i++) { /* copies: the report outlives the table */
        c[i] = rep->slice_names[cols[i]];
        RF_RETURN_IF_ERROR_PLAIN(
            rf_arena_strdup(ar, t->slices[cols[i]].levels[codes[i]], (char **)&v[i]));
        len += strlen(c[i]) + strlen(v[i]) + 4;
    }
    char *name;
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(ar, len, (void **)&name));
    strcpy(name, n_keys ? "" : "overall");
    for (int i = 0; i < n_keys; i++) {
        if (i)
            strcat(name, " & ");
        strcat(name, c[i]);
        strcat(name, "=");
        strcat(name, v[i]);
    }
    out->name = name;
    out->n_keys = n_keys;
    out->columns = c;
    out->values = v;
    return RF_OK;
}

static rf_status_t rf_holm_and_flags(rf_eval_report_t *rep) {
    int n = 0, classify = rep->task == RF_EVAL_TASK_CLASSIFY, ng = rep->n_groups;
    rf_eval_group_t *g0 = &rep->groups[0];
    g0->p_holm = g0->p_value; /* the overall group is a family of one */
    g0->significant = classify && !g0->too_small && g0->p_value < rep->options.alpha;
    if (!classify || ng < 2)
        return RF_OK;
    double *p, *adj;
    int *idx;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(rep->allocator, (size_t)ng * (2 * sizeof *p + sizeof *idx),
                                      "Holm family", (void **)&p));
    adj = p + ng;
    idx = (int *)(adj + ng);
    for (int g = 1; g < ng; g++)
        if (!rep->groups[g].too_small) {
            idx[n] = g;
            p[n++] = rep->groups[g].p_value;
        }
    rf_status_t st = rf_eval_holm(rep->allocator, p, n, adj);
    for (int i = 0; !st && i < n; i++) {
        rf_eval_group_t *g = &rep->groups[idx[i]];
        g->p_holm = adj[i];
        g->significant = adj[i] < rep->options.alpha;
    }
    rep->n_judged = n;
    rf_free(rep->allocator, p);
    return st;
}

static rf_status_t rf_layout_make(rf_allocator_t a, const rf_eval_table_t *t, int cross,
                                  rf_layout_t *l) {
    memset(l, 0, sizeof *l);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, sizeof(int) * (size_t)(t->n_slices + 1), "slice groups",
                                      (void **)&l->slice_base));
    int64_t n = 1;
    for (int s = 0; s < t->n_slices; s++) {
        l->slice_base[s] = (int)n;
        n += t->slices[s].n_levels;
    }
    l->cross_base = (int)n;
    if (cross && t->n_slices >= 2) {
        RF_RETURN_IF_ERROR_PLAIN(rf_layout_cross(a, t, l));
        n += l->n_cross;
    }
    if (n > INT32_MAX / 2)
        return RF_ERR(RF_CODE_RESOURCE_EXHAUSTED, "%lld slices are too many to report",
                      (long long)n);
    l->n_groups = (int)n;
    return RF_OK;
}

static rf_status_t rf_groups_fill(rf_eval_report_t *rep, const rf_eval_table_t *t,
                                  const rf_eval_rows_t *rows, const rf_layout_t *l) {
    int classify = rep->task == RF_EVAL_TASK_CLASSIFY;
    rf_acc_t *acc;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(rep->allocator, (size_t)l->n_groups, sizeof *acc,
                                             "slice statistics", (void **)&acc));
    for (int64_t r = 0; r < rows->n; r++) {
        rf_acc_add(&acc[0], classify, rows, r);
        for (int s = 0; s < t->n_slices; s++)
            rf_acc_add(&acc[l->slice_base[s] + t->slices[s].codes[r]], classify, rows, r);
        if (l->row_key)
            rf_acc_add(&acc[l->cross_base + rf_cross_index(l, l->row_key[r])], classify, rows, r);
    }
    rf_status_t st = rf_arena_alloc(&rep->arena, sizeof *rep->groups * (size_t)l->n_groups,
                                    (void **)&rep->groups);
    for (int g = 0; !st && g < l->n_groups; g++) {
        rf_group_stats(&acc[g], classify, rows->k, rep->options.min_count, &rep->groups[g]);
        st = rf_group_label(rep, t, l, g, &rep->groups[g]);
    }
    if (!st)
        rep->n_groups = l->n_groups;
    rf_free(rep->allocator, acc);
    return st;
}

static rf_status_t rf_groups_warn(rf_eval_report_t *rep, const rf_eval_table_t *t) {
    const rf_eval_group_t *all = &rep->groups[0];
    int small = 0;
    for (int s = 0; s < t->n_slices; s++)
        if (t->slices[s].n_levels > 50)
            RF_RETURN_IF_ERROR_PLAIN(rf_eval_report_warn(
                rep, "slice column '%s' has %d distinct values; is it an identifier?",
                t->slices[s].name, t->slices[s].n_levels));
    for (int g = 1; g < rep->n_groups; g++)
        small += rep->groups[g].too_small;
    if (small)
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_report_warn(
            rep, "%d of %d slices have fewer than %lld rows: reported, not judged", small,
            rep->n_groups - 1, (long long)rep->options.min_count));
    if (all->too_small)
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_report_warn(
            rep, "the whole table has %lld rows, fewer than %lld: nothing is judged",
            (long long)all->count, (long long)rep->options.min_count));
    if (all->reference.nonfinite || all->compiled.nonfinite)
        RF_RETURN_IF_ERROR_PLAIN(rf_eval_report_warn(
            rep,
            "%lld rows have NaN or infinite outputs in the fp64 reference, %lld in the compiled "
            "run; their deviation counts as infinite",
            (long long)all->reference.nonfinite, (long long)all->compiled.nonfinite));
    return RF_OK;
}

rf_status_t rf_eval_groups_compute(rf_eval_report_t *rep, const rf_eval_table_t *t,
                                   const rf_eval_rows_t *rows) {
    rf_layout_t l;
    rf_status_t st = rf_layout_make(rep->allocator, t, rep->options.cross, &l);
    if (!st)
        st = rf_groups_fill(rep, t, rows, &l);
    if (!st)
        st = rf_holm_and_flags(rep);
    if (!st)
        st = rf_groups_warn(rep, t);
    rf_free(rep->allocator, l.slice_base);
    rf_free(rep->allocator, l.row_key);
    return st;
}
