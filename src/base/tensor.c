/* Host tensors, .npy files and fp16/fp32 rounding (rowfuse/tensor.h).
 *
 * The .npy reader is written for hostile files: the header is a Python dict literal that
 * we parse with a small recursive-descent reader accepting only what NumPy writes (the
 * keys 'descr', 'fortran_order' and 'shape'), the file size is checked against the shape
 * before anything is allocated, and every error names the file and the field. Rounding to
 * fp16 works directly on doubles (scale to an integer quantum, round to nearest even), so
 * there is no double rounding through fp32.
 */
#define _POSIX_C_SOURCE 200809L /* fstat: tell a directory from a file */

#include "rowfuse/tensor.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

rf_status_t rf_tensor_alloc(rf_allocator_t a, rf_dtype_t dtype, const rf_shape_t *shape,
                            rf_tensor_t *out_tensor) {
    int64_t numel;
    size_t nbytes;
    void *p;
    memset(out_tensor, 0, sizeof *out_tensor);
    size_t esize = rf_dtype_size(dtype);
    if (esize == 0)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "tensor of undefined dtype");
    RF_RETURN_IF_ERROR_PLAIN(rf_shape_numel(shape, &numel));
    if (rf_mul_size((size_t)numel, esize, &nbytes))
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "tensor of %lld elements overflows size_t",
                      (long long)numel);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, nbytes ? nbytes : 1, 1, "tensor data", &p));
    out_tensor->dtype = dtype;
    out_tensor->shape = *shape;
    out_tensor->data = p;
    out_tensor->nbytes = nbytes;
    return RF_OK;
}

void rf_tensor_free(rf_allocator_t a, rf_tensor_t *tensor) {
    if (!tensor)
        return;
    rf_free(a, tensor->data);
    memset(tensor, 0, sizeof *tensor);
}

/* ---- .npy header parsing ---- */

typedef struct rf_npy_header {
    char descr[16];
    int have_descr, have_order, have_shape;
    int fortran_order;
    rf_shape_t shape;
} rf_npy_header_t;

typedef struct rf_cursor {
    const char *p, *end;
    const char *path;
} rf_cursor_t;

static void rf_skip_ws(rf_cursor_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int rf_accept(rf_cursor_t *c, char ch) {
    rf_skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* Reads a quoted Python string (no escapes: NumPy never writes them in headers). */
static rf_status_t rf_read_pystr(rf_cursor_t *c, char *out, size_t out_size) {
    rf_skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: expected a quoted string at offset %d",
                      c->path, (int)(c->end - c->p));
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || (unsigned char)*c->p < 0x20)
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: unexpected character in a string",
                          c->path);
        if (n + 1 >= out_size)
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: string too long", c->path);
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: unterminated string", c->path);
    c->p++;
    out[n] = '\0';
    return RF_OK;
}

static rf_status_t rf_read_shape(rf_cursor_t *c, rf_shape_t *shape) {
    memset(shape, 0, sizeof *shape);
    if (!rf_accept(c, '('))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: 'shape' is not a tuple", c->path);
    for (;;) {
        if (rf_accept(c, ')'))
            return RF_OK;
        rf_skip_ws(c);
        if (c->p >= c->end)
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: malformed 'shape' tuple", c->path);
        if (*c->p < '0' || *c->p > '9')
            return RF_ERR(RF_CODE_PARSE_ERROR,
                          "%s: header: 'shape' must hold non-negative integers", c->path);
        int64_t d = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            d = d * 10 + (*c->p++ - '0');
            if (d > RF_MAX_DIM)
                return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: dim %d of 'shape' is larger than %lld",
                              c->path, shape->rank, (long long)RF_MAX_DIM);
        }
        if (shape->rank >= RF_MAX_RANK)
            return RF_ERR(RF_CODE_SHAPE_ERROR, "%s: 'shape' has more than %d dims", c->path,
                          RF_MAX_RANK);
        shape->dims[shape->rank++] = d;
        if (rf_accept(c, ','))
            continue;
        if (rf_accept(c, ')'))
            return RF_OK;
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: malformed 'shape' tuple", c->path);
    }
}

