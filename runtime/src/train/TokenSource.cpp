//===- TokenSource.cpp - Random windows of a uint16 token file ------------===//

#include "effrt/DataSource.h"

#include "Inputs.h"
#include "effrt/Error.h"
#include "effrt/Session.h"
#include "effrt/TokenStream.h"

using namespace effrt;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t effrt::tokenWindowSeed(uint64_t seed, int64_t step) {
  return splitmix64(splitmix64(seed) + static_cast<uint64_t>(step));
}

namespace {
/// The windows of step i depend only on (seed, i): a resumed run sees the
/// same batches.
class TokenSource : public DataSource {
public:
  TokenSource(const std::string &path, const EffxManifest &m,
              const std::string &effxPath, uint64_t seed)
      : path_(path), seed_(seed) {
    bool fits = m.inputs.size() == 2;
    for (size_t i = 0; fits && i < 2; ++i) {
      const EffxTensor &in = m.inputs[i];
      fits = in.shape.size() == 2 && in.shape == m.inputs[0].shape &&
             in.dtype == m.inputs[0].dtype &&
             (in.dtype == DType::I64 || in.dtype == DType::I32 ||
              in.dtype == DType::U16);
    }
    if (!fits)
      fail(effxPath, ": a token file needs a model with two integer inputs "
                     "(tokens, targets) of one shape [B,T] and dtype int64, "
                     "int32 or uint16; this model's inputs: ",
           describeInputs(m));
    tokensName_ = m.inputs[0].name;
    targetsName_ = m.inputs[1].name;
    dtype_ = m.inputs[0].dtype;
    batch_ = m.inputs[0].shape[0];
    sampler_ = std::make_unique<WindowSampler>(TokenStream::open(path),
                                               m.inputs[0].shape[1], seed);
    inputBuf_ = Tensor::allocate(dtype_, m.inputs[0].shape);
    targetBuf_ = Tensor::allocate(dtype_, m.inputs[0].shape);
  }

  const std::string &path() const override { return path_; }

  void checkSteps(int64_t, int64_t) const override {}

  void feed(Session &session, int64_t step) override {
    sampler_->setState({tokenWindowSeed(seed_, step), 0});
    sampler_->nextBatch(batch_, dtype_, inputBuf_.mutableData(),
                        targetBuf_.mutableData());
    session.setInput(tokensName_, inputBuf_);
    session.setInput(targetsName_, targetBuf_);
  }

private:
  std::string path_;
  uint64_t seed_;
  std::string tokensName_, targetsName_;
  DType dtype_ = DType::I64;
  int64_t batch_ = 0;
  std::unique_ptr<WindowSampler> sampler_;
  Tensor inputBuf_, targetBuf_;
};
} // namespace

std::unique_ptr<DataSource> effrt::openTokenSource(const std::string &path,
                                                   const EffxManifest &m,
                                                   const std::string &effxPath,
                                                   uint64_t seed) {
  return std::make_unique<TokenSource>(path, m, effxPath, seed);
}
