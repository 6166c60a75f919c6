#!/usr/bin/env bash
# Configures (once) and builds effopt into build/ with Ninja: the compiler
# (against Debian's shared libMLIR/libLLVM 22) and the runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${EFFOPT_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DEFFOPT_BUILD_FUZZERS=ON
fi
ninja -C "$BUILD_DIR"