static rf_status_t rf_parse_npy_header(const char *text, size_t len, const char *path,
                                       rf_npy_header_t *h) {
    rf_cursor_t c = {text, text + len, path};
    memset(h, 0, sizeof *h);
    if (!rf_accept(&c, '{'))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header is not a Python dict", path);
    for (;;) {
        if (rf_accept(&c, '}'))
            break;
        char key[32];
        RF_RETURN_IF_ERROR_PLAIN(rf_read_pystr(&c, key, sizeof key));
        if (!rf_accept(&c, ':'))
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: expected ':' after '%s'", path, key);
        if (strcmp(key, "descr") == 0 && !h->have_descr) {
            RF_RETURN_IF_ERROR_PLAIN(rf_read_pystr(&c, h->descr, sizeof h->descr));
            h->have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !h->have_order) {
            rf_skip_ws(&c);
            size_t left = (size_t)(c.end - c.p);
            if (left >= 4 && memcmp(c.p, "True", 4) == 0) {
                h->fortran_order = 1;
                c.p += 4;
            } else if (left >= 5 && memcmp(c.p, "False", 5) == 0) {
                c.p += 5;
            } else {
                return RF_ERR(RF_CODE_PARSE_ERROR,
                              "%s: header: 'fortran_order' is neither True nor False", path);
            }
            h->have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !h->have_shape) {
            RF_RETURN_IF_ERROR_PLAIN(rf_read_shape(&c, &h->shape));
            h->have_shape = 1;
        } else {
            return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: unexpected or repeated key '%s'", path,
                          key);
        }
        if (rf_accept(&c, ','))
            continue;
        if (rf_accept(&c, '}'))
            break;
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: expected ',' or '}' after '%s'", path, key);
    }
    rf_skip_ws(&c);
    if (c.p != c.end)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header: trailing bytes after the dict", path);
    if (!h->have_descr || !h->have_order || !h->have_shape)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header lacks '%s'", path,
                      !h->have_descr   ? "descr"
                      : !h->have_order ? "fortran_order"
                                       : "shape");
    return RF_OK;
}

static rf_status_t rf_npy_dtype(const char *descr, const char *path, rf_dtype_t *out) {
    *out = RF_DTYPE_UNDEFINED;
    if (descr[0] == '>')
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: dtype '%s' is big-endian; rowfuse reads little-endian .npy only", path,
                      descr);
    static const struct {
        const char *code;
        rf_dtype_t dtype;
    } table[] = {{"f2", RF_DTYPE_F16}, {"f4", RF_DTYPE_F32}, {"f8", RF_DTYPE_F64},
                 {"i4", RF_DTYPE_I32}, {"i8", RF_DTYPE_I64}, {"u1", RF_DTYPE_U8},
                 {"b1", RF_DTYPE_BOOL}};
    if (descr[0] == '<' || descr[0] == '|')
        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
            if (strcmp(descr + 1, table[i].code) == 0) {
                *out = table[i].dtype;
                return RF_OK;
            }
    return RF_ERR(RF_CODE_UNSUPPORTED,
                  "%s: dtype '%s' is not supported (use <f2, <f4, <f8, <i4, <i8, |u1 or |b1)", path,
                  descr);
}

static rf_status_t rf_read_exact(FILE *f, void *buf, size_t n, const char *path, const char *what) {
    if (n && fread(buf, 1, n, f) != n)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: file ends inside the %s", path, what);
    return RF_OK;
}

