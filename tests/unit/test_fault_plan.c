/* The planted faults' table (src/compile/plan.c): every fault `rowfuse compile
 * --plant-fault list` prints reaches exactly the kernels of the schedules it names, with
 * the generator's spelling, and leaves the other family's kernels correct; an unknown name
 * is refused with the list. No GPU and no generator: the plan alone. */
#include <string.h>

#include "rf_test.h"
#include "rowfuse/compile.h"

/* Does schedule list `schedules` (", "-separated) name the schedule of kernel mode m? */
static int names_mode(const char *schedules, rf_kernel_mode_t m) {
    const char *want = m == RF_KERNEL_FUSED_WGMMA  ? "persistent-wgmma"
                       : m == RF_KERNEL_FUSED_SMEM ? "persistent-smem"
                       : m == RF_KERNEL_FUSED_GMEM ? "persistent-gmem"
                                                   : "conventional";
    return strstr(schedules, want) != NULL;
}

int main(void) {
    const char *name, *what, *schedules;
    static rf_plan_t p;
    int n = 0, wgmma_faults = 0;
    for (int i = 0; rf_compile_fault_info(i, &name, &what, &schedules); i++, n++) {
        rf_compile_options_t o;
        rf_compile_options_default(&o);
        o.rows = 777; /* partial tiles; C and H multiples of 8, so wgmma is built too */
        o.fault = name;
        CHECK(what[0] != '\0' && schedules[0] != '\0');
        if (!strcmp(schedules, "chain-stream")) { /* chain packages only: test_chain_stream */
            CHECK_ERR(rf_compile_plan(24, 200, &o, &p), RF_CODE_UNSUPPORTED, "chain_stream");
            continue;
        }
        CHECK_OK(rf_compile_plan(24, 200, &o, &p));
        int carried = 0;
        for (int k = 0; k < p.kernel_count; k++) {
            const rf_kernel_spec_t *s = &p.kernels[k];
            int want = names_mode(schedules, s->mode);
            char spelling[32];
            snprintf(spelling, sizeof spelling, "%s", name);
            for (char *c = spelling; *c; c++)
                *c = *c == '-' ? '_' : *c;
            if (want != (s->fault[0] != '\0'))
                fprintf(stderr, "  fault %s: kernel %s carries '%s'\n", name, s->name, s->fault);
            CHECK(want == (s->fault[0] != '\0'));
            /* the generator's spelling: the name with '_', or the launcher's stream_* */
            CHECK(!want || !strcmp(s->fault, spelling) || !strncmp(s->fault, "stream_", 7));
            carried += want;
        }
        CHECK(carried > 0); /* the fault reaches at least one kernel of the package */
        wgmma_faults += !strcmp(schedules, "persistent-wgmma");
    }
    printf("test_fault_plan: %d faults, %d of them for persistent-wgmma alone\n", n, wgmma_faults);
    CHECK(n >= 9 && wgmma_faults >= 3);
    rf_compile_options_t o;
    rf_compile_options_default(&o);
    o.rows = 100;
    o.fault = "no-such-fault";
    CHECK_ERR(rf_compile_plan(24, 200, &o, &p), RF_CODE_INVALID_ARGUMENT, "no-ring-wait");
    return rf_test_finish();
}
