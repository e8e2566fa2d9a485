/* .npy reading and writing (rowfuse/tensor.h): round trips of fresh random data in every
 * dtype and several shapes; headers compared byte for byte with what NumPy's np.save
 * writes (copied from NumPy's output); v2.0/v3.0 files; and every malformed case (byte
 * order, Fortran order, dtype, truncation, trailing bytes, garbage headers, huge dims,
 * missing files) with its error code and message. Ends with a small random-garbage run
 * that must only produce errors, never crashes. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rf_test.h"
#include "rowfuse/tensor.h"

static char g_dir[256];
static char g_path[512];

static const char *tmp_path(const char *name) {
    snprintf(g_path, sizeof g_path, "%s/%s", g_dir, name);
    return g_path;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    if (n)
        fwrite(data, 1, n, f);
    fclose(f);
}

/* Writes a .npy with the given version and header text (no padding), then `ndata` bytes. */
static void write_npy(const char *path, int major, const char *header, const void *data,
                      size_t ndata) {
    unsigned char buf[4096];
    size_t hl = strlen(header), pos = 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    pos = 8;
    if (major == 1) {
        buf[pos++] = (unsigned char)(hl & 0xff);
        buf[pos++] = (unsigned char)(hl >> 8);
    } else {
        for (int i = 0; i < 4; i++)
            buf[pos++] = (unsigned char)(hl >> (8 * i));
    }
    memcpy(buf + pos, header, hl);
    pos += hl;
    if (ndata)
        memcpy(buf + pos, data, ndata);
    write_bytes(path, buf, pos + ndata);
}

static uint64_t g_rng;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}

static void test_round_trip(void) {
    rf_allocator_t a = rf_allocator_system();
    rf_dtype_t dtypes[] = {RF_DTYPE_F16, RF_DTYPE_F32, RF_DTYPE_F64, RF_DTYPE_I32,
                           RF_DTYPE_I64, RF_DTYPE_U8,  RF_DTYPE_BOOL};
    rf_shape_t shapes[] = {{0, {0}}, {1, {7}}, {2, {49, 48}}, {3, {2, 0, 3}}, {3, {3, 5, 2}}};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            rf_tensor_t t, back;
            CHECK_OK(rf_tensor_alloc(a, dtypes[d], &shapes[s], &t));
            unsigned char *p = t.data;
            for (size_t i = 0; i < t.nbytes; i++)
                p[i] = (unsigned char)rnd();
            if (dtypes[d] == RF_DTYPE_BOOL)
                for (size_t i = 0; i < t.nbytes; i++)
                    p[i] &= 1;
            const char *path = tmp_path("rt.npy");
            CHECK_OK(rf_npy_write(path, &t));
            CHECK_OK(rf_npy_read(a, path, &back));
            CHECK(back.dtype == t.dtype);
            CHECK(rf_shape_equal(&back.shape, &t.shape));
            CHECK(back.nbytes == t.nbytes && memcmp(back.data, t.data, t.nbytes) == 0);
            rf_tensor_free(a, &t);
            rf_tensor_free(a, &back);
        }
}

/* The first line of what np.save writes, for four arrays (from NumPy itself). */
static void test_numpy_headers(void) {
    static const struct {
        rf_dtype_t dtype;
        rf_shape_t shape;
        const char *dict;
        size_t total; /* header bytes including magic, length and newline */
    } cases[] = {
        {RF_DTYPE_F32,
         {2, {2, 3}},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
         128},
        {RF_DTYPE_I64, {1, {5}}, "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }", 128},
        {RF_DTYPE_F64, {0, {0}}, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 128},
        {RF_DTYPE_BOOL,
         {3, {2, 0, 3}},
         "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 0, 3), }",
         128},
    };
    rf_allocator_t a = rf_allocator_system();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rf_tensor_t t;
        CHECK_OK(rf_tensor_alloc(a, cases[c].dtype, &cases[c].shape, &t));
        const char *path = tmp_path("hdr.npy");
        CHECK_OK(rf_npy_write(path, &t));
        unsigned char buf[256];
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f)
            fclose(f);
        CHECK(n == cases[c].total + t.nbytes);
        CHECK(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
        CHECK(buf[8] + 256 * buf[9] == (int)cases[c].total - 10);
        size_t dl = strlen(cases[c].dict);
        CHECK(memcmp(buf + 10, cases[c].dict, dl) == 0);
        int spaces = 1;
        for (size_t i = 10 + dl; i + 1 < cases[c].total; i++)
            spaces &= buf[i] == ' ';
        CHECK(spaces && buf[cases[c].total - 1] == '\n');
        rf_tensor_free(a, &t);
    }
}