static rf_status_t rf_npy_read_open(rf_allocator_t a, FILE *f, const char *path, rf_tensor_t *out) {
    unsigned char pre[10];
    char *header = NULL;
    rf_status_t st;
    RF_RETURN_IF_ERROR_PLAIN(rf_read_exact(f, pre, 8, path, "magic string"));
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: not a .npy file (bad magic string)", path);
    int major = pre[6], minor = pre[7];
    size_t hlen;
    if (major == 1) {
        RF_RETURN_IF_ERROR_PLAIN(rf_read_exact(f, pre, 2, path, "header length"));
        hlen = (size_t)pre[0] | (size_t)pre[1] << 8;
    } else if (major == 2 || major == 3) {
        RF_RETURN_IF_ERROR_PLAIN(rf_read_exact(f, pre, 4, path, "header length"));
        hlen = (size_t)pre[0] | (size_t)pre[1] << 8 | (size_t)pre[2] << 16 | (size_t)pre[3] << 24;
    } else {
        return RF_ERR(RF_CODE_UNSUPPORTED, "%s: .npy format version %d.%d is not supported", path,
                      major, minor);
    }
    if (hlen > (1u << 20))
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: header length %zu is implausibly large", path,
                      hlen);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, hlen + 1, "npy header", &p));
    header = p;
    rf_npy_header_t h;
    st = rf_read_exact(f, header, hlen, path, "header");
    if (!st)
        st = rf_parse_npy_header(header, hlen, path, &h);
    rf_free(a, header);
    if (st)
        return st;
    rf_dtype_t dtype;
    RF_RETURN_IF_ERROR_PLAIN(rf_npy_dtype(h.descr, path, &dtype));
    if (h.fortran_order)
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: array is in Fortran order; rowfuse reads C-order .npy only "
                      "(np.ascontiguousarray)",
                      path);
    int64_t numel;
    RF_RETURN_IF_ERROR(rf_shape_numel(&h.shape, &numel), "%s: shape", path);
    size_t need = (size_t)numel * rf_dtype_size(dtype); /* numel <= 2^34: no overflow */
    /* Compare with the bytes actually present before allocating anything large. */
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot seek: %s", path, strerror(errno));
    long end = ftell(f);
    if (end < here || fseek(f, here, SEEK_SET) != 0)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot seek: %s", path, strerror(errno));
    size_t have = (size_t)(end - here);
    if (have != need) {
        char sbuf[160];
        return RF_ERR(RF_CODE_PARSE_ERROR,
                      "%s: data is %zu bytes but shape %s of %s needs %zu bytes", path, have,
                      rf_shape_format(&h.shape, sbuf, sizeof sbuf), h.descr, need);
    }
    rf_tensor_t t;
    RF_RETURN_IF_ERROR(rf_tensor_alloc(a, dtype, &h.shape, &t), "%s", path);
    st = rf_read_exact(f, t.data, need, path, "data");
    if (st) {
        rf_tensor_free(a, &t);
        return st;
    }
    *out = t;
    return RF_OK;
}

rf_status_t rf_npy_read(rf_allocator_t a, const char *path, rf_tensor_t *out_tensor) {
    memset(out_tensor, 0, sizeof *out_tensor);
    FILE *f = fopen(path, "rb");
    if (!f)
        return RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: cannot open: %s",
                      path, strerror(errno));
    struct stat sb;
    rf_status_t st;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode))
        st = RF_ERR(RF_CODE_IO_ERROR, "%s: not a regular file", path);
    else
        st = rf_npy_read_open(a, f, path, out_tensor);
    fclose(f);
    return st;
}

rf_status_t rf_npy_read_buffer(rf_allocator_t a, const void *data, size_t size, const char *name,
                               rf_tensor_t *out_tensor) {
    memset(out_tensor, 0, sizeof *out_tensor);
    if (!data || size == 0)
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: empty, not a .npy file", name);
    /* The reader works on a FILE; fmemopen gives one over the buffer (read-only). */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot open the buffer: %s", name, strerror(errno));
    rf_status_t st = rf_npy_read_open(a, f, name, out_tensor);
    fclose(f);
    return st;
}

static const char *rf_npy_descr(rf_dtype_t dtype) {
    switch (dtype) {
    case RF_DTYPE_F16:
        return "<f2";
    case RF_DTYPE_F32:
        return "<f4";
    case RF_DTYPE_F64:
        return "<f8";
    case RF_DTYPE_I32:
        return "<i4";
    case RF_DTYPE_I64:
        return "<i8";
    case RF_DTYPE_I8:
        return "|i1";
    case RF_DTYPE_U8:
        return "|u1";
    case RF_DTYPE_BOOL:
        return "|b1";
    case RF_DTYPE_BF16:
    case RF_DTYPE_UNDEFINED:
        break;
    }
    return NULL;
}

