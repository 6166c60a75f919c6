//===- Inputs.h - Naming a model's inputs in messages -----------*- C++ -*-===//

#ifndef EFFRT_SRC_TRAIN_INPUTS_H
#define EFFRT_SRC_TRAIN_INPUTS_H

#include "effrt/Effx.h"

#include <string>

namespace effrt {

/// "'x' float32 [4,3], 'y' float32 [4,2]", or "none".
std::string describeInputs(const EffxManifest &manifest);

} // namespace effrt

#endif // EFFRT_SRC_TRAIN_INPUTS_H
