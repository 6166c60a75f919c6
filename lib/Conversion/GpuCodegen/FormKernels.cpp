//===- FormKernels.cpp - one gpu.launch per fusion group ------------------===//
//
// Turns the memory-planned step into a CUDA step: every memory access moves
// into a gpu.launch, the host keeps address arithmetic, library calls and
// the loops around them. See docs/GpuKernels.md.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"

#include "effopt/Conversion/GpuCodegen/Reductions.h"
#include "effopt/Conversion/GpuCodegen/RowGroups.h"

#include "effopt/Dialect/Eff/IR/EffDialect.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "eff-gpu-form-kernels"

namespace effopt {
#define GEN_PASS_DEF_EFFGPUFORMKERNELSPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The strategy a kernel was formed with; set as `eff.kernel` on the launch
/// (for tests and for reading the IR; outlining drops it).
constexpr llvm::StringLiteral kKernelAttrName = "eff.kernel";

//===----------------------------------------------------------------------===//
// Small builders
//===----------------------------------------------------------------------===//

static Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The product of `sizes` (1 for none), folded when all are constants.
static Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  int64_t folded = 1;
  bool allConstant = true;
  for (Value size : sizes) {
    if (std::optional<int64_t> c = getConstantIntValue(size))
      folded *= *c;
    else
      allConstant = false;
  }
  if (allConstant)
    return indexConstant(b, loc, folded);
  Value result = indexConstant(b, loc, 1);
  for (Value size : sizes)
    result = arith::MulIOp::create(b, loc, result, size);
  return result;
}

/// Splits the linear index `linear` over `sizes`, the last one fastest.
static SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                      ArrayRef<Value> sizes) {
  SmallVector<Value> indices(sizes.size());
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      indices[i] = linear;
      break;
    }
    indices[i] = arith::RemUIOp::create(b, loc, linear, sizes[i]);
    linear = arith::DivUIOp::create(b, loc, linear, sizes[i]);
  }
  return indices;
}

/// min(ceil(n / blockSize), maxBlocks) on the host.
static Value gridFor(OpBuilder &b, Location loc, Value n, int64_t blockSize,
                     int64_t maxBlocks) {
  if (std::optional<int64_t> c = getConstantIntValue(n))
    return indexConstant(
        b, loc,
        std::max<int64_t>(
            1, std::min((*c + blockSize - 1) / blockSize, maxBlocks)));
  Value blocks =
      arith::CeilDivUIOp::create(b, loc, n, indexConstant(b, loc, blockSize));
  blocks =
      arith::MinUIOp::create(b, loc, blocks, indexConstant(b, loc, maxBlocks));
  return arith::MaxUIOp::create(b, loc, blocks, indexConstant(b, loc, 1));
}

/// A 1-D launch; the builder is left at the start of its body.
static gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, Value grid,
                                  Value block, StringRef strategy,
                                  TypeRange workgroup = {}) {
  Value one = indexConstant(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, grid, one, one, block, one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, workgroup);
  launch->setAttr(kKernelAttrName, b.getStringAttr(strategy));
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

/// A grid-stride loop over [0, count) in `launch`'s body, one index per
/// thread of the grid at a time; the builder is left at the start of its
/// body.
static scf::ForOp gridStrideLoop(OpBuilder &b, Location loc, Value blockId,
                                 Value threadId, Value blockSize,
                                 Value gridSize, Value count) {
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, blockId, blockSize), threadId);
  Value stride = arith::MulIOp::create(b, loc, gridSize, blockSize);
  auto loop = scf::ForOp::create(b, loc, first, count, stride);
  b.setInsertionPointToStart(loop.getBody());
  return loop;
}

/// The grid-stride loop over all of `launch`'s blocks.
static scf::ForOp gridStrideLoop(OpBuilder &b, Location loc,
                                 gpu::LaunchOp launch, Value count) {
  return gridStrideLoop(b, loc, launch.getBlockIds().x,
                        launch.getThreadIds().x, launch.getBlockSize().x,
                        launch.getGridSize().x, count);
}

/// The indices of `map` applied to the loop indices `ivs`.
static SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                                   ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(ivs[dim.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(expr))
      indices.push_back(indexConstant(b, loc, c.getValue()));
    else
      indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
  }
  return indices;
}

/// gpu.all_reduce of `value` over the block. NVVM shuffles move 32 bits
/// at a time (64-bit values in two halves), so narrower values (an i1
/// overflow flag, f16/bf16) are widened around the reduction; for these
/// combiners that is exact.
static Value blockAllReduce(OpBuilder &b, Location loc, Value value,
                            gpu::AllReduceOperation kind) {
  Type type = value.getType();
  auto attr = gpu::AllReduceOperationAttr::get(b.getContext(), kind);
  if (auto intType = dyn_cast<IntegerType>(type);
      intType && intType.getWidth() < 32) {
    bool isSigned = kind == gpu::AllReduceOperation::MAXSI ||
                    kind == gpu::AllReduceOperation::MINSI;
    Value wide =
        isSigned ? Value(arith::ExtSIOp::create(b, loc, b.getI32Type(), value))
                 : Value(arith::ExtUIOp::create(b, loc, b.getI32Type(), value));
    Value total = gpu::AllReduceOp::create(b, loc, wide, attr, true);
    return arith::TruncIOp::create(b, loc, type, total);
  }
  if (auto floatType = dyn_cast<FloatType>(type);
      floatType && floatType.getWidth() < 32) {
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
    Value total = gpu::AllReduceOp::create(b, loc, wide, attr, true);
    return arith::TruncFOp::create(b, loc, type, total);
  }
  return gpu::AllReduceOp::create(b, loc, value, attr, /*uniform=*/true);
}

/// Threads of a warp, the unit `gpu.shuffle` exchanges values within.
constexpr int64_t kWarpSize = 32;

/// Whether `gpu.shuffle` can move a value of `type` (as it is, or as its
/// bits zero-extended to i32): integers and floats of at most 32 bits, or
/// of 64 (NVVM moves those in two halves).
static bool isShuffleable(Type type) {
  if (!type.isIntOrFloat())
    return false;
  unsigned width = type.getIntOrFloatBitWidth();
  return width <= 32 || width == 64;
}

/// Combines `value` over the 32 lanes of a warp with a butterfly of
/// `gpu.shuffle xor` (offsets 16, 8, 4, 2, 1), each step
/// `combine(mine, received)`: every lane ends with the warp's total, added
/// up in the same fixed order on every run. No barrier or shared memory.
/// Values narrower than 32 bits travel as their bits zero-extended to i32
/// and are combined in their own type.
static Value warpAllReduce(
    OpBuilder &b, Location loc, Value value,
    llvm::function_ref<Value(OpBuilder &, Value, Value)> combine) {
  Type type = value.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  Type bits = b.getIntegerType(width);
  for (int32_t offset = kWarpSize / 2; offset >= 1; offset /= 2) {
    Value sent = value;
    if (width < 32) {
      if (type != bits)
        sent = arith::BitcastOp::create(b, loc, bits, sent);
      sent = arith::ExtUIOp::create(b, loc, b.getI32Type(), sent);
    }
    Value received =
        gpu::ShuffleOp::create(b, loc, sent, offset, kWarpSize,
                               gpu::ShuffleMode::XOR)
            .getShuffleResult();
    if (width < 32) {
      received = arith::TruncIOp::create(b, loc, bits, received);
      if (type != bits)
        received = arith::BitcastOp::create(b, loc, type, received);
    }
    value = combine(b, value, received);
  }
  return value;
}

//===----------------------------------------------------------------------===//
// linalg.generic payloads
//===----------------------------------------------------------------------===//

/// Emits the payload of `op` at the loop point `ivs`: loads the inputs it
/// uses, maps the output block arguments to `outs` (loading those left
/// null that the payload reads) and returns the yielded values.
/// Block arguments already in `preset` (a vector lane's operands) are not
/// loaded.
static SmallVector<Value> emitPayload(OpBuilder &b, linalg::GenericOp op,
                                      ArrayRef<Value> ivs,
                                      ArrayRef<Value> outs,
                                      const IRMapping &preset = {}) {
  Location loc = op.getLoc();
  Block &body = op.getRegion().front();
  IRMapping mapping;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    if (Value given = preset.lookupOrNull(arg)) {
      mapping.map(arg, given);
      continue;
    }
    if (op.isDpsInit(&operand)) {
      unsigned k = operand.getOperandNumber() - op.getNumDpsInputs();
      if (outs.size() > k && outs[k]) {
        mapping.map(arg, outs[k]);
        continue;
      }
    }
    Value value = operand.get();
    if (!isa<MemRefType>(value.getType())) {
      mapping.map(arg, value);
      continue;
    }
    SmallVector<Value> indices =
        applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs);
    mapping.map(arg, memref::LoadOp::create(b, loc, value, indices));
  }
  SmallVector<Value> yielded;
  for (Operation &inner : body) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    if (auto yield = dyn_cast<linalg::YieldOp>(inner)) {
      for (Value v : yield.getValues())
        yielded.push_back(mapping.lookupOrDefault(v));
      continue;
    }
    b.clone(inner, mapping);
  }
  return yielded;
}

/// Operand values known without a load (operand number -> value): a row
/// group's per-row values, in registers.
using GivenOperands = DenseMap<unsigned, Value>;

/// `given` as a preset of emitPayload: each operand's block argument.
static IRMapping presetFor(linalg::GenericOp op, const GivenOperands &given) {
  IRMapping preset;
  for (auto [n, value] : given)
    preset.map(op.getMatchingBlockArgument(&op->getOpOperand(n)), value);
  return preset;
}

/// What the payload of reduction `op` at `ivs` combines into each output
/// (the operand of its combiner other than the output), without loading
/// or combining the outputs. Block arguments in `preset` are not loaded.
static SmallVector<Value> emitContributions(OpBuilder &b, linalg::GenericOp op,
                                            ArrayRef<Value> ivs,
                                            ArrayRef<Combiner> combiners,
                                            const IRMapping &preset = {}) {
  Location loc = op.getLoc();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (arg.use_empty())
      continue;
    if (Value given = preset.lookupOrNull(arg)) {
      mapping.map(arg, given);
      continue;
    }
    Value value = input->get();
    if (!isa<MemRefType>(value.getType())) {
      mapping.map(arg, value);
      continue;
    }
    mapping.map(arg, memref::LoadOp::create(
                         b, loc, value,
                         applyMap(b, loc, op.getMatchingIndexingMap(input),
                                  ivs)));
  }
  DenseSet<Operation *> combinerOps;
  for (const Combiner &c : combiners)
    combinerOps.insert(c.combiner);
  for (Operation &inner : op.getRegion().front()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    if (isa<linalg::YieldOp>(inner) || combinerOps.contains(&inner))
      continue;
    b.clone(inner, mapping);
  }
  SmallVector<Value> contributions;
  for (auto [k, c] : llvm::enumerate(combiners)) {
    BlockArgument out = op.getMatchingBlockArgument(op.getDpsInitOperand(k));
    Value other = c.combiner->getOperand(0) == out ? c.combiner->getOperand(1)
                                                   : c.combiner->getOperand(0);
    contributions.push_back(mapping.lookupOrDefault(other));
  }
  return contributions;
}

/// One step of a loop over the linearised reduction dims of `op` at the
/// output point `ivs` (reduction entries unset): the payload at reduction
/// index `r` from the accumulators `carried`, yielded.
static void emitReductionStep(OpBuilder &b, Location loc, linalg::GenericOp op,
                              ArrayRef<Value> ivs,
                              ArrayRef<unsigned> reductionDims,
                              ArrayRef<Value> reductionSizes, Value r,
                              ValueRange carried,
                              const GivenOperands &given = GivenOperands()) {
  SmallVector<Value> pointIvs(ivs);
  for (auto [d, iv] :
       llvm::zip(reductionDims, delinearize(b, loc, r, reductionSizes)))
    pointIvs[d] = iv;
  scf::YieldOp::create(b, loc,
                       emitPayload(b, op, pointIvs, SmallVector<Value>(carried),
                                   presetFor(op, given)));
}

