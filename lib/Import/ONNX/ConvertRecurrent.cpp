//===- ConvertRecurrent.cpp - LSTM, GRU and RNN unrolled into eff ops -----===//
//
// ONNX's recurrent ops become their time steps, unrolled over the static
// sequence length T: one GEMM projects every step's input with W (both
// biases folded in), then each step multiplies the previous hidden state by
// R (the step's input projection is that GEMM's bias), splits the gates off
// and combines them with sigmoid/tanh/mul/add. Only ordinary eff ops are
// built, so autodiff, remat, autocast and the memory plan treat a recurrent
// net like any other graph; the gradient reaches W, R and B through
// whatever Slice/Concat/Unsqueeze torch's exporter put between its named
// parameters and the node. Why unrolled rather than a loop op, and what it
// costs: docs/Importer.md, "Recurrent ops".
//
// Gate orders are ONNX's (LSTM: input, output, forget, cell; GRU: update,
// reset, hidden); torch's exporter reorders its weights into them.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

namespace {

enum class Cell { RNN, GRU, LSTM };

/// The most steps (sequence length times directions) one node is unrolled
/// into: about 15 eff ops each, and compile time grows with them
/// (docs/Importer.md); a longer sequence is refused rather than imported for
/// minutes.
constexpr int64_t kMaxUnrolledSteps = 4096;

/// Gates per cell: W and R hold this many [hidden, *] blocks.
int64_t gateCount(Cell cell) {
  switch (cell) {
  case Cell::RNN:
    return 1;
  case Cell::GRU:
    return 3;
  case Cell::LSTM:
    return 4;
  }
  llvm_unreachable("unknown cell");
}

enum class Activation { Sigmoid, Tanh, Relu };

/// What one node asks for, read and checked once.
struct RecurrentNode {
  Cell cell;
  int64_t hidden = 0, gates = 0;
  int64_t seqLength = 0, batch = 0, inputSize = 0, directions = 1;
  bool reverseOnly = false;
  bool batchMajor = false; // layout = 1
  bool linearBeforeReset = false;
  std::optional<double> clip;
  /// Per direction: f, g (GRU, LSTM), h (LSTM).
  SmallVector<SmallVector<Activation, 3>, 2> activations;
  Type elementType;
};

FailureOr<Activation> parseActivation(NodeContext &ctx, StringRef name) {
  if (name.equals_insensitive("Sigmoid"))
    return Activation::Sigmoid;
  if (name.equals_insensitive("Tanh"))
    return Activation::Tanh;
  if (name.equals_insensitive("Relu"))
    return Activation::Relu;
  return static_cast<LogicalResult>(
      ctx.error("activation '" + name +
                "' is not supported (Sigmoid, Tanh and Relu are)"));
}

/// The shape a W/R/B/P/initial state input must have, checked.
LogicalResult checkShape(NodeContext &ctx, unsigned i, StringRef what,
                         ArrayRef<int64_t> shape) {
  if (ctx.inputType(i).getShape() == shape)
    return success();
  return ctx.error("input '" + what + "' has shape " +
                   eff::formatShape(ctx.inputType(i).getShape()) +
                   ", expected " + eff::formatShape(shape));
}

FailureOr<RecurrentNode> readNode(NodeContext &ctx, Cell cell) {
  RecurrentNode n;
  n.cell = cell;
  n.gates = gateCount(cell);
  n.hidden = ctx.getInt("hidden_size", 0);
  auto fail = [](LogicalResult) { return failure(); };
  if (n.hidden <= 0)
    return fail(ctx.error("attribute 'hidden_size' must be positive"));
  std::string direction = ctx.getString("direction", "forward");
  if (direction == "bidirectional")
    n.directions = 2;
  else if (direction == "reverse")
    n.reverseOnly = true;
  else if (direction != "forward")
    return fail(ctx.unsupportedAttribute("direction", "'" + direction + "'"));
  int64_t layout = ctx.getInt("layout", 0);
  if (layout != 0 && layout != 1)
    return fail(ctx.unsupportedAttribute("layout", Twine(layout)));
  n.batchMajor = layout == 1;
  if (cell == Cell::LSTM && ctx.getInt("input_forget", 0) != 0)
    return fail(ctx.unsupportedAttribute("input_forget", "1"));
  if (cell == Cell::GRU)
    n.linearBeforeReset = ctx.getInt("linear_before_reset", 0) != 0;
  if (ctx.hasAttribute("clip")) {
    n.clip = ctx.getFloat("clip", 0.0);
    if (*n.clip <= 0)
      return fail(ctx.error("attribute 'clip' must be positive"));
  }

  // Activations: one list for all directions, in ONNX's default when absent.
  SmallVector<StringRef, 3> defaults;
  switch (cell) {
  case Cell::RNN:
    defaults = {"Tanh"};
    break;
  case Cell::GRU:
    defaults = {"Sigmoid", "Tanh"};
    break;
  case Cell::LSTM:
    defaults = {"Sigmoid", "Tanh", "Tanh"};
    break;
  }
  SmallVector<std::string> names;
  if (const onnx::AttributeProto *attr = ctx.attribute("activations"))
    for (const std::string &s : attr->strings())
      names.push_back(s);
  size_t perDirection = defaults.size();
  if (names.empty()) {
    for (int64_t d = 0; d < n.directions; ++d)
      for (StringRef name : defaults)
        names.push_back(name.str());
  } else if (names.size() == perDirection && n.directions == 2) {
    // torch writes one list for both directions of a bidirectional RNN.
    for (size_t i = 0; i < perDirection; ++i)
      names.push_back(names[i]);
  }
  if (names.size() != perDirection * n.directions)
    return fail(ctx.error("attribute 'activations' has " + Twine(names.size()) +
                          " names, expected " +
                          Twine(perDirection * n.directions)));
  for (int64_t d = 0; d < n.directions; ++d) {
    n.activations.emplace_back();
    for (size_t i = 0; i < perDirection; ++i) {
      FailureOr<Activation> a =
          parseActivation(ctx, names[d * perDirection + i]);
      if (failed(a))
        return failure();
      n.activations.back().push_back(*a);
    }
  }

  RankedTensorType x = ctx.inputType(0);
  if (x.getRank() != 3)
    return fail(
        ctx.error("input 'X' must have rank 3, not " + Twine(x.getRank())));
  if (!isa<FloatType>(x.getElementType()))
    return fail(ctx.error("input 'X' must be a floating-point tensor"));
  n.elementType = x.getElementType();
  n.seqLength = x.getDimSize(n.batchMajor ? 1 : 0);
  n.batch = x.getDimSize(n.batchMajor ? 0 : 1);
  n.inputSize = x.getDimSize(2);
  if (n.seqLength < 1)
    return fail(ctx.error("the sequence is empty"));
  if (n.seqLength * n.directions > kMaxUnrolledSteps)
    return fail(ctx.error(
        "sequence length " + Twine(n.seqLength) + " x " + Twine(n.directions) +
        " direction(s) is more than the " + Twine(kMaxUnrolledSteps) +
        " steps effopt unrolls; split the sequence into shorter chunks"));

  int64_t gh = n.gates * n.hidden, d = n.directions;
  if (failed(checkShape(ctx, 1, "W", {d, gh, n.inputSize})) ||
      failed(checkShape(ctx, 2, "R", {d, gh, n.hidden})) ||
      (ctx.hasInput(3) && failed(checkShape(ctx, 3, "B", {d, 2 * gh}))))
    return failure();
  if (ctx.hasInput(4)) {
    // A constant of T for every row is the whole sequence; anything else
    // would need per-row masking.
    DenseElementsAttr lens = ctx.constantInput(4);
    bool full = lens && lens.getElementType().isInteger() &&
                llvm::all_of(lens.getValues<APInt>(), [&](const APInt &v) {
                  return v.getSExtValue() == n.seqLength;
                });
    if (!full)
      return fail(ctx.error(
          "input 'sequence_lens' must be absent or a constant equal to the "
          "sequence length " +
          Twine(n.seqLength) +
          " in every row (variable-length sequences are not supported: pad "
          "them and mask the loss instead of packing)"));
  }
  SmallVector<int64_t> stateShape =
      n.batchMajor ? SmallVector<int64_t>{n.batch, d, n.hidden}
                   : SmallVector<int64_t>{d, n.batch, n.hidden};
  if (ctx.hasInput(5) && failed(checkShape(ctx, 5, "initial_h", stateShape)))
    return failure();
  if (cell == Cell::LSTM) {
    if (ctx.hasInput(6) && failed(checkShape(ctx, 6, "initial_c", stateShape)))
      return failure();
    if (ctx.hasInput(7) && failed(checkShape(ctx, 7, "P", {d, 3 * n.hidden})))
      return failure();
  }
  for (unsigned i = 1; i < static_cast<unsigned>(ctx.node.input_size()); ++i)
    if (ctx.hasInput(i) && i != 4 &&
        ctx.inputType(i).getElementType() != n.elementType)
      return fail(ctx.error("inputs must share the element type of 'X'"));
  return n;
}

/// Builds the unrolled steps of one node.
class Unroller {
public:
  Unroller(NodeContext &ctx, const RecurrentNode &n) : ctx(ctx), n(n) {}

