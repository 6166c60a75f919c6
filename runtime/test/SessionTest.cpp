//===- SessionTest.cpp - Sessions, steps and checkpoints ------------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "effrt/Npz.h"
#include "effrt/SafeTensors.h"
#include "effrt/Session.h"

#include <cmath>
#include <cstring>

using namespace effrt;
using namespace effrt::test;

static Session openSession(const EffxParts &parts, const char *name,
                           bool loadCode = true) {
  std::string path = tempPath(name);
  writeFileBytes(path, packEffx(parts));
  SessionOptions options;
  options.loadCode = loadCode;
  return Session::open(path, options);
}

static Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::copyOf(DType::F32, std::move(shape), values.data(),
                        values.size() * 4);
}

/// Feeds rows [4i, 4i+4) of the linear data and steps.
static float linearStep(Session &s, const NamedTensors &data, int64_t i) {
  s.setInput("x", data[0].second.sliceRows(4 * i, 4 * i + 4));
  s.setInput("y", data[1].second.sliceRows(4 * i, 4 * i + 4));
  return s.step();
}

static NamedTensors linearData() {
  std::string path = tempPath("linear-data.npz");
  writeLinearData(path, 160);
  return NpzFile::open(path).readAll();
}

TEST(sessionAllocatesWhatTheManifestSays) {
  Session s = openSession(linearModel(false), "alloc.effx", false);
  AllocatedBytes a = s.allocated();
  CHECK_EQ(a.state, 320u);
  CHECK_EQ(a.arena, 256u);
  CHECK_EQ(a.io, 192u);
  CHECK_EQ(a.total(), 768u);
  for (std::byte *p : {s.stateRegion(), s.arenaRegion(), s.ioRegion()})
    CHECK_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  // The initial state is copied.
  Tensor w = s.readState("w");
  CHECK_EQ(w.load<float>(0), 0.5f);
  CHECK_EQ(w.load<float>(5), 0.25f);
  CHECK_EQ(s.globalStep(), 0);
  CHECK(s.optimizerStep() == std::optional<int64_t>(0));
  CHECK_EQ(s.stateTensors().size(), 5u);
}

