//===- CpuObject.cpp - native code for the CPU target ---------------------===//
//
// LLVM generates the object in process; only the final link into a shared
// object runs a tool (ld.lld), which the issue allows for effc. The runtime
// never compiles or links anything.
//
//===----------------------------------------------------------------------===//

#include "CpuObject.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace effopt {

static llvm::OptimizationLevel toLevel(unsigned level) {
  switch (level) {
  case 0: return llvm::OptimizationLevel::O0;
  case 1: return llvm::OptimizationLevel::O1;
  case 2: return llvm::OptimizationLevel::O2;
  default: return llvm::OptimizationLevel::O3;
  }
}

/// compiler-rt's builtins archive for `triple` (libclang-rt-NN-dev), in
/// either of the layouts LLVM installs; empty when not installed.
static std::string compilerRtBuiltins(const llvm::Triple &triple) {
  std::string version = std::to_string(LLVM_VERSION_MAJOR);
  std::string resource = "/usr/lib/llvm-" + version + "/lib/clang/" + version;
  for (std::string candidate :
       {resource + "/lib/" + triple.str() + "/libclang_rt.builtins.a",
        resource + "/lib/linux/libclang_rt.builtins-" +
            triple.getArchName().str() + ".a"})
    if (llvm::sys::fs::exists(candidate))
      return candidate;
  return {};
}

FailureOr<CpuCode> emitCpuSharedObject(ModuleOp module,
                                       const CpuCodegenOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "effx_step");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");

  bool usesOpenMP = llvm::any_of(*llvmModule, [](llvm::Function &f) {
    return f.isDeclaration() && f.getName().starts_with("__kmpc_");
  });

  // Kernels (eff-outline-kernels) stay separate functions: inlining them
  // back into one huge step makes LLVM's loop passes superlinear.
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration() && f.getName().contains("_kernel_"))
      f.addFnAttr(llvm::Attribute::NoInline);

  CpuCode code;
  code.triple = llvm::sys::getDefaultTargetTriple();
  llvm::Triple triple(code.triple);
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError("no LLVM target for ") << code.triple << ": " << error;
  std::string features;
  code.cpu = options.cpu;
  if (options.cpu == "native") {
    code.cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures subtarget;
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      subtarget.AddFeature(name, enabled);
    features = subtarget.getString();
  }
  llvm::TargetOptions targetOptions;
  // Constructors (the cuda target's host object loads its fatbin from one)
  // in .init_array, which the dynamic loader runs; .ctors needs crtbegin.o,
  // which the step is not linked with.
  targetOptions.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, code.cpu, features, targetOptions, llvm::Reloc::PIC_,
      std::nullopt,
      options.optimizeMachineCode ? llvm::CodeGenOptLevel::Aggressive
                                  : llvm::CodeGenOptLevel::None));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

  // The standard -O3 pipeline: vectorises the loop nests.
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder builder(machine.get(), tuning);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        builder.buildPerModuleDefaultPipeline(toLevel(options.optLevel));
    mpm.run(*llvmModule, mam);
  }

  // Object file in memory, then to a temporary file for the linker.
  llvm::SmallString<0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("LLVM cannot emit an object for ") << code.cpu;
    pm.run(*llvmModule);
  }

  llvm::SmallString<128> objectPath, libraryPath;
  if (llvm::sys::fs::createTemporaryFile("effx-step", "o", objectPath) ||
      llvm::sys::fs::createTemporaryFile("effx-step", "so", libraryPath))
    return module.emitError("cannot create temporary files for linking");
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(libraryPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return module.emitError("cannot write ") << objectPath << ": " << ec.message();
    os << object;
  }
  llvm::ErrorOr<std::string> lld = llvm::sys::findProgramByName("ld.lld-22");
  if (!lld)
    lld = llvm::sys::findProgramByName("ld.lld");
  if (!lld)
    return module.emitError("ld.lld not found (install lld-22)");
  SmallVector<llvm::StringRef> args{*lld, "-shared", "--as-needed", "-O2",
                                    "-o", libraryPath, objectPath};
  // Conversions LLVM leaves to libcalls on CPUs without native instructions
  // (f16 <-> f32 without F16C) come from compiler-rt's builtins, linked into
  // the step itself: the system's libgcc may lack them (Debian 12's has no
  // bf16 ones) and effrun must load the step on any x86-64.
  std::string builtins = compilerRtBuiltins(triple);
  if (!builtins.empty())
    args.push_back(builtins);
  // Threaded loop nests (convert-scf-to-openmp) call LLVM's OpenMP runtime:
  // the step needs libomp.so.5, which the loader finds like any library.
  std::string libomp;
  if (usesOpenMP) {
    for (std::string candidate :
         {std::string("/usr/lib/llvm-") + std::to_string(LLVM_VERSION_MAJOR) +
              "/lib/libomp.so",
          std::string("/usr/lib/") + triple.getArchName().str() +
              "-linux-gnu/libomp.so.5",
          std::string("/usr/lib/libomp.so.5")})
      if (llvm::sys::fs::exists(candidate)) {
        libomp = candidate;
        break;
      }
    if (libomp.empty())
      return module.emitError(
          "the step uses OpenMP threads but libomp was not found (install "
          "libomp-22-dev)");
    args.push_back(libomp);
  }
  std::string linkError;
  int status = llvm::sys::ExecuteAndWait(*lld, args, std::nullopt, {}, 0, 0,
                                         &linkError);
  if (status != 0)
    return module.emitError("linking the step failed: ")
           << (linkError.empty() ? "ld.lld exited with " + std::to_string(status)
                                 : linkError);
  auto buffer = llvm::MemoryBuffer::getFile(libraryPath);
  if (!buffer)
    return module.emitError("cannot read the linked step: ")
           << buffer.getError().message();
  code.sharedObject.assign((*buffer)->getBufferStart(),
                           (*buffer)->getBufferEnd());
  return code;
}

} // namespace effopt
