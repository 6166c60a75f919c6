//===- CudaRuntime.cpp - What CUDA host code imports ----------------------===//
//
// The host code of a cuda .effx (docs/CudaBackend.md, docs/CudaRuntime.md)
// imports the MLIR GPU runtime ABI that MLIR's gpu-to-llvm and gpu.binary
// translation emit (the signatures of upstream's
// mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp, MLIR 22) and effopt's
// matrix products. They act on the device whose code is loading or running
// (ActiveDevice), with effrt's stream semantics: every stream is the
// device's one step stream, so
//   - mgpuStreamCreate returns it and creates nothing; mgpuStreamDestroy
//     and mgpuStreamSynchronize do nothing (the runtime synchronizes when
//     it needs results; synchronizing is illegal while a CUDA graph is
//     being captured);
//   - events are real, but waiting on one on the host does nothing while
//     the step is being captured (the stream orders everything anyway);
//   - nothing allocates: mgpuMemAlloc is an error (the plan places every
//     buffer in the regions).
// Failures cannot unwind through compiled code: they are noted on the
// device, which throws the first one when the code returns.
//
//===----------------------------------------------------------------------===//

#include "CudaRuntime.h"

#include "ActiveDevice.h"
#include "Attention.h"
#include "Convolution.h"
#include "CudaApi.h"
#include "CudaDriver.h"
#include "GemmPlan.h"
#include "TypeCodes.h"

#include "effrt/Error.h"
#include "effrt/Kernels.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

using namespace effrt;
using namespace effrt::cuda;

namespace {
/// Runs `body` on the active device, noting what it throws as a failure of
/// `function`. Called with no device active (code loaded by something else
/// than effrt), it ends the process with one line: nothing else can run it.
template <typename Body> void onDevice(const char *function, Body body) {
  ActiveDevice *device = ActiveDevice::current();
  if (!device) {
    std::fprintf(stderr,
                 "effrun: error: %s called with no CUDA device running code\n",
                 function);
    std::_Exit(1);
  }
  try {
    body(*device);
  } catch (const std::exception &e) {
    device->noteError(std::string(function) + ": " + e.what());
  }
}

void check(ActiveDevice &d, CUresult result, const char *what) {
  d.driver().check(result, what);
}

CUstream streamOr(ActiveDevice &d, CUstream stream) {
  return stream ? stream : d.stream();
}

bool capturing(ActiveDevice &d) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(d, d.driver().api().cuStreamIsCapturing(d.stream(), &status),
        "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}
} // namespace

//===----------------------------------------------------------------------===//
// The MLIR GPU runtime ABI
//===----------------------------------------------------------------------===//

extern "C" CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  CUmodule module = nullptr;
  onDevice("mgpuModuleLoad", [&](ActiveDevice &d) {
    d.makeCurrent();
    check(d, d.driver().api().cuModuleLoadData(&module, data),
          "cuModuleLoadData");
  });
  return module;
}

extern "C" CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  CUmodule module = nullptr;
  onDevice("mgpuModuleLoadJIT", [&](ActiveDevice &d) {
    d.makeCurrent();
    CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
    void *values[] = {
        reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
    check(
        d,
        d.driver().api().cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx");
  });
  return module;
}

extern "C" void mgpuModuleUnload(CUmodule module) {
  // At exit, after the device is gone, there is nothing left to unload.
  if (!module || !ActiveDevice::current())
    return;
  onDevice("mgpuModuleUnload", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuModuleUnload(module), "cuModuleUnload");
  });
}

extern "C" CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  CUfunction function = nullptr;
  onDevice("mgpuModuleGetFunction", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuModuleGetFunction(&function, module, name),
          (std::string("cuModuleGetFunction '") + (name ? name : "") + "'")
              .c_str());
  });
  return function;
}

