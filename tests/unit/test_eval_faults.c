/* Allocation failures in the evaluator: loading a CSV table, running the evaluation with
 * crossed slices and writing both reports, under an allocator that fails the k-th
 * allocation, for every k until a run succeeds. Every failure must be OUT_OF_MEMORY and
 * leave nothing allocated. Also the report's figures on a table small enough to check by
 * hand. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdint.h>
#include <unistd.h>

#include "eval/eval_internal.h"
#include "rf_graph_build.h"
#include "rf_test.h"
#include "rf_test_alloc.h"
#include "rowfuse/verify.h"

/* x [2, 2] -> MatMul(w [2, 2]) = logits: class 1 when x1 > x0 (w swaps and keeps). */
static void build_model(void) {
    gb_new();
    int x = gb_input("x", SH(2, 2, 2));
    static const float eye[4] = {1, 0, 0, 1};
    int w = -1;
    CHECK_OK(rf_graph_add_const(gb_graph, "w", RF_DTYPE_F32, &SH(2, 2, 2), eye, sizeof eye, &w));
    int l = gb_op("MatMul", "logits", GB_IN(x, w));
    CHECK_OK(rf_graph_add_output(gb_graph, l));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
}

static const char *const CSV = "a,b,label,s,t\n"
                               "1,2,1,u,x\n"  /* predicts 1: right */
                               "3,1,0,u,y\n"  /* predicts 0: right */
                               "2,5,0,v,x\n"  /* predicts 1: wrong */
                               "0,1,1,v,z\n"  /* predicts 1: right */
                               "4,3,0,u,x\n"; /* predicts 0: right */

static rf_status_t run_once(rf_allocator_t a, const char *path, const rf_contract_t *c,
                            rf_eval_report_t **out) {
    static const char *const features[] = {"a", "b"}, *const slices[] = {"s", "t"};
    rf_eval_columns_t cols = {features, 2, "label", slices, 2};
    rf_eval_options_t o;
    rf_eval_options_default(&o);
    o.cross = 1;
    o.min_count = 2;
    o.model_path = "m.onnx";
    rf_eval_table_t *t = NULL;
    *out = NULL;
    RF_RETURN_IF_ERROR_PLAIN(rf_eval_table_load(a, path, &cols, &t));
    rf_status_t st = rf_eval_run(a, gb_graph, c, t, &o, out);
    rf_eval_table_destroy(t);
    FILE *null = fopen("/dev/null", "w");
    if (!st && null)
        st = rf_eval_report_write_json(*out, null);
    if (!st && null)
        st = rf_eval_report_write_markdown(*out, null);
    if (null)
        fclose(null);
    if (st) {
        rf_eval_report_destroy(*out);
        *out = NULL;
    }
    return st;
}

static void check_figures(const rf_eval_report_t *r) {
    CHECK(rf_eval_report_task(r) == RF_EVAL_TASK_CLASSIFY);
    /* overall, s=u, s=v, t=x, t=y, t=z, then the crossings u&x, u&y, v&x, v&z */
    CHECK(rf_eval_report_group_count(r) == 10);
    const rf_eval_group_t *all = rf_eval_report_group(r, 0), *v = rf_eval_report_group(r, 2);
    CHECK(all->count == 5 && all->reference.correct == 4 && all->flips == 0);
    CHECK(all->p_value == 1.0 && !all->significant && !all->too_small);
    CHECK(!strcmp(v->name, "s=v") && v->count == 2 && v->reference.correct == 1);
    const rf_eval_group_t *vz = rf_eval_report_group(r, 9), *tz = rf_eval_report_group(r, 5);
    CHECK(!strcmp(vz->name, "s=v & t=z") && vz->count == 1 && vz->too_small);
    CHECK(!strcmp(tz->name, "t=z") && tz->too_small && isnan(tz->p_holm));
    CHECK(!strcmp(rf_eval_report_placement(r), "cpu: 0 MatMul"));
}

int main(void) {
    char dir[] = "/tmp/rf_eval_XXXXXX", path[64];
    if (!mkdtemp(dir))
        return 2;
    snprintf(path, sizeof path, "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    fputs(CSV, f);
    fclose(f);
    build_model();
    rf_contract_t *c = NULL;
    CHECK_OK(rf_verify(gb_graph, &c));

    rf_eval_report_t *r;
    CHECK_OK(run_once(rf_allocator_system(), path, c, &r));
    if (r)
        check_figures(r);
    rf_eval_report_destroy(r);

    int ok = 0, failures = 0;
    for (long k = 1; k <= 100000 && !ok; k++) {
        rf_test_alloc_t fl;
        rf_allocator_t a = rf_test_allocator(&fl, k);
        rf_status_t st = run_once(a, path, c, &r);
        if (st == RF_OK) {
            ok = 1;
            rf_eval_report_destroy(r);
        } else {
            failures++;
            if (rf_status_code(st) != RF_CODE_OUT_OF_MEMORY)
                fprintf(stderr, "allocation %ld: %s: %s\n", k, rf_code_name(rf_status_code(st)),
                        rf_status_message(st));
            CHECK(rf_status_code(st) == RF_CODE_OUT_OF_MEMORY && r == NULL);
            rf_status_free(st);
        }
        if (fl.live != 0)
            fprintf(stderr, "allocation %ld: %ld blocks leaked\n", k, fl.live);
        CHECK(fl.live == 0);
    }
    CHECK(ok && failures > 20);
    rf_contract_destroy(c);
    gb_free();
    remove(path);
    rmdir(dir);
    return rf_test_finish();
}
