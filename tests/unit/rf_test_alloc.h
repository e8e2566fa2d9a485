/* A counting allocator for the fault-injection tests: allocation number `fail_at` (counted
 * from 1 over alloc and realloc calls; 0 = none fails) returns NULL, and `live` counts the
 * blocks still held, so a test can check that every failure path frees what it took. A
 * test sweeps fail_at = 1, 2, ... until a run succeeds (or up to the calls of a clean run). */
#ifndef RF_TEST_ALLOC_H
#define RF_TEST_ALLOC_H

#include <stdlib.h>

#include "rowfuse/alloc.h"

typedef struct rf_test_alloc {
    long calls, fail_at, live;
} rf_test_alloc_t;

static inline void *rf_test_alloc_alloc(void *ctx, size_t size) {
    rf_test_alloc_t *c = ctx;
    if (++c->calls == c->fail_at)
        return NULL;
    void *p = malloc(size ? size : 1);
    c->live += p != NULL;
    return p;
}

static inline void *rf_test_alloc_realloc(void *ctx, void *ptr, size_t size) {
    rf_test_alloc_t *c = ctx;
    if (++c->calls == c->fail_at)
        return NULL;
    void *p = realloc(ptr, size ? size : 1);
    c->live += p && !ptr;
    return p;
}

static inline void rf_test_alloc_free(void *ctx, void *ptr) {
    rf_test_alloc_t *c = ctx;
    c->live -= ptr != NULL;
    free(ptr);
}

/* Resets *c (no calls, nothing live) and returns an allocator drawing on it. */
static inline rf_allocator_t rf_test_allocator(rf_test_alloc_t *c, long fail_at) {
    c->calls = 0;
    c->fail_at = fail_at;
    c->live = 0;
    return (rf_allocator_t){rf_test_alloc_alloc, rf_test_alloc_realloc, rf_test_alloc_free, c};
}

#endif