extern "C" void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                 intptr_t gridY, intptr_t gridZ,
                                 intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t smem, CUstream stream,
                                 void **params, void **extra,
                                 size_t /*paramsCount*/) {
  onDevice("mgpuLaunchKernel", [&](ActiveDevice &d) {
    for (intptr_t dim : {gridX, gridY, gridZ, blockX, blockY, blockZ})
      if (dim <= 0 || static_cast<uint64_t>(dim) > 0xffffffffu)
        fail("a launch of ", gridX, "x", gridY, "x", gridZ, " blocks of ",
             blockX, "x", blockY, "x", blockZ, " threads is out of range");
    if (smem < 0)
      fail("a launch with ", smem, " bytes of shared memory");
    auto u = [](intptr_t v) { return static_cast<unsigned int>(v); };
    check(d,
          d.driver().api().cuLaunchKernel(
              function, u(gridX), u(gridY), u(gridZ), u(blockX), u(blockY),
              u(blockZ), static_cast<unsigned int>(smem), streamOr(d, stream),
              params, extra),
          "cuLaunchKernel");
  });
}

extern "C" CUstream mgpuStreamCreate() {
  CUstream stream = nullptr;
  onDevice("mgpuStreamCreate", [&](ActiveDevice &d) { stream = d.stream(); });
  return stream;
}

extern "C" void mgpuStreamDestroy(CUstream) {}

extern "C" void mgpuStreamSynchronize(CUstream) {}

extern "C" void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  onDevice("mgpuStreamWaitEvent", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuStreamWaitEvent(streamOr(d, stream), event, 0),
          "cuStreamWaitEvent");
  });
}

extern "C" CUevent mgpuEventCreate() {
  CUevent event = nullptr;
  onDevice("mgpuEventCreate", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
          "cuEventCreate");
  });
  return event;
}

extern "C" void mgpuEventDestroy(CUevent event) {
  onDevice("mgpuEventDestroy", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuEventDestroy_v2(event), "cuEventDestroy");
  });
}

extern "C" void mgpuEventSynchronize(CUevent event) {
  onDevice("mgpuEventSynchronize", [&](ActiveDevice &d) {
    if (!capturing(d))
      check(d, d.driver().api().cuEventSynchronize(event),
            "cuEventSynchronize");
  });
}

extern "C" void mgpuEventRecord(CUevent event, CUstream stream) {
  onDevice("mgpuEventRecord", [&](ActiveDevice &d) {
    check(d, d.driver().api().cuEventRecord(event, streamOr(d, stream)),
          "cuEventRecord");
  });
}

extern "C" void *mgpuMemAlloc(uint64_t sizeBytes, CUstream, bool) {
  onDevice("mgpuMemAlloc", [&](ActiveDevice &) {
    fail("the step allocates ", sizeBytes,
         " bytes of GPU memory; effopt's plan places every buffer in the "
         "regions (a compiler bug)");
  });
  return nullptr;
}

extern "C" void mgpuMemFree(void *, CUstream) {}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                           CUstream stream) {
  onDevice("mgpuMemcpy", [&](ActiveDevice &d) {
    check(d,
          d.driver().api().cuMemcpyDtoDAsync_v2(
              reinterpret_cast<CUdeviceptr>(dst),
              reinterpret_cast<CUdeviceptr>(src), sizeBytes,
              streamOr(d, stream)),
          "cuMemcpyDtoDAsync");
  });
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             CUstream stream) {
  onDevice("mgpuMemset32", [&](ActiveDevice &d) {
    check(d,
          d.driver().api().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst),
                                            value, count, streamOr(d, stream)),
          "cuMemsetD32Async");
  });
}

extern "C" void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             CUstream stream) {
  onDevice("mgpuMemset16", [&](ActiveDevice &d) {
    check(d,
          d.driver().api().cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst),
                                            value, count, streamOr(d, stream)),
          "cuMemsetD16Async");
  });
}

/// The GPU is chosen by effrun --device; the code's choice is ignored.
extern "C" void mgpuSetDefaultDevice(int32_t) {}

//===----------------------------------------------------------------------===//
// Matrix products (cuBLASLt)
//===----------------------------------------------------------------------===//

