//===- CudaFatbin.cpp - eff-cuda-fatbin: gpu.modules to one CUDA fatbin ---===//
//
// MLIR's gpu-module-to-binary makes one object per target and module; the
// .effx wants one fatbin for all kernels holding SASS for every arch it
// supports plus PTX for newer GPUs, which only the toolkit's fatbinary
// writes. So: the kernels' modules are merged into one, the #nvvm.target
// serializer (LLVM's NVPTX back end, libdevice linked) gives PTX per arch,
// ptxas assembles each, fatbinary packs them, and a gpu.binary holding the
// fatbin replaces the module.
//
//===----------------------------------------------------------------------===//

#include "effopt/Conversion/Passes.h"
#include "effopt/Target/Cuda/CudaBackend.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

namespace effopt {
#define GEN_PASS_DEF_EFFCUDAFATBINPASS
#include "effopt/Conversion/Passes.h.inc"
} // namespace effopt

using namespace mlir;

namespace effopt {
namespace {

/// The name of the one module (and binary) of a cuda step's kernels.
constexpr StringLiteral kKernelsModuleName = "effx_kernels";

/// Temporary files, removed when this goes out of scope.
struct TempFiles {
  SmallVector<std::string> paths;
  ~TempFiles() {
    for (const std::string &path : paths)
      llvm::sys::fs::remove(path);
  }
  /// A new temporary file's path.
  FailureOr<std::string> create(Operation *op, StringRef prefix,
                                StringRef suffix) {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
      return op->emitError("cannot create a temporary file: ") << ec.message();
    paths.push_back(std::string(path));
    return paths.back();
  }
};

/// A toolkit program started in the background, its output in `log`.
struct RunningTool {
  std::string name;
  std::string log;
  llvm::sys::ProcessInfo process;
};

/// Starts `tool` with `args` (args[0] is its name).
FailureOr<RunningTool> startTool(Operation *op, TempFiles &temps,
                                 StringRef tool, ArrayRef<StringRef> args) {
  FailureOr<std::string> log = temps.create(op, "effx-cuda", "log");
  if (failed(log))
    return failure();
  RunningTool run{llvm::sys::path::filename(tool).str(), *log, {}};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(run.log),
                                          StringRef(run.log)};
  std::string message;
  bool notStarted = false;
  run.process = llvm::sys::ExecuteNoWait(tool, args, std::nullopt, redirects,
                                         0, &message, &notStarted);
  if (notStarted)
    return op->emitError() << run.name << " could not start: " << message;
  return run;
}

/// Waits for `run`; on failure one error with the first line it printed.
LogicalResult finishTool(Operation *op, const RunningTool &run) {
  std::string message;
  llvm::sys::ProcessInfo result =
      llvm::sys::Wait(run.process, std::nullopt, &message);
  if (result.ReturnCode == 0)
    return success();
  std::string firstLine;
  if (auto text = llvm::MemoryBuffer::getFile(run.log))
    firstLine = (*text)->getBuffer().trim().split('\n').first.str();
  if (firstLine.empty())
    firstLine = message.empty()
                    ? "exit status " + std::to_string(result.ReturnCode)
                    : message;
  return op->emitError() << run.name << " failed: " << firstLine;
}

LogicalResult writeFile(Operation *op, StringRef path, StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << bytes;
    os.close();
    if (!os.has_error())
      return success();
    ec = os.error();
  }
  return op->emitError("cannot write ") << path << ": " << ec.message();
}

/// Whether `op` is a kernel entry (a gpu.func with the kernel attribute, or
/// the llvm.func convert-gpu-to-nvvm made of it).
bool isKernel(Operation &op) {
  return op.hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
         op.hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName());
}