TEST(sessionInputChecks) {
  Session s = openSession(linearModel(false), "inputs.effx", false);
  CHECK_ERROR(s.setInput("x", Tensor::zeros(DType::F32, {8, 3}), "d.npz"),
              "d.npz: input 'x' has shape [8,3], expected [4,3] with float32");
  CHECK_ERROR(s.setInput("y", Tensor::zeros(DType::F64, {4, 2})),
              "inputs.effx: input 'y' has shape [4,2] and dtype float64, "
              "expected [4,2] with float32");
  CHECK_ERROR(s.setInput("z", Tensor::zeros(DType::F32, {4, 2})),
              "the model has no input 'z'");
  CHECK_ERROR(s.setInputBytes("x", nullptr, 47),
              "input 'x' takes 48 bytes (float32 [4,3]), got 47");
  Tensor x = floats({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  s.setInput("x", x);
  CHECK(std::memcmp(s.ioRegion(), x.data(), 48) == 0);
  // No code: no step.
  CHECK_ERROR(s.step(), "opened without its code");
}

TEST(sessionStepNeedsEveryInput) {
  Session s = openSession(linearModel(), "every.effx");
  s.setInput("x", Tensor::zeros(DType::F32, {4, 3}));
  CHECK_ERROR(s.step(), "input 'y' was not set before the step");
}

TEST(sessionLinearTrains) {
  Session s = openSession(linearModel(), "train.effx");
  NamedTensors data = linearData();
  // The first loss is that of the initial weights, computed here.
  const Tensor &x = data[0].second, &y = data[1].second;
  const float w[6] = {0.5f, -0.25f, 0.125f, 0.75f, -0.5f, 0.25f};
  double expected = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      double p = 0;
      for (int k = 0; k < 3; ++k)
        p += static_cast<double>(x.load<float>(i * 3 + k)) * w[k * 2 + j];
      double d = p - y.load<float>(i * 2 + j);
      expected += d * d / 8;
    }
  float first = linearStep(s, data, 0);
  CHECK(std::fabs(first - expected) < 1e-5 * (1 + expected));
  float loss = first;
  for (int64_t i = 1; i < 40; ++i)
    loss = linearStep(s, data, i);
  if (!(loss < first / 10))
    checkFailed(__FILE__, __LINE__, "loss " + std::to_string(first) + " -> " + std::to_string(loss));
  CHECK_EQ(s.globalStep(), 40);
  CHECK(s.optimizerStep() == std::optional<int64_t>(40));
  CHECK_EQ(s.lastLoss(), loss);
}

TEST(sessionResumeIsBitIdentical) {
  NamedTensors data = linearData();
  Session straight = openSession(linearModel(), "straight.effx");
  std::vector<float> losses;
  for (int64_t i = 0; i < 10; ++i)
    losses.push_back(linearStep(straight, data, i));

  Session first = openSession(linearModel(), "first.effx");
  for (int64_t i = 0; i < 5; ++i)
    CHECK_EQ(linearStep(first, data, i), losses[i]);
  std::string ckpt = tempPath("half.safetensors");
  first.save(ckpt);

  Session second = openSession(linearModel(), "second.effx");
  second.load(ckpt);
  CHECK_EQ(second.globalStep(), 5);
  for (int64_t i = 5; i < 10; ++i)
    CHECK_EQ(linearStep(second, data, second.globalStep()), losses[i]);
  for (const auto &[name, tensor] : straight.stateTensors())
    if (!tensor.sameAs(second.readState(name)))
      checkFailed(__FILE__, __LINE__, "state '" + name + "' differs");
}

TEST(sessionCheckpointFormat) {
  Session s = openSession(linearModel(), "format.effx");
  NamedTensors data = linearData();
  linearStep(s, data, 0);
  std::string path = tempPath("format.safetensors");
  s.save(path);
  SafeTensorsFile f = SafeTensorsFile::open(path);
  CHECK_EQ(f.names().size(), 5u);
  const Metadata &meta = f.metadata();
  CHECK_EQ(meta.at("format"), std::string("effopt-checkpoint"));
  CHECK_EQ(meta.at("version"), std::string("1"));
  CHECK_EQ(meta.at("model"), std::string("linear"));
  CHECK_EQ(meta.at("step"), std::string("1"));
  CHECK_EQ(meta.at("layout"), stateLayoutId(s.manifest()));
  CHECK_EQ(meta.at("layout").size(), 8u);
  CHECK(f.read("optimizer.step").sameAs(
      Tensor::copyOf(DType::I64, {}, "\1\0\0\0\0\0\0\0", 8)));
  CHECK(f.read("w").sameAs(s.readState("w")));
  CHECK(f.read("optimizer.w.momentum_buffer")
            .sameAs(s.readState("optimizer.w.momentum_buffer")));
  // The layout id is the documented CRC.
  std::string text = "b float32 [2]\n"
                     "optimizer.b.momentum_buffer float32 [2]\n"
                     "optimizer.step int64 []\n"
                     "optimizer.w.momentum_buffer float32 [3,2]\n"
                     "w float32 [3,2]\n";
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc32(text.data(), text.size()));
  CHECK_EQ(meta.at("layout"), std::string(hex));
}