namespace {

cudaDataType dataType(int32_t type, const char *operand) {
  switch (type) {
  case 0:
    return CUDA_R_32F;
  case 1:
    return CUDA_R_16F;
  case 2:
    return CUDA_R_16BF;
  }
  fail("element type ", type, " of ", operand,
       " is none of 0 (f32), 1 (f16), 2 (bf16)");
}

void checkLt(const CublasLtSymbols &lt, cublasStatus_t status,
             const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(what, ": ", lt.cublasLtGetStatusString(status));
}

/// Owns the descriptors of one product.
struct Descriptors {
  const CublasLtSymbols &lt;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  explicit Descriptors(const CublasLtSymbols &lt) : lt(lt) {}
  ~Descriptors() {
    if (preference)
      lt.cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l)
        lt.cublasLtMatrixLayoutDestroy(l);
    if (op)
      lt.cublasLtMatmulDescDestroy(op);
  }
};

/// The cuBLASLt layout of one operand of a plan (GemmPlan.h).
cublasLtMatrixLayout_t layout(const CublasLtSymbols &lt, cudaDataType type,
                              const ColumnMajorOperand &operand, int64_t batch,
                              int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  checkLt(lt,
          lt.cublasLtMatrixLayoutCreate(
              &l, type, static_cast<uint64_t>(operand.rows),
              static_cast<uint64_t>(operand.cols), operand.ld),
          "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    checkLt(lt,
            lt.cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
            "cublasLtMatrixLayoutSetAttribute");
    checkLt(lt,
            lt.cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof stride),
            "cublasLtMatrixLayoutSetAttribute");
  }
  return l;
}

size_t elementBytes(int32_t type) { return type == 0 ? 4 : 2; }

