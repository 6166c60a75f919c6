//===- Provenance.h - why a value of the training step exists ---*- C++ -*-===//
//
// Every op of a training step carries, in its location, why it is there:
// forward computation, a forward value kept for the backward ("saved"), the
// backward, a parameter's gradient, the optimizer, a recomputation or a
// precision cast. The tag is the metadata of a FusedLoc wrapping the op's
// original location (the ONNX node's NameLoc), so it survives every lowering
// that keeps locations -- down to the buffers the memory planner places,
// where the memory report reads it.
//
//   loc(fused<"eff.saved">["/blocks.0/attn/Softmax"("model.onnx":0:0)])
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_DIALECT_EFF_IR_PROVENANCE_H
#define EFFOPT_DIALECT_EFF_IR_PROVENANCE_H

#include "mlir/IR/Location.h"

#include <optional>
#include <string>

namespace effopt::eff {

enum class Provenance {
  Forward,    // untagged: forward computation
  Saved,      // forward value the backward reads
  Backward,   // gradient computation
  Gradient,   // the gradient of a trainable parameter
  Optimizer,  // optimizer and LR-schedule math
  Recomputed, // forward value recomputed in the backward (remat)
  Cast,       // precision cast (autocast)
  Workspace,  // scratch of a library call (a dequantized weight tile)
};

/// The name used in the location tag and in reports ("saved", ...).
llvm::StringRef provenanceName(Provenance provenance);
std::optional<Provenance> parseProvenance(llvm::StringRef name);

/// `loc` tagged with `provenance`, replacing any tag it had; Forward
/// removes the tag.
mlir::Location withProvenance(mlir::Location loc, Provenance provenance);
/// The tag of `loc` (Forward when untagged).
Provenance provenanceOf(mlir::Location loc);
/// The outermost NameLoc's name under any tags (the ONNX node name), or
/// an empty string.
std::string nodeNameOf(mlir::Location loc);

} // namespace effopt::eff

#endif // EFFOPT_DIALECT_EFF_IR_PROVENANCE_H
