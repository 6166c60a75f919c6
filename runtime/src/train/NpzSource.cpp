//===- NpzSource.cpp - Batches by rows of .npz arrays ---------------------===//

#include "effrt/DataSource.h"

#include "Inputs.h"
#include "effrt/Error.h"
#include "effrt/Npz.h"
#include "effrt/Session.h"

#include <algorithm>
#include <climits>

using namespace effrt;

static std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + quoteName(n);
  return out.empty() ? "none" : out;
}

namespace {
/// One array per input; step i reads rows [i*B, (i+1)*B), B the input's
/// dim 0.
class NpzSource : public DataSource {
public:
  NpzSource(const std::string &path, const EffxManifest &m,
            const std::string &effxPath)
      : path_(path) {
    NpzFile file = NpzFile::open(path);
    for (const EffxTensor &input : m.inputs) {
      if (input.shape.empty())
        fail(effxPath, ": input ", quoteName(input.name),
             " is a scalar; effrun feeds inputs by rows from --data");
      if (!file.contains(input.name))
        fail(path, ": no array named ", quoteName(input.name),
             " (the model's inputs: ", describeInputs(m),
             "; the file has: ", joinNames(file.names()), ")");
      ArrayInfo info = file.info(input.name);
      Shape pattern = input.shape;
      pattern[0] = -1;
      expectTensor(path, "array", input.name,
                   Tensor::view(info.dtype, info.shape, nullptr, nullptr),
                   input.dtype, pattern);
      arrays_.push_back({input.name, input.shape[0], file.read(input.name)});
    }
  }

  const std::string &path() const override { return path_; }

  void checkSteps(int64_t first, int64_t count) const override {
    if (count <= 0)
      return;
    for (const Array &a : arrays_) {
      int64_t b = a.rowsPerStep;
      int64_t rows = a.data.shape()[0];
      int64_t last = first + count - 1;
      // (last + 1) * b rows are needed; compare without overflow.
      bool enough = b == 0 || (last + 1 <= rows / b);
      if (!enough)
        fail(path_, ": input ", quoteName(a.name), " has ", rows,
             " rows; steps ", first, "..", last, " with batch ", b, " need ",
             (last + 1 <= INT64_MAX / std::max<int64_t>(b, 1)
                  ? std::to_string((last + 1) * b)
                  : std::string("more")));
    }
  }

  void feed(Session &session, int64_t step) override {
    for (const Array &a : arrays_) {
      int64_t b = a.rowsPerStep;
      session.setInput(a.name, a.data.sliceRows(step * b, (step + 1) * b),
                       path_);
    }
  }

private:
  struct Array {
    std::string name;
    int64_t rowsPerStep;
    Tensor data;
  };
  std::string path_;
  std::vector<Array> arrays_;
};
} // namespace

std::unique_ptr<DataSource> effrt::openNpzSource(const std::string &path,
                                                 const EffxManifest &m,
                                                 const std::string &effxPath) {
  return std::make_unique<NpzSource>(path, m, effxPath);
}