/// The largest power of two up to 256 dividing the address of every
/// matrix of an operand: `p`, and `p + b * strideBytes` in a batch.
uint32_t alignmentOf(const void *p, int64_t strideBytes) {
  uint64_t bits =
      reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(strideBytes) | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// C = alpha op(A) op(B) + beta C for `batch` row-major products, as
/// effrt_sgemm_batched defines it (strideC != 0 here); with `bias` (one
/// product, beta 0), + bias[j] in every row, by cuBLASLt's epilogue.
/// cuBLASLt gets the first `workspaceLimit` bytes of the device's workspace
/// (0: all of it). Without an algorithm: fails, or with `mayFail` returns
/// false having queued nothing. `exact`: f32 without TF32 even where the
/// step allows it.
bool matmul(ActiveDevice &d, bool transA, bool transB, int64_t batch, int64_t M,
            int64_t N, int64_t K, float alpha, const void *A, int64_t lda,
            int64_t strideA, const void *B, int64_t ldb, int64_t strideB,
            float beta, void *C, int64_t ldc, int64_t strideC, int32_t abType,
            int32_t cType, const void *bias = nullptr, bool mayFail = false,
            uint64_t workspaceLimit = 0, bool exact = false) {
  if (K <= 0)
    fail("a product with K = ", K, " (C = beta C) is not supported on cuda");
  if (batch > INT32_MAX)
    fail("a batch of ", batch, " products is too many for cuBLASLt");
  const CublasLtSymbols &lt = cublasLt();
  cublasLtHandle_t handle = d.cublasLtHandle();
  cudaDataType ab = dataType(abType, "A and B"), c = dataType(cType, "C");
  // TF32 only where the model was compiled with effc --allow-tf32 (PyTorch's
  // default for matmul is off).
  cublasComputeType_t compute = abType == 0 && d.allowTf32() && !exact
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  GemmPlan plan;
  if (std::string why = planGemm(transA, transB, M, N, K, lda, ldb, ldc, plan);
      !why.empty())
    fail(why);
  Descriptors desc(lt);
  checkLt(lt, lt.cublasLtMatmulDescCreate(&desc.op, compute, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
  cublasOperation_t opFirst = plan.first.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond =
      plan.second.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkLt(lt,
          lt.cublasLtMatmulDescSetAttribute(
              desc.op, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof opFirst),
          "cublasLtMatmulDescSetAttribute");
  checkLt(lt,
          lt.cublasLtMatmulDescSetAttribute(
              desc.op, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof opSecond),
          "cublasLtMatmulDescSetAttribute");
  if (bias) {
    // Row-major C is cuBLASLt's column-major D = C^T (N x M): the epilogue's
    // vector has one element per row of D, a column of C. Its type is D's
    // (cuBLASLt's default).
    if (plan.c.rows != N)
      fail("a bias of ", N, " elements for a product whose column-major D "
           "has ", plan.c.rows, " rows");
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    checkLt(lt,
            lt.cublasLtMatmulDescSetAttribute(
                desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                sizeof epilogue),
            "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    checkLt(lt,
            lt.cublasLtMatmulDescSetAttribute(
                desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                sizeof bias),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  desc.b = layout(lt, ab, plan.first, batch, strideB);
  desc.a = layout(lt, ab, plan.second, batch, strideA);
  desc.c = layout(lt, c, plan.c, batch, strideC);
  checkLt(lt, lt.cublasLtMatmulPreferenceCreate(&desc.preference),
          "cublasLtMatmulPreferenceCreate");
  size_t workspaceBytes = static_cast<size_t>(
      workspaceLimit ? std::min<uint64_t>(workspaceLimit, d.workspaceBytes())
                     : d.workspaceBytes());
  checkLt(lt,
          lt.cublasLtMatmulPreferenceSetAttribute(
              desc.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
              &workspaceBytes, sizeof workspaceBytes),
          "cublasLtMatmulPreferenceSetAttribute");
  // cuBLASLt assumes 256-byte aligned operands unless told: say how aligned
  // each is (views into the arena may be less), so that no algorithm that
  // needs more is chosen.
  const int64_t abBytes = static_cast<int64_t>(elementBytes(abType)),
                cBytes = static_cast<int64_t>(elementBytes(cType));
  struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t bytes;
  } alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                     alignmentOf(B, batch > 1 ? strideB * abBytes : 0)},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                     alignmentOf(A, batch > 1 ? strideA * abBytes : 0)},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                     alignmentOf(C, batch > 1 ? strideC * cBytes : 0)},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                     alignmentOf(C, batch > 1 ? strideC * cBytes : 0)}};
  for (const auto &a : alignments)
    checkLt(lt,
            lt.cublasLtMatmulPreferenceSetAttribute(
                desc.preference, a.attribute, &a.bytes, sizeof a.bytes),
            "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  checkLt(lt,
          lt.cublasLtMatmulAlgoGetHeuristic(handle, desc.op, desc.b, desc.a,
                                            desc.c, desc.c, desc.preference, 1,
                                            &best, &found),
          "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0 && mayFail)
    return false;
  if (found == 0)
    fail("cuBLASLt has no algorithm for a ", typeCodeName(abType), " x ",
         typeCodeName(abType), " -> ", typeCodeName(cType), " product of ", M, "x", K,
         " by ", K, "x", N, " with ", workspaceBytes, " bytes of workspace",
         bias ? " and a bias epilogue" : "");
  checkLt(lt,
          lt.cublasLtMatmul(handle, desc.op, &alpha, B, desc.b, A, desc.a,
                            &beta, C, desc.c, C, desc.c, &best.algo,
                            reinterpret_cast<void *>(d.workspace()),
                            workspaceBytes, d.stream()),
          "cublasLtMatmul");
  return true;
}

} // namespace

extern "C" void effrt_cuda_gemm(int32_t transA, int32_t transB, int64_t M,
                                int64_t N, int64_t K, float alpha,
                                const void *A, int64_t lda, const void *B,
                                int64_t ldb, float beta, void *C, int64_t ldc,
                                int32_t abType, int32_t cType) {
  onDevice("effrt_cuda_gemm", [&](ActiveDevice &d) {
    if (M < 0 || N < 0 || K < 0)
      fail("a product of ", M, "x", K, " by ", K, "x", N);
    if (M == 0 || N == 0)
      return;
    matmul(d, transA != 0, transB != 0, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0,
           beta, C, ldc, 0, abType, cType);
  });
}

