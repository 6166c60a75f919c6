//===- MaskLikeParameters.h - float initializers that look like buffers -*- C++ -*-===//
//
// ONNX cannot tell a module's buffers from its parameters: every float
// initializer is imported as a trainable parameter. A float buffer --
// typically an attention mask registered with register_buffer -- would then
// be trained. This analysis finds the trainable parameters of an imported
// model whose every use is one a mask or a constant has, never one a weight
// has:
// - added to the input of a softmax (attention scores), through layout ops
//   only (reshape, transpose, broadcast, slice, concat, a float cast) and
//   scalings by constants, while its initial values are those of an
//   additive mask: each 0 or at most -100 (-inf included), not all 0;
// - compared (eff.cmp);
// - cast to an integer or boolean type (indices, where-conditions).
// Any other use (a product, a normalisation's scale, an addition to an
// activation that does not end in a softmax -- biases, positional
// embeddings -- a gather's table) makes it a weight. The rule is
// conservative: it names a tensor only when nothing it does looks like
// learning.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_ANALYSIS_MASKLIKEPARAMETERS_H
#define EFFOPT_ANALYSIS_MASKLIKEPARAMETERS_H

#include "effopt/Dialect/Eff/IR/EffOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace effopt {

class MaskLikeParameters {
public:
  struct Entry {
    eff::ParameterOp parameter;
    /// How it is used, in words ("added to the input of a softmax").
    std::string use;
  };

  /// Analyses the trainable parameters of `module`'s @forward (as the ONNX
  /// importer builds it). Iterative over uses; deterministic (the order of
  /// the parameters in the module).
  explicit MaskLikeParameters(mlir::ModuleOp module);

  llvm::ArrayRef<Entry> entries() const { return found; }

  /// The warning for one entry, one line: names the tensor, how it is used
  /// and the --freeze flag that keeps it as it is.
  static std::string warning(Entry entry);

private:
  std::vector<Entry> found;
};

} // namespace effopt

#endif // EFFOPT_ANALYSIS_MASKLIKEPARAMETERS_H
