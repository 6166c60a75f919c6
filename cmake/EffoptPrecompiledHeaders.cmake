# Precompiled MLIR and LLVM headers for the compiler's sources.
#
# Parsing the MLIR headers a pass includes (the dialects' ops, patterns,
# the pass manager) was most of every source's compile time: a 50-line
# pass took 26 s, 23 of them in the front end. Each group of targets that
# compile with the same flags parses them once, into one precompiled
# header, and every source of the group starts from it (clang rejects a
# precompiled header built with other macros or language options, hence
# one per flag group). Only external headers go in: effopt's own headers
# and their generated .inc files change often, and a change there would
# rebuild the precompiled header and every source after it.
#
# EFFOPT_PRECOMPILED_HEADERS=OFF builds without them.

option(EFFOPT_PRECOMPILED_HEADERS
       "Precompile the MLIR/LLVM headers the compiler's sources share" ON)

set(EFFOPT_PRECOMPILED_HEADER_LIST
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Bufferization/IR/Bufferization.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/Dialect/Utils/StaticValueUtils.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinAttributes.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/BuiltinTypes.h>
  <mlir/IR/Diagnostics.h>
  <mlir/IR/IRMapping.h>
  <mlir/IR/Matchers.h>
  <mlir/IR/MLIRContext.h>
  <mlir/IR/PatternMatch.h>
  <mlir/IR/SymbolTable.h>
  <mlir/IR/Verifier.h>
  <mlir/Interfaces/FunctionInterfaces.h>
  <mlir/Interfaces/SideEffectInterfaces.h>
  <mlir/Interfaces/ViewLikeInterface.h>
  <mlir/Pass/Pass.h>
  <mlir/Pass/PassManager.h>
  <mlir/Transforms/DialectConversion.h>
  <mlir/Transforms/GreedyPatternRewriteDriver.h>
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/MapVector.h>
  <llvm/ADT/SetVector.h>
  <llvm/ADT/SmallVector.h>
  <llvm/ADT/STLExtras.h>
  <llvm/ADT/StringMap.h>
  <llvm/Support/FormatVariadic.h>
  <llvm/Support/MathExtras.h>
  <llvm/Support/raw_ostream.h>
  <string>
  <vector>
)

# effopt_precompile_headers(OWNER [USER...]): OWNER precompiles the headers,
# each USER (compiled with OWNER's flags) reuses them. A name with an
# obj.NAME object library (add_mlir_library's) means that one: its sources
# compile there. Targets that are not defined are skipped.
function(effopt_precompile_headers owner)
  if(NOT EFFOPT_PRECOMPILED_HEADERS)
    return()
  endif()
  set(targets)
  foreach(name ${owner} ${ARGN})
    if(TARGET obj.${name})
      list(APPEND targets obj.${name})
    elseif(TARGET ${name})
      list(APPEND targets ${name})
    endif()
  endforeach()
  if(NOT targets)
    return()
  endif()
  list(POP_FRONT targets first)
  target_precompile_headers(${first} PRIVATE ${EFFOPT_PRECOMPILED_HEADER_LIST})
  foreach(user ${targets})
    target_precompile_headers(${user} REUSE_FROM ${first})
  endforeach()
endfunction()
