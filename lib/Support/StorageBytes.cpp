//===- StorageBytes.cpp - how many bytes a type occupies in memory --------===//

#include "effopt/Support/StorageBytes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

int64_t effopt::storageBits(Type elementType) {
  if (elementType.isIndex())
    return 64;
  int64_t bits = elementType.getIntOrFloatBitWidth();
  // Booleans are bytes in every region and in the .effx.
  return bits == 1 ? 8 : bits;
}

int64_t effopt::storageBytes(Type elementType, int64_t count) {
  int64_t bits = storageBits(elementType);
  if (bits % 8 == 0)
    return count * (bits / 8);
  return (count * bits + 7) / 8;
}

int64_t effopt::storageBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return storageBytes(shaped.getElementType(), shaped.getNumElements());
}
