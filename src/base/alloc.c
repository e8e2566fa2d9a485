/* System allocator, checked allocation helpers and a block arena (rowfuse/alloc.h).
 * The arena is used for graph strings and small arrays that die with the graph. */
#include "rowfuse/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *rf_sys_alloc(void *ctx, size_t size) {
    (void)ctx;
    return malloc(size ? size : 1);
}
static void *rf_sys_realloc(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    return realloc(ptr, size ? size : 1);
}
static void rf_sys_free(void *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

rf_allocator_t rf_allocator_system(void) {
    rf_allocator_t a = {rf_sys_alloc, rf_sys_realloc, rf_sys_free, NULL};
    return a;
}

int rf_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

rf_status_t rf_alloc(rf_allocator_t a, size_t size, const char *what, void **out_ptr) {
    *out_ptr = NULL;
    void *p = a.alloc(a.ctx, size);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "out of memory allocating %zu bytes for %s", size,
                      what);
    *out_ptr = p;
    return RF_OK;
}

rf_status_t rf_alloc_zeroed(rf_allocator_t a, size_t count, size_t size, const char *what,
                            void **out_ptr) {
    size_t total;
    *out_ptr = NULL;
    if (rf_mul_size(count, size, &total))
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "size overflow allocating %zu x %zu bytes for %s",
                      count, size, what);
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc(a, total, what, out_ptr));
    memset(*out_ptr, 0, total);
    return RF_OK;
}

rf_status_t rf_grow(rf_allocator_t a, void **ptr, size_t *capacity, size_t need, size_t elem,
                    const char *what) {
    if (need <= *capacity)
        return RF_OK;
    size_t cap = *capacity ? *capacity : 8;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "too many %s", what);
        cap *= 2;
    }
    size_t bytes;
    if (rf_mul_size(cap, elem, &bytes))
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "size overflow growing %s", what);
    void *p = a.realloc(a.ctx, *ptr, bytes);
    if (!p)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "out of memory growing %s to %zu bytes", what, bytes);
    *ptr = p;
    *capacity = cap;
    return RF_OK;
}

void rf_free(rf_allocator_t a, void *ptr) {
    if (ptr)
        a.free(a.ctx, ptr);
}

struct rf_arena_block {
    rf_arena_block_t *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

void rf_arena_init(rf_arena_t *arena, rf_allocator_t allocator) {
    arena->allocator = allocator;
    arena->head = NULL;
    arena->block_size = 16384;
}

void rf_arena_deinit(rf_arena_t *arena) {
    rf_arena_block_t *b = arena->head;
    while (b) {
        rf_arena_block_t *next = b->next;
        arena->allocator.free(arena->allocator.ctx, b);
        b = next;
    }
    arena->head = NULL;
}

rf_status_t rf_arena_alloc(rf_arena_t *arena, size_t size, void **out_ptr) {
    *out_ptr = NULL;
    size_t rounded = (size + 15) & ~(size_t)15;
    if (rounded < size)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "arena allocation of %zu bytes overflows", size);
    rf_arena_block_t *b = arena->head;
    if (!b || b->size - b->used < rounded) {
        size_t bsize = rounded > arena->block_size ? rounded : arena->block_size;
        if (bsize > SIZE_MAX - sizeof(rf_arena_block_t))
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "arena allocation of %zu bytes overflows", size);
        b = arena->allocator.alloc(arena->allocator.ctx, sizeof(rf_arena_block_t) + bsize);
        if (!b)
            return RF_ERR(RF_CODE_OUT_OF_MEMORY, "out of memory: arena block of %zu bytes", bsize);
        b->size = bsize;
        b->used = 0;
        b->next = arena->head;
        arena->head = b;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    memset(p, 0, rounded);
    *out_ptr = p;
    return RF_OK;
}

rf_status_t rf_arena_strndup(rf_arena_t *arena, const char *s, size_t n, char **out_str) {
    void *p;
    *out_str = NULL;
    if (n == SIZE_MAX)
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "string too long");
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(arena, n + 1, &p));
    if (n)
        memcpy(p, s, n);
    ((char *)p)[n] = '\0';
    *out_str = p;
    return RF_OK;
}

rf_status_t rf_arena_strdup(rf_arena_t *arena, const char *s, char **out_str) {
    return rf_arena_strndup(arena, s ? s : "", s ? strlen(s) : 0, out_str);
}
