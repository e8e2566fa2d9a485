/* The evaluation report object (rowfuse/eval.h's rf_eval_report_t, laid out in
 * eval_internal.h): its warnings, getters and release. Filled by the job (eval.c) and the
 * group statistics (eval_groups.c), written out by eval_json.c and eval_md.c. */
#include <stdarg.h>
#include <stdio.h>

#include "eval/eval_internal.h"

rf_status_t rf_eval_report_warn(rf_eval_report_t *r, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    RF_RETURN_IF_ERROR_PLAIN(rf_grow(r->allocator, (void **)&r->warnings, &r->cap_warnings,
                                     r->n_warnings + 1, sizeof *r->warnings, "warnings"));
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_strdup(&r->arena, buf, &r->warnings[r->n_warnings]));
    r->n_warnings++;
    return RF_OK;
}

void rf_eval_report_destroy(rf_eval_report_t *r) {
    if (!r)
        return;
    rf_allocator_t a = r->allocator;
    rf_free(a, r->warnings);
    rf_free(a, r->ya);
    rf_free(a, r->yb);
    rf_arena_deinit(&r->arena);
    rf_free(a, r);
}

rf_eval_task_t rf_eval_report_task(const rf_eval_report_t *r) {
    return r->task;
}

int rf_eval_report_group_count(const rf_eval_report_t *r) {
    return r->n_groups;
}

const rf_eval_group_t *rf_eval_report_group(const rf_eval_report_t *r, int i) {
    return i >= 0 && i < r->n_groups ? &r->groups[i] : NULL;
}

int rf_eval_report_warning_count(const rf_eval_report_t *r) {
    return (int)r->n_warnings;
}

const char *rf_eval_report_warning(const rf_eval_report_t *r, int i) {
    return i >= 0 && (size_t)i < r->n_warnings ? r->warnings[i] : NULL;
}

const char *rf_eval_report_placement(const rf_eval_report_t *r) {
    return r->placement ? r->placement : "";
}

void rf_eval_report_outputs(const rf_eval_report_t *r, const double **out_reference,
                            const double **out_compiled, int64_t *out_rows, int64_t *out_cols) {
    *out_reference = r->ya;
    *out_compiled = r->yb;
    *out_rows = r->rows;
    *out_cols = r->n_outputs;
}
