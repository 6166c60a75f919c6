#!/usr/bin/env bash
# Installs every Debian package effopt needs to build, test and run its examples.
# Idempotent: packages already present are left alone; safe to run repeatedly.
set -euo pipefail

PACKAGES=(
  # Build tools.
  cmake ninja-build g++ pkg-config
  # LLVM/MLIR 22: compiler infrastructure, lit/FileCheck, clang for libFuzzer, lld.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev libfuzzer-22-dev
  # ONNX's own C++ library (loader, checker, shape inference) and its test data.
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  # CPU math and data formats used by the runtime.
  libopenblas-dev libopenblas0-pthread nlohmann-json3-dev zlib1g-dev
  # oneDNN: the convolutions of --convolution library (optional: without it
  # the runtime and effc build without library convolutions).
  libdnnl-dev
  # libzip: only bench/npz_read.py's comparison with the runtime's .npz reader.
  libzip-dev
  # LLVM's OpenMP runtime: threads for compiled loop nests and products.
  libomp-22-dev
  # Open MPI: collectives of data-parallel runs (mpirun -np N effrun); effrun
  # opens libmpi.so.40 at run time, so it is not needed to build or run one
  # process.
  libopenmpi-dev openmpi-bin
  # Header-only command-line parsing (effrun) and TOML (effc --config).
  libcli11-dev libtomlplusplus-dev
  # Reference framework and exporters for examples and numerical tests.
  python3 python3-torch python3-torchvision python3-onnx python3-numpy python3-sklearn
  # The Python package's tests (test/Python, run by scripts/test.sh).
  python3-pytest
  # A real text corpus for the language-model example.
  bible-kjv
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
