/* The scheduler's cost model (src/compile/schedule.c) against the winners measured on the
 * H200 at the development shapes (notes/bench.md, run 3): persistent-smem everywhere but
 * 8192x512x2048, where cuBLASLt's GEMMs were 2.2x faster. */
#include <string.h>

#include "rf_test.h"
#include "rowfuse/compile.h"

static const char *choose(int64_t rows, int64_t c, int64_t h) {
    rf_mlp_block_t b;
    memset(&b, 0, sizeof b);
    b.rows = rows;
    b.channels = c;
    b.hidden = h;
    const char *reason = NULL;
    const char *s = rf_schedule_choose(&b, rows, &reason);
    CHECK(reason != NULL && reason[0] != '\0');
    return s;
}

int main(void) {
    CHECK(!strcmp(choose(49, 48, 96), "persistent-smem"));
    CHECK(!strcmp(choose(64, 64, 128), "persistent-smem"));
    CHECK(!strcmp(choose(1000, 96, 200), "persistent-smem"));
    CHECK(!strcmp(choose(4096, 128, 512), "persistent-smem"));
    CHECK(!strcmp(choose(131072, 32, 64), "persistent-smem"));
    CHECK(!strcmp(choose(8192, 512, 2048), "cublaslt"));
    /* The rule depends on the rows it is asked about, not only the package's shape. */
    CHECK(!strcmp(choose(49, 512, 2048), "persistent-smem"));
    return rf_test_finish();
}
