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

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace effrt::test {

struct EffxParts {
  nlohmann::json manifest;
  std::vector<std::byte> code;
  std::vector<std::byte> state;
};

/// [header][manifest][code][state], 64-byte aligned, with every CRC right.
std::vector<std::byte> packEffx(const std::string &manifest,
                                const std::vector<std::byte> &code,
                                const std::vector<std::byte> &state);
std::vector<std::byte> packEffx(const EffxParts &parts);

/// The test model shared object's bytes.
std::vector<std::byte> testModelCode();

/// linear: inputs x float32 [4,3], y float32 [4,2]; state w [3,2], b [2],
/// their momentum buffers and optimizer.step. `code` false gives 64 bytes
/// of junk instead of the shared object (enough for validation tests).
EffxParts linearModel(bool code = true);
/// bigram: inputs tokens, targets int64 [2,4]; state table [16,16] and
/// optimizer.step.
EffxParts bigramModel(bool code = true);

/// Rows for the linear model: x [rows,3], y [rows,2] = x A + c + noise.
void writeLinearData(const std::string &path, int64_t rows);

} // namespace effrt::test

#endif // EFFRT_TEST_TESTMODELS_H