/// Stores `values` into the outputs of `op` at `ivs`.
static void storeOutputs(OpBuilder &b, linalg::GenericOp op,
                         ArrayRef<Value> ivs, ArrayRef<Value> values,
                         ArrayRef<unsigned> unstored = {}) {
  for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    if (llvm::is_contained(unstored, init.getOperandNumber()))
      continue;
    SmallVector<Value> indices =
        applyMap(b, op.getLoc(), op.getMatchingIndexingMap(&init), ivs);
    memref::StoreOp::create(b, op.getLoc(), values[k], init.get(), indices);
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct EffGpuFormKernelsPass
    : impl::EffGpuFormKernelsPassBase<EffGpuFormKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (blockSize <= 0 || blockSize > 1024 || blockSize % 32 != 0) {
      module.emitError() << "eff-gpu-form-kernels: block-size " << blockSize
                         << " is not a multiple of 32 in [32, 1024]";
      return signalPassFailure();
    }
    if (vectorBytes < 0 || (vectorBytes > 0 && !llvm::isPowerOf2_64(vectorBytes))) {
      module.emitError() << "eff-gpu-form-kernels: vector-bytes "
                         << static_cast<int64_t>(vectorBytes)
                         << " is not 0 or a power of two";
      return signalPassFailure();
    }
    if (maxBlocks <= 0) {
      module.emitError() << "eff-gpu-form-kernels: max-blocks " << maxBlocks
                         << " is not positive";
      return signalPassFailure();
    }
    // The step entry points (eff-memory-plan tags them with their arena
    // argument); other functions (a test's driver) stay host code.
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func->hasAttr(eff::kArenaArgAttrName))
        funcs.push_back(func);
    for (func::FuncOp func : funcs) {
      // These hold erased ops: a later function's new op may take one's
      // address.
      grouped.clear();
      fusedEpilogues.clear();
      prologues.clear();
      storesReadElsewhere.clear();
      if (failed(normalize(func)) ||
          failed(formBlock(func.getBody().front())) || failed(verifyHost(func)))
        return signalPassFailure();
    }
    nameKernels(module);
  }

  /// Names every launch's kernel after its strategy and its place in the
  /// step (`effx_block_reduction_12`): outlining takes the names, so a
  /// profiler's kernel list says what each kernel is.
  static void nameKernels(ModuleOp module) {
    unsigned index = 0;
    module.walk([&](gpu::LaunchOp launch) {
      auto strategy = launch->getAttrOfType<StringAttr>(kKernelAttrName);
      if (!strategy)
        return;
      std::string name = ("effx_" + strategy.getValue() + "_" +
                          Twine(index++)).str();
      std::replace(name.begin(), name.end(), '-', '_');
      auto symbol = FlatSymbolRefAttr::get(module.getContext(), name);
      launch.setModuleAttr(symbol);
      launch.setFunctionAttr(symbol);
    });
  }

  /// Copies become linalg ops (a fill for a splat constant source) and named
  /// linalg ops become linalg.generic, so one emitter serves them all.
  LogicalResult normalize(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      Location loc = copy.getLoc();
      if (TypedAttr splat = splatGlobalValue(copy.getSource())) {
        Value value = arith::ConstantOp::create(rewriter, loc, splat);
        linalg::FillOp::create(rewriter, loc, ValueRange{value},
                               ValueRange{copy.getTarget()});
      } else {
        linalg::makeMemRefCopyOp(rewriter, loc, copy.getSource(),
                                 copy.getTarget());
      }
      rewriter.eraseOp(copy);
    }
    SmallVector<linalg::LinalgOp> named;
    func.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      if (!op.hasPureBufferSemantics())
        return op->emitOpError()
               << "eff-gpu-form-kernels: expects memref operands (run after "
                  "bufferization and eff-memory-plan)";
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return op->emitOpError()
               << "eff-gpu-form-kernels: cannot be written as a "
                  "linalg.generic to form a kernel";
    }
    return success();
  }

  /// The splat value of a constant `memref.get_global` with a splat
  /// initializer, else null.
  static TypedAttr splatGlobalValue(Value source) {
    auto get = source.getDefiningOp<memref::GetGlobalOp>();
    if (!get)
      return {};
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    if (!global || !global.getConstant())
      return {};
    auto init =
        dyn_cast_or_null<DenseElementsAttr>(global.getConstantInitValue());
    if (!init || !init.isSplat())
      return {};
    return dyn_cast<TypedAttr>(init.getSplatValue<Attribute>());
  }

  /// Forms the kernels of one host block (the step's body or a host loop's).
  LogicalResult formBlock(Block &block) {
    foldFills(block);
    eraseRecomputations(block);
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops) {
      // Erased: it runs in a reduction's epilogue or a row group.
      if (fusedEpilogues.contains(op) || grouped.contains(op))
        continue;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        // A reduction running the op before it: formed as matched.
        if (prologues.count(generic)) {
          if (failed(formGeneric(generic)))
            return failure();
          continue;
        }
        if (rowGroups)
          if (std::optional<RowGroup> group = bestRowGroupAt(generic)) {
            formRowGroup(*group);
            continue;
          }
        // Runs in the threads of the reduction after it, formed there.
        if (std::optional<Prologue> prologue = matchPrologue(generic)) {
          prologues[prologue->reduction] = *prologue;
          continue;
        }
        if (SmallVector<linalg::GenericOp> batch =
                smallBatches ? matchSmallBatch(generic)
                             : SmallVector<linalg::GenericOp>();
            batch.size() > 1) {
          formSmallBatch(batch);
          continue;
        }
        if (failed(formGeneric(generic)))
          return failure();
        continue;
      }
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        if (staysOnHost(loop)) {
          if (failed(formBlock(*loop.getBody())))
            return failure();
          continue;
        }
        if (failed(formLoopNest(loop)))
          return failure();
      }
    }
    return success();
  }

  /// Fills that the next kernel, a warp or block reduction, overwrites
  /// entirely (matchFoldableFill) launch no kernel: the reduction folds the
  /// fill's value in instead of loading its output. In reverse order, so
  /// the fills before a multi-output reduction all fold.
  void foldFills(Block &block) {
    SmallVector<linalg::GenericOp> generics(block.getOps<linalg::GenericOp>());
    for (linalg::GenericOp fill : llvm::reverse(generics)) {
      std::optional<FoldableFill> folded = matchFoldableFill(fill);
      if (!folded)
        continue;
      SmallVector<Value> &initials = foldedInitials[folded->reduction];
      initials.resize(folded->reduction.getNumDpsInits());
      initials[folded->output] = folded->value;
      ++numFoldedFills;
      fill.erase();
    }
  }

  /// All-parallel ops that compute what an earlier op already stored, in
  /// the same memory (the same payload on the same inputs into the same
  /// bytes, none of them written in between) launch nothing: an optimizer
  /// lowered per parameter recomputes the step's bias corrections and
  /// learning rate into the same planned scalars before every update (148
  /// 2-3 us kernels of GPT-2's step).
  void eraseRecomputations(Block &block) {
    SmallVector<linalg::GenericOp> available;
    auto sameOperand = [](Value a, Value b) {
      return a == b ||
             (isa<MemRefType>(a.getType()) && sameMemory(a, b));
    };
    auto equivalent = [&](linalg::GenericOp a, linalg::GenericOp b) {
      DenseMap<Value, Value> marked;
      return OperationEquivalence::isEquivalentTo(
          a, b,
          [&](Value l, Value r) {
            return success(sameOperand(l, r) || marked.lookup(l) == r);
          },
          [&](Value l, Value r) { marked[l] = r; },
          OperationEquivalence::IgnoreLocations);
    };
    auto writes = [](Operation *op, Value memory) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic)
        return true;
      return llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &init) {
        return mayOverlap(init.get(), memory);
      });
    };
    SmallVector<linalg::GenericOp> redundant;
    for (Operation &op : block) {
      if (isMemoryEffectFree(&op) && op.getNumRegions() == 0)
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(&op);
      // A gather reads memory no operand shows, which may change between
      // the two: never taken as a recomputation.
      if (generic && !gatheredMemrefs(generic).empty())
        generic = {};
      if (generic && generic.hasPureBufferSemantics()) {
        auto earlier = llvm::find_if(available, [&](linalg::GenericOp e) {
          return equivalent(e, generic);
        });
        if (earlier != available.end()) {
          // Its readers read the earlier op's stores, through views that
          // are not the earlier op's.
          storesReadElsewhere.insert(*earlier);
          redundant.push_back(generic);
          continue;
        }
      }
      // What `op` writes is no longer what the earlier ops computed.
      llvm::erase_if(available, [&](linalg::GenericOp earlier) {
        return llvm::any_of(earlier->getOperands(), [&](Value v) {
          return isa<MemRefType>(v.getType()) && writes(&op, v);
        });
      });
      if (!generic || !generic.hasPureBufferSemantics() ||
          generic.getNumReductionLoops() != 0)
        continue;
      // Its stores must not change its own inputs, and it must not read
      // its outputs' old values: then running it again changes nothing.
      bool reusable = llvm::all_of(
          generic.getDpsInitsMutable(), [&](OpOperand &init) {
            return generic.getMatchingBlockArgument(&init).use_empty() &&
                   generic.getMatchingIndexingMap(&init).isPermutation() &&
                   llvm::none_of(generic.getDpsInputOperands(),
                                 [&](OpOperand *input) {
                                   return isa<MemRefType>(
                                              input->get().getType()) &&
                                          mayOverlap(input->get(), init.get());
                                 });
          });
      if (reusable)
        available.push_back(generic);
    }
    for (linalg::GenericOp op : redundant) {
      remark(op, "recomputes what an earlier op stored in the same memory: "
                 "no kernel");
      ++numRecomputations;
      op.erase();
    }
  }

  /// Per reduction, the initial value of each output a folded fill gave
  /// (null: load the output).
  DenseMap<Operation *, SmallVector<Value>> foldedInitials;

  /// Elementwise ops formed into the epilogue of the reduction before them
  /// (and erased).
  DenseSet<Operation *> fusedEpilogues;

  /// Members of row groups and small batches formed (and erased).
  DenseSet<Operation *> grouped;

  /// Ops whose outputs an erased recomputation's readers read: a row group
  /// stores all of them.
  DenseSet<Operation *> storesReadElsewhere;
  /// Fills folded into the reductions of the row group being formed.
  int64_t foldedFills = 0;

  /// A loop stays on the host when it holds library calls or fusion groups
  /// (the gradient-accumulation loop, NF4 tile loops).
  static bool staysOnHost(scf::ForOp loop) {
    return loop
        ->walk([](Operation *op) {
          return isa<CallOpInterface, linalg::LinalgOp>(op)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  void remark(Operation *op, const Twine &message) {
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE << ": " << message << " at "
                            << op->getLoc() << "\n");
    if (remarks)
      op->emitRemark() << message;
  }

  /// "; starts from the fills of outputs 0, 1" when fills were folded.
  std::string foldedFillsRemark(linalg::GenericOp op) {
    auto it = foldedInitials.find(op);
    if (it == foldedInitials.end())
      return "";
    SmallVector<std::string> outputs;
    for (auto [k, value] : llvm::enumerate(it->second))
      if (value)
        outputs.push_back(std::to_string(k));
    return (outputs.size() > 1 ? "; starts from the fills of outputs "
                               : "; starts from the fill of output ") +
           llvm::join(outputs, ", ");
  }

  /// An all-parallel op run in the threads of the thread reduction after
  /// it (matchPrologue): operand `operand` of `reduction` reads output
  /// `output` of `producer` as it lies.
  struct Prologue {
    linalg::GenericOp producer;
    linalg::GenericOp reduction;
    unsigned operand = 0;
    unsigned output = 0;
  };
  /// By reduction, the producer it runs (erased once the reduction formed).
  DenseMap<Operation *, Prologue> prologues;

  /// Whether `value` is a memref of static shape and identity layout.
  static bool isPlainBuffer(Value value) {
    auto type = dyn_cast<MemRefType>(value.getType());
    return type && type.hasStaticShape() && type.getLayout().isIdentity();
  }

  /// `producer`, an all-parallel op on memrefs, and the reduction over
  /// outer dimensions right after it (address arithmetic between) that
  /// reads one of its outputs: every element once, through a view of the
  /// same bytes (eff-gpu-split-reductions puts a bias gradient's partial
  /// sums right after the activation's backward that computes the
  /// gradient). Then each thread of the reduction computes the producer at
  /// the points it reduces, stores its outputs, and sums the value from
  /// the register: the output is not read back. Conditions: the
  /// producer's outputs are plain buffers indexed by the identity (its
  /// points are their elements), its inputs overlap its outputs only at
  /// the same point (in place); the reduction is formed one thread per
  /// output (its innermost accessed dim parallel), reads the output through
  /// a plain view of the same bytes by a permutation of its loops over the
  /// view's shape, and no other operand of it overlaps the producer's
  /// outputs, nor its outputs the producer's inputs.
  std::optional<Prologue> matchPrologue(linalg::GenericOp producer) {
    if (!producer.hasPureBufferSemantics() ||
        !gatheredMemrefs(producer).empty() ||
        producer.getNumReductionLoops() != 0 || producer.getNumLoops() == 0 ||
        fusedEpilogues.contains(producer))
      return std::nullopt;
    SmallVector<int64_t> ranges = producer.getStaticLoopRanges();
    for (OpOperand &init : producer.getDpsInitsMutable()) {
      if (!isPlainBuffer(init.get()) ||
          !producer.getMatchingIndexingMap(&init).isIdentity() ||
          cast<MemRefType>(init.get().getType()).getShape() !=
              ArrayRef<int64_t>(ranges))
        return std::nullopt;
      for (OpOperand *input : producer.getDpsInputOperands())
        if (isa<MemRefType>(input->get().getType()) &&
            mayOverlap(input->get(), init.get()) &&
            (!sameMemory(input->get(), init.get()) ||
             producer.getMatchingIndexingMap(input) !=
                 producer.getMatchingIndexingMap(&init)))
          return std::nullopt;
    }
    Operation *next = producer->getNextNode();
    while (next && isMemoryEffectFree(next) && next->getNumRegions() == 0)
      next = next->getNextNode();
    auto reduction = dyn_cast_or_null<linalg::GenericOp>(next);
    if (!reduction || !reduction.hasPureBufferSemantics() ||
        reduction.getNumReductionLoops() == 0 ||
        reduction.getNumParallelLoops() == 0 ||
        isOnlineLogSumExp(reduction))
      return std::nullopt;
    std::optional<unsigned> inner = innermostAccessedDim(reduction);
    if (!inner || !linalg::isParallelIterator(
                      reduction.getIteratorTypesArray()[*inner]))
      return std::nullopt;
    std::optional<Prologue> found;
    for (OpOperand &operand : reduction->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      for (auto [k, init] : llvm::enumerate(producer.getDpsInitsMutable())) {
        if (!mayOverlap(operand.get(), init.get()))
          continue;
        if (found || !reduction.isDpsInput(&operand))
          return std::nullopt;
        ByteRange read = byteRangeOf(operand.get());
        ByteRange written = byteRangeOf(init.get());
        auto readType = cast<MemRefType>(operand.get().getType());
        AffineMap map = reduction.getMatchingIndexingMap(&operand);
        SmallVector<int64_t> loops = reduction.getStaticLoopRanges();
        if (!isPlainBuffer(operand.get()) || !read.root ||
            read.root != written.root || read.begin != written.begin ||
            !read.size || read.size != written.size ||
            readType.getElementType() !=
                cast<MemRefType>(init.get().getType()).getElementType() ||
            !map.isPermutation())
          return std::nullopt;
        for (auto [d, expr] : llvm::enumerate(map.getResults()))
          if (loops[cast<AffineDimExpr>(expr).getPosition()] !=
              readType.getDimSize(d))
            return std::nullopt;
        found = Prologue{producer, reduction, operand.getOperandNumber(),
                         static_cast<unsigned>(k)};
      }
    }
    if (!found || !gatheredMemrefs(found->reduction).empty())
      return std::nullopt;
    for (OpOperand &init : found->reduction.getDpsInitsMutable())
      for (OpOperand *input : producer.getDpsInputOperands())
        if (isa<MemRefType>(input->get().getType()) &&
            mayOverlap(input->get(), init.get()))
          return std::nullopt;
    return found;
  }

  LogicalResult formGeneric(linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics())
      return op->emitOpError()
             << "eff-gpu-form-kernels: expects memref operands (run after "
                "bufferization and eff-memory-plan)";
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> sizes;
    for (Range range :
         cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    SmallVector<unsigned> parallelDims, reductionDims;
    for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
      (linalg::isParallelIterator(type) ? parallelDims : reductionDims)
          .push_back(i);

    gpu::LaunchOp launch;
    // An elementwise op run in a reduction's epilogue.
    linalg::GenericOp epilogue;
    if (reductionDims.empty()) {
      launch = formThreadPerPoint(b, op, sizes, parallelDims, reductionDims,
                                  "elementwise");
    } else {
      FailureOr<SmallVector<Combiner>> combiners = matchCombiners(op);
      std::optional<unsigned> inner = innermostAccessedDim(op);
      bool rowReduction = parallelDims.empty() ||
                          (inner && llvm::is_contained(reductionDims, *inner));
      bool online = rowReduction && isOnlineLogSumExp(op);
      if (!online)
        epilogue = matchEpilogue(op, sizes, parallelDims);
      // The address arithmetic between the two (the epilogue's output
      // views) moves ahead of the kernel, which uses it.
      if (epilogue)
        while (op->getNextNode() != epilogue)
          op->getNextNode()->moveBefore(op);
      std::string epilogueRemark =
          epilogue ? "; the elementwise op after it runs in its epilogue" : "";
      if (online) {
        std::optional<RowEpilogue> rowEpilogue =
            rowEpilogues ? matchRowEpilogue(op) : std::nullopt;
        if (rowEpilogue) {
          // The address arithmetic between the members moves ahead of the
          // kernel, which uses it.
          Operation *last = rowEpilogue->elementwise;
          for (Operation *next = op->getNextNode(); next != last;) {
            Operation *following = next->getNextNode();
            if (isMemoryEffectFree(next) && next->getNumRegions() == 0)
              next->moveBefore(op);
            next = following;
          }
          b.setInsertionPoint(op);
        }
        launch = formOnlineLogSumExp(b, op, sizes, parallelDims,
                                     reductionDims,
                                     rowEpilogue ? &*rowEpilogue : nullptr);
        ++numBlockReductions;
        std::string rowEpilogueRemark;
        if (rowEpilogue) {
          rowEpilogueRemark =
              "; " + std::to_string(rowEpilogue->perRow.size()) +
              " per-row op(s) and the elementwise op over its rows run in "
              "its blocks (row epilogue)";
          for (linalg::GenericOp member : rowEpilogue->perRow) {
            fusedEpilogues.insert(member);
            member.erase();
          }
          fusedEpilogues.insert(rowEpilogue->elementwise);
          rowEpilogue->elementwise.erase();
          ++numRowEpilogues;
        }
        remark(op, "online log-sum-exp: one block per row, its max and sum "
                   "of exponentials in one pass" +
                       foldedFillsRemark(op) + rowEpilogueRemark);
      } else if (succeeded(combiners) && rowReduction &&
                 isShortRowReduction(op, sizes, parallelDims, reductionDims)) {
        int64_t rowsPerBlock = 0;
        launch = formWarpReduction(b, op, sizes, parallelDims, reductionDims,
                                   *combiners, epilogue, rowsPerBlock);
        ++numWarpReductions;
        remark(op, "warp reduction: one warp per output element, " +
                       Twine(rowsPerBlock) + " per block" +
                       foldedFillsRemark(op) + epilogueRemark);
      } else if (succeeded(combiners) && rowReduction) {
        launch = formBlockReduction(b, op, sizes, parallelDims, reductionDims,
                                    *combiners, epilogue);
        ++numBlockReductions;
        remark(op, "block reduction: one block per output element" +
                       foldedFillsRemark(op) + epilogueRemark);
      } else {
        if (failed(combiners) && rowReduction) {
          ++numSerialFallbacks;
          remark(op, "reduction combiner not recognised: one thread per "
                     "output element (correct, slow)" +
                         foldedFillsRemark(op) + epilogueRemark);
        } else {
          remark(op, "reduction over outer dimensions: one thread per output "
                     "element" +
                         foldedFillsRemark(op) + epilogueRemark +
                         (prologues.count(op)
                              ? "; the elementwise op before it runs in its "
                                "threads"
                              : ""));
        }
        launch = formThreadPerPoint(b, op, sizes, parallelDims, reductionDims,
                                    "thread-reduction", epilogue,
                                    prologues.lookup(op).producer);
      }
    }
    if (!launch)
      return failure();
    if (epilogue) {
      fusedEpilogues.insert(epilogue);
      epilogue.erase();
      ++numFusedEpilogues;
    }
    // matchPrologue admits only reductions formed one thread per output,
    // whose launch ran the producer.
    if (auto it = prologues.find(op); it != prologues.end()) {
      Operation *producer = it->second.producer;
      prologues.erase(it);
      fusedEpilogues.insert(producer);
      producer->erase();
      ++numFusedPrologues;
    }
    sinkGlobals(launch);
    ++numKernels;
    foldedInitials.erase(op);
    op.erase();
    return success();
  }

  /// One thread per point of the parallel dims (a grid-stride loop over
  /// their linearisation); each thread walks the reduction dims, if any, in
  /// order, carrying the outputs.
  /// How many neighbouring elements along the innermost parallel loop
  /// dimension `last` one thread of an all-parallel op takes (1: none):
  /// `vectorBytes` of its widest element type that varies along `last`, when
  /// every memref operand either is indexed by `last` in its contiguous
  /// dimension (unit stride; static offset and other strides multiples of
  /// the width, so each vector is aligned: the planner aligns every
  /// buffer to 256 bytes) or does not depend on `last` (read once per
  /// thread), every output is of the first kind, and the width divides
  /// the static size of `last`.
  static int64_t vectorWidth(linalg::GenericOp op, ArrayRef<Value> sizes,
                             ArrayRef<unsigned> parallelDims,
                             int64_t vectorBytes) {
    if (parallelDims.empty())
      return 1;
    unsigned last = parallelDims.back();
    std::optional<int64_t> lastSize = getConstantIntValue(sizes[last]);
    if (!lastSize)
      return 1;
    int64_t widestBytes = 0;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      int64_t bytes = vectorElementBytes(op, operand, last);
      if (bytes < 0 || (bytes == 0 && op.isDpsInit(&operand)))
        return 1;
      widestBytes = std::max(widestBytes, bytes);
    }
    if (widestBytes == 0)
      return 1;
    int64_t width = vectorBytes / widestBytes;
    if (width < 2 || *lastSize % width != 0)
      return 1;
    // Alignment of every vector.
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (type && op.getMatchingIndexingMap(&operand).isFunctionOfDim(last) &&
          !alignsVectors(type, width))
        return 1;
    }
    return width;
  }

  /// How memref operand `operand` of `op` varies along loop dimension
  /// `dim`, for vector access: 0 when it does not, its element's bytes when
  /// `dim` indexes its last (contiguous) dimension and no other, with a
  /// byte-sized element, -1 otherwise (no vectors).
  static int64_t vectorElementBytes(linalg::GenericOp op, OpOperand &operand,
                                    unsigned dim) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isFunctionOfDim(dim))
      return 0;
    auto lastExpr = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!lastExpr || lastExpr.getPosition() != dim)
      return -1;
    for (AffineExpr expr : map.getResults().drop_back())
      if (expr.isFunctionOfDim(dim))
        return -1;
    Type element = cast<MemRefType>(operand.get().getType()).getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
      return -1;
    return element.getIntOrFloatBitWidth() / 8;
  }

  /// Whether every run of `width` elements of `type`'s contiguous dimension
  /// starting at a multiple of `width` is aligned to the vector (the
  /// planner aligns every buffer to 256 bytes): unit innermost stride, the
  /// static offset and other strides multiples of the width.
  static bool alignsVectors(MemRefType type, int64_t width) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        ShapedType::isDynamic(offset) || offset % width != 0 ||
        strides.empty() || strides.back() != 1)
      return false;
    for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
      if (ShapedType::isDynamic(stride) || stride % width != 0)
        return false;
    return true;
  }

  /// The `width` points from `ivs` (whose `last` entry counts vectors)
  /// along `last`: vector loads of the operands indexed by `last`, one
  /// scalar load of the others, the payload once per lane, vector stores.
  static void emitVectorPoint(OpBuilder &b, linalg::GenericOp op,
                              ArrayRef<Value> vectorIvs, unsigned last,
                              int64_t width, const GivenOperands &given = GivenOperands()) {
    Location loc = op.getLoc();
    SmallVector<Value> ivs(vectorIvs);
    ivs[last] = arith::MulIOp::create(b, loc, vectorIvs[last],
                                      indexConstant(b, loc, width));
    SmallVector<SmallVector<Value>> lanes = emitVectorPayloads(
        b, op, ivs, last, width, given, /*loadOutputs=*/true,
        [&](ArrayRef<Value> laneIvs, const IRMapping &preset) {
          return emitPayload(b, op, laneIvs, {}, preset);
        });
    for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      auto type = cast<MemRefType>(init.get().getType());
      Value vector = vector::FromElementsOp::create(
          b, loc, VectorType::get({width}, type.getElementType()), lanes[k]);
      vector::StoreOp::create(
          b, loc, vector, init.get(),
          applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs),
          /*nontemporal=*/false,
          llvm::MaybeAlign(width * type.getElementTypeBitWidth() / 8));
    }
  }

  /// The `width` points from `ivs` along `last`: vector loads of the
  /// operands indexed by `last` (the inputs only, unless `loadOutputs`),
  /// one scalar load of the others, then `payload` once per point with
  /// those values preset; its values per result, point by point.
  static SmallVector<SmallVector<Value>> emitVectorPayloads(
      OpBuilder &b, linalg::GenericOp op, ArrayRef<Value> ivs, unsigned last,
      int64_t width, const GivenOperands &given, bool loadOutputs,
      function_ref<SmallVector<Value>(ArrayRef<Value>, const IRMapping &)>
          payload) {
    Location loc = op.getLoc();
    auto alignment = [&](Type element) {
      return llvm::MaybeAlign(width * element.getIntOrFloatBitWidth() / 8);
    };
    // Per operand: a vector (indexed by `last`) or a scalar (it is not).
    DenseMap<unsigned, Value> vectors, scalars;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (arg.use_empty() || !type || (!loadOutputs && op.isDpsInit(&operand)))
        continue;
      if (Value value = given.lookup(operand.getOperandNumber())) {
        scalars[operand.getOperandNumber()] = value;
        continue;
      }
      AffineMap map = op.getMatchingIndexingMap(&operand);
      SmallVector<Value> indices = applyMap(b, loc, map, ivs);
      if (map.isFunctionOfDim(last))
        vectors[operand.getOperandNumber()] = vector::LoadOp::create(
            b, loc, VectorType::get({width}, type.getElementType()),
            operand.get(), indices, /*nontemporal=*/false,
            alignment(type.getElementType()));
      else
        scalars[operand.getOperandNumber()] =
            memref::LoadOp::create(b, loc, operand.get(), indices);
    }
    SmallVector<SmallVector<Value>> lanes(op.getNumDpsInits());
    for (int64_t lane = 0; lane < width; ++lane) {
      IRMapping preset;
      for (OpOperand &operand : op->getOpOperands()) {
        BlockArgument arg = op.getMatchingBlockArgument(&operand);
        unsigned n = operand.getOperandNumber();
        if (Value vector = vectors.lookup(n))
          preset.map(arg, vector::ExtractOp::create(b, loc, vector, lane));
        else if (Value scalar = scalars.lookup(n))
          preset.map(arg, scalar);
      }
      SmallVector<Value> laneIvs(ivs);
      laneIvs[last] =
          arith::AddIOp::create(b, loc, ivs[last], indexConstant(b, loc, lane));
      for (auto [k, value] : llvm::enumerate(payload(laneIvs, preset)))
        lanes[k].push_back(value);
    }
    return lanes;
  }

  /// One step of a thread reduction running `prologue`'s producer: the
  /// producer's point that holds the element the reduction reads (the
  /// element's offset in the shared bytes, split over the producer's
  /// loops), its payload and stores there, then the reduction's payload
  /// with that element from the register.
  static void emitPrologueStep(OpBuilder &b, Location loc,
                               const Prologue &prologue, ArrayRef<Value> ivs,
                               ArrayRef<unsigned> reductionDims,
                               ArrayRef<Value> reductionSizes, Value r,
                               ValueRange carried) {
    linalg::GenericOp op = prologue.reduction, producer = prologue.producer;
    SmallVector<Value> pointIvs(ivs);
    for (auto [d, iv] :
         llvm::zip(reductionDims, delinearize(b, loc, r, reductionSizes)))
      pointIvs[d] = iv;
    OpOperand &read = op->getOpOperand(prologue.operand);
    SmallVector<Value> indices =
        applyMap(b, loc, op.getMatchingIndexingMap(&read), pointIvs);
    auto readType = cast<MemRefType>(read.get().getType());
    Value offset = indexConstant(b, loc, 0);
    for (auto [index, size] : llvm::zip(indices, readType.getShape()))
      offset = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, offset, indexConstant(b, loc, size)),
          index);
    SmallVector<Value> producerSizes;
    for (int64_t size : producer.getStaticLoopRanges())
      producerSizes.push_back(indexConstant(b, loc, size));
    SmallVector<Value> producerIvs =
        delinearize(b, loc, offset, producerSizes);
    SmallVector<Value> produced = emitPayload(b, producer, producerIvs, {});
    storeOutputs(b, producer, producerIvs, produced);
    GivenOperands given;
    given[prologue.operand] = produced[prologue.output];
    scf::YieldOp::create(b, loc,
                         emitPayload(b, op, pointIvs,
                                     SmallVector<Value>(carried),
                                     presetFor(op, given)));
  }

  gpu::LaunchOp formThreadPerPoint(OpBuilder &b, linalg::GenericOp op,
                                   ArrayRef<Value> sizes,
                                   ArrayRef<unsigned> parallelDims,
                                   ArrayRef<unsigned> reductionDims,
                                   StringRef strategy,
                                   linalg::GenericOp epilogue = {},
                                   linalg::GenericOp producer = {}) {
    Location loc = op.getLoc();
    SmallVector<Value> parallelSizes, reductionSizes;
    for (unsigned d : parallelDims)
      parallelSizes.push_back(sizes[d]);
    for (unsigned d : reductionDims)
      reductionSizes.push_back(sizes[d]);
    // Elementwise ops whose contiguous dimension allows it: each thread
    // takes `width` neighbouring elements with 16-byte loads and stores.
    int64_t width =
        reductionDims.empty() ? vectorWidth(op, sizes, parallelDims, vectorBytes)
                              : 1;
    if (width > 1) {
      ++numVectorized;
      parallelSizes.back() = indexConstant(
          b, loc, *getConstantIntValue(parallelSizes.back()) / width);
    }
    Value points = product(b, loc, parallelSizes);
    int64_t threads = blockSize;
    if (std::optional<int64_t> n = getConstantIntValue(points))
      threads = std::min<int64_t>(blockSize, llvm::alignTo(*n, 32));
    Value grid = gridFor(b, loc, points, threads, maxBlocks);
    Value block = indexConstant(b, loc, threads);
    Value reductionCount =
        reductionDims.empty() ? Value() : product(b, loc, reductionSizes);
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch = createLaunch(b, loc, grid, block, strategy);
    scf::ForOp pointsLoop = gridStrideLoop(b, loc, launch, points);
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, iv] : llvm::zip(
             parallelDims,
             delinearize(b, loc, pointsLoop.getInductionVar(), parallelSizes)))
      ivs[d] = iv;
    if (width > 1) {
      emitVectorPoint(b, op, ivs, parallelDims.back(), width);
      return launch;
    }
    if (reductionDims.empty()) {
      storeOutputs(b, op, ivs, emitPayload(b, op, ivs, {}));
      return launch;
    }
    // Carry each output through the reduction loop in order, as on the CPU,
    // from its initial value (a folded fill's, else loaded).
    SmallVector<Value> initial;
    SmallVector<Value> folded = foldedInitials.lookup(op);
    for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable()))
      initial.push_back(
          k < folded.size() && folded[k]
              ? folded[k]
              : Value(memref::LoadOp::create(
                    b, loc, init.get(),
                    applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs))));
    std::optional<Prologue> prologue;
    if (producer)
      prologue = prologues.lookup(op);
    auto reduce = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), reductionCount,
        indexConstant(b, loc, 1), initial,
        [&](OpBuilder &nb, Location nloc, Value r, ValueRange carried) {
          if (!prologue) {
            emitReductionStep(nb, nloc, op, ivs, reductionDims,
                              reductionSizes, r, carried);
            return;
          }
          emitPrologueStep(nb, nloc, *prologue, ivs, reductionDims,
                           reductionSizes, r, carried);
        });
    SmallVector<Value> totals(reduce.getResults());
    storeOutputs(b, op, ivs, totals);
    if (epilogue)
      emitEpilogue(b, op, epilogue, ivs, parallelDims, totals);
    return launch;
  }

  /// A launch of one block per point of the parallel dims (the builder is
  /// left in its body) and the loop ivs of the block's point (the reduction
  /// dims' null): fewer threads for short rows (those not taking a warp
  /// each: a dynamic size, a type shuffles cannot move), `blockSize` for
  /// long ones, 1024 for a single output (a full reduction has no other
  /// parallelism).
  struct BlockPerPoint {
    gpu::LaunchOp launch;
    SmallVector<Value> ivs;
  };
  BlockPerPoint createBlockPerPointLaunch(OpBuilder &b, Location loc,
                                          ArrayRef<Value> sizes,
                                          ArrayRef<unsigned> parallelDims,
                                          ArrayRef<unsigned> reductionDims) {
    SmallVector<Value> parallelSizes, reductionSizes;
    for (unsigned d : parallelDims)
      parallelSizes.push_back(sizes[d]);
    for (unsigned d : reductionDims)
      reductionSizes.push_back(sizes[d]);
    Value points = product(b, loc, parallelSizes);
    Value count = product(b, loc, reductionSizes);
    std::optional<int64_t> staticPoints = getConstantIntValue(points);
    int64_t maxThreads = staticPoints && *staticPoints == 1 ? 1024 : blockSize;
    int64_t threads = maxThreads;
    if (std::optional<int64_t> n = getConstantIntValue(count))
      threads = std::clamp<int64_t>(llvm::PowerOf2Ceil(*n), 32, maxThreads);
    BlockPerPoint result;
    result.launch = createLaunch(b, loc, points, indexConstant(b, loc, threads),
                                 "block-reduction");
    result.ivs.resize(sizes.size());
    for (auto [d, iv] : llvm::zip(
             parallelDims, delinearize(b, loc, result.launch.getBlockIds().x,
                                       parallelSizes)))
      result.ivs[d] = iv;
    return result;
  }

  /// One block per output point: threads stride over the linearised
  /// reduction dims from the identity, gpu.all_reduce combines the block,
  /// thread 0 folds in the output's initial value and stores.
  gpu::LaunchOp formBlockReduction(OpBuilder &b, linalg::GenericOp op,
                                   ArrayRef<Value> sizes,
                                   ArrayRef<unsigned> parallelDims,
                                   ArrayRef<unsigned> reductionDims,
                                   ArrayRef<Combiner> combiners,
                                   linalg::GenericOp epilogue) {
    Location loc = op.getLoc();
    OpBuilder::InsertionGuard guard(b);
    auto [launch, ivs] =
        createBlockPerPointLaunch(b, loc, sizes, parallelDims, reductionDims);
    // 16-byte loads of the row where the layout allows: a cross-entropy's
    // bf16 logits are read at the copy bandwidth, not two bytes per thread
    // and step.
    int64_t width = 0;
    scf::ForOp partial = emitPartialReduction(
        b, op, ivs, sizes, reductionDims, combiners, launch.getThreadIds().x,
        launch.getBlockSize().x, /*active=*/Value(), width);
    if (width > 1)
      ++numVectorizedBlockReductions;
    SmallVector<Value> totals;
    for (auto [c, value] : llvm::zip(combiners, partial.getResults()))
      totals.push_back(blockAllReduce(b, loc, value, c.kind));
    Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          launch.getThreadIds().x,
                                          indexConstant(b, loc, 0));
    auto ifFirst = scf::IfOp::create(b, loc, isFirst, /*withElse=*/false);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    SmallVector<Value> stored =
        storeCombined(b, op, ivs, combiners, totals, foldedInitials.lookup(op));
    if (epilogue)
      emitEpilogue(b, op, epilogue, ivs, parallelDims, stored);
    return launch;
  }

  /// One block per row of an online log-sum-exp (isOnlineLogSumExp): each
  /// thread runs the payload over its share of the row from (-inf, 0) (16
  /// bytes at a time where the layout allows, as formBlockReduction); the
  /// block's max M is one gpu.all_reduce, the sum of the threads' s rescaled
  /// to it, s * exp(m - M), another; thread 0 folds in the outputs' initial
  /// values the same way and stores both.
  ///
  /// With a row epilogue (matchRowEpilogue), every thread loads the
  /// outputs' initial values before the totals (thread 0 stores over them
  /// after) and computes the final pair and the per-row members from the
  /// totals, forwarding each per-row value to its readers; thread 0 stores
  /// them all; after a barrier (the per-row members' gathers are done) the
  /// threads walk the row again for the elementwise op, `vector-bytes` at
  /// a time where the layout allows. A thread writes only elements it
  /// reads, so an in-place gradient needs no more.
  gpu::LaunchOp formOnlineLogSumExp(OpBuilder &b, linalg::GenericOp op,
                                    ArrayRef<Value> sizes,
                                    ArrayRef<unsigned> parallelDims,
                                    ArrayRef<unsigned> reductionDims,
                                    const RowEpilogue *rowEpilogue) {
    Location loc = op.getLoc();
    OpBuilder::InsertionGuard guard(b);
    auto [launch, ivs] =
        createBlockPerPointLaunch(b, loc, sizes, parallelDims, reductionDims);
    Type f32 = b.getF32Type();
    auto negInf = b.getFloatAttr(
        f32, APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true));
    // The identities the partial loops start from (the combiner ops are not
    // used: the payload runs as it is).
    SmallVector<Combiner> start = {
        Combiner{nullptr, gpu::AllReduceOperation::MAXIMUMF, negInf},
        Combiner{nullptr, gpu::AllReduceOperation::ADD,
                 b.getFloatAttr(f32, 0.0)}};
    int64_t width = 0;
    scf::ForOp partial = emitPartialReduction(
        b, op, ivs, sizes, reductionDims, start, launch.getThreadIds().x,
        launch.getBlockSize().x, /*active=*/Value(), width);
    if (width > 1)
      ++numVectorizedBlockReductions;
    Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, 1.0));
    // s * exp(m - to): exp(-inf - to) is 0; 1 when m is `to` (also both
    // -inf, where s is 0).
    auto rescaled = [&](Value s, Value m, Value to) -> Value {
      Value same =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, to);
      Value factor = arith::SelectOp::create(
          b, loc, same, one,
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, to)));
      return arith::MulFOp::create(b, loc, s, factor);
    };
    Value mine = partial.getResult(0), sum = partial.getResult(1);
    SmallVector<Value> initial;
    if (rowEpilogue)
      initial = initialValues(b, op, ivs, foldedInitials.lookup(op));
    Value max = blockAllReduce(b, loc, mine, gpu::AllReduceOperation::MAXIMUMF);
    Value total = blockAllReduce(b, loc, rescaled(sum, mine, max),
                                 gpu::AllReduceOperation::ADD);
    Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          launch.getThreadIds().x,
                                          indexConstant(b, loc, 0));
    auto finalPair = [&]() -> SmallVector<Value> {
      Value finalMax = arith::MaximumFOp::create(b, loc, initial[0], max);
      Value finalSum = arith::AddFOp::create(
          b, loc, rescaled(initial[1], initial[0], finalMax),
          rescaled(total, max, finalMax));
      return {finalMax, finalSum};
    };
    if (!rowEpilogue) {
      auto ifFirst = scf::IfOp::create(b, loc, isFirst, /*withElse=*/false);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      initial = initialValues(b, op, ivs, foldedInitials.lookup(op));
      storeOutputs(b, op, ivs, finalPair());
      return launch;
    }
    emitRowEpilogue(b, op, *rowEpilogue, launch, ivs, finalPair(), isFirst);
    return launch;
  }

  /// The row epilogue of online log-sum-exp `op` (see formOnlineLogSumExp)
  /// in `launch`, from the row's final (max, sum) pair.
  void emitRowEpilogue(OpBuilder &b, linalg::GenericOp op,
                       const RowEpilogue &epilogue, gpu::LaunchOp launch,
                       ArrayRef<Value> ivs, ArrayRef<Value> pair,
                       Value isFirst) {
    Location loc = op.getLoc();
    SmallVector<int64_t> rows = op.getStaticLoopRanges();
    rows.pop_back();
    Value zero = indexConstant(b, loc, 0);
    // Per-row values so far: (memref written, value), latest last.
    SmallVector<std::pair<Value, Value>> values;
    for (auto [init, value] : llvm::zip(op.getDpsInits(), pair))
      values.push_back({init, value});
    // Operand number -> forwarded value, for the operands of `member` at
    // its loops' point that read a per-row value.
    auto forwardedOperands = [&](linalg::GenericOp member) {
      GivenOperands given;
      for (OpOperand *input : member.getDpsInputOperands())
        for (auto [memory, value] : llvm::reverse(values))
          if (readsRowValue(input->get(), member.getMatchingIndexingMap(input),
                            memory, rows)) {
            given[input->getOperandNumber()] = value;
            break;
          }
      return given;
    };
    SmallVector<Value> rowIvs(ivs.begin(), ivs.end() - 1);
    SmallVector<std::pair<linalg::GenericOp, SmallVector<Value>>> stores;
    for (linalg::GenericOp member : epilogue.perRow) {
      SmallVector<Value> memberIvs(rowIvs);
      memberIvs.resize(member.getNumLoops(), zero);
      SmallVector<Value> results = emitPayload(
          b, member, memberIvs, {}, presetFor(member, forwardedOperands(member)));
      for (auto [init, value] : llvm::zip(member.getDpsInits(), results))
        values.push_back({init, value});
      stores.push_back({member, results});
    }
    {
      OpBuilder::InsertionGuard guard(b);
      auto ifFirst = scf::IfOp::create(b, loc, isFirst, /*withElse=*/false);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      storeOutputs(b, op, ivs, pair);
      for (auto &[member, results] : stores) {
        SmallVector<Value> memberIvs(rowIvs);
        memberIvs.resize(member.getNumLoops(), zero);
        storeOutputs(b, member, memberIvs, results);
      }
    }
    // The per-row members' gathers read what the elementwise op may
    // overwrite (a gradient in place over the logits).
    gpu::BarrierOp::create(b, loc);
    linalg::GenericOp elementwise = epilogue.elementwise;
    GivenOperands given = forwardedOperands(elementwise);
    unsigned last = elementwise.getNumLoops() - 1;
    SmallVector<Value> elementwiseSizes;
    for (int64_t size : elementwise.getStaticLoopRanges())
      elementwiseSizes.push_back(indexConstant(b, loc, size));
    SmallVector<unsigned> allDims = llvm::to_vector(
        llvm::seq<unsigned>(0, elementwise.getNumLoops()));
    int64_t width =
        vectorWidth(elementwise, elementwiseSizes, allDims, vectorBytes);
    int64_t rowLength = elementwise.getStaticLoopRanges().back();
    scf::ForOp::create(
        b, loc, launch.getThreadIds().x,
        indexConstant(b, loc, rowLength / width), launch.getBlockSize().x,
        ValueRange{},
        [&](OpBuilder &nb, Location nloc, Value j, ValueRange) {
          SmallVector<Value> pointIvs(rowIvs);
          pointIvs.push_back(j);
          if (width > 1) {
            emitVectorPoint(nb, elementwise, pointIvs, last, width, given);
          } else {
            storeOutputs(nb, elementwise, pointIvs,
                         emitPayload(nb, elementwise, pointIvs, {},
                                     presetFor(elementwise, given)));
          }
          scf::YieldOp::create(nb, nloc);
        });
  }

  /// Applies output `k`'s combiner of `op` (the payload's own op, cloned)
  /// to `mine` in place of the output's block argument and `other` in place
  /// of the value it combines with.
  static Value applyCombiner(OpBuilder &b, linalg::GenericOp op, unsigned k,
                             const Combiner &combiner, Value mine,
                             Value other) {
    BlockArgument arg =
        op.getMatchingBlockArgument(op.getDpsInitOperand(k));
    IRMapping mapping;
    for (Value operand : combiner.combiner->getOperands())
      mapping.map(operand, operand == arg ? mine : other);
    return b.clone(*combiner.combiner, mapping)->getResult(0);
  }

  /// Loads each output of `op` at `ivs` (its initial value; the value of a
  /// folded fill where `initials` has one), folds in the reduction's total
  /// with the payload's combiner and stores the result.
  static SmallVector<Value> storeCombined(OpBuilder &b, linalg::GenericOp op,
                                          ArrayRef<Value> ivs,
                                          ArrayRef<Combiner> combiners,
                                          ArrayRef<Value> totals,
                                          ArrayRef<Value> initials) {
    SmallVector<Value> results;
    for (auto [k, initial] : llvm::enumerate(initialValues(b, op, ivs, initials)))
      results.push_back(
          applyCombiner(b, op, k, combiners[k], initial, totals[k]));
    storeOutputs(b, op, ivs, results);
    return results;
  }

  /// Each output's initial value at `ivs`: the value of its folded fill
  /// where `initials` has one, else loaded.
  static SmallVector<Value> initialValues(OpBuilder &b, linalg::GenericOp op,
                                          ArrayRef<Value> ivs,
                                          ArrayRef<Value> initials) {
    Location loc = op.getLoc();
    SmallVector<Value> values;
    for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable()))
      values.push_back(
          k < initials.size() && initials[k]
              ? initials[k]
              : Value(memref::LoadOp::create(
                    b, loc, init.get(),
                    applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs))));
    return values;
  }

  /// The payload of `epilogue` (matchEpilogue) at the output point `ivs` of
  /// `op`, its inputs taken from `stored` (the values just stored into the
  /// outputs of `op` it reads), and its stores.
  static void emitEpilogue(OpBuilder &b, linalg::GenericOp op,
                           linalg::GenericOp epilogue, ArrayRef<Value> ivs,
                           ArrayRef<unsigned> parallelDims,
                           ArrayRef<Value> stored) {
    SmallVector<Value> pointIvs;
    for (unsigned d : parallelDims)
      pointIvs.push_back(ivs[d]);
    IRMapping preset;
    for (OpOperand *input : epilogue.getDpsInputOperands())
      for (OpOperand &init : op.getDpsInitsMutable())
        if (init.get() == input->get())
          preset.map(epilogue.getMatchingBlockArgument(input),
                     stored[init.getOperandNumber() - op.getNumDpsInputs()]);
    storeOutputs(b, epilogue, pointIvs,
                 emitPayload(b, epilogue, pointIvs, {}, preset));
  }

  /// Reductions with rows up to this many elements take one warp per row
  /// (formWarpReduction), longer ones a block. For a short row a block's
  /// combine dominates: gpu.all_reduce costs two barriers and a round trip
  /// through shared memory per row, and at 768 elements each of 256 threads
  /// loads only 3. A warp needs no barrier, and up to 4096 elements its
  /// lanes take at most 128 each, a loop long enough to keep loads in
  /// flight; beyond that a block's threads share a row faster than one warp
  /// walks it (and long rows come in smaller numbers).
  static constexpr int64_t kMaxWarpRow = 4096;

  /// A row reduction (the caller checked) takes a warp per row when its
  /// reduction space has a static size of at most kMaxWarpRow, there is
  /// more than one output point (a single output keeps the block of 1024)
  /// and every output's type can be shuffled.
  static bool isShortRowReduction(linalg::GenericOp op, ArrayRef<Value> sizes,
                                  ArrayRef<unsigned> parallelDims,
                                  ArrayRef<unsigned> reductionDims) {
    if (parallelDims.empty())
      return false;
    int64_t count = 1, points = 1;
    bool pointsStatic = true;
    for (unsigned d : reductionDims) {
      std::optional<int64_t> size = getConstantIntValue(sizes[d]);
      if (!size)
        return false;
      count *= *size;
    }
    for (unsigned d : parallelDims) {
      std::optional<int64_t> size = getConstantIntValue(sizes[d]);
      if (size)
        points *= *size;
      else
        pointsStatic = false;
    }
    if (count > kMaxWarpRow || (pointsStatic && points < 2))
      return false;
    return llvm::all_of(op.getDpsInitsMutable(), [](OpOperand &init) {
      return isShuffleable(getElementTypeOrSelf(init.get().getType()));
    });
  }

  /// How many neighbouring elements of a row a lane of a warp reduction
  /// takes at a time (1: one): `vectorBytes` of the widest input element
  /// type that varies along the reduction, when there is one reduction
  /// dim `r` of a static size the width divides, and every memref input
  /// either is indexed by `r` in its contiguous dimension only, with
  /// aligned vectors (alignsVectors), or does not depend on `r` (loaded
  /// once per step).
  static int64_t warpVectorWidth(linalg::GenericOp op, ArrayRef<Value> sizes,
                                 ArrayRef<unsigned> reductionDims,
                                 int64_t vectorBytes) {
    if (reductionDims.size() != 1)
      return 1;
    unsigned r = reductionDims.front();
    std::optional<int64_t> size = getConstantIntValue(sizes[r]);
    if (!size)
      return 1;
    int64_t widestBytes = 0;
    SmallVector<MemRefType> varying;
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto type = dyn_cast<MemRefType>(input->get().getType());
      if (!type)
        continue;
      int64_t bytes = vectorElementBytes(op, *input, r);
      if (bytes < 0)
        return 1;
      if (bytes == 0)
        continue;
      widestBytes = std::max(widestBytes, bytes);
      varying.push_back(type);
    }
    if (widestBytes == 0)
      return 1;
    int64_t width = vectorBytes / widestBytes;
    if (width < 2 || *size % width != 0)
      return 1;
    for (MemRefType type : varying)
      if (!alignsVectors(type, width))
        return 1;
    return width;
  }

  /// One step of a lane of a warp reduction over vector `v` of the row
  /// (elements [v * width, (v + 1) * width) of reduction dim `r`): vector
  /// loads of the inputs indexed by `r`, one scalar load of the others, the
  /// payload once per element in order from the accumulators `carried`,
  /// yielded.
  static void emitVectorReductionStep(OpBuilder &b, Location loc,
                                      linalg::GenericOp op, ArrayRef<Value> ivs,
                                      unsigned r, int64_t width, Value v,
                                      ValueRange carried,
                                      const GivenOperands &given) {
    SmallVector<Value> pointIvs(ivs);
    Value first =
        arith::MulIOp::create(b, loc, v, indexConstant(b, loc, width));
    pointIvs[r] = first;
    DenseMap<unsigned, Value> vectors, scalars;
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(input);
      auto type = dyn_cast<MemRefType>(input->get().getType());
      if (arg.use_empty() || !type)
        continue;
      if (Value value = given.lookup(input->getOperandNumber())) {
        scalars[input->getOperandNumber()] = value;
        continue;
      }
      AffineMap map = op.getMatchingIndexingMap(input);
      SmallVector<Value> indices = applyMap(b, loc, map, pointIvs);
      Type element = type.getElementType();
      if (map.isFunctionOfDim(r))
        vectors[input->getOperandNumber()] = vector::LoadOp::create(
            b, loc, VectorType::get({width}, element), input->get(), indices,
            /*nontemporal=*/false,
            llvm::MaybeAlign(width * element.getIntOrFloatBitWidth() / 8));
      else
        scalars[input->getOperandNumber()] =
            memref::LoadOp::create(b, loc, input->get(), indices);
    }
    SmallVector<Value> accumulators(carried);
    for (int64_t e = 0; e < width; ++e) {
      IRMapping preset;
      for (OpOperand *input : op.getDpsInputOperands()) {
        BlockArgument arg = op.getMatchingBlockArgument(input);
        unsigned n = input->getOperandNumber();
        if (Value vector = vectors.lookup(n))
          preset.map(arg, vector::ExtractOp::create(b, loc, vector, e));
        else if (Value scalar = scalars.lookup(n))
          preset.map(arg, scalar);
      }
      SmallVector<Value> elementIvs(pointIvs);
      elementIvs[r] =
          arith::AddIOp::create(b, loc, first, indexConstant(b, loc, e));
      accumulators = emitPayload(b, op, elementIvs, accumulators, preset);
    }
    scf::YieldOp::create(b, loc, accumulators);
  }

  /// The walk of one thread (a lane) of a block (warp) reduction over the
  /// row at `ivs`: from `start` by `step` over its elements, or its vectors
  /// of `width` neighbours (set here where 0: warpVectorWidth, 16-byte
  /// loads where the layout allows; a row group's width otherwise),
  /// accumulating from the combiners' identities; none of it where
  /// `active` (if set) is false. `given` operands are not loaded.
  scf::ForOp emitPartialReduction(OpBuilder &b, linalg::GenericOp op,
                                  ArrayRef<Value> ivs, ArrayRef<Value> sizes,
                                  ArrayRef<unsigned> reductionDims,
                                  ArrayRef<Combiner> combiners, Value start,
                                  Value step, Value active, int64_t &width,
                                  const GivenOperands &given = GivenOperands()) {
    Location loc = op.getLoc();
    SmallVector<Value> reductionSizes;
    for (unsigned d : reductionDims)
      reductionSizes.push_back(sizes[d]);
    Value count = product(b, loc, reductionSizes);
    if (width <= 0)
      width = warpVectorWidth(op, sizes, reductionDims, vectorBytes);
    Value end = width > 1 ? indexConstant(b, loc, *getConstantIntValue(count) /
                                                      width)
                          : count;
    if (active)
      end = arith::SelectOp::create(b, loc, active, end,
                                    indexConstant(b, loc, 0));
    SmallVector<Value> identities;
    for (const Combiner &c : combiners)
      identities.push_back(arith::ConstantOp::create(b, loc, c.identity));
    return scf::ForOp::create(
        b, loc, start, end, step, identities,
        [&](OpBuilder &nb, Location nloc, Value r, ValueRange carried) {
          if (width > 1)
            emitVectorReductionStep(nb, nloc, op, ivs, reductionDims.front(),
                                    width, r, carried, given);
          else
            emitReductionStep(nb, nloc, op, ivs, reductionDims, reductionSizes,
                              r, carried, given);
        });
  }

  /// A launch of `grid` blocks of `rowsPerBlock` warps, a row each (the
  /// builder is left in its body): each thread's lane, its warp's row, and
  /// where `mayOverrun`, whether that row is below `points` (else null).
  struct WarpRows {
    gpu::LaunchOp launch;
    Value warpSize, lane, row, inRange;
  };
  static WarpRows createWarpRowLaunch(OpBuilder &b, Location loc, Value grid,
                                      int64_t rowsPerBlock, Value points,
                                      bool mayOverrun, StringRef strategy,
                                      TypeRange workgroup = {}) {
    WarpRows rows;
    rows.launch = createLaunch(
        b, loc, grid, indexConstant(b, loc, rowsPerBlock * kWarpSize),
        strategy, workgroup);
    rows.warpSize = indexConstant(b, loc, kWarpSize);
    Value tx = rows.launch.getThreadIds().x;
    rows.lane = arith::RemUIOp::create(b, loc, tx, rows.warpSize);
    rows.row = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, rows.launch.getBlockIds().x,
                              indexConstant(b, loc, rowsPerBlock)),
        arith::DivUIOp::create(b, loc, tx, rows.warpSize));
    if (mayOverrun)
      rows.inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           rows.row, points);
    return rows;
  }

  /// One warp per output point, `rowsPerBlock` (set here) of them per
  /// block: the lanes stride over the linearised reduction dims from the
  /// identity, a butterfly of shuffles combines the warp (warpAllReduce),
  /// lane 0 folds in the output's initial value and stores. Warps past the
  /// last point (a partial last block) reduce nothing and store nothing;
  /// they still shuffle, so every shuffle runs in all 32 lanes of a warp.
  gpu::LaunchOp formWarpReduction(OpBuilder &b, linalg::GenericOp op,
                                  ArrayRef<Value> sizes,
                                  ArrayRef<unsigned> parallelDims,
                                  ArrayRef<unsigned> reductionDims,
                                  ArrayRef<Combiner> combiners,
                                  linalg::GenericOp epilogue,
                                  int64_t &rowsPerBlock) {
    Location loc = op.getLoc();
    SmallVector<Value> parallelSizes;
    for (unsigned d : parallelDims)
      parallelSizes.push_back(sizes[d]);
    Value points = product(b, loc, parallelSizes);
    std::optional<int64_t> staticPoints = getConstantIntValue(points);
    rowsPerBlock = blockSize / kWarpSize;
    if (staticPoints)
      rowsPerBlock = std::min(rowsPerBlock, *staticPoints);
    Value grid =
        staticPoints
            ? indexConstant(b, loc, llvm::divideCeil(*staticPoints,
                                                     rowsPerBlock))
            : Value(arith::CeilDivUIOp::create(
                  b, loc, points, indexConstant(b, loc, rowsPerBlock)));
    OpBuilder::InsertionGuard guard(b);
    // Only a partial last block has warps without a row.
    WarpRows rows = createWarpRowLaunch(
        b, loc, grid, rowsPerBlock, points,
        !staticPoints || *staticPoints % rowsPerBlock != 0, "warp-reduction");
    gpu::LaunchOp launch = rows.launch;
    Value warpSize = rows.warpSize, lane = rows.lane, row = rows.row,
          inRange = rows.inRange;
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, iv] :
         llvm::zip(parallelDims, delinearize(b, loc, row, parallelSizes)))
      ivs[d] = iv;
    int64_t width = 0;
    scf::ForOp partial =
        emitPartialReduction(b, op, ivs, sizes, reductionDims, combiners, lane,
                             warpSize, inRange, width);
    SmallVector<Value> totals;
    for (unsigned k = 0, e = combiners.size(); k < e; ++k)
      totals.push_back(warpAllReduce(
          b, loc, partial.getResult(k),
          [&](OpBuilder &nb, Value mine, Value other) {
            return applyCombiner(nb, op, k, combiners[k], mine, other);
          }));
    Value isStorer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           lane, indexConstant(b, loc, 0));
    if (inRange)
      isStorer = arith::AndIOp::create(b, loc, isStorer, inRange);
    auto ifStorer = scf::IfOp::create(b, loc, isStorer, /*withElse=*/false);
    b.setInsertionPointToStart(&ifStorer.getThenRegion().front());
    SmallVector<Value> stored =
        storeCombined(b, op, ivs, combiners, totals, foldedInitials.lookup(op));
    if (epilogue)
      emitEpilogue(b, op, epilogue, ivs, parallelDims, stored);
    return launch;
  }

  /// `op`'s static loop sizes as index constants at `b`.
  static SmallVector<Value> staticSizeConstants(OpBuilder &b, Location loc,
                                                linalg::GenericOp op) {
    SmallVector<Value> sizes;
    for (int64_t size : op.getStaticLoopRanges())
      sizes.push_back(indexConstant(b, loc, size));
    return sizes;
  }

  /// `fn(sizes)` of `op`'s static loop sizes (the width queries take sizes
  /// as values): the constants are made before `op` and erased after.
  template <typename Fn>
  static int64_t withStaticSizes(linalg::GenericOp op, Fn fn) {
    OpBuilder b(op);
    SmallVector<Value> sizes = staticSizeConstants(b, op.getLoc(), op);
    int64_t result = fn(sizes);
    for (Value size : sizes)
      size.getDefiningOp()->erase();
    return result;
  }

  /// Every loop of `op`, as the parallel dims of an all-parallel op.
  static SmallVector<unsigned> allLoops(linalg::GenericOp op) {
    return llvm::to_vector(llvm::seq<unsigned>(0, op.getNumLoops()));
  }

  /// All-parallel ops of at most this many points (after vectorising) go
  /// into one launch with their independent neighbours: an optimizer step
  /// updates hundreds of 768-element biases and norm weights, each a
  /// launch that runs for 2-3 us to move a few KB.
  static constexpr int64_t kSmallPoints = 1 << 16;
  /// The most ops a small batch runs (each block tests its range in turn).
  static constexpr size_t kMaxBatch = 32;
  /// The static number of points a thread-per-point elementwise kernel of
  /// `op` would spread (after its vector width), if static.
  std::optional<int64_t> elementwisePoints(linalg::GenericOp op,
                                           int64_t &width) {
    if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() != 0)
      return std::nullopt;
    if (op.getNumLoops() == 0) {
      width = 1;
      return 1;
    }
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return std::nullopt;
    width = withStaticSizes(op, [&](ArrayRef<Value> sizes) {
      return vectorWidth(op, sizes, allLoops(op), vectorBytes);
    });
    int64_t points = 1;
    for (int64_t size : ranges)
      points *= size;
    return points / width;
  }

  /// `op` and the small all-parallel ops after it (address arithmetic may
  /// sit between) that touch no memory another of them writes: they can
  /// run in any order, so in one launch. Empty unless `op` is small.
  SmallVector<linalg::GenericOp> matchSmallBatch(linalg::GenericOp op) {
    int64_t width = 1;
    std::optional<int64_t> points = elementwisePoints(op, width);
    if (!points || *points > kSmallPoints)
      return {};
    // Gathers read memory no operand shows: such ops are not batched.
    if (!gatheredMemrefs(op).empty())
      return {};
    SmallVector<linalg::GenericOp> batch = {op};
    auto independent = [&](linalg::GenericOp candidate) {
      if (!gatheredMemrefs(candidate).empty())
        return false;
      for (linalg::GenericOp member : batch)
        for (OpOperand &a : member->getOpOperands())
          for (OpOperand &c : candidate->getOpOperands()) {
            if (!isa<MemRefType>(a.get().getType()) ||
                !isa<MemRefType>(c.get().getType()))
              continue;
            if ((member.isDpsInit(&a) || candidate.isDpsInit(&c)) &&
                mayOverlap(a.get(), c.get()))
              return false;
          }
      return true;
    };
    for (Operation *next = op->getNextNode();
         next && batch.size() < kMaxBatch; next = next->getNextNode()) {
      if (isMemoryEffectFree(next) && next->getNumRegions() == 0)
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(next);
      if (!generic)
        break;
      std::optional<int64_t> n = elementwisePoints(generic, width);
      if (!n || *n > kSmallPoints || !independent(generic))
        break;
      batch.push_back(generic);
      if (kernelArgumentBytes(batch) > kMaxKernelArgumentBytes) {
        batch.pop_back();
        break;
      }
    }
    return batch;
  }

  /// One launch for a small batch (matchSmallBatch): each op gets the
  /// blocks a kernel of its own would have (`block-size` threads), in
  /// order; a block runs the grid-stride loop of the op whose range holds
  /// it, over that op's blocks.
  void formSmallBatch(ArrayRef<linalg::GenericOp> batch) {
    linalg::GenericOp first = batch.front();
    for (Operation *op = first->getNextNode(); op && op != batch.back();) {
      Operation *next = op->getNextNode();
      if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
        op->moveBefore(first);
      op = next;
    }
    OpBuilder b(first);
    Location loc = first.getLoc();
    SmallVector<int64_t> widths, blocks;
    int64_t total = 0;
    for (linalg::GenericOp op : batch) {
      int64_t width = 1;
      int64_t points = *elementwisePoints(op, width);
      widths.push_back(width);
      blocks.push_back(std::clamp<int64_t>(
          llvm::divideCeil(points, blockSize), 1, maxBlocks));
      total += blocks.back();
    }
    {
      OpBuilder::InsertionGuard guard(b);
      gpu::LaunchOp launch =
          createLaunch(b, loc, indexConstant(b, loc, total),
                       indexConstant(b, loc, blockSize), "small-batch");
      Value blockId = launch.getBlockIds().x;
      Value threads = indexConstant(b, loc, blockSize);
      int64_t start = 0;
      for (auto [op, width, count] : llvm::zip(batch, widths, blocks)) {
        Value lo = indexConstant(b, loc, start);
        Value hi = indexConstant(b, loc, start + count);
        Value mine = arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, blockId,
                                  lo),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blockId,
                                  hi));
        OpBuilder::InsertionGuard ifGuard(b);
        auto ifMine = scf::IfOp::create(b, loc, mine, /*withElse=*/false);
        b.setInsertionPointToStart(&ifMine.getThenRegion().front());
        linalg::GenericOp member = op;
        int64_t memberWidth = width;
        SmallVector<Value> sizes = staticSizeConstants(b, loc, member);
        SmallVector<Value> pointSizes(sizes);
        if (memberWidth > 1)
          pointSizes.back() = indexConstant(
              b, loc, *getConstantIntValue(sizes.back()) / memberWidth);
        scf::ForOp loop = gridStrideLoop(
            b, loc, arith::SubIOp::create(b, loc, blockId, lo),
            launch.getThreadIds().x, threads, indexConstant(b, loc, count),
            product(b, loc, pointSizes));
        SmallVector<Value> ivs =
            delinearize(b, loc, loop.getInductionVar(), pointSizes);
        if (memberWidth > 1)
          emitVectorPoint(b, member, ivs, ivs.size() - 1, memberWidth);
        else
          storeOutputs(b, member, ivs, emitPayload(b, member, ivs, {}));
        start += count;
      }
      sinkGlobals(launch);
    }
    remark(first, "small batch: one launch runs this op and the " +
                      Twine(batch.size() - 1) + " after it");
    ++numKernels;
    ++numSmallBatches;
    numSmallBatchOps += batch.size();
    for (linalg::GenericOp op : batch) {
      grouped.insert(op);
      op.erase();
    }
  }

  /// A reduction a row group can run with one warp per row (as
  /// formWarpReduction would): combiners recognised, the last loop (the
  /// one reduced) walks the contiguous dimension, outputs shuffles move.
  static bool isWarpRowReduction(linalg::GenericOp op) {
    if (op.getNumReductionLoops() != 1 || failed(matchCombiners(op)))
      return false;
    std::optional<unsigned> inner = innermostAccessedDim(op);
    if (!inner || *inner != op.getNumLoops() - 1)
      return false;
    return llvm::all_of(op.getDpsInitsMutable(), [](OpOperand &init) {
      return isShuffleable(getElementTypeOrSelf(init.get().getType()));
    });
  }

  /// The row group `op` starts, unless one starting at a later member
  /// before its first reduction runs more reductions (the group from `op`
  /// stopped early: a later reduction writes memory an early member read,
  /// freed by the planner); then `op` runs on its own and that later
  /// member's group forms when the walk reaches it.
  std::optional<RowGroup> bestRowGroupAt(linalg::GenericOp op) {
    auto ownWidth = [&](linalg::GenericOp member, RowOpKind kind) {
      return rowOpWidth(member, kind);
    };
    auto storesAll = [&](linalg::GenericOp member) {
      return storesReadElsewhere.contains(member);
    };
    auto startsFromFill = [&](linalg::GenericOp reduction, unsigned n) {
      auto it = foldedInitials.find(reduction);
      return it != foldedInitials.end() && n < it->second.size() &&
             it->second[n];
    };
    RowGroupQueries queries{isWarpRowReduction, ownWidth, storesAll,
                            startsFromFill};
    std::optional<RowGroup> group = matchRowGroup(op, kMaxWarpRow, blockSize / kWarpSize, queries);
    if (!group)
      return std::nullopt;
    auto reductions = [](const RowGroup &g) {
      return llvm::count(g.kinds, RowOpKind::Reduction);
    };
    for (auto [member, kind] :
         llvm::drop_begin(llvm::zip(group->members, group->kinds))) {
      if (kind == RowOpKind::PerRow)
        continue;
      std::optional<RowGroup> later =
          matchRowGroup(member, kMaxWarpRow, blockSize / kWarpSize, queries);
      if (later && reductions(*later) > reductions(*group))
        return std::nullopt;
      if (kind == RowOpKind::Reduction)
        break;
    }
    return group;
  }

  /// Elements a lane of a warp takes at a time when `op` (a row group
  /// candidate of kind `kind`) runs alone: a reduction's warpVectorWidth,
  /// an elementwise op's vectorWidth over its loops.
  int64_t rowOpWidth(linalg::GenericOp op, RowOpKind kind) {
    if (kind == RowOpKind::PerRow)
      return 1;
    unsigned last = op.getNumLoops() - 1;
    if (kind == RowOpKind::ColumnPartial)
      return inputVectorWidth(op, last);
    int64_t width = withStaticSizes(op, [&](ArrayRef<Value> sizes) {
      return kind == RowOpKind::Reduction
                 ? warpVectorWidth(op, sizes, {last}, vectorBytes)
                 : vectorWidth(op, sizes, allLoops(op), vectorBytes);
    });
    return std::max<int64_t>(width, 1);
  }


  /// Elements along loop `last` a lane can load at a time for the inputs
  /// of `op` (its outputs are not accessed per element): as vectorWidth,
  /// over the inputs; `vectorBytes` when no input varies along `last`.
  int64_t inputVectorWidth(linalg::GenericOp op, unsigned last) {
    int64_t widestBytes = 0;
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()) ||
          op.getMatchingBlockArgument(input).use_empty())
        continue;
      int64_t bytes = vectorElementBytes(op, *input, last);
      if (bytes < 0)
        return 1;
      widestBytes = std::max(widestBytes, bytes);
    }
    if (widestBytes == 0)
      return vectorBytes;
    int64_t width = vectorBytes / widestBytes;
    if (width < 2 || op.getStaticLoopRanges()[last] % width != 0)
      return 1;
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto type = dyn_cast<MemRefType>(input->get().getType());
      if (type && op.getMatchingIndexingMap(input).isFunctionOfDim(last) &&
          !alignsVectors(type, width))
        return 1;
    }
    return width;
  }

  /// One kernel for a row group (matchRowGroup): one warp per row,
  /// `block-size / 32` rows a block; each member runs in turn over the
  /// warp's row: a reduction as a warp reduction (every lane keeps the
  /// total), a per-row op in every lane, an elementwise op with the lanes
  /// striding over the row, `width` elements at a time. Lane 0 stores the
  /// per-row values, which later members take from registers. The address
  /// arithmetic between the members moves ahead of the kernel, the
  /// deferred ops after it.
  void formRowGroup(RowGroup &group) {
    linalg::GenericOp first = group.members.front();
    Operation *last = group.members.back();
    for (Operation *op = first->getNextNode(); op && op != last;) {
      Operation *next = op->getNextNode();
      if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
        op->moveBefore(first);
      op = next;
    }
    for (Operation *op : group.hoisted)
      op->moveBefore(first);
    for (Operation *op : llvm::reverse(group.deferred))
      op->moveAfter(last);

    OpBuilder b(first);
    Location loc = first.getLoc();
    int64_t points = 1;
    for (int64_t size : group.rows)
      points *= size;
    int64_t rowsPerBlock = std::min<int64_t>(blockSize / kWarpSize, points);
    int64_t width = group.width;
    unsigned k = group.rows.size();
    SmallVector<Value> rowSizes;
    for (int64_t size : group.rows)
      rowSizes.push_back(indexConstant(b, loc, size));
    Value grid =
        indexConstant(b, loc, llvm::divideCeil(points, rowsPerBlock));
    // Column partial sums: per output, each warp's values for its row.
    SmallVector<Type> workgroup;
    SmallVector<std::pair<size_t, unsigned>> partialOutputs;
    for (auto [i, member] : llvm::enumerate(group.members)) {
      if (group.kinds[i] != RowOpKind::ColumnPartial)
        continue;
      assert(rowsPerBlock == group.blockRows && "matched for whole blocks");
      for (Value init : member.getDpsInits()) {
        partialOutputs.push_back({i, static_cast<unsigned>(workgroup.size())});
        workgroup.push_back(MemRefType::get(
            {rowsPerBlock * group.rowLength},
            cast<MemRefType>(init.getType()).getElementType(),
            MemRefLayoutAttrInterface{},
            gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup)));
      }
    }
    {
      OpBuilder::InsertionGuard guard(b);
      WarpRows rows = createWarpRowLaunch(
          b, loc, grid, rowsPerBlock, indexConstant(b, loc, points),
          points % rowsPerBlock != 0, "row-group", workgroup);
      gpu::LaunchOp launch = rows.launch;
      Value warpSize = rows.warpSize, lane = rows.lane, row = rows.row,
            inRange = rows.inRange;
      Value zero = indexConstant(b, loc, 0);
      // Warps past the last row (a partial last block) walk no element and
      // store nothing; their per-row values are row 0's, never stored.
      if (inRange)
        row = arith::SelectOp::create(b, loc, inRange, row, zero);
      SmallVector<Value> rowIvs = delinearize(b, loc, row, rowSizes);
      Value isStorer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             lane, zero);
      if (inRange)
        isStorer = arith::AndIOp::create(b, loc, isStorer, inRange);
      // Per-row values only later members read go unstored (matchRowGroup).
      auto storeIfStorer = [&](linalg::GenericOp op, ArrayRef<Value> ivs,
                               ArrayRef<Value> values,
                               ArrayRef<unsigned> unstored) {
        if (static_cast<int64_t>(unstored.size()) == op.getNumDpsInits())
          return;
        OpBuilder::InsertionGuard storeGuard(b);
        auto ifStorer = scf::IfOp::create(b, loc, isStorer, /*withElse=*/false);
        b.setInsertionPointToStart(&ifStorer.getThenRegion().front());
        storeOutputs(b, op, ivs, values, unstored);
      };

      SmallVector<SmallVector<Value>> rowValues(group.members.size());
      foldedFills = 0;
      for (auto [index, member] : llvm::enumerate(group.members)) {
        size_t i = index;
        linalg::GenericOp op = member;
        GivenOperands given;
        for (auto [n, from] : group.forwarded[i])
          given[n] = rowValues[from.member][from.output];
        SmallVector<Value> sizes = staticSizeConstants(b, loc, op);
        SmallVector<Value> ivs(rowIvs);
        switch (group.kinds[i]) {
        case RowOpKind::Reduction: {
          SmallVector<Combiner> combiners = *matchCombiners(op);
          ivs.push_back(Value());
          int64_t memberWidth = width;
          scf::ForOp partial =
              emitPartialReduction(b, op, ivs, sizes, {k}, combiners, lane,
                                   warpSize, inRange, memberWidth, given);
          SmallVector<Value> initials = foldedInitials.lookup(op);
          SmallVector<Value> combined;
          for (auto [output, init] :
               llvm::enumerate(op.getDpsInitsMutable())) {
            unsigned n = output;
            Value total = warpAllReduce(
                b, loc, partial.getResult(n),
                [&](OpBuilder &nb, Value mine, Value other) {
                  return applyCombiner(nb, op, n, combiners[n], mine, other);
                });
            Value initial = n < initials.size() ? initials[n] : Value();
            if (!initial)
              initial = given.lookup(init.getOperandNumber());
            if (!initial)
              initial = memref::LoadOp::create(
                  b, loc, init.get(),
                  applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs));
            combined.push_back(
                applyCombiner(b, op, n, combiners[n], initial, total));
          }
          storeIfStorer(op, ivs, combined, group.unstored[i]);
          rowValues[i] = combined;
          foldedFills += llvm::count_if(initials, [](Value v) { return v; });
          foldedInitials.erase(op);
          break;
        }
        case RowOpKind::PerRow: {
          if (op.getNumLoops() > k)
            ivs.push_back(zero);
          SmallVector<Value> values =
              emitPayload(b, op, ivs, {}, presetFor(op, given));
          storeIfStorer(op, ivs, values, group.unstored[i]);
          rowValues[i] = values;
          break;
        }
        case RowOpKind::Elementwise: {
          Value count = indexConstant(b, loc, group.rowLength / width);
          if (inRange)
            count = arith::SelectOp::create(b, loc, inRange, count, zero);
          OpBuilder::InsertionGuard loopGuard(b);
          auto loop = scf::ForOp::create(b, loc, lane, count, warpSize);
          b.setInsertionPointToStart(loop.getBody());
          ivs.push_back(loop.getInductionVar());
          if (width > 1)
            emitVectorPoint(b, op, ivs, k, width, given);
          else
            storeOutputs(b, op, ivs,
                         emitPayload(b, op, ivs, {}, presetFor(op, given)));
          break;
        }
        case RowOpKind::ColumnPartial: {
          // The lane's elements as an elementwise member takes them; what
          // each adds goes to the warp's slot of the workgroup buffers.
          SmallVector<Combiner> combiners = *matchCombiners(op);
          Value blockRows = indexConstant(b, loc, rowsPerBlock);
          ivs.pop_back();
          ivs.push_back(arith::DivUIOp::create(b, loc, rowIvs.back(), blockRows));
          ivs.push_back(arith::RemUIOp::create(b, loc, rowIvs.back(), blockRows));
          Value slot = arith::MulIOp::create(
              b, loc,
              arith::DivUIOp::create(b, loc, launch.getThreadIds().x, warpSize),
              indexConstant(b, loc, group.rowLength));
          SmallVector<Value> buffers;
          for (auto [member, buffer] : partialOutputs)
            if (member == i)
              buffers.push_back(launch.getWorkgroupAttributions()[buffer]);
          Value count = indexConstant(b, loc, group.rowLength / width);
          OpBuilder::InsertionGuard loopGuard(b);
          auto loop = scf::ForOp::create(b, loc, lane, count, warpSize);
          b.setInsertionPointToStart(loop.getBody());
          Value first = arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                              indexConstant(b, loc, width));
          ivs.push_back(first);
          SmallVector<SmallVector<Value>> values = emitVectorPayloads(
              b, op, ivs, k + 1, width, given, /*loadOutputs=*/false,
              [&](ArrayRef<Value> pointIvs, const IRMapping &preset) {
                return emitContributions(b, op, pointIvs, combiners, preset);
              });
          // Scalar stores: the workgroup buffers are aligned to their
          // element only.
          Value at = arith::AddIOp::create(b, loc, slot, first);
          for (auto [buffer, outputValues] : llvm::zip(buffers, values))
            for (auto [e, value] : llvm::enumerate(outputValues))
              memref::StoreOp::create(
                  b, loc, value, buffer,
                  ValueRange{arith::AddIOp::create(
                      b, loc, at, indexConstant(b, loc, e))});
          break;
        }
        }
      }
      if (!partialOutputs.empty())
        emitColumnPartialCombine(b, group, launch, rowsPerBlock,
                                 partialOutputs);
      sinkGlobals(launch);
    }
    unsigned reductions = llvm::count(group.kinds, RowOpKind::Reduction);
    unsigned columnPartials =
        llvm::count(group.kinds, RowOpKind::ColumnPartial);
    numRowGroupColumnPartials += columnPartials;
    size_t unstored = 0;
    for (ArrayRef<unsigned> outputs : group.unstored)
      unstored += outputs.size();
    numUnstoredRowValues += unstored;
    remark(first, "row group: one warp per row of " +
                      Twine(group.rowLength) + " elements (" + Twine(width) +
                      " at a time), " + Twine(rowsPerBlock) +
                      " per block, runs this op and the " +
                      Twine(group.members.size() - 1) + " after it (" +
                      Twine(reductions) + " reductions)" +
                      (columnPartials == 0
                           ? std::string()
                           : "; " + std::to_string(columnPartials) +
                                 (columnPartials == 1
                                      ? " column partial sum"
                                      : " column partial sums") +
                                 " over each block's rows, combined "
                                 "through workgroup memory") +
                      (foldedFills == 0
                           ? std::string()
                           : "; " + std::to_string(foldedFills) +
                                 (foldedFills == 1 ? " fill" : " fills") +
                                 " folded in") +
                      (unstored == 0
                           ? std::string()
                           : "; " + std::to_string(unstored) +
                                 (unstored == 1 ? " per-row value" : " per-row values") +
                                 " kept in registers only") +
                      (group.hoisted.empty()
                           ? std::string()
                           : "; " + std::to_string(group.hoisted.size()) +
                                 (group.hoisted.size() == 1
                                      ? " op between them runs before it"
                                      : " ops between them run before it")) +
                      (group.deferred.empty()
                           ? std::string()
                           : "; " + std::to_string(group.deferred.size()) +
                                 (group.deferred.size() == 1
                                      ? " op between them runs after it"
                                      : " ops between them run after it")));
    ++numKernels;
    ++numRowGroups;
    numRowGroupMembers += group.members.size();
    for (linalg::GenericOp op : group.members) {
      grouped.insert(op);
      op.erase();
    }
  }

  /// After a row group's members: a barrier, then the block's threads
  /// combine each column partial sum's per-warp values column by column,
  /// the output's initial value (its folded fill's, or loaded) first, then
  /// the warps in row order (the op's own order over its chunk), and store
  /// the block's partials. Everything here is computed anew from the ids:
  /// no thread's value crosses the barrier.
  void emitColumnPartialCombine(
      OpBuilder &b, const RowGroup &group, gpu::LaunchOp launch,
      int64_t rowsPerBlock,
      ArrayRef<std::pair<size_t, unsigned>> partialOutputs) {
    Location loc = launch.getLoc();
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> rowSizes;
    for (int64_t size : group.rows)
      rowSizes.push_back(indexConstant(b, loc, size));
    Value blockRows = indexConstant(b, loc, rowsPerBlock);
    Value firstRow =
        arith::MulIOp::create(b, loc, launch.getBlockIds().x, blockRows);
    SmallVector<Value> rowIvs = delinearize(b, loc, firstRow, rowSizes);
    auto loop = scf::ForOp::create(
        b, loc, launch.getThreadIds().x,
        indexConstant(b, loc, group.rowLength),
        indexConstant(b, loc, rowsPerBlock * kWarpSize));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value column = loop.getInductionVar();
    size_t at = 0;
    while (at < partialOutputs.size()) {
      size_t memberIndex = partialOutputs[at].first;
      linalg::GenericOp op = group.members[memberIndex];
      SmallVector<Combiner> combiners = *matchCombiners(op);
      SmallVector<Value> ivs(rowIvs.begin(), rowIvs.end() - 1);
      ivs.push_back(arith::DivUIOp::create(b, loc, rowIvs.back(), blockRows));
      ivs.push_back(indexConstant(b, loc, 0));
      ivs.push_back(column);
      SmallVector<Value> initials = foldedInitials.lookup(op);
      SmallVector<Value> totals = initialValues(b, op, ivs, initials);
      foldedFills += llvm::count_if(initials, [](Value v) { return v; });
      foldedInitials.erase(op);
      for (unsigned n = 0; n < op.getNumDpsInits(); ++n, ++at) {
        Value buffer =
            launch.getWorkgroupAttributions()[partialOutputs[at].second];
        for (int64_t warp = 0; warp < rowsPerBlock; ++warp) {
          Value index = arith::AddIOp::create(
              b, loc, column,
              indexConstant(b, loc, warp * group.rowLength));
          Value value = memref::LoadOp::create(b, loc, buffer, index);
          totals[n] = applyCombiner(b, op, n, combiners[n], totals[n], value);
        }
      }
      storeOutputs(b, op, ivs, totals);
    }
  }

  /// Owner-computes partitioning of a loop nest whose serial loops write
  /// rows chosen by data (an embedding gradient's scatter-add,
  /// `G[idx[b, t], c] += dY[b, t, c]`): the rows are split into `count`
  /// ranges of `chunk` rows; the thread of range k runs the serial loops in
  /// their order but touches the written buffers only when `row` falls in
  /// [k * chunk, (k + 1) * chunk). Each element then has exactly one
  /// writer, which applies its updates in the serial order.
  struct RowPartition {
    /// The one data-dependent index of every access to a written buffer.
    Value row;
    /// The largest size of the row dimension among the written buffers.
    int64_t rows = 0;
    int64_t count = 0;
    int64_t chunk = 0;
    /// Ops of the innermost loop's body that `row` depends on: every thread
    /// runs them; the rest of the body only runs in the row's owner.
    DenseSet<Operation *> rowSlice;
  };

  /// The threads a per-thread partitioned nest (the fallback of the
  /// compacted scatter: dynamic loops, a row that depends on a spread loop)
  /// aims for: at 768 columns 171 partitions, one wave of 513 blocks of 256
  /// threads. Every thread scans all iterations of the serial loops
  /// (reading each token's row), so more partitions would mostly add
  /// redundant scans.
  static constexpr int64_t kPartitionTargetThreads = int64_t(1) << 17;

  /// The row partition of a nest whose serial loops are not spread, or the
  /// reason there is none (for the remark). `innermost` is the last loop of
  /// the chain; `parallel` the loops spread over threads, `points` the
  /// number of their iterations when static.
  static FailureOr<RowPartition> matchRowPartition(
      scf::ForOp outer, scf::ForOp innermost, ArrayRef<scf::ForOp> parallel,
      ArrayRef<Operation *> accesses, const DenseSet<Value> &written,
      std::optional<int64_t> points, std::string &whyNot) {
    auto fail = [&](StringRef reason) {
      whyNot = reason.str();
      return failure();
    };
    Block *body = innermost.getBody();
    if (body->getTerminator()->getNumOperands() != 0)
      return fail("the innermost loop carries values");
    auto isSpreadIv = [&](Value v) {
      return llvm::any_of(parallel, [&](scf::ForOp loop) {
        return loop.getInductionVar() == v;
      });
    };
    auto definedInNest = [&](Value v) {
      return outer->isAncestor(v.getParentRegion()->getParentOp());
    };
    RowPartition partition;
    DenseMap<Value, Operation *> firstAccess;
    for (Operation *access : accesses) {
      auto [base, indices] = accessedAt(access);
      if (!written.contains(base))
        continue;
      if (access->getBlock() != body)
        return fail("a written buffer is accessed outside the innermost "
                    "loop's body");
      auto [it, inserted] = firstAccess.try_emplace(base, access);
      if (!inserted) {
        if (!llvm::equal(accessedAt(it->second).second, indices))
          return fail("a written buffer is accessed at different indices");
        continue;
      }
      std::optional<unsigned> position;
      for (auto [i, index] : llvm::enumerate(indices)) {
        if (!definedInNest(index) || isSpreadIv(index))
          continue;
        if (position)
          return fail("a written buffer is indexed by several values the "
                      "nest computes");
        position = i;
      }
      if (!position)
        return fail("no index of a written buffer is computed in the nest");
      Value row = indices[*position];
      if (partition.row && partition.row != row)
        return fail("the written buffers' rows are chosen by different "
                    "values");
      partition.row = row;
      int64_t size = cast<MemRefType>(base.getType()).getDimSize(*position);
      if (ShapedType::isDynamic(size))
        return fail("the row dimension of a written buffer is dynamic");
      partition.rows = std::max(partition.rows, size);
    }
    if (!partition.row)
      return fail("the nest writes no buffer");
    // The body ops the row depends on (with what their regions use). They
    // move ahead of the guarded ops, which only store to written buffers;
    // none reads one (every access to a written buffer is indexed by the
    // row, so it cannot feed the row).
    SmallVector<Value> worklist{partition.row};
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (!def)
        continue;
      Operation *top = body->findAncestorOpInBlock(*def);
      if (!top || !partition.rowSlice.insert(top).second)
        continue;
      top->walk([&](Operation *nested) {
        worklist.append(nested->operand_begin(), nested->operand_end());
      });
    }
    // Enough partitions for about kPartitionTargetThreads threads, no more
    // than rows; equal ranges, none empty.
    int64_t count = points ? llvm::divideCeil(kPartitionTargetThreads,
                                              std::max<int64_t>(*points, 1))
                           : 64;
    count = std::clamp<int64_t>(count, 1, partition.rows);
    partition.chunk = llvm::divideCeil(partition.rows, count);
    partition.count = llvm::divideCeil(partition.rows, partition.chunk);
    if (partition.count < 2)
      return fail("one partition would hold every row");
    return partition;
  }

  /// A row-partitioned nest that one block per partition runs with its
  /// hits compacted (see formCompactedScatter): every loop of the nest has
  /// a static trip count and carries nothing, and the row depends on the
  /// serial loops only.
  struct CompactedScatter {
    /// Per loop of the chain, its static trip count.
    SmallVector<int64_t> tripCounts;
    /// The serial iterations (linearised, the last serial loop fastest)
    /// and the spread points (likewise).
    int64_t iterations = 1;
    int64_t points = 1;
    /// The ops of the chain's bodies (at any level) the row depends on, in
    /// program order.
    SetVector<Operation *> rowSlice;
    /// A read-modify-write body (the nest's only written buffer loaded once
    /// and stored once, at the top of the innermost body): the load, the
    /// store, and the innermost body's ops that depend on the load (the
    /// store included). Null when the body is of another form.
    memref::LoadOp update;
    memref::StoreOp store;
    DenseSet<Operation *> dependent;
  };

  /// Partitions of a compacted scatter: rows are owned by `row mod count`,
  /// one block each; about two waves of 768-thread blocks on an H100 (2 per
  /// SM), so a block that meets a frequent row does not hold up a wave.
  /// Each block scans every serial iteration once, blockDim at a time.
  static constexpr int64_t kScatterPartitions = 512;

  /// Whether the partitioned nest `chain` can be a compacted scatter, or
  /// why not (for the remark).
  static FailureOr<CompactedScatter>
  matchCompactedScatter(ArrayRef<scf::ForOp> chain,
                        ArrayRef<scf::ForOp> parallel,
                        const RowPartition &partition, std::string &whyNot) {
    auto fail = [&](StringRef reason) {
      whyNot = reason.str();
      return failure();
    };
    scf::ForOp outer = chain.front();
    CompactedScatter plan;
    for (scf::ForOp loop : chain) {
      if (!loop.getInitArgs().empty())
        return fail("a loop of the nest carries values");
      std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
      std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
      std::optional<int64_t> step = getConstantIntValue(loop.getStep());
      if (!lb || !ub || !step || *step <= 0)
        return fail("a loop of the nest has bounds that are not constants");
      int64_t trips = *ub > *lb ? llvm::divideCeil(*ub - *lb, *step) : 0;
      plan.tripCounts.push_back(trips);
      (llvm::is_contained(parallel, loop) ? plan.points : plan.iterations) *=
          trips;
    }
    if (plan.points == 0 || plan.iterations == 0)
      return fail("the nest has no iterations");
    // The row's slice over every level of the nest: each op's ancestor in
    // the chain body that holds it.
    auto bodyAncestor = [&](Operation *op) -> Operation * {
      for (scf::ForOp loop : chain)
        if (Operation *top = loop.getBody()->findAncestorOpInBlock(*op))
          if (!llvm::is_contained(chain, top))
            return top;
      return nullptr;
    };
    DenseSet<Operation *> slice;
    SmallVector<Value> worklist{partition.row};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (llvm::any_of(parallel, [&](scf::ForOp loop) {
            return loop.getInductionVar() == v;
          }))
        return fail("the row depends on a loop spread over threads");
      Operation *def = v.getDefiningOp();
      if (!def || !outer->isAncestor(def))
        continue;
      Operation *top = bodyAncestor(def);
      if (!top)
        return fail("the row is computed by a loop of the nest");
      if (!slice.insert(top).second)
        continue;
      WalkResult walk = top->walk([&](Operation *nested) {
        if (!isMemoryEffectFree(nested) && !isa<memref::LoadOp>(nested) &&
            nested->getNumRegions() == 0)
          return WalkResult::interrupt();
        worklist.append(nested->operand_begin(), nested->operand_end());
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return fail("the row is computed by an op that writes memory");
    }
    outer->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (slice.contains(op))
        plan.rowSlice.insert(op);
    });
    scf::ForOp innermost = chain.back();
    matchReadModifyWrite(innermost.getBody(), outer, plan);
    return plan;
  }

  /// Fills `plan`'s update, store and dependent ops when the nest's only
  /// store and the only load of its buffer are top-level ops of the
  /// innermost body `innermost`, the load first.
  static void matchReadModifyWrite(Block *innermost, scf::ForOp outer,
                                   CompactedScatter &plan) {
    SmallVector<memref::StoreOp> stores;
    outer->walk([&](memref::StoreOp store) { stores.push_back(store); });
    if (stores.size() != 1)
      return;
    memref::StoreOp store = stores.front();
    SmallVector<memref::LoadOp> loads;
    outer->walk([&](memref::LoadOp load) {
      if (load.getMemRef() == store.getMemRef())
        loads.push_back(load);
    });
    if (loads.size() != 1)
      return;
    memref::LoadOp update = loads.front();
    if (update->getBlock() != innermost || store->getBlock() != innermost ||
        !update->isBeforeInBlock(store))
      return;
    DenseSet<Operation *> dependent{update};
    for (Operation &op :
         llvm::make_range(std::next(update->getIterator()),
                          innermost->without_terminator().end())) {
      bool uses = &op == store.getOperation();
      op.walk([&](Operation *nested) {
        for (Value v : nested->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (Operation *top = innermost->findAncestorOpInBlock(*def);
                top && dependent.contains(top))
              uses = true;
      });
      if (uses)
        dependent.insert(&op);
    }
    plan.update = update;
    plan.store = store;
    plan.dependent = std::move(dependent);
  }

  /// The buffer and indices of a memref.load or memref.store.
  static std::pair<Value, ValueRange> accessedAt(Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return {load.getMemRef(), load.getIndices()};
    auto store = cast<memref::StoreOp>(op);
    return {store.getMemRef(), store.getIndices()};
  }

  /// A loop nest without library calls becomes one kernel. Loops whose
  /// iterations touch disjoint elements of every buffer the nest writes are
  /// spread over threads (flattened, grid-stride); the others run in order
  /// inside each thread, with the written rows partitioned over threads
  /// when a data-dependent index picks them (see RowPartition).
  LogicalResult formLoopNest(scf::ForOp outer) {
    // The chain of loops, each the only loop directly in its parent's body.
    SmallVector<scf::ForOp> chain{outer};
    while (true) {
      auto inner = chain.back().getBody()->getOps<scf::ForOp>();
      if (inner.empty() || std::next(inner.begin()) != inner.end())
        break;
      chain.push_back(*inner.begin());
    }
    // Memory accessed in the nest.
    bool unknownEffects = false;
    SmallVector<Operation *> accesses;
    DenseSet<Value> written;
    outer->walk([&](Operation *op) {
      if (auto store = dyn_cast<memref::StoreOp>(op)) {
        written.insert(store.getMemRef());
        accesses.push_back(op);
      } else if (isa<memref::LoadOp>(op)) {
        accesses.push_back(op);
      } else if (!isa<scf::ForOp, scf::YieldOp, scf::IfOp>(op) &&
                 !isMemoryEffectFree(op)) {
        unknownEffects = true;
      }
    });
    auto isParallel = [&](scf::ForOp loop) {
      if (unknownEffects)
        return false;
      // Bounds must be known before the nest starts.
      for (Value bound :
           {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
        if (outer->isAncestor(bound.getParentRegion()->getParentOp()))
          return false;
      if (!loop.getInitArgs().empty())
        return false;
      Value iv = loop.getInductionVar();
      for (Value memref : written) {
        std::optional<unsigned> position;
        for (Operation *access : accesses) {
          auto [base, indices] = accessedAt(access);
          if (base != memref)
            continue;
          auto it = llvm::find(indices, iv);
          if (it == indices.end())
            return false;
          unsigned pos = std::distance(indices.begin(), it);
          if (position && *position != pos)
            return false;
          position = pos;
        }
      }
      return true;
    };
    SmallVector<scf::ForOp> parallel;
    for (scf::ForOp loop : chain)
      if (isParallel(loop))
        parallel.push_back(loop);

    OpBuilder b(outer);
    Location loc = outer.getLoc();
    SmallVector<Value> tripCounts;
    for (scf::ForOp loop : parallel) {
      Value span = b.createOrFold<arith::SubIOp>(loc, loop.getUpperBound(),
                                                 loop.getLowerBound());
      tripCounts.push_back(
          b.createOrFold<arith::CeilDivUIOp>(loc, span, loop.getStep()));
    }
    // Serial loops left: partition the rows they write, when data picks
    // them.
    std::optional<RowPartition> partition;
    std::string whyNot;
    if (parallel.size() < chain.size()) {
      if (unknownEffects) {
        whyNot = "an op in the nest has memory effects other than loads and "
                 "stores";
      } else {
        std::optional<int64_t> spreadPoints = 1;
        for (Value count : tripCounts) {
          std::optional<int64_t> c = getConstantIntValue(count);
          spreadPoints = c && spreadPoints
                             ? std::optional<int64_t>(*spreadPoints * *c)
                             : std::nullopt;
        }
        FailureOr<RowPartition> matched =
            matchRowPartition(outer, chain.back(), parallel, accesses, written,
                              spreadPoints, whyNot);
        if (succeeded(matched))
          partition = std::move(*matched);
      }
    }
    // A partitioned nest with static loops: one block per partition,
    // compacting its hits (else every thread scans every iteration).
    std::string whyNotCompacted;
    if (partition) {
      FailureOr<CompactedScatter> plan =
          matchCompactedScatter(chain, parallel, *partition, whyNotCompacted);
      if (succeeded(plan)) {
        formCompactedScatter(outer, chain, parallel, *partition, *plan);
        return success();
      }
    }
    // Thread dimensions: the partition (slowest, so a warp shares it when
    // the spread loops have a multiple of 32 iterations), then the spread
    // loops, innermost fastest.
    SmallVector<Value> dims;
    if (partition)
      dims.push_back(indexConstant(b, loc, partition->count));
    dims.append(tripCounts);
    Value points = product(b, loc, dims);
    int64_t threads = blockSize;
    if (std::optional<int64_t> n = getConstantIntValue(points))
      threads = std::min<int64_t>(blockSize, llvm::alignTo(*n, 32));
    Value grid = gridFor(b, loc, points, threads, maxBlocks);
    StringRef strategy = partition          ? "partitioned-loop-nest"
                         : parallel.empty() ? "serial-loop-nest"
                                            : "loop-nest";
    gpu::LaunchOp launch =
        createLaunch(b, loc, grid, indexConstant(b, loc, threads), strategy);
    if (partition)
      remark(outer, "loop nest: " + Twine(parallel.size()) + " of " +
                        Twine(chain.size()) +
                        " loops spread over threads, the written rows split "
                        "over " +
                        Twine(partition->count) + " partitions of " +
                        Twine(partition->chunk) +
                        (partition->chunk == 1 ? " row" : " rows") +
                        " (each row's owner applies its updates in order; "
                        "not compacted: " +
                        whyNotCompacted + ")");
    else if (parallel.empty())
      remark(outer, "loop nest without independent loops: one thread (rows "
                    "not partitioned: " +
                        whyNot + ")");
    else if (parallel.size() < chain.size())
      remark(outer, "loop nest: " + Twine(parallel.size()) + " of " +
                        Twine(chain.size()) +
                        " loops spread over threads, the others run in order "
                        "in each thread (rows not partitioned: " +
                        whyNot + ")");
    else
      remark(outer, "loop nest: " + Twine(parallel.size()) + " of " +
                        Twine(chain.size()) + " loops spread over threads");
    scf::ForOp pointsLoop = gridStrideLoop(b, loc, launch, points);
    SmallVector<Value> coords =
        delinearize(b, loc, pointsLoop.getInductionVar(), dims);
    Value firstRow;
    if (partition)
      firstRow = b.createOrFold<arith::MulIOp>(
          loc, coords.front(), indexConstant(b, loc, partition->chunk));
    IRMapping mapping;
    for (auto [loop, k] : llvm::zip(
             parallel, ArrayRef<Value>(coords).drop_front(partition ? 1 : 0))) {
      Value offset = b.createOrFold<arith::MulIOp>(loc, k, loop.getStep());
      mapping.map(
          loop.getInductionVar(),
          b.createOrFold<arith::AddIOp>(loc, loop.getLowerBound(), offset));
    }
    DenseSet<Operation *> spread;
    for (scf::ForOp loop : parallel)
      spread.insert(loop);
    // Clone the nest, dropping the spread loops (their bodies are cloned in
    // place with the induction variables mapped above).
    std::function<void(OpBuilder &, scf::ForOp)> cloneLevel;
    auto cloneOp = [&](OpBuilder &nb, Operation &inner) {
      if (auto innerLoop = dyn_cast<scf::ForOp>(inner);
          innerLoop && llvm::is_contained(chain, innerLoop))
        cloneLevel(nb, innerLoop);
      else
        nb.clone(inner, mapping);
    };
    // A loop body without its terminator; the partitioned body computes the
    // row, then does the rest only in the row's owner.
    auto cloneBody = [&](OpBuilder &nb, scf::ForOp loop) {
      Block &body = *loop.getBody();
      if (!partition || loop != chain.back()) {
        for (Operation &inner : body.without_terminator())
          cloneOp(nb, inner);
        return;
      }
      for (Operation &inner : body.without_terminator())
        if (partition->rowSlice.contains(&inner))
          cloneOp(nb, inner);
      Location bodyLoc = loop.getLoc();
      Value offset = arith::SubIOp::create(
          nb, bodyLoc, mapping.lookupOrDefault(partition->row), firstRow);
      Value owned =
          arith::CmpIOp::create(nb, bodyLoc, arith::CmpIPredicate::ult, offset,
                                indexConstant(nb, bodyLoc, partition->chunk));
      auto ifOwned = scf::IfOp::create(nb, bodyLoc, owned, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(nb);
      nb.setInsertionPoint(ifOwned.thenBlock()->getTerminator());
      for (Operation &inner : body.without_terminator())
        if (!partition->rowSlice.contains(&inner))
          cloneOp(nb, inner);
    };
    cloneLevel = [&](OpBuilder &nb, scf::ForOp loop) {
      if (spread.contains(loop)) {
        cloneBody(nb, loop);
        return;
      }
      auto copy = scf::ForOp::create(
          nb, loop.getLoc(), mapping.lookupOrDefault(loop.getLowerBound()),
          mapping.lookupOrDefault(loop.getUpperBound()),
          mapping.lookupOrDefault(loop.getStep()),
          llvm::map_to_vector(loop.getInitArgs(), [&](Value v) {
            return mapping.lookupOrDefault(v);
          }));
      mapping.map(loop.getInductionVar(), copy.getInductionVar());
      for (auto [from, to] :
           llvm::zip(loop.getRegionIterArgs(), copy.getRegionIterArgs()))
        mapping.map(from, to);
      for (auto [from, to] : llvm::zip(loop.getResults(), copy.getResults()))
        mapping.map(from, to);
      OpBuilder::InsertionGuard guard(nb);
      if (!copy.getBody()->empty())
        copy.getBody()->getTerminator()->erase();
      nb.setInsertionPointToEnd(copy.getBody());
      cloneBody(nb, loop);
      nb.clone(*loop.getBody()->getTerminator(), mapping);
    };
    cloneLevel(b, outer);
    sinkGlobals(launch);
    ++numKernels;
    outer.erase();
    return success();
  }

  /// The position of the lowest set bit of the nonzero i32 `word`, in
  /// arith alone (a binary search over the isolated bit, five masks), so
  /// the NVVM and the emulated CPU lowerings take it as they are.
  static Value lowestSetBit(OpBuilder &b, Location loc, Value word) {
    auto i32 = [&](uint32_t v) {
      return arith::ConstantIntOp::create(b, loc, static_cast<int32_t>(v), 32);
    };
    Value zero = i32(0);
    Value bit = arith::AndIOp::create(
        b, loc, word, arith::SubIOp::create(b, loc, zero, word));
    Value position = zero;
    for (auto [mask, weight] : {std::pair<uint32_t, uint32_t>{0xFFFF0000u, 16},
                                {0xFF00FF00u, 8},
                                {0xF0F0F0F0u, 4},
                                {0xCCCCCCCCu, 2},
                                {0xAAAAAAAAu, 1}}) {
      Value hit = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, loc, bit, i32(mask)), zero);
      position = arith::AddIOp::create(
          b, loc, position,
          arith::SelectOp::create(b, loc, hit, i32(weight), zero));
    }
    return position;
  }

  /// Calls `body` with the index (as `index`) of each set bit of the i32
  /// `word`, lowest first, in an scf.while that clears them one by one.
  static void forEachSetBit(OpBuilder &b, Location loc, Value word,
                            function_ref<void(OpBuilder &, Value)> body) {
    Type i32 = b.getI32Type();
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
    scf::WhileOp::create(
        b, loc, TypeRange{i32}, ValueRange{word},
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value any = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ne,
                                            args[0], zero);
          scf::ConditionOp::create(nb, nloc, any, args);
        },
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value left = args[0];
          body(nb, arith::IndexCastUIOp::create(nb, nloc, nb.getIndexType(),
                                                lowestSetBit(nb, nloc, left)));
          Value rest = arith::AndIOp::create(
              nb, nloc, left,
              arith::SubIOp::create(
                  nb, nloc, left,
                  arith::ConstantIntOp::create(nb, nloc, 1, 32)));
          scf::YieldOp::create(nb, nloc, rest);
        });
  }

  /// A row-partitioned nest as one block per partition that walks the
  /// serial iterations blockDim at a time. Each thread evaluates the row
  /// (its slice only) of one iteration of the chunk and, when the block owns
  /// it (`row mod count`), sets its bit in a workgroup bitmask (atomic OR:
  /// the mask's value does not depend on the order); after a barrier every
  /// thread walks the mask's set bits in ascending order (lowest set bit
  /// first) and runs the whole body for each hit at the spread points it
  /// owns. Each element of a written row has one writer, which applies the
  /// row's updates in the serial order: the bits of the serial loops. A
  /// summary word per chunk (bit w: word w has a hit) lets the walk skip
  /// empty words. The mask has three buffers, rotated per chunk, so one
  /// barrier per chunk separates setting, reading and clearing.
  void formCompactedScatter(scf::ForOp outer, ArrayRef<scf::ForOp> chain,
                            ArrayRef<scf::ForOp> parallel,
                            const RowPartition &partition,
                            const CompactedScatter &plan) {
    OpBuilder b(outer);
    Location loc = outer.getLoc();
    MLIRContext *ctx = b.getContext();
    int64_t count = std::min(partition.rows, kScatterPartitions);
    // One spread point per thread up to 1024 of them, at least `blockSize`
    // threads so that a chunk scans that many iterations.
    int64_t threads =
        std::clamp<int64_t>(llvm::alignTo(plan.points, 32), blockSize, 1024);
    // Per mask buffer: a summary word (bit w: word w has a hit), then one
    // bit per thread.
    int64_t words = threads / 32 + 1;
    int64_t chunks = llvm::divideCeil(plan.iterations, threads);
    remark(outer, "loop nest: " + Twine(parallel.size()) + " of " +
                      Twine(chain.size()) +
                      " loops spread over threads, the written rows split "
                      "over " +
                      Twine(count) + " partitions (row mod " + Twine(count) +
                      "), one block each: " + Twine(threads) +
                      " threads compact the hits of " + Twine(threads) +
                      " serial iterations at a time (compacted scatter; "
                      "each row's owner applies its updates in order)");

    auto maskType = MemRefType::get(
        {3 * words}, b.getI32Type(), MemRefLayoutAttrInterface{},
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
    Value one = indexConstant(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, indexConstant(b, loc, std::min(count, int64_t(maxBlocks))), one,
        one, indexConstant(b, loc, threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, TypeRange{maskType});
    launch->setAttr(kKernelAttrName, b.getStringAttr("compacted-scatter"));
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&body);
    Value mask = launch.getWorkgroupAttributions().front();
    Value tid = launch.getThreadIds().x;
    Value zero32 = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value wordsValue = indexConstant(b, loc, words);

    // Maps the induction variables of the serial (or spread) loops of the
    // chain to the point `linear` of their linearised space.
    auto mapLoops = [&](OpBuilder &nb, IRMapping &mapping, Value linear,
                        bool spread) {
      SmallVector<scf::ForOp> loops;
      SmallVector<Value> sizes;
      for (auto [loop, trips] : llvm::zip(chain, plan.tripCounts)) {
        if (llvm::is_contained(parallel, loop) != spread)
          continue;
        loops.push_back(loop);
        sizes.push_back(indexConstant(nb, loc, trips));
      }
      for (auto [loop, k] :
           llvm::zip(loops, delinearize(nb, loc, linear, sizes))) {
        Value offset = nb.createOrFold<arith::MulIOp>(loc, k, loop.getStep());
        mapping.map(
            loop.getInductionVar(),
            nb.createOrFold<arith::AddIOp>(loc, loop.getLowerBound(), offset));
      }
    };
    // Clones the ops of every level of the chain (those ahead of the next
    // loop: the ops after it neither store nor feed it) that `keep` takes.
    auto cloneBodies = [&](OpBuilder &nb, IRMapping &mapping,
                           function_ref<bool(Operation *)> keep) {
      for (auto [i, constLoop] : llvm::enumerate(chain)) {
        scf::ForOp loop = constLoop;
        Operation *next = i + 1 < chain.size() ? chain[i + 1] : nullptr;
        for (Operation &op : loop.getBody()->without_terminator()) {
          if (&op == next)
            break;
          if (keep(&op))
            nb.clone(op, mapping);
        }
      }
    };
    // The word owners clear the words of mask buffer `at`.
    auto clearWords = [&](OpBuilder &nb, Value at) {
      Value isOwner = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult,
                                            tid, wordsValue);
      auto ifOwner = scf::IfOp::create(nb, loc, isOwner, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(nb);
      nb.setInsertionPoint(ifOwner.thenBlock()->getTerminator());
      memref::StoreOp::create(
          nb, loc, zero32, mask,
          arith::AddIOp::create(nb, loc, at, tid).getResult());
    };

    auto partitions = scf::ForOp::create(b, loc, launch.getBlockIds().x,
                                         indexConstant(b, loc, count),
                                         launch.getGridSize().x);
    b.setInsertionPointToStart(partitions.getBody());
    Value part = partitions.getInductionVar();
    gpu::BarrierOp::create(b, loc);
    clearWords(b, indexConstant(b, loc, 0));
    gpu::BarrierOp::create(b, loc);
    auto chunkLoop = scf::ForOp::create(b, loc, indexConstant(b, loc, 0),
                                        indexConstant(b, loc, chunks), one);
    b.setInsertionPointToStart(chunkLoop.getBody());
    Value c = chunkLoop.getInductionVar();
    Value three = indexConstant(b, loc, 3);
    Value current = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, c, three), wordsValue);
    Value nextBuffer = arith::MulIOp::create(
        b, loc,
        arith::RemUIOp::create(b, loc, arith::AddIOp::create(b, loc, c, one),
                               three),
        wordsValue);
    clearWords(b, nextBuffer);
    Value chunkStart =
        arith::MulIOp::create(b, loc, c, indexConstant(b, loc, threads));

    // Phase 1: the row of iteration chunkStart + tid; flag it when owned.
    {
      OpBuilder::InsertionGuard guard(b);
      Value s = arith::AddIOp::create(b, loc, chunkStart, tid);
      if (plan.iterations % threads != 0) {
        Value inRange =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, s,
                                  indexConstant(b, loc, plan.iterations));
        auto ifIn = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
        b.setInsertionPoint(ifIn.thenBlock()->getTerminator());
      }
      IRMapping mapping;
      mapLoops(b, mapping, s, /*spread=*/false);
      cloneBodies(b, mapping,
                  [&](Operation *op) { return plan.rowSlice.contains(op); });
      Value row = mapping.lookupOrDefault(partition.row);
      Value owned;
      if (count == partition.rows) {
        owned =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, row, part);
      } else {
        // Rows out of [0, rows) (bad indices) have no owner.
        Value inTable =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                  indexConstant(b, loc, partition.rows));
        Value mine = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::RemUIOp::create(b, loc, row, indexConstant(b, loc, count)),
            part);
        owned = arith::AndIOp::create(b, loc, inTable, mine);
      }
      auto ifOwned = scf::IfOp::create(b, loc, owned, /*withElse=*/false);
      b.setInsertionPoint(ifOwned.thenBlock()->getTerminator());
      Value lane = arith::IndexCastOp::create(
          b, loc, b.getI32Type(),
          arith::RemUIOp::create(b, loc, tid, indexConstant(b, loc, 32)));
      Value bit = arith::ShLIOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, 1, 32), lane);
      Value w = arith::DivUIOp::create(b, loc, tid, indexConstant(b, loc, 32));
      Value word = arith::AddIOp::create(b, loc, current,
                                         arith::AddIOp::create(b, loc, w, one));
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori, bit, mask,
                                  ValueRange{word});
      Value wordBit = arith::ShLIOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, 1, 32),
          arith::IndexCastOp::create(b, loc, b.getI32Type(), w));
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori, wordBit,
                                  mask, ValueRange{current});
    }
    gpu::BarrierOp::create(b, loc);

    // Phase 2: every hit of the chunk in order, at this thread's points:
    // the summary's set bits pick the words, the words' the iterations.
    if (plan.update && plan.points <= threads) {
      emitBatchedHits(b, loc, plan, mask, current, chunkStart, tid, threads,
                      mapLoops, cloneBodies);
      sinkGlobals(launch);
      ++numKernels;
      outer.erase();
      return;
    }
    Value summary = memref::LoadOp::create(b, loc, mask, ValueRange{current});
    forEachSetBit(b, loc, summary, [&](OpBuilder &nb, Value w) {
      Value bits = memref::LoadOp::create(
          nb, loc, mask,
          ValueRange{arith::AddIOp::create(
              nb, loc, current, arith::AddIOp::create(nb, loc, w, one))});
      Value wordStart = arith::AddIOp::create(
          nb, loc, chunkStart,
          arith::MulIOp::create(nb, loc, w, indexConstant(nb, loc, 32)));
      forEachSetBit(nb, loc, bits, [&](OpBuilder &hb, Value bit) {
        Value s = arith::AddIOp::create(hb, loc, wordStart, bit);
        auto pointLoop = scf::ForOp::create(hb, loc, tid,
                                            indexConstant(hb, loc, plan.points),
                                            indexConstant(hb, loc, threads));
        OpBuilder::InsertionGuard guard(hb);
        hb.setInsertionPointToStart(pointLoop.getBody());
        IRMapping mapping;
        mapLoops(hb, mapping, s, /*spread=*/false);
        mapLoops(hb, mapping, pointLoop.getInductionVar(), /*spread=*/true);
        cloneBodies(hb, mapping, [](Operation *) { return true; });
      });
    });
    sinkGlobals(launch);
    ++numKernels;
    outer.erase();
  }

  /// Hits a compacted scatter's thread applies at once: their independent
  /// loads (the gradient's) are in flight together. Four keep GPT-2's
  /// 768-thread blocks at 40 registers, two blocks per SM (eight took 58 to
  /// 68 registers: one block per SM).
  static constexpr int64_t kHitBatch = 4;

  /// Phase 2 of a compacted scatter whose body is a read-modify-write and
  /// whose threads own at most one spread point each: the thread takes the
  /// chunk's hits kHitBatch at a time (a cursor over the summary and the
  /// words), runs the ops that do not depend on the loaded element for all
  /// of them (so their loads overlap), then the dependent ops hit after hit,
  /// in order. A hit at the same element as the thread's previous one (a
  /// frequent token's row) takes the value that hit stored instead of
  /// loading it back: the same value, without waiting on memory.
  void emitBatchedHits(
      OpBuilder &b, Location loc, const CompactedScatter &plan, Value mask,
      Value current, Value chunkStart, Value tid, int64_t threads,
      function_ref<void(OpBuilder &, IRMapping &, Value, bool)> mapLoops,
      function_ref<void(OpBuilder &, IRMapping &,
                        function_ref<bool(Operation *)>)>
          cloneBodies) {
    OpBuilder::InsertionGuard guard(b);
    memref::LoadOp update = plan.update;
    memref::StoreOp store = plan.store;
    if (plan.points < threads) {
      Value worker =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                indexConstant(b, loc, plan.points));
      auto ifWorker = scf::IfOp::create(b, loc, worker, /*withElse=*/false);
      b.setInsertionPoint(ifWorker.thenBlock()->getTerminator());
    }
    Type i32 = b.getI32Type();
    Type indexType = b.getIndexType();
    Type element = update.getType();
    unsigned rank = update.getIndices().size();
    Value zero32 = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value one32 = arith::ConstantIntOp::create(b, loc, 1, 32);
    Value one = indexConstant(b, loc, 1);
    // Cursor (summary, bits, word start), then the previous hit (valid,
    // indices, stored value).
    SmallVector<Value> init{
        memref::LoadOp::create(b, loc, mask, ValueRange{current}), zero32,
        chunkStart, arith::ConstantIntOp::create(b, loc, 0, 1)};
    for (unsigned i = 0; i < rank; ++i)
      init.push_back(indexConstant(b, loc, 0));
    init.push_back(arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getZeroAttr(element))));
    SmallVector<Type> types =
        llvm::map_to_vector(init, [](Value v) { return v.getType(); });
    auto clearLowest = [&](OpBuilder &nb, Value word) {
      return arith::AndIOp::create(nb, loc, word,
                                   arith::SubIOp::create(nb, loc, word, one32))
          .getResult();
    };
    scf::WhileOp::create(
        b, loc, types, init,
        [&](OpBuilder &nb, Location, ValueRange args) {
          Value more = arith::OrIOp::create(
              nb, loc,
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, args[0],
                                    zero32),
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne, args[1],
                                    zero32));
          scf::ConditionOp::create(nb, loc, more, args);
        },
        [&](OpBuilder &nb, Location, ValueRange args) {
          Value summary = args[0], bits = args[1], wordStart = args[2];
          // Take up to kHitBatch hits; the first always exists (a summary
          // bit marks a nonzero word). Missing ones repeat the first
          // iteration, so their loads stay in bounds.
          SmallVector<Value> valid, iterations;
          for (int64_t k = 0; k < kHitBatch; ++k) {
            Value needWord = arith::AndIOp::create(
                nb, loc,
                arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq, bits,
                                      zero32),
                arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne,
                                      summary, zero32));
            auto next =
                scf::IfOp::create(nb, loc, TypeRange{i32, i32, indexType},
                                  needWord, /*withElse=*/true);
            {
              OpBuilder::InsertionGuard g(nb);
              nb.setInsertionPointToStart(next.thenBlock());
              Value w = arith::IndexCastUIOp::create(
                  nb, loc, indexType, lowestSetBit(nb, loc, summary));
              Value word = memref::LoadOp::create(
                  nb, loc, mask,
                  ValueRange{arith::AddIOp::create(
                      nb, loc, current,
                      arith::AddIOp::create(nb, loc, w, one))});
              Value start = arith::AddIOp::create(
                  nb, loc, chunkStart,
                  arith::MulIOp::create(nb, loc, w,
                                        indexConstant(nb, loc, 32)));
              scf::YieldOp::create(
                  nb, loc, ValueRange{clearLowest(nb, summary), word, start});
              nb.setInsertionPointToStart(next.elseBlock());
              scf::YieldOp::create(nb, loc,
                                   ValueRange{summary, bits, wordStart});
            }
            summary = next.getResult(0);
            bits = next.getResult(1);
            wordStart = next.getResult(2);
            Value s = arith::AddIOp::create(
                nb, loc, wordStart,
                arith::IndexCastUIOp::create(nb, loc, indexType,
                                             lowestSetBit(nb, loc, bits)));
            Value isHit = arith::CmpIOp::create(
                nb, loc, arith::CmpIPredicate::ne, bits, zero32);
            if (k > 0)
              s = arith::SelectOp::create(nb, loc, isHit, s,
                                          iterations.front());
            valid.push_back(isHit);
            iterations.push_back(s);
            bits = clearLowest(nb, bits);
          }
          // The independent ops of every hit.
          SmallVector<IRMapping> mappings(kHitBatch);
          for (auto [mapping, s] : llvm::zip(mappings, iterations)) {
            mapLoops(nb, mapping, s, /*spread=*/false);
            mapLoops(nb, mapping, tid, /*spread=*/true);
            cloneBodies(nb, mapping, [&](Operation *op) {
              return !plan.dependent.contains(op);
            });
          }
          // The dependent ops, hit after hit.
          SmallVector<Value> previous(args.drop_front(3));
          for (int64_t k = 0; k < kHitBatch; ++k) {
            IRMapping &mapping = mappings[k];
            OpBuilder::InsertionGuard g(nb);
            scf::IfOp ifHit;
            if (k > 0) {
              ifHit = scf::IfOp::create(
                  nb, loc, TypeRange(ValueRange(previous)), valid[k],
                  /*withElse=*/true);
              nb.setInsertionPointToStart(ifHit.elseBlock());
              scf::YieldOp::create(nb, loc, previous);
              nb.setInsertionPointToStart(ifHit.thenBlock());
            }
            SmallVector<Value> indices =
                llvm::map_to_vector(update.getIndices(), [&](Value v) {
                  return mapping.lookupOrDefault(v);
                });
            Value same = previous.front();
            for (auto [index, before] :
                 llvm::zip(indices, ArrayRef<Value>(previous).slice(1, rank)))
              same = arith::AndIOp::create(
                  nb, loc, same,
                  arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                                        index, before));
            auto forward = scf::IfOp::create(nb, loc, TypeRange{element}, same,
                                             /*withElse=*/true);
            {
              OpBuilder::InsertionGuard g2(nb);
              nb.setInsertionPointToStart(forward.thenBlock());
              scf::YieldOp::create(nb, loc, previous.back());
              nb.setInsertionPointToStart(forward.elseBlock());
              scf::YieldOp::create(nb, loc,
                                   nb.clone(*update, mapping)->getResult(0));
            }
            mapping.map(update.getResult(), forward.getResult(0));
            for (Operation &op : update->getBlock()->without_terminator())
              if (plan.dependent.contains(&op) && &op != update)
                nb.clone(op, mapping);
            SmallVector<Value> now{arith::ConstantIntOp::create(nb, loc, 1, 1)};
            now.append(indices);
            now.push_back(mapping.lookupOrDefault(store.getValueToStore()));
            if (!ifHit) {
              previous = now;
              continue;
            }
            scf::YieldOp::create(nb, loc, now);
            previous = SmallVector<Value>(ifHit.getResults());
          }
          SmallVector<Value> yielded{summary, bits, wordStart};
          yielded.append(previous);
          scf::YieldOp::create(nb, loc, yielded);
        });
  }

  /// Kernels read constant globals from the GPU module: a `memref.get_global`
  /// (and the views of it) a kernel uses is re-created inside the kernel.
  static void sinkGlobals(gpu::LaunchOp launch) {
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(launch.getBody(), captured);
    OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
    IRMapping mapping;
    std::function<bool(Value)> rootedAtGlobal = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def)
        return false;
      if (isa<memref::GetGlobalOp>(def))
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(def))
        return isMemoryEffectFree(def) && rootedAtGlobal(view.getViewSource());
      return false;
    };
    std::function<Value(Value)> cloneChain = [&](Value v) -> Value {
      if (Value done = mapping.lookupOrNull(v))
        return done;
      Operation *def = v.getDefiningOp();
      if (auto view = dyn_cast<ViewLikeOpInterface>(def))
        cloneChain(view.getViewSource());
      Operation *copy = b.clone(*def, mapping);
      return copy->getResult(cast<OpResult>(v).getResultNumber());
    };
    for (Value v : captured) {
      if (!isa<MemRefType>(v.getType()) || !rootedAtGlobal(v))
        continue;
      Value inside = cloneChain(v);
      v.replaceUsesWithIf(inside, [&](OpOperand &use) {
        return launch->isProperAncestor(use.getOwner());
      });
    }
  }

  /// After forming kernels the host may only compute addresses, call
  /// libraries, loop around them and launch.
  LogicalResult verifyHost(func::FuncOp func) {
    // Globals no kernel uses any more, and the views of them kernels
    // re-created inside, are dead address computations.
    SmallVector<Operation *> globalsAndViews;
    func.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (isa<memref::GetGlobalOp>(op) ||
          (isa<ViewLikeOpInterface>(op) && isMemoryEffectFree(op)))
        globalsAndViews.push_back(op);
    });
    // Views follow their sources: erasing in reverse frees a view's source.
    for (Operation *op : llvm::reverse(globalsAndViews))
      if (op->use_empty())
        op->erase();
    WalkResult result = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
        Operation *user = *get->getUsers().begin();
        op->emitOpError() << "eff-gpu-form-kernels: constant global @"
                          << get.getName() << " is used on the host by '"
                          << user->getName()
                          << "' (its data is not on the device)";
        return WalkResult::interrupt();
      }
      if (op == func ||
          isa<CallOpInterface, scf::ForOp, scf::YieldOp, func::ReturnOp>(op) ||
          isMemoryEffectFree(op))
        return WalkResult::advance();
      op->emitOpError() << "eff-gpu-form-kernels: would access memory on the "
                           "host (only gpu.launch kernels and library calls "
                           "may)";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }
};

} // namespace
} // namespace effopt