extern "C" void effrt_cuda_gemm_bias(int32_t transA, int32_t transB,
                                     int64_t M, int64_t N, int64_t K,
                                     float alpha, const void *A, int64_t lda,
                                     const void *B, int64_t ldb, void *C,
                                     int64_t ldc, const void *bias,
                                     int32_t abType, int32_t cType) {
  onDevice("effrt_cuda_gemm_bias", [&](ActiveDevice &d) {
    if (M < 0 || N < 0 || K < 0)
      fail("a product of ", M, "x", K, " by ", K, "x", N);
    if (M == 0 || N == 0)
      return;
    if (!bias)
      fail("a bias epilogue without a bias");
    if (matmul(d, transA != 0, transB != 0, 1, M, N, K, alpha, A, lda, 0, B,
               ldb, 0, 0.0f, C, ldc, 0, abType, cType, bias,
               /*mayFail=*/true))
      return;
    // No algorithm with the epilogue for this shape or layout: C = ones[M]
    // x bias[N] (a K = 1 product, exact), then C += op(A) op(B) (beta 1:
    // cuBLASLt adds C to its f32 accumulator and rounds once, as the
    // epilogue does). The ones live at the end of the workspace, which the
    // products then do not use.
    const uint64_t onesBytes =
        (static_cast<uint64_t>(M) * elementBytes(cType) + 255) / 256 * 256;
    if (2 * onesBytes > d.workspaceBytes())
      fail("cuBLASLt has no bias epilogue for a product of ", M, " rows, "
           "and the workspace has no room for their ones");
    const uint64_t limit = d.workspaceBytes() - onesBytes;
    CUdeviceptr ones = d.workspace() + limit;
    const DriverSymbols &cu = d.driver().api();
    if (cType == 0)
      check(d, cu.cuMemsetD32Async(ones, 0x3F800000u, static_cast<size_t>(M),
                                   d.stream()),
            "cuMemsetD32Async");
    else
      check(d, cu.cuMemsetD16Async(ones, cType == 1 ? 0x3C00 : 0x3F80,
                                   static_cast<size_t>(M), d.stream()),
            "cuMemsetD16Async");
    matmul(d, false, false, 1, M, N, 1, 1.0f, reinterpret_cast<void *>(ones),
           1, 0, bias, N, 0, 0.0f, C, ldc, 0, cType, cType, nullptr, false,
           limit, /*exact=*/true);
    matmul(d, transA != 0, transB != 0, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0,
           1.0f, C, ldc, 0, abType, cType, nullptr, false, limit);
  });
}

extern "C" void effrt_cuda_gemm_batched(
    int32_t transA, int32_t transB, int64_t batch, int64_t M, int64_t N,
    int64_t K, float alpha, const void *A, int64_t lda, int64_t strideA,
    const void *B, int64_t ldb, int64_t strideB, float beta, void *C,
    int64_t ldc, int64_t strideC, int32_t abType, int32_t cType) {
  onDevice("effrt_cuda_gemm_batched", [&](ActiveDevice &d) {
    if (batch < 0 || M < 0 || N < 0 || K < 0)
      fail("a batch of ", batch, " products of ", M, "x", K, " by ", K, "x", N);
    if (batch == 0 || M == 0 || N == 0)
      return;
    if (strideC != 0 || batch == 1) {
      matmul(d, transA != 0, transB != 0, batch, M, N, K, alpha, A, lda,
             strideA, B, ldb, strideB, beta, C, ldc, strideC, abType, cType);
      return;
    }
    // Every batch adds into the one C: in order on the stream, beta once.
    size_t ab = elementBytes(abType);
    for (int64_t b = 0; b < batch; ++b)
      matmul(d, transA != 0, transB != 0, 1, M, N, K, alpha,
             static_cast<const std::byte *>(A) + b * strideA * ab, lda, 0,
             static_cast<const std::byte *>(B) + b * strideB * ab, ldb, 0,
             b == 0 ? beta : 1.0f, C, ldc, 0, abType, cType);
  });
}

//===----------------------------------------------------------------------===//
// Fused attention (Attention.cu)
//===----------------------------------------------------------------------===//


