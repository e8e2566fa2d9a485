/* Tests for the streaming JSON writer (base/json.h): exact output for nested
 * documents (compact and pretty), string escaping including invalid UTF-8, doubles that
 * read back bit-exactly, and every misuse and sink failure reported once by finish. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "rf_test.h"

typedef struct {
    char data[4096];
    size_t n;
    size_t limit; /* the sink fails once more than this many bytes would be held */
} buf_t;

static int buf_sink(void *ctx, const char *data, size_t n) {
    buf_t *b = ctx;
    if (b->n + n > b->limit || b->n + n >= sizeof b->data)
        return -1;
    memcpy(b->data + b->n, data, n);
    b->n += n;
    b->data[b->n] = '\0';
    return 0;
}

static void buf_init(buf_t *b) {
    memset(b, 0, sizeof *b);
    b->limit = sizeof b->data - 1;
}

static void write_sample(rf_json_writer_t *w) {
    rf_json_object_begin(w);
    rf_json_key_string(w, "name", "x");
    rf_json_key(w, "shape");
    rf_json_array_begin(w);
    rf_json_int(w, 64);
    rf_json_int(w, -48);
    rf_json_array_end(w);
    rf_json_key(w, "empty");
    rf_json_object_begin(w);
    rf_json_object_end(w);
    rf_json_key(w, "none");
    rf_json_array_begin(w);
    rf_json_array_end(w);
    rf_json_key_bool(w, "ok", 1);
    rf_json_key(w, "nothing");
    rf_json_null(w);
    rf_json_key_double(w, "eps", 0.25);
    rf_json_object_end(w);
}

