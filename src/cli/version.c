/* `rowfuse --version`. The build defines these on this file alone (CMakeLists.txt), so
 * a new revision recompiles nothing else; a build without them says "unknown". */
#include <stdio.h>

#include "commands.h"

#ifndef RF_VERSION
#define RF_VERSION "unknown"
#endif
#ifndef RF_GIT_REVISION
#define RF_GIT_REVISION "unknown"
#endif
#ifndef RF_CUDA_VERSION
#define RF_CUDA_VERSION "none"
#endif
#ifndef RF_CUTE_DSL_VERSION
#define RF_CUTE_DSL_VERSION "unknown"
#endif

void rf_cli_print_version(FILE *f) {
    fprintf(f,
            "rowfuse %s\n"
            "git revision: %s\n"
            "CUDA: %s\n"
            "CuTe DSL (nvidia-cutlass-dsl): %s\n",
            RF_VERSION, RF_GIT_REVISION, RF_CUDA_VERSION, RF_CUTE_DSL_VERSION);
}
