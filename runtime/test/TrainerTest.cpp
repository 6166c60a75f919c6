//===- TrainerTest.cpp - The training loop --------------------------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "effrt/Npz.h"
#include "effrt/SafeTensors.h"
#include "effrt/TokenStream.h"
#include "effrt/Trainer.h"

#include <csignal>
#include <cstring>
#include <fstream>

#include <signal.h>

using namespace effrt;
using namespace effrt::test;

static std::string writeModel(const EffxParts &parts, const char *name) {
  std::string path = tempPath(name);
  writeFileBytes(path, packEffx(parts));
  return path;
}

static TrainerOptions linearOptions(const char *tag, int64_t rows = 160) {
  TrainerOptions o;
  o.effx = writeModel(linearModel(), (std::string(tag) + ".effx").c_str());
  o.data = tempPath(std::string(tag) + ".npz");
  writeLinearData(o.data, rows);
  o.threads = 1;
  return o;
}

static std::vector<std::string> readLines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

static bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(trainerFeedsNpzRowsInOrder) {
  TrainerOptions o = linearOptions("rows");
  Trainer trainer(o);
  CHECK_EQ(trainer.samplesPerStep(), 4);
  std::vector<float> losses;
  RunResult r = trainer.run(
      10, [&](const StepRecord &rec) { losses.push_back(rec.loss); });
  CHECK_EQ(r.steps, 10);
  CHECK(!r.stopped);
  CHECK_EQ(trainer.globalStep(), 10);

  // The same steps by hand: step i gets rows [4i, 4i+4).
  Session s = Session::open(o.effx);
  NamedTensors data = NpzFile::open(o.data).readAll();
  for (int64_t i = 0; i < 10; ++i) {
    s.setInput("x", data[0].second.sliceRows(4 * i, 4 * i + 4));
    s.setInput("y", data[1].second.sliceRows(4 * i, 4 * i + 4));
    float loss = s.step();
    CHECK(sameBits(loss, losses[static_cast<size_t>(i)]));
  }
  CHECK(s.readState("w").sameAs(trainer.session().readState("w")));
}

TEST(trainerRecordsEveryField) {
  TrainerOptions o = linearOptions("record");
  o.log = tempPath("record.jsonl");
  Trainer trainer(o);
  CHECK(!trainer.lastRecord());
  StepRecord rec = trainer.step();
  CHECK_EQ(rec.step, 0);
  CHECK(rec.timeMs >= 0);
  CHECK(rec.rssBytes > 0);
  CHECK_EQ(rec.allocatedBytes, 768u);
  CHECK(!rec.lossScale);
  CHECK(trainer.lastRecord() && sameBits(trainer.lastRecord()->loss, rec.loss));
  std::vector<std::string> lines = readLines(o.log);
  CHECK_EQ(lines.size(), 1u);
  for (const char *field : {"{\"step\": 0, \"loss\": ", "\"time_ms\": ",
                            "\"samples_per_s\": ", "\"rss_bytes\": ",
                            "\"allocated_bytes\": 768}"})
    CHECK(lines[0].find(field) != std::string::npos);
}

TEST(trainerResumesBitForBit) {
  TrainerOptions o = linearOptions("resume");
  o.log = tempPath("resume-full.jsonl");
  std::string full = tempPath("resume-full.safetensors");
  {
    Trainer t(o);
    t.run(10);
    t.save(full);
  }
  o.log = tempPath("resume-split.jsonl");
  o.save = tempPath("resume-split.safetensors");
  {
    Trainer t(o);
    t.run(4);
    t.save();
  }
  o.resume = o.save;
  {
    Trainer t(o);
    CHECK_EQ(t.globalStep(), 4);
    t.run(3);
    for (int i = 0; i < 3; ++i)
      t.step();
    t.save();
  }
  CHECK(readFileBytes(full) == readFileBytes(o.save));
  // The resumed run appended to the log: the same steps and losses.
  std::vector<std::string> a = readLines(tempPath("resume-full.jsonl"));
  std::vector<std::string> b = readLines(o.log);
  CHECK_EQ(a.size(), 10u);
  CHECK_EQ(b.size(), 10u);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    CHECK_EQ(a[i].substr(0, a[i].find("\"time_ms\"")),
             b[i].substr(0, b[i].find("\"time_ms\"")));
}

TEST(trainerChecksRowsBeforeCreatingTheLog) {
  TrainerOptions o = linearOptions("fewrows", 40);
  o.log = tempPath("fewrows.jsonl");
  Trainer trainer(o);
  CHECK_ERROR(trainer.run(11),
              "fewrows.npz: input 'x' has 40 rows; steps 0..10 with batch 4 "
              "need 44");
  CHECK(!fileExists(o.log));
  CHECK_ERROR(trainer.run(-1), "cannot run a negative number of steps");
  trainer.run(10);
  CHECK_ERROR(trainer.step(), "steps 10..10 with batch 4 need 44");
  CHECK_EQ(readLines(o.log).size(), 10u);
}

