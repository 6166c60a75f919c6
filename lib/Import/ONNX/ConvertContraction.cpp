//===- ConvertContraction.cpp - MatMul, Gemm, Conv and pooling to eff -----===//

#include "NodeImporter.h"

#include "effopt/Dialect/Eff/IR/ShapeUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace effopt;
using namespace effopt::onnx_import;

FailureOr<Window>
effopt::onnx_import::readWindow(NodeContext &ctx, ArrayRef<int64_t> inputShape,
                                ArrayRef<int64_t> kernel) {
  size_t spatial = kernel.size();
  if (spatial + 2 != inputShape.size())
    return static_cast<LogicalResult>(
        ctx.error("kernel_shape " + eff::formatShape(kernel) + " does not " +
                  "match an input of rank " + Twine(inputShape.size())));
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = ctx.getInts("strides");
  w.dilations = ctx.getInts("dilations");
  SmallVector<int64_t> pads = ctx.getInts("pads");
  if (w.strides.empty())
    w.strides.assign(spatial, 1);
  if (w.dilations.empty())
    w.dilations.assign(spatial, 1);
  if (pads.empty())
    pads.assign(2 * spatial, 0);
  if (w.strides.size() != spatial || w.dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return static_cast<LogicalResult>(
        ctx.error("strides, dilations and pads do not match the " +
                  Twine(spatial) + " spatial dimensions"));
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      int64_t in = inputShape[2 + d];
      int64_t out = (in + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[d] + (kernel[d] - 1) * w.dilations[d] + 1 - in);
      int64_t small = total / 2, large = total - small;
      pads[d] = autoPad == "SAME_UPPER" ? small : large;
      pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return static_cast<LogicalResult>(
        ctx.unsupportedAttribute("auto_pad", "'" + autoPad + "'"));
  }
  if (spatial == 1) {
    // A 1-D window is a 2-D window over [1, L].
    w.kernel.insert(w.kernel.begin(), 1);
    w.strides.insert(w.strides.begin(), 1);
    w.dilations.insert(w.dilations.begin(), 1);
    w.padding = {0, pads[0], 0, pads[1]};
  } else {
    w.padding = pads;
  }
  return w;
}

namespace {

/// MatMul with numpy semantics: rank-1 operands are promoted to matrices and
/// the added dimension is removed from the result.
LogicalResult convertMatMul(NodeContext &ctx) {
  Value lhs = ctx.input(0), rhs = ctx.input(1);
  RankedTensorType lhsType = ctx.inputType(0), rhsType = ctx.inputType(1);
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return ctx.error("operands must not be scalars");
  bool lhsVector = lhsType.getRank() == 1, rhsVector = rhsType.getRank() == 1;
  if (lhsVector)
    lhs = ctx.reshape(lhs, {1, lhsType.getDimSize(0)});
  if (rhsVector)
    rhs = ctx.reshape(rhs, {rhsType.getDimSize(0), 1});
  if (!lhs || !rhs)
    return failure();
  RankedTensorType l = cast<RankedTensorType>(lhs.getType());
  RankedTensorType r = cast<RankedTensorType>(rhs.getType());
  if (l.getShape().back() != r.getShape()[r.getRank() - 2])
    return ctx.error("cannot multiply " + eff::formatShape(lhsType.getShape()) +
                     " by " + eff::formatShape(rhsType.getShape()));
  if (!eff::broadcastShapes(l.getShape().drop_back(2), r.getShape().drop_back(2)))
    return ctx.error("batch dimensions of " +
                     eff::formatShape(lhsType.getShape()) + " and " +
                     eff::formatShape(rhsType.getShape()) + " do not broadcast");
  Value result = ctx.create<eff::MatmulOp>(lhs, rhs);
  if (!result)
    return failure();
  if (lhsVector || rhsVector) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(result.getType()).getShape());
    if (rhsVector)
      shape.pop_back();
    if (lhsVector)
      shape.erase(shape.end() - (rhsVector ? 1 : 2));
    result = ctx.reshape(result, shape);
  }
  ctx.setOutput(0, result);
  return success();
}

