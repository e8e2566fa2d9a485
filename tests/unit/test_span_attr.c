/* The GPU span's attribution of CUPTI kernel records to timed observations
 * (src/base/span_attr.h) on synthetic records: spans of shuffled records of replays with
 * 1, 2 and 4 kernels by correlation id and by order, and every error case (a replay with a
 * record missing or extra, a launch left over, correlation ids out of order, replays that
 * overlap, a record ending before it starts). Runs without a GPU. */
#include "base/span_attr.h"
#include "rf_test.h"

#define NREC 16

/* Observations 0..3 with 1, 2, 1, 4 kernels; observation j starts at 10000*(j+1) ns, its
 * kernels run back to back, 300 ns each with 50 ns gaps; correlation ids 7, 9, 12, 13. */
static const int expected[4] = {1, 2, 1, 4};
static const uint32_t ids[4] = {7, 9, 12, 13};

static size_t make(rf_bench_kernel_record_t *r, double *spans) {
    size_t n = 0;
    for (int j = 0; j < 4; j++) {
        uint64_t t = 10000ull * (uint64_t)(j + 1);
        for (int k = 0; k < expected[j]; k++) {
            r[n].start = t;
            r[n].end = t + 300;
            r[n].correlation = ids[j];
            t += 350;
            n++;
        }
        spans[j] = (double)(expected[j] * 350 - 50) * 1e-3;
    }
    /* scramble, as CUPTI buffers deliver them */
    for (size_t i = 0; i < n; i += 3) {
        rf_bench_kernel_record_t t = r[i];
        r[i] = r[n - 1 - i];
        r[n - 1 - i] = t;
    }
    return n;
}

static int same(const double *a, const double *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fabs(a[i] - b[i]) > 1e-9)
            return 0;
    return 1;
}

static void test_good(void) {
    rf_bench_kernel_record_t r[NREC];
    double want[4], got[4];
    for (int how = 0; how < 2; how++) {
        size_t n = make(r, want);
        CHECK(n == 8);
        CHECK_OK(rf_bench_span_attribute(r, n, expected, 4, (rf_bench_attribution_t)how, got));
        CHECK(same(got, want, 4));
        CHECK(fabs(got[3] - 1.35) < 1e-9); /* 4 kernels: 4*350-50 ns */
    }
}

static void test_missing_and_extra(void) {
    rf_bench_kernel_record_t r[NREC];
    double want[4], got[4];
    /* observation 3 lost one of its 4 records */
    size_t n = make(r, want);
    for (size_t i = 0; i < n; i++)
        if (r[i].correlation == 13 && r[i].start == 40000 + 350) {
            r[i] = r[n - 1];
            n--;
            break;
        }
    CHECK(n == 7);
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_CORRELATION, got),
              RF_CODE_MISMATCH,
              "observation 3: 3 kernel record(s) under correlation id 13, the "
              "graph holds 4");
    n = make(r, want);
    n--; /* drop one (whichever sits last) */
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_MISMATCH, "7 kernel records for 4 observations whose graphs hold 8");

    /* observation 1 got a third record (a kernel the graph does not hold) */
    n = make(r, want);
    r[n] = (rf_bench_kernel_record_t){20000 + 700, 20000 + 900, 9};
    n++;
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_CORRELATION, got),
              RF_CODE_MISMATCH, "observation 1: 3 kernel record(s)");
    n = make(r, want);
    r[n++] = (rf_bench_kernel_record_t){20000 + 700, 20000 + 900, 9};
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_MISMATCH, "9 kernel records");

    /* a launch after the last observation */
    n = make(r, want);
    r[n++] = (rf_bench_kernel_record_t){90000, 90300, 20};
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_CORRELATION, got),
              RF_CODE_MISMATCH, "more launches than the 4 observations");

    /* the last observation left no record at all */
    n = make(r, want);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].correlation != 13)
            r[k++] = r[i];
    CHECK_ERR(rf_bench_span_attribute(r, k, expected, 4, RF_BENCH_ATTRIBUTE_CORRELATION, got),
              RF_CODE_MISMATCH, "observation 3 and later have none");
}

static void test_order_errors(void) {
    rf_bench_kernel_record_t r[NREC];
    double want[4], got[4];
    /* correlation ids out of time order: observation 2's id is below observation 1's */
    size_t n = make(r, want);
    for (size_t i = 0; i < n; i++)
        if (r[i].correlation == 12)
            r[i].correlation = 8;
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_CORRELATION, got),
              RF_CODE_MISMATCH, "observation 2: correlation id 8 follows 9");
    /* counts right in total, but one record of observation 1 moved into observation 2's
     * time: ordering cannot cut the replays apart */
    n = make(r, want);
    for (size_t i = 0; i < n; i++)
        if (r[i].correlation == 9 && r[i].start == 20000 + 350) {
            r[i].start = 30100;
            r[i].end = 30200;
        }
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_MISMATCH, "observation 2: its first kernel starts before observation 1's");
}

static void test_arguments(void) {
    rf_bench_kernel_record_t r[NREC];
    double want[4], got[4];
    size_t n = make(r, want);
    r[2].end = r[2].start - 1;
    CHECK_ERR(rf_bench_span_attribute(r, n, expected, 4, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_INVALID_ARGUMENT, "ends");
    int zero[1] = {0};
    CHECK_ERR(rf_bench_span_attribute(r, 1, zero, 1, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_INVALID_ARGUMENT, "expects 0 kernels");
    CHECK_ERR(rf_bench_span_attribute(r, 0, expected, 4, RF_BENCH_ATTRIBUTE_ORDER, got),
              RF_CODE_MISMATCH, "no kernel records");
    rf_bench_attribution_t how;
    CHECK_OK(rf_bench_attribution_parse("order", &how));
    CHECK(how == RF_BENCH_ATTRIBUTE_ORDER);
    CHECK_OK(rf_bench_attribution_parse("correlation", &how));
    CHECK(how == RF_BENCH_ATTRIBUTE_CORRELATION);
    CHECK(!strcmp(rf_bench_attribution_name(how), "correlation"));
    CHECK_ERR(rf_bench_attribution_parse("time", &how), RF_CODE_INVALID_ARGUMENT,
              "correlation, order");
}

int main(void) {
    test_good();
    test_missing_and_extra();
    test_order_errors();
    test_arguments();
    return rf_test_finish();
}