rf_status_t rf_npy_write(const char *path, const rf_tensor_t *t) {
    const char *descr = rf_npy_descr(t->dtype);
    if (!descr)
        return RF_ERR(RF_CODE_UNSUPPORTED, "%s: dtype %s has no .npy equivalent", path,
                      rf_dtype_name(t->dtype));
    int64_t numel;
    RF_RETURN_IF_ERROR(rf_shape_numel(&t->shape, &numel), "%s", path);
    if ((uint64_t)numel * rf_dtype_size(t->dtype) != t->nbytes)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "%s: tensor holds %zu bytes, its shape needs %llu",
                      path, t->nbytes,
                      (unsigned long long)((uint64_t)numel * rf_dtype_size(t->dtype)));
    char dict[256];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->shape.rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->shape.dims[i],
                      t->shape.rank > 1 && i + 1 < t->shape.rank ? " " : "");
    if (t->shape.rank > 1)
        n--; /* "(2, 3,)" -> "(2, 3)": NumPy writes a trailing comma only for rank 1 */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* Like NumPy: room for dim 0 to grow to 21 digits in place, then spaces so that
     * magic(6) + version(2) + length(2) + header is a multiple of 64. */
    size_t growth = 0;
    if (t->shape.rank > 0) {
        char d0[32];
        growth = 21 - (size_t)snprintf(d0, sizeof d0, "%lld", (long long)t->shape.dims[0]);
    }
    size_t total = 10 + (size_t)n + growth + 1;
    size_t pad = 64 - total % 64; /* 1..64, as NumPy does */
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    pad += growth;
    size_t hlen = (size_t)n + pad + 1;
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    FILE *f = fopen(path, "wb");
    if (!f)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: cannot open for writing: %s", path, strerror(errno));
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (t->nbytes == 0 || fwrite(t->data, 1, t->nbytes, f) == t->nbytes);
    int closed = fclose(f) == 0;
    if (!ok || !closed)
        return RF_ERR(RF_CODE_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
    return RF_OK;
}

/* ---- fp16 / fp32 rounding ---- */

double rf_round_f16(double x) {
    if (isnan(x) || isinf(x) || x == 0.0)
        return x;
    double ax = fabs(x);
    /* 65520 is halfway between 65504 (largest half) and 65536: ties go to the even
     * neighbour 65536, which overflows. */
    if (ax >= 65520.0)
        return x < 0 ? -INFINITY : INFINITY;
    int e;
    frexp(ax, &e); /* ax = m * 2^e, m in [0.5, 1): the leading bit is 2^(e-1) */
    int lead = e - 1;
    if (lead < -14)
        lead = -14; /* subnormals share the quantum of the smallest normal binade */
    double quantum = ldexp(1.0, lead - 10);
    double r = nearbyint(ax / quantum) * quantum; /* default mode: nearest, ties to even */
    return x < 0 ? -r : r;
}

double rf_round_f32(double x) {
    if (isnan(x) || isinf(x))
        return x;
    /* FLT_MAX + half an ulp rounds (to even) up to infinity. */
    const double limit = ldexp(1.0, 128) - ldexp(1.0, 103);
    if (fabs(x) >= limit)
        return x < 0 ? -INFINITY : INFINITY;
    return (double)(float)x;
}

uint16_t rf_f32_to_f16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    if (isnan(f))
        return (uint16_t)(sign | 0x7e00u | ((bits >> 13) & 0x3ffu));
    double r = fabs(rf_round_f16((double)f));
    if (isinf(r))
        return (uint16_t)(sign | 0x7c00u);
    if (r < ldexp(1.0, -14)) /* subnormal or zero: an integer count of 2^-24 */
        return (uint16_t)(sign | (uint16_t)ldexp(r, 24));
    int e;
    double m = frexp(r, &e); /* r = m * 2^e, m in [0.5, 1) */
    uint16_t exp_field = (uint16_t)(e - 1 + 15);
    uint16_t mant = (uint16_t)(ldexp(m, 11) - 1024.0);
    return (uint16_t)(sign | exp_field << 10 | mant);
}

float rf_f16_to_f32(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    float v;
    if (exp == 0) {
        v = ldexpf((float)mant, -24);
    } else if (exp == 31) {
        if (mant == 0) {
            v = INFINITY;
        } else {
            uint32_t bits = 0x7fc00000u | ((uint32_t)mant << 13);
            memcpy(&v, &bits, 4);
        }
    } else {
        v = ldexpf((float)(mant | 1024), exp - 25);
    }
    return sign ? -v : v;
}