static void test_versions(void) {
    rf_allocator_t a = rf_allocator_system();
    float data[3] = {1.5f, -2.25f, 3.0f};
    for (int major = 1; major <= 3; major++) {
        const char *path = tmp_path("v.npy");
        write_npy(path, major, "{\"descr\":'<f4','shape':(3,),'fortran_order':False}\n", data,
                  sizeof data);
        rf_tensor_t t;
        CHECK_OK(rf_npy_read(a, path, &t));
        CHECK(t.dtype == RF_DTYPE_F32 && t.shape.rank == 1 && t.shape.dims[0] == 3);
        CHECK(t.data && memcmp(t.data, data, sizeof data) == 0);
        rf_tensor_free(a, &t);
    }
}

static void expect_read_err(const char *header, int major, size_t ndata, rf_code_t code,
                            const char *needle) {
    static unsigned char zeros[64];
    rf_allocator_t a = rf_allocator_system();
    const char *path = tmp_path("bad.npy");
    write_npy(path, major, header, zeros, ndata);
    rf_tensor_t t;
    rf_status_t st = rf_npy_read(a, path, &t);
    if (!st)
        rf_tensor_free(a, &t);
    CHECK(st && strstr(rf_status_message(st), "bad.npy")); /* names the file */
    CHECK_ERR(st, code, needle);
}

static void test_errors(void) {
    const char *ok_tail = "'fortran_order': False, 'shape': (2,), }";
    char h[256];
    snprintf(h, sizeof h, "{'descr': '>f4', %s", ok_tail);
    expect_read_err(h, 1, 8, RF_CODE_UNSUPPORTED,
                    "dtype '>f4' is big-endian; rowfuse reads little-endian .npy only");
    snprintf(h, sizeof h, "{'descr': '<c8', %s", ok_tail);
    expect_read_err(h, 1, 16, RF_CODE_UNSUPPORTED, "dtype '<c8' is not supported");
    snprintf(h, sizeof h, "{'descr': '<U4', %s", ok_tail);
    expect_read_err(h, 1, 16, RF_CODE_UNSUPPORTED, "not supported");
    expect_read_err("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 1, 16,
                    RF_CODE_UNSUPPORTED, "Fortran order");
    snprintf(h, sizeof h, "{'descr': '<f4', %s", ok_tail);
    expect_read_err(h, 1, 7, RF_CODE_PARSE_ERROR, "data is 7 bytes but shape [2] of <f4 needs 8");
    expect_read_err(h, 1, 9, RF_CODE_PARSE_ERROR, "data is 9 bytes");
    expect_read_err(h, 4, 8, RF_CODE_UNSUPPORTED, "version 4.0");
    expect_read_err("{'descr': '<f4', 'shape': (2,), }", 1, 8, RF_CODE_PARSE_ERROR,
                    "lacks 'fortran_order'");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 1, 8,
                    RF_CODE_PARSE_ERROR, "unexpected or repeated key 'x'");
    expect_read_err("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 1, 8,
                    RF_CODE_PARSE_ERROR, "repeated key 'descr'");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 1, 8,
                    RF_CODE_PARSE_ERROR, "malformed 'shape'");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 1, 8,
                    RF_CODE_PARSE_ERROR, "non-negative integers");
    expect_read_err("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", 1, 8,
                    RF_CODE_PARSE_ERROR, "neither True nor False");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,)}", 1, 8,
                    RF_CODE_SHAPE_ERROR, "larger than");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': "
                    "(2147483648, 2147483648, 2147483648)}",
                    1, 8, RF_CODE_SHAPE_ERROR, "more than");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 1, 4,
                    RF_CODE_SHAPE_ERROR, "more than 8 dims");
    expect_read_err("[1, 2, 3]", 1, 8, RF_CODE_PARSE_ERROR, "not a Python dict");
    expect_read_err("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", 1, 8,
                    RF_CODE_PARSE_ERROR, "trailing bytes");
    expect_read_err("{'descr': '<f4", 1, 8, RF_CODE_PARSE_ERROR, "unterminated string");

    rf_allocator_t a = rf_allocator_system();
    rf_tensor_t t;
    const char *path = tmp_path("magic.npy");
    write_bytes(path, "NUMPY\x01\x00\x00\x00", 9);
    CHECK_ERR(rf_npy_read(a, path, &t), RF_CODE_PARSE_ERROR, "bad magic");
    write_bytes(path, "\x93NUM", 4);
    CHECK_ERR(rf_npy_read(a, path, &t), RF_CODE_PARSE_ERROR, "file ends inside the magic");
    write_bytes(path, "\x93NUMPY\x01\x00\x50\x00{'descr'", 17);
    CHECK_ERR(rf_npy_read(a, path, &t), RF_CODE_PARSE_ERROR, "file ends inside the header");
    write_bytes(path, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
    CHECK_ERR(rf_npy_read(a, path, &t), RF_CODE_PARSE_ERROR, "implausibly large");
    CHECK_ERR(rf_npy_read(a, tmp_path("missing.npy"), &t), RF_CODE_NOT_FOUND,
              "missing.npy: cannot open");
    CHECK_ERR(rf_npy_read(a, g_dir, &t), RF_CODE_IO_ERROR, "not a regular file");

    rf_shape_t s = {1, {4}};
    CHECK_OK(rf_tensor_alloc(a, RF_DTYPE_BF16, &s, &t));
    CHECK_ERR(rf_npy_write(tmp_path("bf16.npy"), &t), RF_CODE_UNSUPPORTED, "bf16");
    rf_tensor_free(a, &t);
    CHECK_OK(rf_tensor_alloc(a, RF_DTYPE_F32, &s, &t));
    CHECK_ERR(rf_npy_write(tmp_path("no/such/dir.npy"), &t), RF_CODE_IO_ERROR, "dir.npy");
    rf_tensor_free(a, &t);
    rf_shape_t huge = {2, {RF_MAX_DIM, RF_MAX_DIM}};
    CHECK_ERR(rf_tensor_alloc(a, RF_DTYPE_F32, &huge, &t), RF_CODE_SHAPE_ERROR, "elements");
}