TEST(trainerStopRequests) {
  TrainerOptions o = linearOptions("stop");
  Trainer trainer(o);
  RunResult r = trainer.run(20, [&](const StepRecord &rec) {
    if (rec.step == 2)
      trainer.requestStop();
  });
  CHECK_EQ(r.steps, 3);
  CHECK(r.stopped);
  CHECK_EQ(r.signal, 0);
  // A request before a run stops it before its first step, and is consumed.
  trainer.requestStop();
  r = trainer.run(5);
  CHECK(r.stopped);
  CHECK_EQ(r.steps, 0);
  r = trainer.run(5);
  CHECK(!r.stopped);
  CHECK_EQ(r.steps, 5);
  CHECK_EQ(trainer.globalStep(), 8);
  // A request during the last step is still reported.
  r = trainer.run(1, [&](const StepRecord &) { trainer.requestStop(); });
  CHECK(r.stopped);
  CHECK_EQ(r.steps, 1);
}

TEST(trainerTurnsSignalsIntoStops) {
  struct sigaction before {}, during {}, after {};
  ::sigaction(SIGTERM, nullptr, &before);
  TrainerOptions o = linearOptions("signal");
  o.handleSignals = true;
  {
    Trainer trainer(o);
    ::sigaction(SIGTERM, nullptr, &during);
    CHECK(during.sa_handler != before.sa_handler);
    RunResult r = trainer.run(20, [](const StepRecord &rec) {
      if (rec.step == 1)
        std::raise(SIGTERM);
    });
    CHECK(r.stopped);
    CHECK_EQ(r.signal, SIGTERM);
    CHECK_EQ(r.steps, 2);
    // Consumed: the next run goes on.
    CHECK_EQ(trainer.run(2).steps, 2);
  }
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);
}

TEST(trainerOpensAndChecksEverythingUpFront) {
  TrainerOptions o = linearOptions("upfront");
  TrainerOptions bad = o;
  bad.data = tempPath("upfront-none.npz");
  CHECK_ERROR(Trainer{bad}, "upfront-none.npz: cannot open");
  bad = o;
  bad.save = tempPath("no/such/dir/c.safetensors");
  CHECK_ERROR(Trainer{bad}, "c.safetensors: cannot create");
  bad = o;
  bad.save = tempDir();
  CHECK_ERROR(Trainer{bad}, ": is a directory");
  bad = o;
  bad.data = o.effx;
  CHECK_ERROR(Trainer{bad}, "upfront.effx: unknown data format (expected an "
                            ".npz of arrays or a .bin of uint16 tokens)");
  bad = o;
  bad.data = tempPath("upfront.bin");
  writeFileBytes(bad.data, std::vector<std::byte>(100));
  CHECK_ERROR(Trainer{bad}, "upfront.effx: a token file needs a model with "
                            "two integer inputs");
  Trainer t(o);
  CHECK_ERROR(t.save(), "no checkpoint path");
}

TEST(trainerTokenWindowsDependOnlyOnSeedAndStep) {
  TrainerOptions o;
  o.effx = writeModel(bigramModel(), "tokens.effx");
  o.data = tempPath("tokens.bin");
  std::vector<std::byte> tokens(2 * 5000);
  for (size_t i = 0; i < tokens.size(); i += 2)
    tokens[i] = std::byte((i * 7 + i / 13) % 16);
  writeFileBytes(o.data, tokens);
  o.seed = 7;
  o.threads = 1;

  // The batch of step 3 is the window sampler's, seeded for step 3.
  struct Capture : DataSource {
    std::unique_ptr<DataSource> inner;
    Tensor tokens3;
    const std::string &path() const override { return inner->path(); }
    void checkSteps(int64_t f, int64_t c) const override {
      inner->checkSteps(f, c);
    }
    void feed(Session &s, int64_t step) override {
      inner->feed(s, step);
      if (step == 3)
        tokens3 = Tensor::copyOf(DType::I64, {2, 4}, s.ioRegion(), 64);
    }
  };
  Session probe = Session::open(o.effx);
  auto capture = std::make_unique<Capture>();
  capture->inner = openDataSource(o.data, probe.manifest(), o.effx, o.seed);
  Capture *seen = capture.get();
  Trainer trainer(o, std::move(capture));
  trainer.run(5);
  WindowSampler sampler(TokenStream::open(o.data), 4, 0);
  sampler.setState({tokenWindowSeed(7, 3), 0});
  auto [inputs, targets] = sampler.nextBatch(2, DType::I64);
  CHECK(seen->tokens3.sameAs(inputs));
  // Pinned: the windows of every run effrun ever logged depend on it.
  CHECK_EQ(tokenWindowSeed(7, 3), 0xf53a29a2695577c0ull);
  CHECK_EQ(tokenWindowSeed(0, 0), 0xa706dd2f4d197e6full);
  CHECK(tokenWindowSeed(7, 3) != tokenWindowSeed(7, 4));
  CHECK(tokenWindowSeed(7, 3) != tokenWindowSeed(8, 3));
}