/// Moves every gpu.module's body into one module named kKernelsModuleName
/// and points the launches at it. Outlining gives every module a unique
/// name but may give the kernels inside the same one (@effx_step_kernel in
/// @effx_step_kernel_0, _1, ...), so each kernel takes its module's name
/// (module name + "_" + kernel name where a module has several). Other
/// symbols that several modules hold (libdevice declarations, a constant
/// global copied into each kernel that reads it) are the same symbol, kept
/// once.
gpu::GPUModuleOp mergeKernelModules(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
  if (modules.empty())
    return {};
  OpBuilder b(modules.front());
  auto merged = gpu::GPUModuleOp::create(b, modules.front().getLoc(),
                                         kKernelsModuleName);
  Block &body = merged.getBodyRegion().front();
  // (module, kernel) -> the kernel's name in the merged module.
  llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
  llvm::StringSet<> seen;
  StringAttr symbolAttr =
      StringAttr::get(module.getContext(), SymbolTable::getSymbolAttrName());
  for (gpu::GPUModuleOp from : modules) {
    Block &fromBody = from.getBodyRegion().front();
    unsigned kernels = llvm::count_if(fromBody, isKernel);
    for (Operation &op : llvm::make_early_inc_range(fromBody)) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      auto name = op.getAttrOfType<StringAttr>(symbolAttr);
      if (name && isKernel(op)) {
        StringAttr unique =
            kernels == 1
                ? from.getNameAttr()
                : StringAttr::get(module.getContext(),
                                  from.getName() + "_" + name.getValue());
        renamed[{from.getNameAttr(), name}] = unique;
        op.setAttr(symbolAttr, unique);
        name = unique;
      }
      if (name && !seen.insert(name.getValue()).second)
        continue;
      op.moveBefore(&body, body.end());
    }
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto it = renamed.find({launch.getKernelModuleName(),
                            launch.getKernelName()});
    StringAttr kernel =
        it == renamed.end() ? launch.getKernelName() : it->second;
    launch.setKernelAttr(SymbolRefAttr::get(merged.getNameAttr(),
                                            {FlatSymbolRefAttr::get(kernel)}));
  });
  for (gpu::GPUModuleOp from : modules)
    from.erase();
  return merged;
}