/* Random bytes after a valid magic and random headers: errors only, never a crash. */
static void test_garbage(void) {
    rf_allocator_t a = rf_allocator_system();
    static const char alphabet[] = "{}(),:' \"<|>f4i8u1b2TrueFals0123456789descrshapeortan_\n";
    int ok = 0, failed = 0;
    for (int iter = 0; iter < 2000; iter++) {
        char h[128];
        size_t n = rnd() % (sizeof h - 1);
        for (size_t i = 0; i < n; i++)
            h[i] = alphabet[rnd() % (sizeof alphabet - 1)];
        h[n] = '\0';
        if (iter % 3 == 0) /* mostly valid prefix, random tail */
            snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%c%c",
                     alphabet[rnd() % 20], alphabet[rnd() % 20]);
        write_npy(tmp_path("g.npy"), 1 + (int)(rnd() % 3), h, "abcdefgh", rnd() % 9);
        rf_tensor_t t;
        rf_status_t st = rf_npy_read(a, tmp_path("g.npy"), &t);
        if (st) {
            failed += rf_status_message(st)[0] != '\0';
            rf_status_free(st);
        } else {
            ok++;
            rf_tensor_free(a, &t);
        }
    }
    CHECK(ok + failed == 2000); /* every error had a message */
}

/* rf_npy_read_buffer: the same file read from memory, then cut short, then empty. */
static void test_buffer(void) {
    rf_allocator_t a = rf_allocator_system();
    rf_shape_t shape = {2, {3, 4}};
    rf_tensor_t t, back;
    CHECK_OK(rf_tensor_alloc(a, RF_DTYPE_F64, &shape, &t));
    for (int i = 0; i < 12; i++)
        ((double *)t.data)[i] = i * 0.5 - 2.0;
    const char *path = tmp_path("buf.npy");
    CHECK_OK(rf_npy_write(path, &t));
    unsigned char buf[512];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    remove(path);
    CHECK(n == 128 + t.nbytes);
    CHECK_OK(rf_npy_read_buffer(a, buf, n, "member x.npy", &back));
    CHECK(back.dtype == RF_DTYPE_F64 && rf_shape_equal(&back.shape, &shape));
    CHECK(back.nbytes == t.nbytes && memcmp(back.data, t.data, t.nbytes) == 0);
    rf_tensor_free(a, &back);
    CHECK_ERR(rf_npy_read_buffer(a, buf, n - 8, "member x.npy", &back), RF_CODE_PARSE_ERROR,
              "member x.npy: data is 88 bytes");
    CHECK_ERR(rf_npy_read_buffer(a, buf, 0, "member x.npy", &back), RF_CODE_PARSE_ERROR, "empty");
    CHECK(back.data == NULL);
    rf_tensor_free(a, &t);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/rf_npy_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    const char *env = getenv("RF_TEST_SEED"); /* fixed unless asked: RF_TEST_SEED sweeps */
    g_rng = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
    printf("seed %llu (set RF_TEST_SEED to try another)\n", (unsigned long long)g_rng);
    test_round_trip();
    test_numpy_headers();
    test_versions();
    test_errors();
    test_garbage();
    test_buffer();
    const char *names[] = {"rt.npy",    "hdr.npy", "v.npy",   "bad.npy",
                           "magic.npy", "g.npy",   "bf16.npy"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        remove(tmp_path(names[i]));
    rmdir(g_dir);
    return rf_test_finish();
}