static void test_compact_and_pretty(void) {
    buf_t b;
    rf_json_writer_t w;
    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    write_sample(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    CHECK(strcmp(b.data, "{\"name\":\"x\",\"shape\":[64,-48],\"empty\":{},\"none\":[],"
                         "\"ok\":true,\"nothing\":null,\"eps\":0.25}") == 0);

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 2);
    write_sample(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    CHECK(strcmp(b.data, "{\n  \"name\": \"x\",\n  \"shape\": [\n    64,\n    -48\n  ],\n"
                         "  \"empty\": {},\n  \"none\": [],\n  \"ok\": true,\n"
                         "  \"nothing\": null,\n  \"eps\": 0.25\n}\n") == 0);
    if (strstr(b.data, "\"eps\"") == NULL)
        fprintf(stderr, "pretty output was:\n%s", b.data);
}

static void test_flat_arrays(void) {
    buf_t b;
    rf_json_writer_t w;
    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 2);
    rf_json_object_begin(&w);
    rf_json_key(&w, "shape");
    rf_json_array_begin_flat(&w);
    rf_json_int(&w, 64);
    rf_json_int(&w, 48);
    rf_json_array_end(&w);
    rf_json_key(&w, "nested");
    rf_json_array_begin_flat(&w);
    rf_json_array_begin(&w); /* inside a flat array everything stays on the line */
    rf_json_object_begin(&w);
    rf_json_key_int(&w, "a", 1);
    rf_json_key_int(&w, "b", 2);
    rf_json_object_end(&w);
    rf_json_array_end(&w);
    rf_json_array_begin(&w);
    rf_json_array_end(&w);
    rf_json_array_end(&w);
    rf_json_key(&w, "after");
    rf_json_array_begin(&w); /* pretty again */
    rf_json_int(&w, 1);
    rf_json_array_end(&w);
    rf_json_object_end(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    const char *want = "{\n  \"shape\": [64, 48],\n  \"nested\": [[{\"a\": 1, \"b\": 2}], []],\n"
                       "  \"after\": [\n    1\n  ]\n}\n";
    CHECK(strcmp(b.data, want) == 0);
    if (strcmp(b.data, want) != 0)
        fprintf(stderr, "got:\n%s", b.data);
    /* Compact mode ignores flatness. */
    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin_flat(&w);
    rf_json_int(&w, 1);
    rf_json_int(&w, 2);
    rf_json_array_end(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    CHECK(strcmp(b.data, "[1,2]") == 0);
}

static void test_escaping(void) {
    buf_t b;
    rf_json_writer_t w;
    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin(&w);
    rf_json_string(&w, "a\"b\\c\nd\te\x01\x1f/");
    rf_json_string(&w, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"); /* valid UTF-8 kept */
    rf_json_string(&w, "bad\xff\xc3(\xed\xa0\x80"); /* invalid byte, cut sequence, surrogate */
    rf_json_string_n(&w, "n\0ul", 4);
    rf_json_string(&w, NULL);
    rf_json_array_end(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    const char *want = "[\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f/\","
                       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                       "\"bad\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\","
                       "\"n\\u0000ul\",null]";
    CHECK(strcmp(b.data, want) == 0);
    if (strcmp(b.data, want) != 0)
        fprintf(stderr, "got  %s\nwant %s\n", b.data, want);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_doubles_round_trip(void) {
    /* Random bit patterns (finite ones) must read back to the identical double. */
    int checked = 0, exact = 0;
    rng_state ^= (uint64_t)(uintptr_t)&checked;
    while (checked < 2000) {
        uint64_t bits = rng_next();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        buf_t b;
        rf_json_writer_t w;
        buf_init(&b);
        rf_json_writer_init(&w, buf_sink, &b, 0);
        rf_json_double(&w, v);
        rf_status_t st = rf_json_writer_finish(&w);
        char *end;
        double back = strtod(b.data, &end);
        if (!st && *end == '\0' && memcmp(&back, &v, sizeof v) == 0)
            exact++;
        rf_status_free(st);
        checked++;
    }
    CHECK(exact == checked);
    /* Short values stay short; non-finite values become null. */
    buf_t b;
    rf_json_writer_t w;
    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin(&w);
    rf_json_double(&w, 0.1);
    rf_json_double(&w, -3.0);
    rf_json_double(&w, 1e300 * 1e300);
    rf_json_double(&w, nan(""));
    rf_json_uint(&w, UINT64_MAX);
    rf_json_int(&w, INT64_MIN);
    rf_json_array_end(&w);
    CHECK_OK(rf_json_writer_finish(&w));
    CHECK(strcmp(b.data, "[0.1,-3,null,null,18446744073709551615,-9223372036854775808]") == 0);
}

static void test_misuse(void) {
    buf_t b;
    rf_json_writer_t w;

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin(&w);
    rf_json_key(&w, "k"); /* key inside an array */
    rf_json_int(&w, 1);   /* ignored: the error is sticky */
    rf_json_array_end(&w);
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "key 'k' outside an object");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_object_begin(&w);
    rf_json_int(&w, 1); /* value without a key */
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "without a key");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_object_begin(&w);
    rf_json_key(&w, "k");
    rf_json_object_end(&w); /* the key's value is missing */
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "does not close");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin(&w);
    rf_json_object_end(&w); /* wrong closer */
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "'}' does not close");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_array_begin(&w);
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "1 container(s) still open");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "incomplete");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    rf_json_int(&w, 1);
    rf_json_int(&w, 2); /* a second top-level value */
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "after the document ended");

    buf_init(&b);
    rf_json_writer_init(&w, buf_sink, &b, 0);
    for (int i = 0; i < RF_JSON_MAX_DEPTH + 1; i++)
        rf_json_array_begin(&w);
    CHECK_ERR(rf_json_writer_finish(&w), RF_CODE_INTERNAL, "deeper than");
}

static void test_sink_failure(void) {
    /* Fail the sink at every byte position: always IO_ERROR, never a crash. */
    int all_io = 1;
    for (size_t limit = 0; limit < 60; limit++) {
        buf_t b;
        rf_json_writer_t w;
        buf_init(&b);
        b.limit = limit;
        rf_json_writer_init(&w, buf_sink, &b, 2);
        write_sample(&w);
        rf_status_t st = rf_json_writer_finish(&w);
        if (rf_status_code(st) != RF_CODE_IO_ERROR)
            all_io = 0;
        rf_status_free(st);
    }
    CHECK(all_io);

    /* A real stream: tmpfile round trip. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        rf_json_writer_t w;
        rf_json_writer_init_file(&w, f, 0);
        write_sample(&w);
        CHECK_OK(rf_json_writer_finish(&w));
        rewind(f);
        char text[256] = {0};
        size_t n = fread(text, 1, sizeof text - 1, f);
        CHECK(n > 0 && strncmp(text, "{\"name\":\"x\"", 11) == 0);
        fclose(f);
    }
}

int main(void) {
    test_compact_and_pretty();
    test_flat_arrays();
    test_escaping();
    test_doubles_round_trip();
    test_misuse();
    test_sink_failure();
    return rf_test_finish();
}
