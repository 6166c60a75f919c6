//===- Convolution.cpp - oneDNN convolutions for compiled code ------------===//
//
// effrt_conv2d_{fwd,bwd_data,bwd_weights}_f32, which compiled CPU code calls
// for eff.conv2d and its gradients under `convolution=library`, and
// effrt_conv2d_workspace_bytes, which the compiler calls to size their
// workspace in the memory plan.
//
// The operands are plain NCHW / [F, C/G, KH, KW] tensors in the step's
// memory. oneDNN's fast kernels (jit:avx512_core, jit_1x1, the depthwise
// ones) want blocked layouts (nChw16c, OIhw16i16o), so each call lets oneDNN
// choose its layouts (format `any`), reorders the operands into blocked
// copies, runs the convolution and reorders the result back. The blocked
// copies and oneDNN's scratchpad (scratchpad_mode user) live in the
// caller's workspace, which the memory plan places in the arena: a call
// allocates no tensor memory of its own. (oneDNN's JIT code and primitive
// objects are library state, created once per shape, like OpenBLAS's.)
//
// Primitives are created on the first call of each shape and thread count
// and kept. A small convolution gets one thread per 4M multiply-adds
// (kMacsPerThread); while the machine is busy (libomp's dynamic
// adjustment hands parallel regions fewer threads), a convolution runs on
// the threads a parallel region would get (threadsNow), once its output on
// those was found bit-identical to its output on all of them (run).
// The scratchpad can depend on the thread count the primitive is created
// for; when this run's threads would need more workspace than the plan
// gave, the primitive is created, and run, on the most threads that fit.
//
// oneDNN (Debian's libdnnl2) is built for OpenMP: in effrun, libomp is
// loaded before libdnnl's libgomp, so oneDNN's GOMP_* and omp_* calls land
// in libomp and run on the step's OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "effrt/Kernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <omp.h>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

/// Everything that identifies a primitive: kind, bias, the 18 shape
/// arguments and the threads it was created for.
using Key = std::array<int64_t, 21>;

/// The 18 shape arguments, in EFFRT_CONV2D_SHAPE_ARGS order.
struct Shape {
  int64_t n, c, h, w, f, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, pb, pr, g;

  memory::dims src() const { return {n, c, h, w}; }
  memory::dims dst() const { return {n, f, oh, ow}; }
  memory::dims weights() const {
    if (g == 1)
      return {f, c, kh, kw};
    return {g, f / g, c / g, kh, kw};
  }
  Tag weightsTag() const { return g == 1 ? Tag::oihw : Tag::goihw; }
  memory::dims strides() const { return {sh, sw}; }
  // oneDNN counts dilation from 0 (0 = dense).
  memory::dims dilations() const { return {dh - 1, dw - 1}; }
  memory::dims padBegin() const { return {pt, pl}; }
  memory::dims padEnd() const { return {pb, pr}; }
};

constexpr size_t kAlign = 64;
size_t alignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// An operand: its plain layout, the layout the convolution reads or
/// writes it in, the reorder between them (when they differ) and its
/// blocked copy's offset in the workspace.
struct Operand {
  memory::desc plain, chosen;
  dnnl::primitive reorder;
  bool reordered = false;
  size_t offset = 0;
};

/// One convolution: its primitive, its operands (inputs, then the output)
/// and the workspace layout: scratchpad at 0, blocked copies after.
struct Conv {
  dnnl::primitive primitive;
  std::vector<std::pair<int, Operand>> operands; // DNNL_ARG_* -> operand
  size_t scratchpadBytes = 0;
  size_t workspaceBytes = 0;
  int threads = 0;
  /// For a primitive on fewer threads than the run's: whether its output
  /// was found bit-identical to the run's own (-1: not compared yet).
  std::atomic<int> sameAsAll{-1};
};

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// Adds operand `arg`; an input is reordered plain -> chosen, an output
/// chosen -> plain.
void addOperand(Conv &conv, int arg, const memory::desc &plain,
                const memory::desc &chosen, bool output) {
  Operand op{plain, chosen, {}, false, 0};
  if (chosen != plain) {
    dnnl::reorder::primitive_desc pd =
        output ? dnnl::reorder::primitive_desc(engine(), chosen, engine(),
                                               plain, userScratchpad())
               : dnnl::reorder::primitive_desc(engine(), plain, engine(),
                                               chosen, userScratchpad());
    conv.scratchpadBytes =
        std::max(conv.scratchpadBytes, pd.scratchpad_desc().get_size());
    op.reorder = dnnl::reorder(pd);
    op.reordered = true;
  }
  conv.operands.emplace_back(arg, std::move(op));
}