LogicalResult convertGemm(NodeContext &ctx) {
  if (ctx.inputType(0).getRank() != 2 || ctx.inputType(1).getRank() != 2)
    return ctx.error("A and B must be matrices");
  bool transA = ctx.getInt("transA", 0), transB = ctx.getInt("transB", 0);
  int64_t ka = ctx.inputType(0).getDimSize(transA ? 0 : 1);
  int64_t kb = ctx.inputType(1).getDimSize(transB ? 1 : 0);
  if (ka != kb)
    return ctx.error("inner dimensions differ: " + Twine(ka) + " vs " +
                     Twine(kb));
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  Value linear = ctx.create<eff::LinearOp>(
      ctx.input(0), ctx.input(1), bias, ctx.builder.getBoolAttr(transA),
      ctx.builder.getBoolAttr(transB),
      ctx.builder.getF64FloatAttr(ctx.getFloat("alpha", 1.0)),
      ctx.builder.getF64FloatAttr(ctx.getFloat("beta", 1.0)));
  ctx.setOutput(0, linear);
  return success();
}

/// NCL -> NC1L for 1-D convolution and pooling.
Value to2D(NodeContext &ctx, Value value) {
  if (!value)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != 3)
    return value;
  return ctx.reshape(value, {type.getDimSize(0), type.getDimSize(1), 1,
                             type.getDimSize(2)});
}

Value from2D(NodeContext &ctx, Value value, int64_t rank) {
  if (!value || rank != 3)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return ctx.reshape(value, {type.getDimSize(0), type.getDimSize(1),
                             type.getDimSize(3)});
}

LogicalResult checkSpatialRank(NodeContext &ctx, int64_t rank,
                               bool threeD = false) {
  if (rank != 3 && rank != 4 && !(threeD && rank == 5))
    return ctx.error(Twine(threeD ? "only 1-D, 2-D and 3-D" : "only 1-D and 2-D") +
                     " windows are supported (input rank " + Twine(rank) + ")");
  return success();
}

LogicalResult convertConv(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0), filterType = ctx.inputType(1);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank, /*threeD=*/true)))
    return failure();
  if (filterType.getRank() != rank)
    return ctx.error("the filter must have the input's rank");
  SmallVector<int64_t> kernel = ctx.getInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(filterType.getShape().begin() + 2, filterType.getShape().end());
  FailureOr<Window> w = readWindow(ctx, inputType.getShape(), kernel);
  if (failed(w))
    return failure();
  int64_t groups = ctx.getInt("group", 1);
  int64_t channels = inputType.getDimSize(1);
  if (groups < 1 || channels % groups ||
      filterType.getDimSize(1) * groups != channels)
    return ctx.error("group " + Twine(groups) + " does not fit " +
                     Twine(channels) + " input channels and a filter of shape " +
                     eff::formatShape(filterType.getShape()));
  if (rank == 5)
    return convertConv3D(ctx, *w, groups);
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  Value conv = ctx.create<eff::Conv2DOp>(
      to2D(ctx, ctx.input(0)), to2D(ctx, ctx.input(1)), bias, w->strides,
      w->padding, w->dilations, groups);
  ctx.setOutput(0, from2D(ctx, conv, rank));
  return success();
}

LogicalResult convertMaxPool(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank, /*threeD=*/true)))
    return failure();
  if (ctx.isOutputUsed(1))
    return ctx.error("the Indices output is not supported");
  if (ctx.getInt("storage_order", 0) != 0)
    return ctx.unsupportedAttribute("storage_order", "1");
  FailureOr<Window> w =
      readWindow(ctx, inputType.getShape(), ctx.getInts("kernel_shape"));
  if (failed(w))
    return failure();
  if (rank == 5)
    return convertMaxPool3D(ctx, *w, ctx.getInt("ceil_mode", 0) != 0);
  Value pool = ctx.create<eff::MaxPool2DOp>(
      to2D(ctx, ctx.input(0)), w->kernel, w->strides, w->padding, w->dilations,
      ctx.getInt("ceil_mode", 0) != 0);
  ctx.setOutput(0, from2D(ctx, pool, rank));
  return success();
}