struct EffCudaFatbinPass : impl::EffCudaFatbinPassBase<EffCudaFatbinPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string toolkitPath = toolkit.empty() ? getCudaToolkitPath()
                                              : std::string(toolkit);
    SmallVector<std::string> archList(archs.begin(), archs.end());
    if (archList.empty())
      for (StringRef arch : kCudaArchs)
        archList.push_back(arch.str());
    if (!llvm::any_of(module.getOps<gpu::GPUModuleOp>(),
                      [](auto) { return true; }))
      return;

    // The toolkit first: without it nothing below can work, and the
    // serializer's own messages are several lines.
    auto inToolkit = [&](std::initializer_list<StringRef> parts) {
      llvm::SmallString<128> path(toolkitPath);
      for (StringRef part : parts)
        llvm::sys::path::append(path, part);
      return std::string(path);
    };
    std::string ptxas = inToolkit({"bin", "ptxas"});
    std::string fatbinary = inToolkit({"bin", "fatbinary"});
    std::string libdevice = inToolkit({"nvvm", "libdevice", "libdevice.10.bc"});
    for (const std::string &needed : {ptxas, fatbinary})
      if (!llvm::sys::fs::can_execute(needed)) {
        module.emitError("CUDA toolkit not found: ")
            << needed
            << " is missing (set EFFOPT_CUDA_TOOLKIT to the toolkit's "
               "directory)";
        return signalPassFailure();
      }
    if (!llvm::sys::fs::is_regular_file(libdevice)) {
      module.emitError("CUDA toolkit not found: ")
          << libdevice
          << " is missing (set EFFOPT_CUDA_TOOLKIT to the toolkit's "
             "directory)";
      return signalPassFailure();
    }

    gpu::GPUModuleOp kernels = mergeKernelModules(module);
    MLIRContext *context = module.getContext();
    std::optional<SymbolTable> symbols;
    auto symbolTable = [&]() -> SymbolTable * {
      if (!symbols)
        symbols.emplace(module);
      return &*symbols;
    };

    // The files live until the fatbin is read back.
    TempFiles temps;
    FailureOr<std::string> fatbinFile =
        temps.create(module, "effx-cuda", "fatbin");
    if (failed(fatbinFile))
      return signalPassFailure();
    SmallVector<std::string> images;
    NVVM::NVVMTargetAttr lastTarget;
    // PTX per arch in process, then every arch's ptxas at once (they are
    // independent; on several cores the SASS takes the time of one).
    SmallVector<RunningTool> assemblers;
    auto finishAssemblers = [&]() {
      bool ok = true;
      for (const RunningTool &run : assemblers)
        ok &= succeeded(finishTool(module, run));
      assemblers.clear();
      return success(ok);
    };
    for (auto [i, arch] : llvm::enumerate(archList)) {
      if (!StringRef(arch).starts_with("sm_")) {
        module.emitError("eff-cuda-fatbin: '") << arch
                                               << "' is not an sm_NN arch";
        (void)finishAssemblers();
        return signalPassFailure();
      }
      auto target = NVVM::NVVMTargetAttr::get(
          context, static_cast<int>(optLevel), "nvptx64-nvidia-cuda", arch);
      lastTarget = target;
      gpu::TargetOptions options(toolkitPath, {}, "", "",
                                 gpu::CompilationTarget::Assembly,
                                 symbolTable);
      std::optional<SmallVector<char, 0>> ptx =
          cast<gpu::TargetAttrInterface>(target).serializeToObject(kernels,
                                                                   options);
      if (!ptx) {
        kernels.emitError("NVPTX code generation for ") << arch << " failed";
        (void)finishAssemblers();
        return signalPassFailure();
      }
      StringRef ptxText(ptx->data(), ptx->size());
      ptxText = ptxText.rtrim('\0');
      FailureOr<std::string> ptxFile =
          temps.create(module, "effx-" + arch, "ptx");
      FailureOr<std::string> cubinFile =
          temps.create(module, "effx-" + arch, "cubin");
      std::string level = std::to_string(optLevel);
      FailureOr<RunningTool> assembler =
          failed(ptxFile) || failed(cubinFile) ||
                  failed(writeFile(module, *ptxFile, ptxText))
              ? FailureOr<RunningTool>(failure())
              : startTool(module, temps, ptxas,
                          {"ptxas", "-arch", arch, "--opt-level", level,
                           *ptxFile, "-o", *cubinFile});
      if (failed(assembler)) {
        (void)finishAssemblers();
        return signalPassFailure();
      }
      assemblers.push_back(std::move(*assembler));
      StringRef sm = StringRef(arch).drop_front(strlen("sm_"));
      images.push_back(
          ("--image3=kind=elf,sm=" + sm + ",file=" + *cubinFile).str());
      // The PTX of the newest arch, JIT-compiled by drivers of newer GPUs.
      if (i + 1 == archList.size())
        images.push_back(
            ("--image3=kind=ptx,sm=" + sm + ",file=" + *ptxFile).str());
    }
    if (failed(finishAssemblers()))
      return signalPassFailure();
    // Every image compressed: fatbinary's default leaves SASS images
    // uncompressed by a heuristic that kept GPT-2's 18 MB of SASS as it was
    // (0.4 MB compressed); the driver decompresses at cuModuleLoadData.
    SmallVector<StringRef> args{"fatbinary", "-64"};
    if (compress)
      args.push_back("--compress-all");
    args.append({"--create", *fatbinFile});
    for (const std::string &image : images)
      args.push_back(image);
    FailureOr<RunningTool> packer = startTool(module, temps, fatbinary, args);
    if (failed(packer) || failed(finishTool(module, *packer)))
      return signalPassFailure();
    auto bytes = llvm::MemoryBuffer::getFile(*fatbinFile);
    if (!bytes) {
      module.emitError("cannot read the fatbin: ")
          << bytes.getError().message();
      return signalPassFailure();
    }

    OpBuilder b(kernels);
    auto object = gpu::ObjectAttr::get(
        context, lastTarget, gpu::CompilationTarget::Fatbin,
        StringAttr::get(context, (*bytes)->getBuffer()), nullptr, nullptr);
    gpu::BinaryOp::create(b, kernels.getLoc(), kernels.getName(), nullptr,
                          ArrayRef<Attribute>{object});
    kernels.erase();
    ++numFatbins;
  }
};

} // namespace
} // namespace effopt
