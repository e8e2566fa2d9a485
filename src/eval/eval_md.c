/* The report as markdown: what was compared and how, then one table row for the whole
 * table and one per slice. Numbers are rounded for reading; eval.json has them exact. */
#include <math.h>
#include <stdio.h>

#include "eval/eval_internal.h"

static void rf_md_pct(char *buf, size_t n, double v) {
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2f%%", 100.0 * v);
}

static void rf_md_num(char *buf, size_t n, double v) {
    if (isnan(v))
        snprintf(buf, n, "-");
    else if (isinf(v))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%.3g", v);
}

static const char *rf_md_flag(const rf_eval_group_t *g) {
    if (g->too_small)
        return "too small";
    return g->significant ? "**significant**" : "";
}

static void rf_md_header(FILE *f, int classify) {
    if (classify)
        fprintf(f, "| slice | rows | accuracy (a) [95%%] | accuracy (b) [95%%] | b - a | flips "
                   "(rate) | a-only / b-only right | McNemar p | Holm p | max abs dy | mean abs "
                   "dy | flag |\n"
                   "|---|---:|---|---|---:|---|---:|---:|---:|---:|---:|---|\n");
    else
        fprintf(f,
                "| slice | rows | MAE (a) | MAE (b) | RMSE (a) | RMSE (b) | MAE b - a | max abs "
                "dy | mean abs dy | flag |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
}

static void rf_md_row(FILE *f, const rf_eval_group_t *g, int classify) {
    char a[32], al[32], ah[32], b[32], bl[32], bh[32], d[32], fr[32], p[32], ph[32], mx[32], mn[32];
    rf_md_num(mx, sizeof mx, g->max_abs_dev);
    rf_md_num(mn, sizeof mn, g->mean_abs_dev);
    if (!classify) {
        char ra[32], rb[32];
        rf_md_num(a, sizeof a, g->reference.mae);
        rf_md_num(b, sizeof b, g->compiled.mae);
        rf_md_num(ra, sizeof ra, g->reference.rmse);
        rf_md_num(rb, sizeof rb, g->compiled.rmse);
        rf_md_num(d, sizeof d, g->compiled.mae - g->reference.mae);
        fprintf(f, "| %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s |\n", g->name,
                (long long)g->count, a, b, ra, rb, d, mx, mn, rf_md_flag(g));
        return;
    }
    rf_md_pct(a, sizeof a, g->reference.accuracy);
    rf_md_pct(al, sizeof al, g->reference.low);
    rf_md_pct(ah, sizeof ah, g->reference.high);
    rf_md_pct(b, sizeof b, g->compiled.accuracy);
    rf_md_pct(bl, sizeof bl, g->compiled.low);
    rf_md_pct(bh, sizeof bh, g->compiled.high);
    rf_md_pct(fr, sizeof fr, g->flip_rate);
    snprintf(d, sizeof d, "%+.2f pp", 100.0 * (g->compiled.accuracy - g->reference.accuracy));
    rf_md_num(p, sizeof p, g->p_value);
    rf_md_num(ph, sizeof ph, g->p_holm);
    fprintf(f,
            "| %s | %lld | %s [%s, %s] | %s [%s, %s] | %s | %lld (%s) | %lld / %lld | %s | %s | "
            "%s | %s | %s |\n",
            g->name, (long long)g->count, a, al, ah, b, bl, bh, d, (long long)g->flips, fr,
            (long long)g->reference_only, (long long)g->compiled_only, p, ph, mx, mn,
            rf_md_flag(g));
}

static void rf_md_setup(FILE *f, const rf_eval_report_t *r) {
    int classify = r->task == RF_EVAL_TASK_CLASSIFY;
    fprintf(f, "# rowfuse eval\n\n");
    fprintf(f, "- model: `%s` (input `%s`, %lld rows per run; output `%s`, %lld column%s)\n",
            r->model_path, r->input_name, (long long)r->model_rows, r->output_name,
            (long long)r->n_outputs, r->n_outputs == 1 ? "" : "s");
    fprintf(f, "- data: `%s`, %lld rows; %d features (`%s` ... `%s`); label `%s`; slices:",
            r->data_path, (long long)r->rows, r->n_features, r->feature_names[0],
            r->feature_names[r->n_features - 1], r->label_name);
    for (int s = 0; s < r->n_slices; s++)
        fprintf(f, "%s `%s`", s ? "," : "", r->slice_names[s]);
    fprintf(f, "%s%s\n", r->n_slices ? "" : " none",
            r->options.cross ? " (and their crossing)" : "");
    fprintf(f, "- task: %s%s (%s)\n", classify ? "classify" : "regress",
            classify ? ", prediction = argmax of the output row" : ", output column 0 vs label",
            r->task_reason);
    fprintf(f, "- (a) reference: the CPU interpreter in fp64\n");
    if (r->options.backend == RF_EVAL_GPU)
        fprintf(f,
                "- (b) compiled: the residual-MLP block on the GPU, %s, package `%s` (schedule "
                "%s, %lld rows per launch); the other nodes on the CPU interpreter in mixed "
                "precision\n",
                r->gpu.device, r->options.package_dir, r->gpu.schedule,
                (long long)r->gpu.package_rows);
    else
        fprintf(f, "- (b) compiled: the CPU interpreter in the GPU plan's mixed precision (fp16 "
                   "inputs, weights and matmul operands, fp32 accumulation and outputs)\n");
    fprintf(f, "- where the nodes of (b) ran: %s\n", r->placement);
    if (classify)
        fprintf(f,
                "- method: Wilson 95%% intervals; exact two-sided McNemar test on the rows that "
                "only (a) or only (b) gets right; Holm's correction over the %d slices with at "
                "least %lld rows (the overall row is tested alone); significant: adjusted p < "
                "%g\n",
                r->n_judged, (long long)r->options.min_count, r->options.alpha);
    else
        fprintf(f,
                "- method: MAE and RMSE against the label; no significance test for "
                "regression (see src/eval/README.md); slices under %lld rows are marked too "
                "small\n",
                (long long)r->options.min_count);
}

rf_status_t rf_eval_report_write_markdown(const rf_eval_report_t *r, FILE *f) {
    int classify = r->task == RF_EVAL_TASK_CLASSIFY;
    rf_md_setup(f, r);
    fprintf(f, "\n## Overall\n\n");
    rf_md_header(f, classify);
    rf_md_row(f, &r->groups[0], classify);
    if (r->n_groups > 1) {
        fprintf(f, "\n## Slices\n\n");
        rf_md_header(f, classify);
        for (int g = 1; g < r->n_groups; g++)
            rf_md_row(f, &r->groups[g], classify);
    }
    if (r->n_warnings) {
        fprintf(f, "\n## Warnings\n\n");
        for (size_t i = 0; i < r->n_warnings; i++)
            fprintf(f, "- %s\n", r->warnings[i]);
    }
    fflush(f);
    if (ferror(f))
        return RF_ERR(RF_CODE_IO_ERROR, "writing the markdown report failed");
    return RF_OK;
}
