//===- TrainConfig.h - effc --config train.toml ------------------*- C++ -*-===//
//
// A training config is a TOML file whose keys are effc's own flags (without
// the dashes; '_' may stand for '-'), so a config and a command line say the
// same things the same way:
//
//   model = "gpt.onnx"          # the positional input
//   output = "gpt.effx"         # -o
//   optimizer = "adamw"
//   lr = 3e-4
//   schedule = "cosine"
//   warmup-steps = 100
//   no-weight-decay = ".*(bias|ln).*"
//   [shape]                     # --shape idx=16,128 --shape targets=16,128
//   idx = [16, 128]
//   targets = [16, 128]
//
// A flag given on the command line wins over the config's key.
//
//===----------------------------------------------------------------------===//

#ifndef EFFC_TRAINCONFIG_H
#define EFFC_TRAINCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace effc {

/// Sets every option of `category` that the command line left unset from the
/// TOML file at `path`. `model` names the positional input option. Fails with
/// a one-line message (file:line: what is wrong) on a parse error, an unknown
/// key, or a value of the wrong type.
llvm::Error applyTrainConfig(llvm::StringRef path,
                             const llvm::cl::OptionCategory &category,
                             llvm::cl::Option &model);

} // namespace effc

#endif // EFFC_TRAINCONFIG_H