extern "C" void effrt_cuda_attention_fwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, void *o, int64_t oB1, int64_t oB2, int64_t oT,
    float *lse, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D,
    int64_t Dv, float scale, int32_t causal, int32_t type) {
  onDevice("effrt_cuda_attention_fwd_strided", [&](ActiveDevice &d) {
    AttentionProblem p =
        attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type);
    EffrtAttnLayout layout = contiguousLayout(p);
    layout.q = {qB1, qB2, qT};
    layout.k = {kB1, kB2, kT};
    layout.v = {vB1, vB2, vT};
    layout.o = {oB1, oB2, oT};
    d.attentionKernels().forward(d.stream(), p, layout, q, k, v, o, lse);
  });
}

extern "C" void effrt_cuda_attention_bwd_strided(
    const void *q, int64_t qB1, int64_t qB2, int64_t qT, const void *k,
    int64_t kB1, int64_t kB2, int64_t kT, const void *v, int64_t vB1,
    int64_t vB2, int64_t vT, const void *o, int64_t oB1, int64_t oB2,
    int64_t oT, const float *lse, const void *dout, int64_t dB1, int64_t dB2,
    int64_t dT, void *dq, int64_t dqB1, int64_t dqB2, int64_t dqT, void *dk,
    int64_t dkB1, int64_t dkB2, int64_t dkT, void *dv, int64_t dvB1,
    int64_t dvB2, int64_t dvT, float *workspace, int64_t B1, int64_t B2,
    int64_t Tq, int64_t Tk, int64_t D, int64_t Dv, float scale, int32_t causal,
    int32_t type) {
  onDevice("effrt_cuda_attention_bwd_strided", [&](ActiveDevice &d) {
    AttentionProblem p =
        attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type);
    EffrtAttnLayout layout{};
    layout.q = {qB1, qB2, qT};
    layout.k = {kB1, kB2, kT};
    layout.v = {vB1, vB2, vT};
    layout.o = {oB1, oB2, oT};
    layout.dout = {dB1, dB2, dT};
    layout.dq = {dqB1, dqB2, dqT};
    layout.dk = {dkB1, dkB2, dkT};
    layout.dv = {dvB1, dvB2, dvT};
    d.attentionKernels().backward(d.stream(), p, layout, q, k, v, o, lse, dout,
                                  dq, dk, dv, workspace);
  });
}

//===----------------------------------------------------------------------===//
// Convolutions (cuDNN, Convolution.cpp)
//===----------------------------------------------------------------------===//

namespace {
void convolve(const char *function, int32_t kind, const void *a, const void *b,
              void *out, std::array<int64_t, 18> shape, int32_t type) {
  onDevice(function, [&](ActiveDevice &d) {
    ConvProblem p;
    p.kind = kind;
    p.type = type;
    p.shape = shape;
    d.convolutions().run(p, a, b, out, d.stream(), d.workspace(),
                         d.workspaceBytes(), d.allowTf32());
  });
}
} // namespace

#define EFFRT_CONV2D_SHAPE_VALUES                                              \
  {N,        C,       H,         W,         F,          KH,                    \
   KW,       OH,      OW,        strideH,   strideW,    dilationH,             \
   dilationW, padTop, padLeft,   padBottom, padRight,   groups}

extern "C" void effrt_cuda_conv2d_fwd(const void *x, const void *w, void *y,
                                      EFFRT_CONV2D_SHAPE_ARGS, int32_t type) {
  convolve("effrt_cuda_conv2d_fwd", EFFRT_CONV2D_FWD, x, w, y,
           EFFRT_CONV2D_SHAPE_VALUES, type);
}

extern "C" void effrt_cuda_conv2d_bwd_data(const void *dy, const void *w,
                                           void *dx, EFFRT_CONV2D_SHAPE_ARGS,
                                           int32_t type) {
  convolve("effrt_cuda_conv2d_bwd_data", EFFRT_CONV2D_BWD_DATA, dy, w, dx,
           EFFRT_CONV2D_SHAPE_VALUES, type);
}