LogicalResult convertAveragePool(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank, /*threeD=*/true)))
    return failure();
  FailureOr<Window> w =
      readWindow(ctx, inputType.getShape(), ctx.getInts("kernel_shape"));
  if (failed(w))
    return failure();
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return ctx.unsupportedAttribute("dilations", "other than 1");
  if (rank == 5)
    return convertAveragePool3D(ctx, *w, ctx.getInt("ceil_mode", 0) != 0,
                                ctx.getInt("count_include_pad", 0) != 0);
  Value pool = ctx.create<eff::AvgPool2DOp>(
      to2D(ctx, ctx.input(0)), w->kernel, w->strides, w->padding,
      ctx.getInt("ceil_mode", 0) != 0, ctx.getInt("count_include_pad", 0) != 0);
  ctx.setOutput(0, from2D(ctx, pool, rank));
  return success();
}

/// ConvTranspose as the convolution it is the gradient of: the input with
/// (stride - 1) zeros between elements, convolved at stride 1 with padding
/// (kernel - 1) * dilation minus the ONNX pads (the input is cropped where
/// that is negative; output_padding widens the end) and the spatially
/// flipped filter whose in/out channels are swapped within each group.
/// Exact; it costs stride^2 more multiplications than a native transposed
/// convolution would.
LogicalResult convertConvTranspose(NodeContext &ctx) {
  RankedTensorType inputType = ctx.inputType(0), filterType = ctx.inputType(1);
  int64_t rank = inputType.getRank();
  if (failed(checkSpatialRank(ctx, rank)))
    return failure();
  size_t spatial = rank - 2;
  if (filterType.getRank() != rank)
    return ctx.error("the filter must have the input's rank");
  int64_t groups = ctx.getInt("group", 1);
  int64_t inChannels = inputType.getDimSize(1);
  if (groups < 1 || inChannels % groups ||
      filterType.getDimSize(0) != inChannels)
    return ctx.error("group " + Twine(groups) + " does not fit " +
                     Twine(inChannels) +
                     " input channels and a filter of shape " +
                     eff::formatShape(filterType.getShape()));
  int64_t outPerGroup = filterType.getDimSize(1);
  int64_t outChannels = outPerGroup * groups;
  SmallVector<int64_t> kernel(filterType.getShape().drop_front(2));
  auto ints = [&](StringRef name, int64_t fill, size_t count) {
    SmallVector<int64_t> values = ctx.getInts(name);
    if (values.empty())
      values.assign(count, fill);
    return values;
  };
  SmallVector<int64_t> strides = ints("strides", 1, spatial);
  SmallVector<int64_t> dilations = ints("dilations", 1, spatial);
  SmallVector<int64_t> outputPadding = ints("output_padding", 0, spatial);
  SmallVector<int64_t> pads = ints("pads", 0, 2 * spatial);
  if (strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial)
    return ctx.error("strides, dilations, output_padding and pads do not "
                     "match the " +
                     Twine(spatial) + " spatial dimensions");
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  SmallVector<int64_t> outputShape = ctx.getInts("output_shape");
  if (outputShape.size() > spatial)
    outputShape.erase(outputShape.begin(), outputShape.end() - spatial);
  if (outputShape.empty() &&
      (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"))
    for (size_t d = 0; d < spatial; ++d)
      outputShape.push_back(inputType.getDimSize(2 + d) * strides[d]);
  if (autoPad == "VALID")
    pads.assign(2 * spatial, 0);
  else if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
           autoPad != "SAME_LOWER")
    return ctx.unsupportedAttribute("auto_pad", "'" + autoPad + "'");
  if (!outputShape.empty()) {
    if (outputShape.size() != spatial)
      return ctx.error("output_shape does not match the spatial dimensions");
    for (size_t d = 0; d < spatial; ++d) {
      int64_t total = strides[d] * (inputType.getDimSize(2 + d) - 1) +
                      outputPadding[d] + (kernel[d] - 1) * dilations[d] + 1 -
                      outputShape[d];
      // A larger output_shape than the padding-free result extends the
      // output at the end, as output_padding does (what ONNX Runtime and
      // ONNX's reference implementation compute).
      if (total < 0) {
        outputPadding[d] -= total;
        total = 0;
      }
      bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? total / 2 : total - total / 2;
      pads[d + spatial] = upper ? total - total / 2 : total / 2;
    }
  }
  if (llvm::any_of(strides, [](int64_t v) { return v < 1; }) ||
      llvm::any_of(dilations, [](int64_t v) { return v < 1; }))
    return ctx.error("strides and dilations must be positive");
  // Work in 2-D ([N, C, 1, L] for 1-D).
  if (spatial == 1) {
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    outputPadding.insert(outputPadding.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  Value x = to2D(ctx, ctx.input(0));
  if (!x)
    return failure();
  if (strides[0] > 1 || strides[1] > 1) {
    // [N, C, H, W] -> [N, C, H, 1, W, 1] -> zeros to [N, C, H, sh, W, sw]
    // -> [N, C, H sh, W sw] -> drop the trailing s - 1 zeros.
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
    x = ctx.reshape(x, {n, c, h, 1, w, 1});
    x = ctx.create<eff::PadOp>(
        x, ctx.builder.getDenseI64ArrayAttr({0, 0, 0, 0, 0, 0}),
        ctx.builder.getDenseI64ArrayAttr(
            {0, 0, 0, strides[0] - 1, 0, strides[1] - 1}),
        ctx.builder.getF64FloatAttr(0.0));
    x = ctx.reshape(x, {n, c, h * strides[0], w * strides[1]});
    x = ctx.create<eff::SliceOp>(x, ArrayRef<int64_t>{0, 0, 0, 0},
                                 ArrayRef<int64_t>{n, c,
                                                   (h - 1) * strides[0] + 1,
                                                   (w - 1) * strides[1] + 1},
                                 ArrayRef<int64_t>{1, 1, 1, 1});
  }
  SmallVector<int64_t> low(4, 0), high(4, 0), cropStart(4, 0), cropEnd(4, 0);
  bool crops = false;
  for (int64_t d = 0; d < 2; ++d) {
    int64_t reach = (kernel[d] - 1) * dilations[d];
    int64_t before = reach - pads[d];
    int64_t after = reach - pads[d + 2] + outputPadding[d];
    (before >= 0 ? low[2 + d] : cropStart[2 + d]) = std::abs(before);
    (after >= 0 ? high[2 + d] : cropEnd[2 + d]) = std::abs(after);
    crops |= before < 0 || after < 0;
  }
  if (!x)
    return failure();
  if (crops) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> starts(cropStart), limits(type.getShape()),
        steps(4, 1);
    for (int64_t d = 0; d < 4; ++d) {
      limits[d] -= cropEnd[d];
      if (limits[d] < starts[d])
        return ctx.error("pads crop the whole output");
    }
    x = ctx.create<eff::SliceOp>(x, starts, limits, steps);
  }
  // [Cin, Cout/g, kh, kw] -> [g, Cin/g, Cout/g, kh, kw] -> swap the channel
  // dims -> [Cout, Cin/g, kh, kw], flipped in both spatial dimensions.
  Value filter = to2D(ctx, ctx.input(1));
  int64_t inPerGroup = inChannels / groups;
  filter = ctx.reshape(filter,
                       {groups, inPerGroup, outPerGroup, kernel[0], kernel[1]});
  filter =
      ctx.create<eff::TransposeOp>(filter, ArrayRef<int64_t>{0, 2, 1, 3, 4});
  filter = ctx.reshape(filter, {outChannels, inPerGroup, kernel[0], kernel[1]});
  filter = ctx.create<eff::SliceOp>(
      filter, ArrayRef<int64_t>{0, 0, kernel[0] - 1, kernel[1] - 1},
      ArrayRef<int64_t>{outChannels, inPerGroup, -1, -1},
      ArrayRef<int64_t>{1, 1, -1, -1});
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  Value conv = ctx.create<eff::Conv2DOp>(
      x, filter, bias, SmallVector<int64_t>{1, 1},
      SmallVector<int64_t>{low[2], low[3], high[2], high[3]}, dilations,
      groups);
  ctx.setOutput(0, from2D(ctx, conv, rank));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// An einsum operand: its value and one label per dimension (a letter, or
/// kEllipsisLabel + i for the i-th broadcast dimension of "...").
struct EinsumTerm {
  Value value;
  SmallVector<int> labels;
};
constexpr int kEllipsisLabel = 1000;

/// Parses "ab...c" for an operand of `rank` dimensions whose ellipsis spans
/// the last `rank - letters` of `ellipsisRank` broadcast dimensions.
FailureOr<SmallVector<int>> parseEinsumTerm(NodeContext &ctx, StringRef text,
                                            int64_t rank,
                                            int64_t ellipsisRank) {
  SmallVector<int> labels;
  size_t ellipsis = text.find("...");
  int64_t letters = text.size() - (ellipsis == StringRef::npos ? 0 : 3);
  if (ellipsis == StringRef::npos ? letters != rank : letters > rank)
    return static_cast<LogicalResult>(
        ctx.error("subscripts '" + text + "' do not match an operand of rank " +
                  Twine(rank)));
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == ellipsis) {
      for (int64_t e = ellipsisRank - (rank - letters); e < ellipsisRank; ++e)
        labels.push_back(kEllipsisLabel + e);
      i += 2;
      continue;
    }
    if (!llvm::isAlpha(text[i]))
      return static_cast<LogicalResult>(
          ctx.error("invalid subscript '" + Twine(text[i]) + "'"));
    if (llvm::is_contained(labels, text[i]))
      return static_cast<LogicalResult>(
          ctx.error("repeated subscript '" + Twine(text[i]) +
                    "' in one operand (diagonals) is not supported"));
    labels.push_back(text[i]);
  }
  return labels;
}

/// Sums `term` over the labels not in `keep`.
EinsumTerm sumOutLabels(NodeContext &ctx, EinsumTerm term,
                        const llvm::SmallSetVector<int, 8> &keep) {
  SmallVector<int64_t> axes;
  SmallVector<int> labels;
  for (auto [d, label] : llvm::enumerate(term.labels)) {
    if (keep.contains(label))
      labels.push_back(label);
    else
      axes.push_back(d);
  }
  if (axes.empty())
    return term;
  return {ctx.create<eff::ReduceSumOp>(term.value, axes, false), labels};
}

/// Contracts two terms into one holding the labels in `keep` (those the
/// output or later operands still need), as one batched matmul:
/// A [batch, freeA, contracted] x B [batch, contracted, freeB].
EinsumTerm contractPair(NodeContext &ctx, EinsumTerm a, EinsumTerm b,
                        const llvm::SmallSetVector<int, 8> &keep) {
  llvm::SmallSetVector<int, 8> aKeep(keep.begin(), keep.end()),
      bKeep(keep.begin(), keep.end());
  aKeep.insert(b.labels.begin(), b.labels.end());
  bKeep.insert(a.labels.begin(), a.labels.end());
  a = sumOutLabels(ctx, a, aKeep);
  b = sumOutLabels(ctx, b, bKeep);
  if (!a.value || !b.value)
    return {}; // The node's error has been reported.
  SmallVector<int> batch, freeA, contracted, freeB;
  for (int label : a.labels) {
    bool inB = llvm::is_contained(b.labels, label);
    if (inB && keep.contains(label))
      batch.push_back(label);
    else if (inB)
      contracted.push_back(label);
    else
      freeA.push_back(label);
  }
  for (int label : b.labels)
    if (!llvm::is_contained(a.labels, label))
      freeB.push_back(label);
  auto sizeOf = [&](const EinsumTerm &term, int label) {
    auto it = llvm::find(term.labels, label);
    return cast<RankedTensorType>(term.value.getType())
        .getDimSize(it - term.labels.begin());
  };
  auto arrange = [&](const EinsumTerm &term, ArrayRef<int> first,
                     ArrayRef<int> second) {
    SmallVector<int64_t> permutation, shape;
    for (int label : batch) {
      permutation.push_back(llvm::find(term.labels, label) -
                            term.labels.begin());
      shape.push_back(sizeOf(term, label));
    }
    for (ArrayRef<int> group : {first, second}) {
      int64_t size = 1;
      for (int label : group) {
        permutation.push_back(llvm::find(term.labels, label) -
                              term.labels.begin());
        size *= sizeOf(term, label);
      }
      shape.push_back(size);
    }
    Value value = ctx.create<eff::TransposeOp>(term.value, permutation);
    return ctx.reshape(value, shape);
  };
  Value product = ctx.create<eff::MatmulOp>(arrange(a, freeA, contracted),
                                            arrange(b, contracted, freeB));
  EinsumTerm result;
  SmallVector<int64_t> shape;
  for (int label : batch) {
    result.labels.push_back(label);
    shape.push_back(sizeOf(a, label));
  }
  for (int label : freeA) {
    result.labels.push_back(label);
    shape.push_back(sizeOf(a, label));
  }
  for (int label : freeB) {
    result.labels.push_back(label);
    shape.push_back(sizeOf(b, label));
  }
  result.value = ctx.reshape(product, shape);
  return result;
}

/// Einsum on floating-point operands without repeated subscripts in one
/// operand: labels only one operand has and the output lacks are summed
/// first, then operands are contracted pairwise with matmuls, then the
/// result is transposed to the output's order.
LogicalResult convertEinsum(NodeContext &ctx) {
  std::string equation;
  for (char c : ctx.getString("equation", ""))
    if (c != ' ')
      equation.push_back(c);
  StringRef text(equation);
  auto [inputsText, outputText] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> termTexts;
  inputsText.split(termTexts, ',');
  int numInputs = ctx.node.input_size();
  if (static_cast<int>(termTexts.size()) != numInputs)
    return ctx.error("equation '" + equation + "' names " +
                     Twine(termTexts.size()) + " operands, the node has " +
                     Twine(numInputs));
  int64_t ellipsisRank = 0;
  for (int i = 0; i < numInputs; ++i) {
    if (!isa<FloatType>(ctx.inputType(i).getElementType()))
      return ctx.error("operands must be floating-point tensors");
    if (termTexts[i].contains("..."))
      ellipsisRank = std::max<int64_t>(
          ellipsisRank, ctx.inputType(i).getRank() -
                            (static_cast<int64_t>(termTexts[i].size()) - 3));
  }
  SmallVector<EinsumTerm> terms;
  llvm::DenseMap<int, int64_t> sizes;
  for (int i = 0; i < numInputs; ++i) {
    FailureOr<SmallVector<int>> labels = parseEinsumTerm(
        ctx, termTexts[i], ctx.inputType(i).getRank(), ellipsisRank);
    if (failed(labels))
      return failure();
    for (auto [d, label] : llvm::enumerate(*labels)) {
      int64_t size = ctx.inputType(i).getDimSize(d);
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (inserted || it->second == size)
        continue;
      // Broadcast dimensions of "..." may be 1 in some operands.
      if (label >= kEllipsisLabel && (it->second == 1 || size == 1)) {
        it->second = std::max(it->second, size);
        continue;
      }
      return ctx.error("subscript '" + Twine(static_cast<char>(label)) +
                       "' has sizes " + Twine(it->second) + " and " +
                       Twine(size));
    }
    terms.push_back({ctx.input(i), *labels});
  }
  // Ellipsis dimensions of size 1 broadcast to the other operands' size.
  for (EinsumTerm &term : terms) {
    SmallVector<int64_t> shape;
    for (int label : term.labels)
      shape.push_back(sizes.lookup(label));
    term.value = ctx.broadcastTo(term.value, shape);
  }
  SmallVector<int> output;
  if (explicitOutput) {
    if (outputText.contains("...") || ellipsisRank == 0) {
      int64_t letters =
          outputText.size() - (outputText.contains("...") ? 3 : 0);
      FailureOr<SmallVector<int>> labels = parseEinsumTerm(
          ctx, outputText,
          letters + (outputText.contains("...") ? ellipsisRank : 0),
          ellipsisRank);
      if (failed(labels))
        return failure();
      output = *labels;
    } else {
      return ctx.error("the output of '" + equation +
                       "' drops the ellipsis dimensions");
    }
    for (int label : output)
      if (!sizes.count(label))
        return ctx.error("output subscript '" +
                         Twine(static_cast<char>(label)) +
                         "' appears in no operand");
  } else {
    // Implicit output: the broadcast dimensions, then the letters that
    // appear once, in alphabetical order.
    for (int64_t e = 0; e < ellipsisRank; ++e)
      output.push_back(kEllipsisLabel + e);
    SmallVector<int> once;
    for (const EinsumTerm &term : terms)
      for (int label : term.labels) {
        if (label >= kEllipsisLabel)
          continue;
        int count = 0;
        for (const EinsumTerm &other : terms)
          count += llvm::count(other.labels, label);
        if (count == 1)
          once.push_back(label);
      }
    llvm::sort(once);
    output.append(once.begin(), once.end());
  }
  llvm::SmallSetVector<int, 8> outputSet(output.begin(), output.end());
  EinsumTerm result = terms.front();
  for (size_t i = 1; i < terms.size(); ++i) {
    llvm::SmallSetVector<int, 8> keep = outputSet;
    for (size_t j = i + 1; j < terms.size(); ++j)
      keep.insert(terms[j].labels.begin(), terms[j].labels.end());
    result = contractPair(ctx, result, terms[i], keep);
  }
  result = sumOutLabels(ctx, result, outputSet);
  SmallVector<int64_t> permutation;
  for (int label : output)
    permutation.push_back(llvm::find(result.labels, label) -
                          result.labels.begin());
  ctx.setOutput(0, ctx.create<eff::TransposeOp>(result.value, permutation));
  return success();
}

/// GlobalAveragePool / GlobalMaxPool: a reduction over the spatial dims.
template <typename OpTy>
LogicalResult convertGlobalPool(NodeContext &ctx) {
  int64_t rank = ctx.inputType(0).getRank();
  if (rank < 3)
    return ctx.error("input must be N x C x spatial...");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  ctx.setOutput(0, ctx.create<OpTy>(ctx.input(0), axes, /*keep_dims=*/true));
  return success();
}

} // namespace

void effopt::onnx_import::populateContractionConverters(ConverterMap &map) {
  map["MatMul"] = convertMatMul;
  map["Gemm"] = convertGemm;
  map["Conv"] = convertConv;
  map["MaxPool"] = convertMaxPool;
  map["AveragePool"] = convertAveragePool;
  map["GlobalAveragePool"] = convertGlobalPool<eff::ReduceMeanOp>;
  map["GlobalMaxPool"] = convertGlobalPool<eff::ReduceMaxOp>;
  map["ConvTranspose"] = convertConvTranspose;
  map["Einsum"] = convertEinsum;
}
