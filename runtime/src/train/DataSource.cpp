//===- DataSource.cpp - Choosing a data source by its file ----------------===//

#include "effrt/DataSource.h"

#include "Inputs.h"
#include "effrt/Error.h"
#include "effrt/File.h"
#include "effrt/Tensor.h"

#include <cstring>

using namespace effrt;

DataSource::~DataSource() = default;

std::string effrt::describeInputs(const EffxManifest &m) {
  std::string out;
  for (const EffxTensor &in : m.inputs)
    out += (out.empty() ? "" : ", ") + quoteName(in.name) + " " +
           std::string(dtypeName(in.dtype)) + " " + formatShape(in.shape);
  return out.empty() ? "none" : out;
}

static bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::unique_ptr<DataSource> effrt::openDataSource(const std::string &path,
                                                  const EffxManifest &m,
                                                  const std::string &effxPath,
                                                  uint64_t seed) {
  bool npz = endsWith(path, ".npz"), bin = endsWith(path, ".bin");
  if (!npz && !bin) {
    SharedBytes bytes = mapFile(path);
    npz = bytes.size >= 4 && std::memcmp(bytes.data, "PK\x03\x04", 4) == 0;
    if (!npz)
      fail(path, ": unknown data format (expected an .npz of arrays or a .bin "
                 "of uint16 tokens)");
  }
  if (npz)
    return openNpzSource(path, m, effxPath);
  return openTokenSource(path, m, effxPath, seed);
}