TEST(sessionLoadRejectsBadCheckpoints) {
  NamedTensors data = linearData();
  Session s = openSession(linearModel(), "load.effx");
  linearStep(s, data, 0);
  Tensor before = s.readState("w");

  // Another model's checkpoint.
  Session other = openSession(bigramModel(false), "other.effx", false);
  std::string otherPath = tempPath("bigram.safetensors");
  other.save(otherPath);
  CHECK_ERROR(s.load(otherPath),
              "bigram.safetensors: checkpoint of model 'bigram' does not fit ");
  CHECK_ERROR(s.load(otherPath), "(model 'linear'): it has no tensor 'w'");

  // A safetensors file that is not an effopt checkpoint.
  std::string plain = tempPath("plain.safetensors");
  writeSafeTensors(plain, {{"w", Tensor::zeros(DType::F32, {3, 2})}});
  CHECK_ERROR(s.load(plain), "plain.safetensors: not an effopt checkpoint");

  // Same names, another shape.
  std::string good = tempPath("good.safetensors");
  s.save(good);
  SafeTensorsFile g = SafeTensorsFile::open(good);
  NamedTensors tensors = g.readAll();
  for (auto &[name, t] : tensors)
    if (name == "b")
      t = Tensor::zeros(DType::F32, {3});
  std::string reshaped = tempPath("reshaped.safetensors");
  writeSafeTensors(reshaped, tensors, g.metadata());
  CHECK_ERROR(s.load(reshaped),
              "its 'b' is float32 [3], the model's is float32 [2]");

  // An extra tensor.
  tensors = g.readAll();
  tensors.emplace_back("extra", Tensor::zeros(DType::F32, {1}));
  std::string extra = tempPath("extra.safetensors");
  writeSafeTensors(extra, tensors, g.metadata());
  CHECK_ERROR(s.load(extra), "its tensor 'extra' is not part of the model's state");

  // A flipped bit in the tensor data.
  std::vector<std::byte> bytes = readFileBytes(good);
  bytes[bytes.size() - 3] ^= std::byte{4};
  std::string flipped = tempPath("flipped.safetensors");
  writeFileBytes(flipped, bytes);
  CHECK_ERROR(s.load(flipped), "flipped.safetensors: corrupt checkpoint: the "
                               "tensors' CRC-32 is");

  // Truncated.
  bytes = readFileBytes(good);
  bytes.resize(bytes.size() - 8);
  std::string cut = tempPath("cut.safetensors");
  writeFileBytes(cut, bytes);
  CHECK_ERROR(s.load(cut), "cut.safetensors: ");

  // Bad step metadata.
  Metadata meta = g.metadata();
  meta["step"] = "-3";
  std::string badStep = tempPath("badstep.safetensors");
  writeSafeTensors(badStep, g.readAll(), meta);
  CHECK_ERROR(s.load(badStep), "metadata 'step' is '-3'");

  CHECK_ERROR(s.load(tempPath("absent.safetensors")), "cannot open");

  // Nothing changed.
  CHECK(s.readState("w").sameAs(before));
  CHECK_EQ(s.globalStep(), 1);
}

TEST(sessionWriteState) {
  Session s = openSession(linearModel(false), "write.effx", false);
  Tensor b = floats({2}, {3, 4});
  s.writeState("b", b);
  CHECK(s.readState("b").sameAs(b));
  CHECK_ERROR(s.writeState("b", floats({3}, {1, 2, 3})),
              "state entry 'b' has shape [3]");
  CHECK_ERROR(s.readState("q"), "the model has no state entry 'q'");
}

TEST(sessionBigramTrains) {
  Session s = openSession(bigramModel(), "bigram.effx");
  int64_t tokens[8] = {1, 2, 3, 4, 1, 2, 3, 4};
  int64_t targets[8] = {2, 3, 4, 5, 2, 3, 4, 5};
  s.setInputBytes("tokens", tokens, sizeof tokens);
  s.setInputBytes("targets", targets, sizeof targets);
  float first = s.step();
  CHECK(std::fabs(first - std::log(16.0f)) < 1e-5);
  float loss = first;
  for (int i = 0; i < 30; ++i)
    loss = s.step();
  CHECK(loss < first / 4);
}

TEST(sessionVersion1TrainsTheSame) {
  // A version-1 file of the same model trains bit for bit as the version-2
  // file (whose zero state is not stored).
  NamedTensors data = linearData();
  Session v2 = openSession(linearModel(), "v2.effx");
  std::string path = tempPath("v1.effx");
  writeFileBytes(path, packEffxV1(linearModel()));
  Session v1 = Session::open(path);
  CHECK_EQ(v1.file().version(), 1u);
  for (int64_t i = 0; i < 10; ++i)
    CHECK_EQ(linearStep(v1, data, i), linearStep(v2, data, i));
  CHECK(std::memcmp(v1.stateRegion(), v2.stateRegion(), 320) == 0);
}