extern "C" void effrt_cuda_conv2d_bwd_weights(const void *x, const void *dy,
                                              void *dw,
                                              EFFRT_CONV2D_SHAPE_ARGS,
                                              int32_t type) {
  convolve("effrt_cuda_conv2d_bwd_weights", EFFRT_CONV2D_BWD_WEIGHTS, x, dy, dw,
           EFFRT_CONV2D_SHAPE_VALUES, type);
}

#undef EFFRT_CONV2D_SHAPE_VALUES

// The contiguous entry points (code compiled before the strided ones).
extern "C" void effrt_cuda_attention_fwd(const void *q, const void *k,
                                         const void *v, void *o, float *lse,
                                         int64_t B1, int64_t B2, int64_t Tq,
                                         int64_t Tk, int64_t D, int64_t Dv,
                                         float scale, int32_t causal,
                                         int32_t type) {
  onDevice("effrt_cuda_attention_fwd", [&](ActiveDevice &d) {
    AttentionProblem p =
        attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type);
    d.attentionKernels().forward(d.stream(), p, contiguousLayout(p), q, k, v,
                                 o, lse);
  });
}

extern "C" void effrt_cuda_attention_bwd(
    const void *q, const void *k, const void *v, const void *o,
    const float *lse, const void *dout, void *dq, void *dk, void *dv,
    float *workspace, int64_t B1, int64_t B2, int64_t Tq, int64_t Tk, int64_t D,
    int64_t Dv, float scale, int32_t causal, int32_t type) {
  onDevice("effrt_cuda_attention_bwd", [&](ActiveDevice &d) {
    AttentionProblem p =
        attentionProblem(B1, B2, Tq, Tk, D, Dv, scale, causal, type);
    d.attentionKernels().backward(d.stream(), p, contiguousLayout(p), q, k, v,
                                  o, lse, dout, dq, dk, dv, workspace);
  });
}

//===----------------------------------------------------------------------===//
// Collectives (effrt_cuda_*_f32: the CPU's effrt_*_f32 on device pointers)
//===----------------------------------------------------------------------===//
//
// Each is queued, never waited for on the host: a start forks the device's
// communication stream from the step stream (an event), queues the
// collective there through the device's Collectives (NCCL; one rank
// without NCCL: copies), and records its end; the wait makes the step
// stream wait for that end. So a collective moves while the kernels queued
// after its start run, the step stays one stream's work as far as the host
// is concerned, and a CUDA graph capture follows the fork and the join.

namespace {
/// The span of `count` floats at device address `data`, which must lie in
/// the step's regions.
DeviceSpan floatSpan(ActiveDevice &d, const char *what, const float *data,
                     int64_t count) {
  if (count < 0)
    fail(what, " of ", count, " elements");
  uint64_t bytes = static_cast<uint64_t>(count) * sizeof(float);
  std::optional<DeviceSpan> span = d.spanOf(data, bytes);
  if (!span)
    fail(what, " of ", bytes, " bytes outside the step's memory");
  return *span;
}

/// `count` times the world size, which must not overflow.
int64_t timesRanks(ActiveDevice &d, const char *what, int64_t count) {
  int64_t n = d.device().collectives().worldSize();
  if (count < 0 || count > INT64_MAX / n)
    fail(what, " of ", count, " elements a rank");
  return count * n;
}

int64_t startAllReduce(ActiveDevice &d, float *data, int64_t count) {
  DeviceSpan span = floatSpan(d, "all-reduce", data, count);
  return d.startCollective(
      [&](Device &device, Collectives &c) {
        c.allReduceSum(device, span, DType::F32);
      },
      data, data);
}

int64_t startReduceScatter(ActiveDevice &d, const float *send, float *recv,
                           int64_t recvCount) {
  DeviceSpan in = floatSpan(d, "reduce-scatter", send,
                            timesRanks(d, "reduce-scatter", recvCount));
  DeviceSpan out = floatSpan(d, "reduce-scatter", recv, recvCount);
  return d.startCollective(
      [&](Device &device, Collectives &c) {
        c.reduceScatterSum(device, in, out, DType::F32);
      },
      send, recv);
}

int64_t startAllGather(ActiveDevice &d, const float *send, float *recv,
                       int64_t sendCount) {
  DeviceSpan in = floatSpan(d, "all-gather", send, sendCount);
  DeviceSpan out =
      floatSpan(d, "all-gather", recv, timesRanks(d, "all-gather", sendCount));
  return d.startCollective(
      [&](Device &device, Collectives &c) { c.allGather(device, in, out); },
      send, recv);
}
} // namespace

