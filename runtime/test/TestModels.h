//===- TestModels.h - .effx files for the runtime's tests -------*- C++ -*-===//
//
// Builds .effx files without the compiler: a manifest (as JSON, so tests can
// break any field), a code section and an initial state, packed with correct
// CRCs by packEffx. The "linear" and "bigram" models run the hand-written
// steps of model/TestModel.c (built as a shared object next to the tests).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_TEST_TESTMODELS_H
#define EFFRT_TEST_TESTMODELS_H

#include "effrt/EffxFormat.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace effrt::test {

struct EffxParts {
  nlohmann::json manifest;
  std::vector<std::byte> code;
  /// The target of the code section (named "step").
  std::string codeTarget = "cpu-x86_64";
  /// A device code section "kernels" for codeTarget, when not empty.
  std::vector<std::byte> deviceCode;
  /// The image of the whole state region (packEffx stores only the entries
  /// that are not all zeros).
  std::vector<std::byte> state;
};

/// One section for packSections: `kind` raw, so tests can use unknown ones.
struct SectionSpec {
  uint32_t kind = 0;
  uint32_t flags = kEffxSectionRequired;
  std::string target, name;
  std::vector<std::byte> bytes;
};

/// A version-2 file: [header][table][sections], 64-byte aligned, every CRC
/// right.
std::vector<std::byte> packSections(const std::vector<SectionSpec> &sections);
/// The sections of a version-2 file: manifest, code for cpu-x86_64 (named
/// "step"), initial state (`storedState` as given).
std::vector<SectionSpec> effxSections(const std::string &manifest,
                                      const std::vector<std::byte> &code,
                                      const std::vector<std::byte> &storedState);
/// packSections(effxSections(...)).
std::vector<std::byte> packEffx(const std::string &manifest,
                                const std::vector<std::byte> &code,
                                const std::vector<std::byte> &storedState);
/// The parts as a version-2 file, as effc writes it: state entries whose
/// bytes in `parts.state` are all zero get "init": "zeros", the others'
/// bytes are stored in manifest order.
std::vector<std::byte> packEffx(const EffxParts &parts);
/// The parts as a version-1 file: [96-byte header][manifest][code][state
/// image], with the manifest's "version" 1.
std::vector<std::byte> packEffxV1(const EffxParts &parts);

/// The test model shared object's bytes.
std::vector<std::byte> testModelCode();

/// linear: inputs x float32 [4,3], y float32 [4,2]; state w [3,2], b [2],
/// their momentum buffers and optimizer.step. `code` false gives 64 bytes
/// of junk instead of the shared object (enough for validation tests).
EffxParts linearModel(bool code = true);
/// bigram: inputs tokens, targets int64 [2,4]; state table [16,16] and
/// optimizer.step.
EffxParts bigramModel(bool code = true);

/// dot: input x float32 [4,3]; state w [3,1], the buffer ones [4] and
/// optimizer.step; loss = sum(x w), w -= 0.125 x^T 1 (model/TestModel.c).
/// `cuda`: the same step for target "cuda" (model/TestCudaModel.c, its PTX
/// kernel as the device code), with the manifest's CUDA fields.
EffxParts dotModel(bool cuda);

/// Rows for the linear model: x [rows,3], y [rows,2] = x A + c + noise.
void writeLinearData(const std::string &path, int64_t rows);

} // namespace effrt::test

#endif // EFFRT_TEST_TESTMODELS_H
