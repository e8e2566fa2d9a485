// rowfuse-opt's passes (Passes.td) and the pieces they share.
#ifndef ROWFUSE_MLIR_PASSES_H
#define ROWFUSE_MLIR_PASSES_H

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"

namespace rowfuse {

#define GEN_PASS_DECL
#include "RowfuseMLIR/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "RowfuseMLIR/Passes.h.inc"

} // namespace rowfuse

#endif
