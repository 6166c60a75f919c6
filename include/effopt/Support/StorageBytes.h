//===- StorageBytes.h - how many bytes a type occupies in memory -*- C++ -*-===//
//
// The one rule for the size of tensors in effopt's memory (regions, the
// arena, the .effx state, cost and memory models): booleans take one byte
// per element (the runtime's convention), types of 8 bits or more take
// their width rounded up to whole bytes, and narrower types (4-bit weights)
// are packed, so a tensor of them takes ceil(elements * bits / 8) bytes.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_SUPPORT_STORAGEBYTES_H
#define EFFOPT_SUPPORT_STORAGEBYTES_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Types.h"

#include <cstdint>

namespace effopt {

/// Bits one element of `elementType` occupies: 8 for i1, 64 for index, the
/// bit width otherwise (4 for a 4-bit type, which packs two per byte).
int64_t storageBits(mlir::Type elementType);

/// Bytes `count` elements of `elementType` occupy (packed below 8 bits,
/// rounded up to a whole byte).
int64_t storageBytes(mlir::Type elementType, int64_t count);

/// Bytes a statically shaped tensor or memref occupies; 0 for any other
/// type.
int64_t storageBytes(mlir::Type type);

/// `bytes` rounded up to a multiple of `alignment` (a power of two).
inline int64_t alignBytes(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

} // namespace effopt

#endif // EFFOPT_SUPPORT_STORAGEBYTES_H
