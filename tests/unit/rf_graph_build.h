/* Helpers for unit tests that build rf graphs by hand: one global graph under test and
 * one-line constructors for inputs, untyped intermediates, constants and nodes. Builder
 * failures are counted as test failures (through rf_test.h) and return -1. */
#ifndef RF_GRAPH_BUILD_H
#define RF_GRAPH_BUILD_H

#include <stdint.h>

#include "rf_test.h"
#include "rowfuse/graph.h"

static rf_graph_t *gb_graph;

/* A shape literal: SH(2, 64, 48) is rank 2 [64, 48]. */
#define SH(rank, ...) ((rf_shape_t){(rank), {__VA_ARGS__}})
#define SCALAR ((rf_shape_t){0, {0}})

static inline void gb_new(void) {
    rf_graph_destroy(gb_graph);
    gb_graph = NULL;
    CHECK_OK(rf_graph_create(rf_allocator_system(), &gb_graph));
}

static inline void gb_free(void) {
    rf_graph_destroy(gb_graph);
    gb_graph = NULL;
}

/* A graph input of the given dtype and shape. */
static inline int gb_input_t(const char *name, rf_dtype_t dt, rf_shape_t s) {
    int v = -1;
    CHECK_OK(rf_graph_add_value(gb_graph, name, dt, &s, &v));
    if (v >= 0)
        CHECK_OK(rf_graph_add_input(gb_graph, v));
    return v;
}
static inline int gb_input(const char *name, rf_shape_t s) {
    return gb_input_t(name, RF_DTYPE_F32, s);
}

/* An intermediate with no declared type. */
static inline int gb_tmp(const char *name) {
    int v = -1;
    CHECK_OK(rf_graph_add_value(gb_graph, name, RF_DTYPE_UNDEFINED, NULL, &v));
    return v;
}

/* An intermediate with a declared type (to test declared-vs-inferred checks). */
static inline int gb_declared(const char *name, rf_dtype_t dt, rf_shape_t s) {
    int v = -1;
    CHECK_OK(rf_graph_add_value(gb_graph, name, dt, &s, &v));
    return v;
}

/* An f32 constant filled with a deterministic non-zero pattern. */
static inline int gb_weight(const char *name, rf_shape_t s) {
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    float *data = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        data[i] = 0.5f + (float)(i % 7) * 0.25f;
    int v = -1;
    CHECK_OK(
        rf_graph_add_const(gb_graph, name, RF_DTYPE_F32, &s, data, sizeof(float) * (size_t)n, &v));
    free(data);
    return v;
}

/* A 1-D i64 constant (shape [n]); n == -1 makes a scalar from vals[0]. */
static inline int gb_ints(const char *name, int n, const int64_t *vals) {
    rf_shape_t s = n < 0 ? SCALAR : SH(1, n);
    int v = -1;
    CHECK_OK(rf_graph_add_const(gb_graph, name, RF_DTYPE_I64, &s, vals,
                                sizeof(int64_t) * (size_t)(n < 0 ? 1 : n), &v));
    return v;
}
#define GB_INTS(name, ...)                                                                         \
    gb_ints((name), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                     \
            (int64_t[]){__VA_ARGS__})
#define GB_SCALAR(name, x) gb_ints((name), -1, (int64_t[]){(x)})

/* Attribute literals. */
static inline rf_attr_t gb_attr_int(const char *name, int64_t i) {
    return (rf_attr_t){.name = name, .type = RF_ATTR_INT, .i = i};
}
static inline rf_attr_t gb_attr_float(const char *name, double f) {
    return (rf_attr_t){.name = name, .type = RF_ATTR_FLOAT, .f = f};
}
static inline rf_attr_t gb_attr_ints(const char *name, int n, const int64_t *ints) {
    return (rf_attr_t){.name = name, .type = RF_ATTR_INTS, .ints = ints, .n = n};
}
#define GB_ATTR_INTS(name, ...)                                                                    \
    gb_attr_ints((name), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                \
                 (int64_t[]){__VA_ARGS__})

/* Adds a node; returns its index. ins/outs are arrays of value indices. */
static inline int gb_node_n(const char *op, const char *name, const int *ins, int n_in,
                            const int *outs, int n_out, const rf_attr_t *attrs, int n_attrs) {
    int k = -1;
    CHECK_OK(rf_graph_add_node(gb_graph, name, op, "", ins, n_in, outs, n_out, attrs, n_attrs, &k));
    return k;
}
#define GB_IN(...) (int[]){__VA_ARGS__}, (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int))
/* One-output node with no attributes: returns the new output value. */
static inline int gb_op(const char *op, const char *out_name, const int *ins, int n_in) {
    int o = gb_tmp(out_name);
    gb_node_n(op, out_name, ins, n_in, &o, 1, NULL, 0);
    return o;
}
/* One-output node with attributes. */
static inline int gb_op_a(const char *op, const char *out_name, const int *ins, int n_in,
                          const rf_attr_t *attrs, int n_attrs) {
    int o = gb_tmp(out_name);
    gb_node_n(op, out_name, ins, n_in, &o, 1, attrs, n_attrs);
    return o;
}
#define GB_ATTRS(...)                                                                              \
    (rf_attr_t[]){__VA_ARGS__}, (int)(sizeof((rf_attr_t[]){__VA_ARGS__}) / sizeof(rf_attr_t))

static inline const rf_value_t *gb_val(int v) {
    return rf_graph_value(gb_graph, v);
}

/* Does value v have exactly shape s (and, when dt is not undefined, dtype dt)? */
static inline int gb_has(int v, rf_dtype_t dt, rf_shape_t s) {
    const rf_value_t *val = gb_val(v);
    if (!val || !val->has_shape || !rf_shape_equal(&val->shape, &s) ||
        (dt != RF_DTYPE_UNDEFINED && val->dtype != dt)) {
        char b1[128], b2[128];
        fprintf(stderr, "  value '%s': has %s %s, want %s %s\n", val ? val->name : "?",
                val && val->has_shape ? rf_shape_format(&val->shape, b1, sizeof b1) : "(none)",
                val ? rf_dtype_name(val->dtype) : "?", rf_shape_format(&s, b2, sizeof b2),
                rf_dtype_name(dt));
        return 0;
    }
    return 1;
}

#endif
