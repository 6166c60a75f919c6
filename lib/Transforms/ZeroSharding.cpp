//===- ZeroSharding.cpp - How ZeRO cuts a tensor over the ranks -----------===//

#include "effopt/Transforms/ZeroSharding.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cassert>

using namespace effopt;

ZeroShardPolicy ZeroShardPolicy::forOptimizer(llvm::StringRef optimizer,
                                              int64_t quantBlockSize,
                                              int64_t min8bitSize) {
  ZeroShardPolicy policy;
  policy.quantBlockSize = quantBlockSize;
  policy.min8bitSize = min8bitSize;
  if (optimizer == "adam8bit" || optimizer == "adamw8bit")
    policy.unit = Unit::QuantBlock;
  else if (optimizer == "adafactor")
    policy.unit = Unit::Row;
  return policy;
}

std::optional<ZeroShardPolicy::Unit>
ZeroShardPolicy::parseUnit(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Unit>>(name)
      .Case("element", Unit::Element)
      .Case("quant-block", Unit::QuantBlock)
      .Case("row", Unit::Row)
      .Default(std::nullopt);
}

llvm::StringRef ZeroShardPolicy::unitName(Unit unit) {
  switch (unit) {
  case Unit::Element:
    return "element";
  case Unit::QuantBlock:
    return "quant-block";
  case Unit::Row:
    return "row";
  }
  return "element";
}

static int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

FactoredShape FactoredShape::of(llvm::ArrayRef<int64_t> shape) {
  assert(shape.size() >= 2 && "a factored second moment needs a matrix");
  return {product(shape.drop_back(2)), shape[shape.size() - 2], shape.back()};
}

int64_t ZeroShardPolicy::granule(llvm::ArrayRef<int64_t> shape) const {
  switch (unit) {
  case Unit::Element:
    return 1;
  case Unit::QuantBlock:
    return product(shape) >= min8bitSize ? quantBlockSize : 1;
  case Unit::Row: {
    if (shape.size() < 2)
      return 1;
    FactoredShape matrix = FactoredShape::of(shape);
    return matrix.byRows() ? matrix.cols : matrix.rows * matrix.cols;
  }
  }
  return 1;
}

int64_t ZeroShardPolicy::shardElements(llvm::ArrayRef<int64_t> shape,
                                       int64_t worldSize) const {
  int64_t g = std::max<int64_t>(granule(shape), 1);
  int64_t granules = (product(shape) + g - 1) / g;
  return (granules + worldSize - 1) / worldSize * g;
}
