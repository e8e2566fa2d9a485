/* rowfuse allocators and arenas.
 *
 * Objects that allocate take an rf_allocator_t and keep it for their lifetime (IREE
 * style), so tests can inject failures. rf_allocator_system() is malloc/realloc/free.
 * An arena hands out blocks that are all freed together by rf_arena_deinit(); it is
 * caller-provided storage (init/deinit).
 */
#ifndef ROWFUSE_ALLOC_H
#define ROWFUSE_ALLOC_H

#include <stddef.h>

#include "rowfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_allocator {
    void *(*alloc)(void *ctx, size_t size);              /* NULL on failure */
    void *(*realloc)(void *ctx, void *ptr, size_t size); /* NULL on failure, ptr kept */
    void (*free)(void *ctx, void *ptr);                  /* free(NULL) is a no-op */
    void *ctx;
} rf_allocator_t;

rf_allocator_t rf_allocator_system(void);

/* Allocation helpers that return a status naming what was being allocated. */
rf_status_t rf_alloc(rf_allocator_t a, size_t size, const char *what, void **out_ptr);
rf_status_t rf_alloc_zeroed(rf_allocator_t a, size_t count, size_t size, const char *what,
                            void **out_ptr);
/* Grows *ptr to hold at least `need` elements of `elem` bytes; *capacity is updated.
 * Checks count*elem for overflow. */
rf_status_t rf_grow(rf_allocator_t a, void **ptr, size_t *capacity, size_t need, size_t elem,
                    const char *what);
void rf_free(rf_allocator_t a, void *ptr);

/* Multiplies with overflow check: 0 on success, -1 if a*b overflows size_t. */
int rf_mul_size(size_t a, size_t b, size_t *out);

typedef struct rf_arena_block rf_arena_block_t;
typedef struct rf_arena {
    rf_allocator_t allocator;
    rf_arena_block_t *head;
    size_t block_size;
} rf_arena_t;

void rf_arena_init(rf_arena_t *arena, rf_allocator_t allocator);
void rf_arena_deinit(rf_arena_t *arena);
/* 16-byte aligned block of `size` bytes, zeroed. Lives until rf_arena_deinit. */
rf_status_t rf_arena_alloc(rf_arena_t *arena, size_t size, void **out_ptr);
/* Copies a NUL-terminated string (or the first n bytes of a buffer plus NUL). */
rf_status_t rf_arena_strdup(rf_arena_t *arena, const char *s, char **out_str);
rf_status_t rf_arena_strndup(rf_arena_t *arena, const char *s, size_t n, char **out_str);

#ifdef __cplusplus
}
#endif
#endif