/// The primitives of one call, created for the current OpenMP threads.
std::unique_ptr<Conv> create(int kind, bool bias, const Shape &s) {
  dnnl::engine &eng = engine();
  memory::desc x(s.src(), kF32, Tag::nchw), y(s.dst(), kF32, Tag::nchw);
  memory::desc w(s.weights(), kF32, s.weightsTag());
  memory::desc b({s.f}, kF32, Tag::x);
  memory::desc xAny(s.src(), kF32, Tag::any), yAny(s.dst(), kF32, Tag::any);
  memory::desc wAny(s.weights(), kF32, Tag::any);
  memory::desc none;
  dnnl::primitive_attr attr = userScratchpad();
  auto algo = dnnl::algorithm::convolution_direct;
  // The forward description the backward ones are hinted with.
  dnnl::convolution_forward::primitive_desc forward(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_training, algo, xAny, wAny,
          bias ? b : none, yAny, s.strides(), s.dilations(), s.padBegin(),
          s.padEnd()),
      attr, eng);
  auto conv = std::make_unique<Conv>();
  conv->threads = omp_get_max_threads();
  memory::desc scratchpad;
  if (kind == EFFRT_CONV2D_FWD) {
    addOperand(*conv, DNNL_ARG_SRC, x, forward.src_desc(), false);
    addOperand(*conv, DNNL_ARG_WEIGHTS, w, forward.weights_desc(), false);
    if (bias)
      addOperand(*conv, DNNL_ARG_BIAS, b, forward.bias_desc(), false);
    addOperand(*conv, DNNL_ARG_DST, y, forward.dst_desc(), true);
    conv->primitive = dnnl::convolution_forward(forward);
    scratchpad = forward.scratchpad_desc();
  } else if (kind == EFFRT_CONV2D_BWD_DATA) {
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(algo, xAny, wAny, yAny,
                                              s.strides(), s.dilations(),
                                              s.padBegin(), s.padEnd()),
        attr, eng, forward);
    addOperand(*conv, DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc(), false);
    addOperand(*conv, DNNL_ARG_WEIGHTS, w, pd.weights_desc(), false);
    addOperand(*conv, DNNL_ARG_DIFF_SRC, x, pd.diff_src_desc(), true);
    conv->primitive = dnnl::convolution_backward_data(pd);
    scratchpad = pd.scratchpad_desc();
  } else {
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(
            algo, xAny, wAny, none, yAny, s.strides(), s.dilations(),
            s.padBegin(), s.padEnd()),
        attr, eng, forward);
    addOperand(*conv, DNNL_ARG_SRC, x, pd.src_desc(), false);
    addOperand(*conv, DNNL_ARG_DIFF_DST, y, pd.diff_dst_desc(), false);
    addOperand(*conv, DNNL_ARG_DIFF_WEIGHTS, w, pd.diff_weights_desc(), true);
    conv->primitive = dnnl::convolution_backward_weights(pd);
    scratchpad = pd.scratchpad_desc();
  }
  conv->scratchpadBytes =
      std::max(conv->scratchpadBytes, scratchpad.get_size());
  size_t offset = alignUp(conv->scratchpadBytes);
  for (auto &[arg, op] : conv->operands) {
    if (!op.reordered)
      continue;
    op.offset = offset;
    offset += alignUp(op.chosen.get_size());
  }
  conv->workspaceBytes = offset;
  return conv;
}

