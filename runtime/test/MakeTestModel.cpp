//===- MakeTestModel.cpp - Writes .effx test models and their data --------===//
//
//   effrt-make-test-model linear OUT.effx [DATA.npz ROWS]
//   effrt-make-test-model bigram OUT.effx [TOKENS.bin COUNT]
//   effrt-make-test-model dot|dot-cuda OUT.effx [DATA.npz ROWS]
//   ... [--manifest JSON]     (merged into the manifest; null deletes)
//
// dot-cuda is the dot model for target "cuda" (a manifest with the CUDA
// fields, host code for the GPU, a PTX kernel as device code): effrun's
// CUDA tests run it, or report why no GPU can.
//
// The runtime's lit tests run effrun on these (see TestModels.h) without
// needing the compiler.
//
//===----------------------------------------------------------------------===//

#include "TestModels.h"

#include "effrt/Error.h"
#include "effrt/File.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace effrt;
using namespace effrt::test;

static void writeBytes(const std::string &path,
                       const std::vector<std::byte> &bytes) {
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

int main(int argc, char **argv) {
  // A trailing --manifest JSON is merged into the manifest (RFC 7386: null
  // deletes a key), for tests of what the runtime refuses.
  nlohmann::json patch;
  if (argc >= 5 && std::string(argv[argc - 2]) == "--manifest") {
    patch = nlohmann::json::parse(argv[argc - 1], nullptr, false);
    if (patch.is_discarded() || !patch.is_object()) {
      std::fprintf(stderr, "effrt-make-test-model: --manifest takes a JSON "
                           "object\n");
      return 2;
    }
    argc -= 2;
  }
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: effrt-make-test-model "
                         "linear|bigram|dot|dot-cuda OUT.effx "
                         "[DATA ROWS|TOKENS] [--manifest JSON]\n");
    return 2;
  }
  try {
    std::string model = argv[1];
    EffxParts parts;
    if (model == "linear")
      parts = linearModel();
    else if (model == "bigram")
      parts = bigramModel();
    else if (model == "dot" || model == "dot-cuda")
      parts = dotModel(model == "dot-cuda");
    else
      fail("unknown test model '", model, "'");
    if (!patch.is_null())
      parts.manifest.merge_patch(patch);
    writeBytes(argv[2], packEffx(parts));
    if (argc == 5) {
      long long n = std::stoll(argv[4]);
      if (model != "bigram") {
        writeLinearData(argv[3], n);
      } else {
        // A learnable stream: each token mostly determines the next.
        std::vector<std::byte> bytes(2 * static_cast<size_t>(n));
        uint32_t state = 7;
        uint16_t token = 0;
        for (long long i = 0; i < n; ++i) {
          state = state * 1664525u + 1013904223u;
          token = static_cast<uint16_t>((state >> 28) == 0 ? (state >> 20) % 16
                                                           : (token * 5 + 3) % 16);
          std::memcpy(bytes.data() + 2 * i, &token, 2);
        }
        writeBytes(argv[3], bytes);
      }
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "effrt-make-test-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
