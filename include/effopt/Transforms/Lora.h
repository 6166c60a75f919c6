//===- Lora.h - what eff-lora records about its adapters --------*- C++ -*-===//
//
// eff-lora (Passes.td) records the adapters it added on the module, so that
// the driver can write them into the .effx manifest and the runtime can
// merge W + (alpha/rank) B A after training:
//
//   module attributes {eff.lora = {rank = 16 : i64, alpha = 32.0 : f64,
//       adapters = [{weight = "fc.weight", lora_a = "fc.lora_A.weight",
//                    lora_b = "fc.lora_B.weight", scaling = 2.0 : f64,
//                    transposed = false}]}}
//
// `transposed`: the weight is stored in x out (`x @ W`), so the merged
// weight is W + scaling (B A)^T.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_TRANSFORMS_LORA_H
#define EFFOPT_TRANSFORMS_LORA_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <optional>

namespace effopt {

/// Module attribute eff-lora sets (a dictionary, above).
inline constexpr llvm::StringLiteral kLoraAttrName = "eff.lora";

/// The `eff.lora` attribute of `module` as the manifest's "lora" object
/// ({"rank", "alpha", "adapters": [{"weight", "lora_A", "lora_B",
/// "scaling", "transposed"}]}), or nothing when it has none.
std::optional<llvm::json::Object> describeLoraAdapters(mlir::ModuleOp module);

} // namespace effopt

#endif // EFFOPT_TRANSFORMS_LORA_H