/// Runs `body` with exactly `threads` OpenMP threads. oneDNN reads the
/// count when a primitive is created and its kernels expect every one of
/// them when it runs (some wait at barriers of their own): effrun's
/// dynamic thread adjustment (omp_set_dynamic, which may hand a parallel
/// region fewer threads on a busy machine) is off meanwhile.
template <typename Body> void withThreads(int threads, Body body) {
  int saved = omp_get_max_threads();
  int dynamic = omp_get_dynamic();
  if (threads != saved)
    omp_set_num_threads(threads);
  if (dynamic)
    omp_set_dynamic(0);
  body();
  if (dynamic)
    omp_set_dynamic(dynamic);
  if (threads != saved)
    omp_set_num_threads(saved);
}

Key keyOf(int kind, bool bias, const Shape &s, int threads) {
  const int64_t *v = &s.n;
  Key key{kind, bias};
  for (int i = 0; i < 18; ++i)
    key[2 + i] = v[i];
  key[20] = threads;
  return key;
}

std::mutex cacheMutex;
std::map<Key, std::unique_ptr<Conv>> &cache() {
  static std::map<Key, std::unique_ptr<Conv>> c;
  return c;
}

[[noreturn]] void die(const char *what, const std::string &message) {
  std::fprintf(stderr, "effrun: error: %s: %s\n", what, message.c_str());
  std::_Exit(1);
}

/// Multiply-adds per thread below which a convolution runs on fewer
/// threads: oneDNN's kernels need every thread they were created for at
/// their barriers, and on a busy machine a small convolution waits longer
/// for a descheduled thread than it computes (MobileNet's depthwise
/// convolutions are 0.3M multiply-adds).
constexpr int64_t kMacsPerThread = int64_t(1) << 22;

/// How long a thread count from threadsNow() stands: libomp itself
/// re-reads the machine's load at most once a second.
constexpr auto kLoadInterval = std::chrono::milliseconds(20);

/// The threads a parallel region of the caller would get now: all of this
/// run's, or fewer while effrun's dynamic adjustment (omp_set_dynamic)
/// sees the machine busy, as the compiled loops get. A oneDNN kernel
/// waits at its barriers for every thread it was created for, so on a
/// busy machine one descheduled thread costs a time slice per call; asked
/// at most once per kLoadInterval (a parallel region each time).
int threadsNow() {
  int max = omp_get_max_threads();
  if (max == 1 || !omp_get_dynamic() || omp_in_parallel())
    return max;
  // Tests: EFFRT_CONV_ASSUME_BUSY=1 as if the machine were always busy,
  // =0 as if never.
  static const int assumed = [] {
    const char *v = std::getenv("EFFRT_CONV_ASSUME_BUSY");
    return v ? (std::strcmp(v, "1") == 0 ? 1 : 0) : -1;
  }();
  if (assumed >= 0)
    return assumed ? 1 : max;
  using Clock = std::chrono::steady_clock;
  static std::atomic<int> last{0};
  static std::atomic<Clock::rep> lastAt{0};
  Clock::rep now = Clock::now().time_since_epoch().count();
  int known = last.load(std::memory_order_relaxed);
  if (known > 0 && known <= max &&
      now - lastAt.load(std::memory_order_relaxed) <
          std::chrono::duration_cast<Clock::duration>(kLoadInterval).count())
    return known;
  int got = max;
#pragma omp parallel
  if (omp_get_thread_num() == 0)
    got = omp_get_num_threads();
  last.store(got, std::memory_order_relaxed);
  lastAt.store(now, std::memory_order_relaxed);
  return got;
}

/// The primitives for this call on at most `threads` threads, created on
/// first use with the most threads (up to `threads`, one per
/// kMacsPerThread) whose workspace fits `available` bytes.
Conv &lookupFor(const char *what, int kind, bool bias, const Shape &s,
                int64_t available, int threads) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  auto found = cache().find(keyOf(kind, bias, s, threads));
  if (found != cache().end())
    return *found->second;
  std::unique_ptr<Conv> conv;
  size_t needed = 0;
  int64_t macs = s.n * s.f * s.oh * s.ow * (s.c / s.g) * s.kh * s.kw;
  int useful = static_cast<int>(
      std::min<int64_t>(threads, std::max<int64_t>(1, macs / kMacsPerThread)));
  try {
    for (int t = useful; t >= 1; --t) {
      withThreads(t, [&] { conv = create(kind, bias, s); });
      if (conv->workspaceBytes <= static_cast<uint64_t>(available))
        break;
      needed = needed ? needed : conv->workspaceBytes;
      conv.reset();
    }
  } catch (const dnnl::error &e) {
    die(what, std::string("oneDNN cannot create this convolution: ") +
                  e.what());
  }
  if (!conv)
    die(what, "oneDNN needs " + std::to_string(needed) +
                  " bytes of workspace on this machine, the compiled plan "
                  "gave " +
                  std::to_string(available) +
                  " (compiled for another CPU or oneDNN? recompile here)");
  Conv &result = *conv;
  cache().emplace(keyOf(kind, bias, s, threads), std::move(conv));
  return result;
}