extern "C" void effrt_cuda_allreduce_sum_f32(float *data, int64_t count) {
  onDevice("effrt_cuda_allreduce_sum_f32", [&](ActiveDevice &d) {
    d.waitCollective(startAllReduce(d, data, count), data, data);
  });
}

extern "C" void effrt_cuda_reduce_scatter_sum_f32(const float *send,
                                                  float *recv,
                                                  int64_t recvCount) {
  onDevice("effrt_cuda_reduce_scatter_sum_f32", [&](ActiveDevice &d) {
    d.waitCollective(startReduceScatter(d, send, recv, recvCount), send, recv);
  });
}

extern "C" void effrt_cuda_all_gather_f32(const float *send, float *recv,
                                          int64_t sendCount) {
  onDevice("effrt_cuda_all_gather_f32", [&](ActiveDevice &d) {
    d.waitCollective(startAllGather(d, send, recv, sendCount), send, recv);
  });
}

extern "C" int64_t effrt_cuda_allreduce_sum_f32_start(float *data,
                                                      int64_t count) {
  int64_t handle = 0;
  onDevice("effrt_cuda_allreduce_sum_f32_start",
           [&](ActiveDevice &d) { handle = startAllReduce(d, data, count); });
  return handle;
}

extern "C" int64_t effrt_cuda_reduce_scatter_sum_f32_start(const float *send,
                                                           float *recv,
                                                           int64_t recvCount) {
  int64_t handle = 0;
  onDevice("effrt_cuda_reduce_scatter_sum_f32_start", [&](ActiveDevice &d) {
    handle = startReduceScatter(d, send, recv, recvCount);
  });
  return handle;
}

extern "C" int64_t effrt_cuda_all_gather_f32_start(const float *send,
                                                   float *recv,
                                                   int64_t sendCount) {
  int64_t handle = 0;
  onDevice("effrt_cuda_all_gather_f32_start", [&](ActiveDevice &d) {
    handle = startAllGather(d, send, recv, sendCount);
  });
  return handle;
}

extern "C" void effrt_cuda_collective_wait(int64_t request, const float *send,
                                           const float *recv) {
  onDevice("effrt_cuda_collective_wait",
           [&](ActiveDevice &d) { d.waitCollective(request, send, recv); });
}

extern "C" void effrt_cuda_shard_f32(const float *whole, float *shard,
                                     int64_t shardCount) {
  // This rank's block of its own tensor: a copy on the step stream.
  onDevice("effrt_cuda_shard_f32", [&](ActiveDevice &d) {
    int64_t rank = d.device().collectives().rank();
    DeviceSpan in =
        floatSpan(d, "shard", whole, timesRanks(d, "shard", shardCount));
    DeviceSpan out = floatSpan(d, "shard", shard, shardCount);
    in.offset += static_cast<uint64_t>(rank * shardCount) * sizeof(float);
    in.bytes = out.bytes;
    d.device().copyWithinDevice(in, out);
  });
}

extern "C" void effrt_cuda_host_task_copy(int32_t toHost, int32_t region,
                                          int64_t offset, int64_t staging,
                                          int64_t bytes) {
  onDevice("effrt_cuda_host_task_copy", [&](ActiveDevice &d) {
    d.addHostTaskCopy(toHost != 0, region, offset, staging, bytes);
  });
}

extern "C" int64_t effrt_cuda_host_task_start(effrt_host_task_fn task) {
  int64_t handle = 0;
  onDevice("effrt_cuda_host_task_start",
           [&](ActiveDevice &d) { handle = d.startHostTask(task); });
  return handle;
}

extern "C" void effrt_cuda_host_task_wait(int64_t handle) {
  onDevice("effrt_cuda_host_task_wait",
           [&](ActiveDevice &d) { d.waitHostTask(handle); });
}