/// The linear model with loss-scaling state (which its step leaves alone).
static EffxParts scaledLinearModel(const char *mode, double minScale) {
  EffxParts p = linearModel();
  p.manifest["regions"]["state"] = 384;
  auto entry = [](const char *name, const char *dtype, uint64_t offset) {
    return nlohmann::json{{"name", name},
                          {"dtype", dtype},
                          {"shape", nlohmann::json::array()},
                          {"offset", offset},
                          {"role", "optimizer_state"}};
  };
  p.manifest["state"].push_back(entry("loss_scale.scale", "float32", 320));
  p.manifest["state"].push_back(
      entry("loss_scale.last_step_skipped", "int64", 328));
  p.manifest["state"].push_back(entry("loss_scale.skipped_steps", "int64", 336));
  p.manifest["loss_scaling"] = {{"mode", mode}, {"min_scale", minScale}};
  p.state.resize(384);
  return p;
}

/// Feeds the linear rows and makes the state read as an overflow at `scale`
/// from step `from` on.
struct Overflowing : DataSource {
  std::unique_ptr<DataSource> inner;
  int64_t from = 0;
  float scale = 1;
  const std::string &path() const override { return inner->path(); }
  void checkSteps(int64_t f, int64_t c) const override {
    inner->checkSteps(f, c);
  }
  void feed(Session &s, int64_t step) override {
    inner->feed(s, step);
    bool skip = step >= from;
    int64_t skipped = std::max<int64_t>(0, step - from + 1);
    s.writeState("loss_scale.scale",
                 Tensor::copyOf(DType::F32, {}, &scale, 4));
    int64_t flag = skip ? 1 : 0;
    s.writeState("loss_scale.last_step_skipped",
                 Tensor::copyOf(DType::I64, {}, &flag, 8));
    s.writeState("loss_scale.skipped_steps",
                 Tensor::copyOf(DType::I64, {}, &skipped, 8));
  }
};

static Trainer overflowingTrainer(const char *tag, const char *mode,
                                  double minScale, float scale, int64_t from) {
  TrainerOptions o = linearOptions(tag, 400);
  o.effx = writeModel(scaledLinearModel(mode, minScale),
                      (std::string(tag) + "-scaled.effx").c_str());
  o.log = tempPath(std::string(tag) + ".jsonl");
  Session probe = Session::open(o.effx);
  auto source = std::make_unique<Overflowing>();
  source->inner = openDataSource(o.data, probe.manifest(), o.effx, 0);
  source->from = from;
  source->scale = scale;
  return Trainer(o, std::move(source));
}

TEST(trainerRecordsLossScaling) {
  Trainer t = overflowingTrainer("scaled", "dynamic", 0, 1024, 2);
  std::vector<StepRecord> records;
  t.run(4, [&](const StepRecord &r) { records.push_back(r); });
  CHECK_EQ(records.size(), 4u);
  CHECK(records[0].lossScale && !records[0].lossScale->skipped);
  CHECK(records[2].lossScale->skipped);
  CHECK_EQ(records[3].lossScale->skippedSteps, 2);
  CHECK_EQ(records[3].lossScale->scale, 1024.0f);
  std::vector<std::string> lines = readLines(t.options().log);
  CHECK(lines[3].find(", \"loss_scale\": 1024, \"step_skipped\": true, "
                      "\"skipped_steps\": 2}") != std::string::npos);
  CHECK(lines[0].find("\"step_skipped\": false") != std::string::npos);
}

TEST(trainerStopsWhenLossScalingSkipsEveryStep) {
  // At the minimum scale: 10 skipped steps in a row end the run.
  Trainer atMin = overflowingTrainer("atmin", "dynamic", 1, 1, 3);
  CHECK_ERROR(atMin.run(50),
              "atmin-scaled.effx: loss scaling skipped 10 optimizer steps in "
              "a row (global steps 3..12): the gradients are inf/NaN even at "
              "loss scale 1 (the minimum); training is not progressing");
  CHECK_EQ(readLines(atMin.options().log).size(), 13u);
  Trainer fixed = overflowingTrainer("static", "static", 0, 128, 0);
  CHECK_ERROR(fixed.run(50), "global steps 0..9): the gradients are inf/NaN "
                             "even at loss scale 128 (static)");
  // Above the floor it takes 50.
  Trainer above = overflowingTrainer("above", "dynamic", 1, 4096, 0);
  CHECK_ERROR(above.run(99), "skipped 50 optimizer steps in a row (global "
                             "steps 0..49): the gradients are inf/NaN even at "
                             "loss scale 4096;");
}
