/* Attribution of kernel activity records to timed observations; see span_attr.h. Kept
 * apart from span.c (which talks to CUPTI) so the rule is tested on synthetic records. */
#include "base/span_attr.h"

#include <stdlib.h>
#include <string.h>

const char *rf_bench_attribution_name(rf_bench_attribution_t how) {
    return how == RF_BENCH_ATTRIBUTE_ORDER ? "order" : "correlation";
}

rf_status_t rf_bench_attribution_parse(const char *name, rf_bench_attribution_t *out_how) {
    if (name && !strcmp(name, "correlation")) {
        *out_how = RF_BENCH_ATTRIBUTE_CORRELATION;
        return RF_OK;
    }
    if (name && !strcmp(name, "order")) {
        *out_how = RF_BENCH_ATTRIBUTE_ORDER;
        return RF_OK;
    }
    return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                  "span attribution '%s' is not one of: correlation, order", name ? name : "");
}

static int rf_record_cmp(const void *a, const void *b) {
    const rf_bench_kernel_record_t *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

/* The span of records [lo, hi): earliest start to latest end, in microseconds. */
static double rf_span_us(const rf_bench_kernel_record_t *r, size_t lo, size_t hi,
                         uint64_t *out_end) {
    uint64_t first = r[lo].start, last = r[lo].end;
    for (size_t i = lo + 1; i < hi; i++)
        last = r[i].end > last ? r[i].end : last;
    *out_end = last;
    return (double)(last - first) * 1e-3;
}

static rf_status_t rf_attribute_correlation(const rf_bench_kernel_record_t *r, size_t count,
                                            const int *expected, size_t observations, double *out) {
    size_t at = 0, j = 0;
    uint32_t prev_id = 0;
    uint64_t end;
    while (at < count) {
        size_t hi = at + 1;
        while (hi < count && r[hi].correlation == r[at].correlation)
            hi++;
        if (j >= observations)
            return RF_ERR(RF_CODE_MISMATCH,
                          "kernel records of more launches than the %zu observations timed (a "
                          "record under correlation id %u is left over)",
                          observations, r[at].correlation);
        if (j > 0 && r[at].correlation <= prev_id)
            return RF_ERR(RF_CODE_MISMATCH,
                          "observation %zu: correlation id %u follows %u in time; the records of "
                          "one launch are split or out of order",
                          j, r[at].correlation, prev_id);
        if (hi - at != (size_t)expected[j])
            return RF_ERR(RF_CODE_MISMATCH,
                          "observation %zu: %zu kernel record(s) under correlation id %u, the "
                          "graph holds %d kernel(s)",
                          j, hi - at, r[at].correlation, expected[j]);
        out[j++] = rf_span_us(r, at, hi, &end);
        prev_id = r[at].correlation;
        at = hi;
    }
    if (j != observations)
        return RF_ERR(RF_CODE_MISMATCH,
                      "kernel records of %zu launches for %zu observations (observation %zu and "
                      "later have none)",
                      j, observations, j);
    return RF_OK;
}

static rf_status_t rf_attribute_order(const rf_bench_kernel_record_t *r, size_t count,
                                      const int *expected, size_t observations, double *out) {
    size_t want = 0, at = 0;
    uint64_t prev_end = 0;
    for (size_t j = 0; j < observations; j++)
        want += (size_t)expected[j];
    if (want != count)
        return RF_ERR(RF_CODE_MISMATCH,
                      "%zu kernel records for %zu observations whose graphs hold %zu kernels",
                      count, observations, want);
    for (size_t j = 0; j < observations; j++) {
        size_t hi = at + (size_t)expected[j];
        if (j > 0 && r[at].start < prev_end)
            return RF_ERR(RF_CODE_MISMATCH,
                          "observation %zu: its first kernel starts before observation %zu's "
                          "last one ends; the records do not cut into replays of %d kernel(s)",
                          j, j - 1, expected[j]);
        out[j] = rf_span_us(r, at, hi, &prev_end);
        at = hi;
    }
    return RF_OK;
}

rf_status_t rf_bench_span_attribute(rf_bench_kernel_record_t *records, size_t count,
                                    const int *expected, size_t observations,
                                    rf_bench_attribution_t how, double *out_span_us) {
    if ((!records && count) || !expected || !out_span_us || observations == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "rf_bench_span_attribute: records, expected counts and output are required");
    for (size_t j = 0; j < observations; j++)
        if (expected[j] < 1)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "rf_bench_span_attribute: observation %zu expects %d kernels", j,
                          expected[j]);
    for (size_t i = 0; i < count; i++)
        if (records[i].end < records[i].start)
            return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                          "kernel record %zu ends (%llu ns) before it starts (%llu ns)", i,
                          (unsigned long long)records[i].end, (unsigned long long)records[i].start);
    if (count == 0)
        return RF_ERR(RF_CODE_MISMATCH, "no kernel records for %zu observations", observations);
    /* Buffers arrive per CUPTI buffer, not in time order. */
    qsort(records, count, sizeof *records, rf_record_cmp);
    if (how == RF_BENCH_ATTRIBUTE_ORDER)
        return rf_attribute_order(records, count, expected, observations, out_span_us);
    return rf_attribute_correlation(records, count, expected, observations, out_span_us);
}
