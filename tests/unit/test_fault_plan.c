/* The planted faults' table (src/compile/plan.c): every fault `rowfuse compile
 * --plant-fault list` prints reaches at least one kernel of each schedule it names and no
 * kernel of a schedule it does not name, with the generator's spelling, so the other
 * schedules stay correct (a schedule may have a kernel without the fault's site: no-relu
 * is in conventional's first kernel, not its second); an unknown name is refused with the
 * list. No GPU and no generator: the plan alone. */
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
        if (!strncmp(schedules, "chain-", 6)) { /* chain packages only: test_chain_stream,
                                                   test_chain_conv.py */
            CHECK_ERR(rf_compile_plan(24, 200, &o, &p), RF_CODE_UNSUPPORTED, schedules);
            continue;
        }
        CHECK_OK(rf_compile_plan(24, 200, &o, &p));
        int carried = 0;
        for (int k = 0; k < p.kernel_count; k++) {
            const rf_kernel_spec_t *s = &p.kernels[k];
            int named = names_mode(schedules, s->mode);
            char spelling[32];
            snprintf(spelling, sizeof spelling, "%s", name);
            for (char *c = spelling; *c; c++)
                *c = *c == '-' ? '_' : *c;
            if (s->fault[0] && !named)
                fprintf(stderr, "  fault %s: kernel %s carries '%s'\n", name, s->name, s->fault);
            CHECK(named || !s->fault[0]);
            /* the generator's spelling: the name with '_', or the launcher's stream_* */
            CHECK(!s->fault[0] || !strcmp(s->fault, spelling) || !strncmp(s->fault, "stream_", 7));
            carried += s->fault[0] != '\0';
        }
        for (int sc = 0; sc < RF_SCHEDULE_COUNT; sc++) { /* each named schedule carries it */
            const rf_plan_schedule_t *ps = &p.schedules[sc];
            if (!ps->available || !ps->kernel_count ||
                !names_mode(schedules, p.kernels[ps->kernel[0]].mode))
                continue;
            int any = 0;
            for (int j = 0; j < ps->kernel_count; j++)
                any |= p.kernels[ps->kernel[j]].fault[0] != '\0';
            if (!any)
                fprintf(stderr, "  fault %s: schedule %s carries it nowhere\n", name,
                        rf_schedule_name((rf_schedule_t)sc));
            CHECK(any);
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