  LogicalResult run();

private:
  /// `value[index]` along axis 0, without that axis.
  Value take(Value value, int64_t index);
  /// `value[begin:end]` along its last axis.
  Value sliceLast(Value value, int64_t begin, int64_t end);
  /// A state input ([D, B, H], or [B, D, H] batch-major) of direction `d`.
  Value initialState(unsigned i, int64_t d);
  /// The pieces of `value` [B, k*H] along axis 1, each [B, H].
  SmallVector<Value, 4> splitGates(Value value, int64_t count);
  Value activate(Activation a, Value x);
  Value clipped(Value x);
  Value add(Value a, Value b) { return ctx.create<eff::AddOp>(a, b); }
  Value mul(Value a, Value b) { return ctx.create<eff::MulOp>(a, b); }
  Value sub(Value a, Value b) { return ctx.create<eff::SubOp>(a, b); }
  /// a @ b^T (+ bias).
  Value linearT(Value a, Value b, Value bias = {});

  /// Runs direction `d` over the sequence; returns every step's hidden state
  /// in time order and sets the final states.
  LogicalResult runDirection(int64_t d, bool reverse,
                             SmallVectorImpl<Value> &hiddens, Value &lastH,
                             Value &lastC);

  NodeContext &ctx;
  const RecurrentNode &n;
  Value x; // [T, B, I]
};

Value Unroller::take(Value value, int64_t index) {
  if (!value)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> shape = type.getShape();
  Value row = value;
  if (shape[0] != 1) {
    SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
        strides(shape.size(), 1);
    starts[0] = index;
    limits[0] = index + 1;
    row = ctx.create<eff::SliceOp>(value, starts, limits, strides);
  }
  return ctx.reshape(row, shape.drop_front());
}

Value Unroller::sliceLast(Value value, int64_t begin, int64_t end) {
  if (!value)
    return {};
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
      strides(shape.size(), 1);
  starts.back() = begin;
  limits.back() = end;
  return ctx.create<eff::SliceOp>(value, starts, limits, strides);
}

Value Unroller::initialState(unsigned i, int64_t d) {
  // Absent, or zeros (torch's exporter expands a zero constant): a null
  // state, whose products are left out.
  DenseElementsAttr constant = ctx.constantInput(i);
  if (!ctx.hasInput(i) || (constant && constant.isSplat() &&
                           isa<FloatType>(constant.getElementType()) &&
                           constant.getSplatValue<APFloat>().isZero()))
    return {};
  Value state = ctx.input(i);
  if (n.batchMajor)
    state = ctx.create<eff::TransposeOp>(state, ArrayRef<int64_t>{1, 0, 2});
  return take(state, d);
}

SmallVector<Value, 4> Unroller::splitGates(Value value, int64_t count) {
  SmallVector<Value, 4> pieces;
  if (!value)
    return SmallVector<Value, 4>(count, Value());
  if (count == 1)
    return {value};
  auto type = RankedTensorType::get({n.batch, n.hidden}, n.elementType);
  SmallVector<Type, 4> types(count, type);
  auto split = ctx.build<eff::SplitOp>(types, value, int64_t(1));
  if (!split)
    return SmallVector<Value, 4>(count, Value());
  for (Value piece : split.getResults())
    pieces.push_back(piece);
  return pieces;
}

Value Unroller::activate(Activation a, Value value) {
  switch (a) {
  case Activation::Sigmoid:
    return ctx.create<eff::SigmoidOp>(value);
  case Activation::Tanh:
    return ctx.create<eff::TanhOp>(value);
  case Activation::Relu:
    return ctx.create<eff::ReluOp>(value);
  }
  llvm_unreachable("unknown activation");
}

/// ONNX's `clip` bounds every activation's input to [-clip, clip].
Value Unroller::clipped(Value value) {
  if (!n.clip || !value)
    return value;
  value = ctx.create<eff::MinOp>(value, ctx.splat(*n.clip, n.elementType));
  return ctx.create<eff::MaxOp>(value, ctx.splat(-*n.clip, n.elementType));
}

Value Unroller::linearT(Value a, Value b, Value bias) {
  return ctx.create<eff::LinearOp>(
      a, b, bias, ctx.builder.getBoolAttr(false), ctx.builder.getBoolAttr(true),
      ctx.builder.getF64FloatAttr(1.0), ctx.builder.getF64FloatAttr(1.0));
}

LogicalResult Unroller::runDirection(int64_t d, bool reverse,
                                     SmallVectorImpl<Value> &hiddens,
                                     Value &lastH, Value &lastC) {
  int64_t T = n.seqLength, B = n.batch, H = n.hidden, G = n.gates;
  ArrayRef<Activation> act = n.activations[d];
  Value w = take(ctx.input(1), d); // [G*H, I]
  Value r = take(ctx.input(2), d); // [G*H, H]

  // Biases: every bias is added to the input projection, except GRU's
  // recurrent hidden-gate bias with linear_before_reset, which the reset
  // gate multiplies.
  Value xBias, hiddenGateBias;
  if (ctx.hasInput(3)) {
    Value b = take(ctx.input(3), d); // [2*G*H]
    Value wb = sliceLast(b, 0, G * H), rb = sliceLast(b, G * H, 2 * G * H);
    if (n.cell == Cell::GRU && n.linearBeforeReset) {
      hiddenGateBias = sliceLast(rb, 2 * H, 3 * H);
      rb = ctx.create<eff::ConcatOp>(
          ValueRange{sliceLast(rb, 0, 2 * H),
                     ctx.splat(0.0, n.elementType, {H})},
          int64_t(0));
    }
    xBias = add(wb, rb);
  }

  // All steps' input projections in one GEMM: [T*B, I] x [G*H, I]^T, whose
  // rows are cut into the T steps' [B, G*H].
  Value xProj = linearT(ctx.reshape(x, {T * B, n.inputSize}), w, xBias);
  SmallVector<Value> steps;
  if (T == 1) {
    steps.push_back(xProj);
  } else {
    SmallVector<Type> types(T,
                            RankedTensorType::get({B, G * H}, n.elementType));
    auto split = ctx.build<eff::SplitOp>(types, xProj, int64_t(0));
    if (!split)
      return failure();
    steps.append(split.getResults().begin(), split.getResults().end());
  }

  // GRU without linear_before_reset multiplies R's hidden block by r*h, so
  // R is used as its update/reset block and its hidden block separately;
  // with it, h R^T is one GEMM whose bias is [0, 0, Rb_h].
  Value rGates = r, rHidden, hBiasAll;
  if (n.cell == Cell::GRU && n.linearBeforeReset && hiddenGateBias)
    hBiasAll = ctx.create<eff::ConcatOp>(
        ValueRange{ctx.splat(0.0, n.elementType, {2 * H}), hiddenGateBias},
        int64_t(0));
  if (n.cell == Cell::GRU && !n.linearBeforeReset) {
    rGates = ctx.create<eff::SliceOp>(r, ArrayRef<int64_t>{0, 0},
                                      ArrayRef<int64_t>{2 * H, H},
                                      ArrayRef<int64_t>{1, 1});
    rHidden = ctx.create<eff::SliceOp>(r, ArrayRef<int64_t>{2 * H, 0},
                                       ArrayRef<int64_t>{3 * H, H},
                                       ArrayRef<int64_t>{1, 1});
  }
  SmallVector<Value, 3> peepholes; // i, o, f
  if (n.cell == Cell::LSTM && ctx.hasInput(7)) {
    Value p = take(ctx.input(7), d);
    for (int64_t k = 0; k < 3; ++k)
      peepholes.push_back(sliceLast(p, k * H, (k + 1) * H));
  }

  // A null state is zero: its products are left out.
  Value h = initialState(5, d);
  Value c = n.cell == Cell::LSTM ? initialState(6, d) : Value();
  hiddens.assign(T, Value());
  for (int64_t step = 0; step < T; ++step) {
    int64_t t = reverse ? T - 1 - step : step;
    Value xt = steps[t];
    if (!xt)
      return failure();
    switch (n.cell) {
    case Cell::RNN: {
      Value pre = h ? linearT(h, r, xt) : xt;
      h = activate(act[0], clipped(pre));
      break;
    }
    case Cell::LSTM: {
      Value pre = h ? linearT(h, r, xt) : xt;
      SmallVector<Value, 4> g = splitGates(pre, 4); // i, o, f, c
      if (!peepholes.empty() && c) {
        g[0] = add(g[0], mul(peepholes[0], c));
        g[2] = add(g[2], mul(peepholes[2], c));
      }
      Value in = activate(act[0], clipped(g[0]));
      Value cand = activate(act[1], clipped(g[3]));
      Value next = mul(in, cand);
      if (c) {
        Value forget = activate(act[0], clipped(g[2]));
        next = add(mul(forget, c), next);
      }
      c = next;
      if (!peepholes.empty())
        g[1] = add(g[1], mul(peepholes[1], c));
      Value out = activate(act[0], clipped(g[1]));
      h = mul(out, activate(act[2], c));
      break;
    }
    case Cell::GRU: {
      SmallVector<Value, 4> xg = splitGates(xt, 3); // z, r, h
      Value zPre = xg[0], rPre = xg[1], hPre = xg[2];
      // h R^T: one GEMM for all gates with linear_before_reset (the hidden
      // block's bias inside), else the update/reset blocks only.
      SmallVector<Value, 4> hg;
      if (h)
        hg = n.linearBeforeReset ? splitGates(linearT(h, r, hBiasAll), 3)
                                 : splitGates(linearT(h, rGates), 2);
      if (h) {
        zPre = add(zPre, hg[0]);
        rPre = add(rPre, hg[1]);
      }
      Value z = activate(act[0], clipped(zPre));
      Value reset = activate(act[0], clipped(rPre));
      if (n.linearBeforeReset) {
        // r * (h R_h^T + Rb_h); with h = 0 only the bias is left.
        Value hh = h ? hg[2] : hiddenGateBias;
        if (hh)
          hPre = add(hPre, mul(reset, hh));
      } else if (h) {
        hPre = add(hPre, linearT(mul(reset, h), rHidden));
      }
      Value cand = activate(act[1], clipped(hPre));
      // (1 - z) * cand + z * h = cand + z * (h - cand).
      h = h ? add(cand, mul(z, sub(h, cand))) : sub(cand, mul(z, cand));
      break;
    }
    }
    if (!h)
      return failure();
    hiddens[t] = h;
  }
  lastH = h;
  lastC = c;
  return success();
}

LogicalResult Unroller::run() {
  int64_t T = n.seqLength, B = n.batch, H = n.hidden, D = n.directions;
  x = ctx.input(0);
  if (n.batchMajor)
    x = ctx.create<eff::TransposeOp>(x, ArrayRef<int64_t>{1, 0, 2});

  SmallVector<SmallVector<Value>, 2> hiddens(D);
  SmallVector<Value, 2> lastH(D), lastC(D);
  for (int64_t d = 0; d < D; ++d)
    if (failed(runDirection(d, d == 1 || n.reverseOnly, hiddens[d], lastH[d],
                            lastC[d])))
      return failure();

  // Y: [T, D, B, H] (batch-major: [B, T, D, H]).
  if (ctx.isOutputUsed(0)) {
    SmallVector<Value> rows;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        rows.push_back(hiddens[d][t]);
    Value y = rows.size() == 1 ? rows[0]
                               : ctx.create<eff::ConcatOp>(rows, int64_t(0));
    y = ctx.reshape(y, {T, D, B, H});
    if (n.batchMajor)
      y = ctx.create<eff::TransposeOp>(y, ArrayRef<int64_t>{2, 0, 1, 3});
    ctx.setOutput(0, y);
  }
  // Y_h, Y_c: [D, B, H] (batch-major: [B, D, H]).
  auto finalState = [&](ArrayRef<Value> states) {
    Value state = states.size() == 1
                      ? states[0]
                      : ctx.create<eff::ConcatOp>(states, int64_t(0));
    state = ctx.reshape(state, {D, B, H});
    if (n.batchMajor)
      state = ctx.create<eff::TransposeOp>(state, ArrayRef<int64_t>{1, 0, 2});
    return state;
  };
  if (ctx.isOutputUsed(1))
    ctx.setOutput(1, finalState(lastH));
  if (n.cell == Cell::LSTM && ctx.isOutputUsed(2))
    ctx.setOutput(2, finalState(lastC));
  return success();
}

template <Cell cell> LogicalResult convertRecurrent(NodeContext &ctx) {
  FailureOr<RecurrentNode> node = readNode(ctx, cell);
  if (failed(node))
    return failure();
  return Unroller(ctx, *node).run();
}

} // namespace

void effopt::onnx_import::populateRecurrentConverters(ConverterMap &map) {
  map["RNN"] = convertRecurrent<Cell::RNN>;
  map["GRU"] = convertRecurrent<Cell::GRU>;
  map["LSTM"] = convertRecurrent<Cell::LSTM>;
}