/// The primitives for this call: those for this run's threads, or, while
/// the machine is busy (threadsNow()), those for fewer, once their output
/// was found bit-identical to the run's own; `verify` is set when this
/// call is to compare the two (its first call while the machine is busy).
Conv &lookup(const char *what, int kind, bool bias, const Shape &s,
             int64_t available, Conv *&verify) {
  verify = nullptr;
  Conv &all = lookupFor(what, kind, bias, s, available, omp_get_max_threads());
  if (all.threads == 1)
    return all;
  int now = threadsNow();
  if (now >= all.threads)
    return all;
  Conv &fewer = lookupFor(what, kind, bias, s, available, now);
  if (fewer.threads >= all.threads)
    return all;
  int same = fewer.sameAsAll.load(std::memory_order_relaxed);
  if (same < 0)
    verify = &fewer;
  return same > 0 ? fewer : all;
}

using Pointers = std::vector<std::pair<int, void *>>;

/// Runs `conv`: inputs reordered into their blocked copies, the
/// convolution, the output reordered back.
void execute(const char *what, Conv &conv, const Pointers &pointers,
             void *workspace) {
  auto *base = static_cast<unsigned char *>(workspace);
  try {
    withThreads(conv.threads, [&] {
      dnnl::stream stream(engine());
      std::unordered_map<int, memory> args;
      if (conv.scratchpadBytes)
        args[DNNL_ARG_SCRATCHPAD] =
            memory({{static_cast<int64_t>(conv.scratchpadBytes)},
                    memory::data_type::u8,
                    Tag::x},
                   engine(), base);
      std::vector<std::pair<const Operand *, std::array<memory, 2>>> outputs;
      for (const auto &[arg, op] : conv.operands) {
        void *data = nullptr;
        for (auto [a, p] : pointers)
          if (a == arg)
            data = p;
        memory plain(op.plain, engine(), data);
        if (!op.reordered) {
          args[arg] = plain;
          continue;
        }
        memory blocked(op.chosen, engine(), base + op.offset);
        args[arg] = blocked;
        bool isOutput = arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC ||
                        arg == DNNL_ARG_DIFF_WEIGHTS;
        if (isOutput) {
          outputs.push_back({&op, {blocked, plain}});
          continue;
        }
        std::unordered_map<int, memory> reorderArgs{{DNNL_ARG_FROM, plain},
                                                    {DNNL_ARG_TO, blocked}};
        if (args.count(DNNL_ARG_SCRATCHPAD))
          reorderArgs[DNNL_ARG_SCRATCHPAD] = args[DNNL_ARG_SCRATCHPAD];
        op.reorder.execute(stream, reorderArgs);
      }
      conv.primitive.execute(stream, args);
      for (auto &[op, mems] : outputs) {
        std::unordered_map<int, memory> reorderArgs{{DNNL_ARG_FROM, mems[0]},
                                                    {DNNL_ARG_TO, mems[1]}};
        if (args.count(DNNL_ARG_SCRATCHPAD))
          reorderArgs[DNNL_ARG_SCRATCHPAD] = args[DNNL_ARG_SCRATCHPAD];
        op->reorder.execute(stream, reorderArgs);
      }
      stream.wait();
    });
  } catch (const dnnl::error &e) {
    die(what, e.what());
  }
}

/// Runs the call. On its first call while the machine is busy, a shape's
/// primitive for fewer threads runs too, into a copy of the output: only
/// if the two outputs are bit-identical does it run that shape from then
/// on. (oneDNN's direct forward and input-gradient kernels sum each
/// output in one thread; a filter gradient may split the batch's sum
/// between threads, and its outputs, sums over thousands of products,
/// then differ in their last bits.) So a run's results never depend on
/// the machine's load.
void run(const char *what, int kind, bool bias, const Shape &s,
         Pointers pointers, void *workspace, int64_t workspaceBytes) {
  Conv *verify = nullptr;
  Conv &conv = lookup(what, kind, bias, s, workspaceBytes, verify);
  execute(what, conv, pointers, workspace);
  if (!verify)
    return;
  // The output is the last operand (DST, DIFF_SRC or DIFF_WEIGHTS).
  const auto &[outArg, out] = conv.operands.back();
  size_t bytes = out.plain.get_size();
  std::vector<unsigned char> copy(bytes);
  void *original = nullptr;
  for (auto &[arg, pointer] : pointers)
    if (arg == outArg) {
      original = pointer;
      pointer = copy.data();
    }
  execute(what, *verify, pointers, workspace);
  verify->sameAsAll.store(std::memcmp(copy.data(), original, bytes) == 0,
                          std::memory_order_relaxed);
}

#define EFFRT_CONV2D_SHAPE                                                     \
  Shape {                                                                      \
    N, C, H, W, F, KH, KW, OH, OW, strideH, strideW, dilationH, dilationW,     \
        padTop, padLeft, padBottom, padRight, groups                           \
  }

} // namespace

extern "C" int64_t effrt_conv2d_workspace_bytes(int32_t kind, int32_t hasBias,
                                                EFFRT_CONV2D_SHAPE_ARGS,
                                                int32_t threads) {
  if (kind < EFFRT_CONV2D_FWD || kind > EFFRT_CONV2D_BWD_WEIGHTS)
    return -1;
  try {
    std::unique_ptr<Conv> conv;
    withThreads(threads > 0 ? threads : omp_get_max_threads(),
                [&] { conv = create(kind, hasBias, EFFRT_CONV2D_SHAPE); });
    return static_cast<int64_t>(conv->workspaceBytes);
  } catch (const dnnl::error &) {
    return -1;
  }
}

extern "C" void effrt_conv2d_fwd_f32(const float *x, const float *w,
                                     const float *bias, float *y,
                                     EFFRT_CONV2D_SHAPE_ARGS, void *workspace,
                                     int64_t workspaceBytes) {
  run("effrt_conv2d_fwd_f32", EFFRT_CONV2D_FWD, bias != nullptr,
      EFFRT_CONV2D_SHAPE,
      {{DNNL_ARG_SRC, const_cast<float *>(x)},
       {DNNL_ARG_WEIGHTS, const_cast<float *>(w)},
       {DNNL_ARG_BIAS, const_cast<float *>(bias)},
       {DNNL_ARG_DST, y}},
      workspace, workspaceBytes);
}

extern "C" void effrt_conv2d_bwd_data_f32(const float *dy, const float *w,
                                          float *dx, EFFRT_CONV2D_SHAPE_ARGS,
                                          void *workspace,
                                          int64_t workspaceBytes) {
  run("effrt_conv2d_bwd_data_f32", EFFRT_CONV2D_BWD_DATA, false,
      EFFRT_CONV2D_SHAPE,
      {{DNNL_ARG_DIFF_DST, const_cast<float *>(dy)},
       {DNNL_ARG_WEIGHTS, const_cast<float *>(w)},
       {DNNL_ARG_DIFF_SRC, dx}},
      workspace, workspaceBytes);
}

extern "C" void effrt_conv2d_bwd_weights_f32(const float *x, const float *dy,
                                             float *dw,
                                             EFFRT_CONV2D_SHAPE_ARGS,
                                             void *workspace,
                                             int64_t workspaceBytes) {
  run("effrt_conv2d_bwd_weights_f32", EFFRT_CONV2D_BWD_WEIGHTS, false,
      EFFRT_CONV2D_SHAPE,
      {{DNNL_ARG_SRC, const_cast<float *>(x)},
       {DNNL_ARG_DIFF_DST, const_cast<float *>(dy)},
       {DNNL_ARG_DIFF_WEIGHTS, dw}},
      workspace, workspaceBytes);
}
