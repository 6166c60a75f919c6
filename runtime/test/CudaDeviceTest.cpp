//===- CudaDeviceTest.cpp - The CUDA device where no GPU is needed --------===//
//
// What of the CUDA device runs without a GPU: the manifest's CUDA fields,
// architecture coverage, the driver's absence (and the toolkit's stub
// driver, against which every driver symbol the device uses is bound), and
// sessions of cuda models that load no code. Runs on a GPU are lit tests
// of the feature cuda-device (test/Runtime/cuda-device.test).
//
//===----------------------------------------------------------------------===//

#include "TestModels.h"
#include "UnitTest.h"

#include "../src/cuda/Attention.h"
#include "../src/cuda/CudaDevice.h"
#include "../src/cuda/CudaManifest.h"
#include "../src/cuda/GemmPlan.h"

#include "effrt/DynamicLibrary.h"
#include "effrt/Effx.h"
#include "effrt/Kernels.h"
#include "effrt/Session.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <sys/stat.h>

using namespace effrt;
using namespace effrt::cuda;
using namespace effrt::test;
using json = nlohmann::json;

static EffxFile openCudaModel(const std::function<void(json &)> &edit = {}) {
  EffxParts parts = dotModel(/*cuda=*/true);
  if (edit)
    edit(parts.manifest);
  return EffxFile::fromBytes(bytesFromVector(packEffx(parts)), "m.effx");
}

static CudaManifest cudaManifest(const std::function<void(json &)> &edit) {
  EffxFile file = openCudaModel(edit);
  return readCudaManifest(file.path(), file.manifest());
}

TEST(cudaArchNames) {
  std::optional<CudaArch> sm90 = parseCudaArch("sm_90");
  CHECK(sm90 && sm90->major == 9 && sm90->minor == 0 && !sm90->ptx &&
        !sm90->specific);
  std::optional<CudaArch> sm86 = parseCudaArch("sm_86");
  CHECK(sm86 && sm86->major == 8 && sm86->minor == 6);
  std::optional<CudaArch> sm100a = parseCudaArch("sm_100a");
  CHECK(sm100a && sm100a->major == 10 && sm100a->minor == 0 &&
        sm100a->specific);
  std::optional<CudaArch> ptx = parseCudaArch("compute_90");
  CHECK(ptx && ptx->ptx && ptx->major == 9);
  for (const char *bad :
       {"sm90", "sm_9", "sm_1000", "sm_0x", "sm_05", "compute_", "gfx90a", ""})
    CHECK(!parseCudaArch(bad));
}

TEST(cudaArchCoverage) {
  // effc --target cuda: sm_80 and sm_90 SASS, compute_90 PTX.
  CudaManifest m = cudaManifest([](json &j) {
    j["cuda_archs"] = {"sm_80", "sm_90"};
    j["cuda_ptx"] = "compute_90";
  });
  CHECK_EQ(m.describe(), std::string("sm_80, sm_90, compute_90"));
  CHECK(m.covers(8, 0)); // A100
  CHECK(m.covers(8, 6)); // sm_80 SASS runs on 8.x
  CHECK(m.covers(8, 9));
  CHECK(m.covers(9, 0));  // H100
  CHECK(m.covers(10, 0)); // compute_90 PTX, compiled by the driver
  CHECK(m.covers(12, 0));
  CHECK(!m.covers(7, 0)); // V100
  CHECK(!m.covers(7, 5));
  // Without PTX, SASS runs only within its major version.
  m = cudaManifest([](json &j) {
    j["cuda_archs"] = {"sm_80", "sm_90"};
    j.erase("cuda_ptx");
  });
  CHECK(m.covers(8, 7));
  CHECK(!m.covers(10, 0));
  // Architecture-specific SASS runs only on its own GPU.
  m = cudaManifest([](json &j) {
    j["cuda_archs"] = {"sm_90a"};
    j.erase("cuda_ptx");
  });
  CHECK(m.covers(9, 0));
  CHECK(!m.covers(9, 1));
  // The test model: PTX for compute_80 only.
  m = cudaManifest({});
  CHECK(m.archs.empty());
  CHECK(m.covers(8, 0) && m.covers(9, 0) && !m.covers(7, 5));
  CHECK_EQ(m.workspaceBytes, uint64_t(4) << 20);
  CHECK(!m.allowTf32);
}

TEST(cudaManifestErrors) {
  CHECK_ERROR(cudaManifest([](json &j) { j.erase("cuda_archs"); }),
              "m.effx: manifest: 'cuda_archs' is missing");
  CHECK_ERROR(cudaManifest([](json &j) { j["cuda_archs"] = "sm_90"; }),
              "m.effx: manifest: 'cuda_archs' must be an array of names like "
              "\"sm_90\" (got \"sm_90\")");
  CHECK_ERROR(cudaManifest([](json &j) { j["cuda_archs"] = {"compute_90"}; }),
              "'cuda_archs' must be an array of names like \"sm_90\"");
  CHECK_ERROR(cudaManifest([](json &j) { j["cuda_ptx"] = "sm_90"; }),
              "m.effx: manifest: 'cuda_ptx' must be a name like "
              "\"compute_90\" (got \"sm_90\")");
  CHECK_ERROR(cudaManifest([](json &j) { j.erase("cuda_ptx"); }),
              "m.effx: manifest: the device code is for no GPU ('cuda_archs' "
              "is empty and there is no 'cuda_ptx')");
  CHECK_ERROR(cudaManifest([](json &j) { j["workspace_bytes"] = -1; }),
              "m.effx: manifest: 'workspace_bytes' must be a non-negative "
              "integer (got -1)");
  CHECK_ERROR(cudaManifest([](json &j) { j["host_staging_bytes"] = "1M"; }),
              "m.effx: manifest: 'host_staging_bytes' must be a non-negative "
              "integer (got \"1M\")");
  CHECK_EQ(cudaManifest([](json &j) { j["host_staging_bytes"] = 164608; })
               .hostStagingBytes,
           uint64_t(164608));
  CHECK_EQ(cudaManifest([](json &) {}).hostStagingBytes, 0u);
  CHECK_ERROR(cudaManifest([](json &j) { j["allow_tf32"] = 1; }),
              "m.effx: manifest: 'allow_tf32' must be true or false (got 1)");
  CudaManifest tf32 = cudaManifest([](json &j) {
    j["allow_tf32"] = true;
    j["workspace_bytes"] = 0;
  });
  CHECK(tf32.allowTf32);
  CHECK_EQ(tf32.workspaceBytes, 0u);
}

/// cuBLAS's definition of its column-major product, on the host:
/// C = alpha op(X) op(Y) + beta C with X, Y, C as the plan lays them out.
static void columnMajorProduct(const GemmPlan &p, float alpha, const float *X,
                               const float *Y, float beta, float *C) {
  auto at = [](const ColumnMajorOperand &o, const float *data, int64_t i,
               int64_t j) {
    // Element (i, j) of op(o).
    return o.transposed ? data[j + i * o.ld] : data[i + j * o.ld];
  };
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < p.k; ++l)
        sum += double(at(p.first, X, i, l)) * at(p.second, Y, l, j);
      float &c = C[i + j * p.c.ld];
      c = alpha * float(sum) + beta * c;
    }
}

TEST(cudaGemmPlanIsSgemm) {
  // Every transpose and shape class (one row, one column, K = 1, padded
  // leading dimensions, the small unused ones compiled code passes for a
  // single row): the planned column-major product gives effrt_sgemm's C.
  struct Case {
    int64_t M, N, K, pad;
  } cases[] = {{3, 5, 4, 0}, {3, 5, 4, 3}, {1, 6, 2, 0}, {7, 1, 3, 2},
               {4, 4, 1, 0}, {1, 1, 5, 0}, {2, 3, 7, 1}};
  uint32_t seed = 1;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return float(int(seed >> 27) - 16) / 8.0f;
  };
  int checked = 0;
  for (const Case &c : cases)
    for (int transA = 0; transA < 2; ++transA)
      for (int transB = 0; transB < 2; ++transB) {
        int64_t lda = (transA ? c.M : c.K) + c.pad;
        int64_t ldb = (transB ? c.K : c.N) + c.pad;
        int64_t ldc = c.N + c.pad;
        std::vector<float> A((transA ? c.K : c.M) * lda),
            B((transB ? c.N : c.K) * ldb), C(c.M * ldc);
        for (float &v : A)
          v = next();
        for (float &v : B)
          v = next();
        for (float &v : C)
          v = next();
        std::vector<float> want = C, got = C;
        effrt_sgemm(transA, transB, c.M, c.N, c.K, 0.5f, A.data(), lda,
                    B.data(), ldb, -2.0f, want.data(), ldc);
        GemmPlan plan;
        CHECK_EQ(planGemm(transA, transB, c.M, c.N, c.K, lda, ldb, ldc, plan),
                 std::string());
        columnMajorProduct(plan, 0.5f, B.data(), A.data(), -2.0f, got.data());
        for (size_t i = 0; i < want.size(); ++i)
          CHECK(std::fabs(want[i] - got[i]) <=
                1e-5f * (1 + std::fabs(want[i])));
        // effrt_cuda_gemm_bias: cuBLASLt's bias epilogue adds its vector
        // along the rows of column-major D, which must be C's N columns.
        CHECK_EQ(plan.c.rows, c.N);
        CHECK_EQ(plan.c.cols, c.M);
        ++checked;
      }
  CHECK_EQ(checked, 28);
  // A single row (row-major) may carry a leading dimension below its length.
  GemmPlan plan;
  CHECK_EQ(planGemm(false, false, 1, 3, 5, 1, 3, 3, plan), std::string());
  CHECK_EQ(plan.second.ld, 5);
  CHECK_EQ(planGemm(false, false, 4, 2, 3, 2, 2, 2, plan),
           std::string("leading dimension 2 of A is below its 3 elements per "
                       "column"));
}

TEST(cudaAttentionRefusesWhatItCannotRun) {
  // The shape checks run before any kernel is looked for: the same with or
  // without a GPU (and without nvcc at build time).
  auto problem = [](int32_t type, int64_t d) {
    AttentionProblem p;
    p.heads = 384;
    p.tq = p.tk = 1024;
    p.d = d;
    p.scale = 0.125f;
    p.causal = true;
    p.type = type;
    return p;
  };
  alignas(16) static char buffer[64];
  // Operands as checkAttention takes them: address, strides, written.
  const EffrtAttnStrides rows{1024 * 64, 1024 * 64, 64}, oddRows{0, 0, 3};
  AttentionOperand aligned{buffer, rows, true}, odd{buffer + 2, rows, false},
      oddResult{buffer, oddRows, true}, oddInput{buffer, oddRows, false};
  for (int32_t type : {1, 2})
    for (int64_t d : {64, 128})
      CHECK(checkAttention(problem(type, d), {aligned, aligned}).empty());
  for (int64_t d : {1, 3, 64, 100, 128})
    CHECK(checkAttention(problem(0, d), {odd, oddResult}).empty());
  CHECK(checkAttention(problem(2, 96), {aligned}) ==
        "head dimension 96 is not supported for bf16 (64 and 128 are)");
  CHECK(checkAttention(problem(1, 32), {aligned}) ==
        "head dimension 32 is not supported for f16 (64 and 128 are)");
  CHECK(checkAttention(problem(0, 256), {aligned}) ==
        "head dimension 256 is not supported for f32 (1 to 128 are)");
  CHECK(checkAttention(problem(3, 64), {aligned}) ==
        "element type 3 is none of 0 (f32), 1 (f16), 2 (bf16)");
  // Two-byte aligned 16-bit operands and odd strides of a result: the
  // results are stored two elements at a time. Inputs with odd strides are
  // read two bytes at a time.
  CHECK(checkAttention(problem(2, 64), {aligned, odd})
            .rfind("bf16 operands must be 4-byte aligned", 0) == 0);
  CHECK(checkAttention(problem(1, 64), {aligned, oddResult}) ==
        "f16 results need even strides (one has 0, 0, 3)");
  CHECK(checkAttention(problem(1, 64), {aligned, oddInput}).empty());
  CHECK(rowsAligned16({aligned}));
  CHECK(!rowsAligned16({aligned, oddInput}));
  CHECK(!rowsAligned16({{buffer + 4, rows, false}}));
  AttentionProblem badHeads = problem(2, 64);
  badHeads.b2 = 5;
  CHECK(checkAttention(badHeads, {aligned}) ==
        "384 heads are not B1 x 5 heads");
  AttentionProblem noKeys = problem(2, 64);
  noKeys.tk = 0;
  CHECK(checkAttention(noKeys, {aligned}) ==
        "no keys (Tk = 0): softmax over nothing");
  AttentionProblem manyHeads = problem(2, 64);
  manyHeads.heads = 70000;
  CHECK(checkAttention(manyHeads, {aligned}) ==
        "70000 heads (batch x heads) are too many (at most 65535)");
  AttentionProblem longSequence = problem(0, 64);
  longSequence.tk = int64_t(1) << 31;
  CHECK(checkAttention(longSequence, {aligned}).find("too long") !=
        std::string::npos);
}

TEST(cudaDriverAbsent) {
  CHECK_ERROR(openDriver({"libeffrt-absent.so.1"}),
              "cannot load the CUDA driver (tried libeffrt-absent.so.1): "
              "libeffrt-absent.so.1: cannot open shared object file");
}

TEST(cudaStubDriverHasEverySymbol) {
  // The toolkit's stub libcuda.so exports the driver API of its CUDA
  // version: binding succeeds (every symbol the device calls exists under
  // that name), then cuInit says it is a stub.
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  struct stat st;
  if (::stat(stub, &st) != 0) {
    std::printf("  (no CUDA toolkit stub at %s: not checked)\n", stub);
    return;
  }
  CHECK_ERROR(openDriver({stub}),
              "the CUDA driver (/usr/local/cuda/lib64/stubs/libcuda.so) "
              "cannot start: cuInit: CUDA_ERROR_STUB_LIBRARY");
  CHECK_ERROR(openDriver({stub}), "no NVIDIA driver is installed");
}

TEST(cudaCublasLtHasEverySymbol) {
  if (!DynamicLibrary::available(
          {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"})) {
    std::printf("  (no libcublasLt.so.13 here: not checked)\n");
    return;
  }
  // Binds every cuBLASLt function effrt_cuda_gemm calls; no GPU needed.
  CHECK(cublasLtVersion() >= 130000u);
}

TEST(ncclHasEverySymbol) {
  if (!DynamicLibrary::available({"libnccl.so.2",
                                  "/usr/local/cuda/lib/libnccl.so.2",
                                  "/usr/local/cuda/lib64/libnccl.so.2"})) {
    std::printf("  (no libnccl.so.2 here: not checked)\n");
    return;
  }
  // Binds every NCCL function the collectives call; no GPU needed.
  CHECK(ncclVersion() >= 20900); // graph capture: NCCL 2.9 and later
}

TEST(ncclRefusesHostMemory) {
  if (!DynamicLibrary::available({"libnccl.so.2",
                                  "/usr/local/cuda/lib/libnccl.so.2",
                                  "/usr/local/cuda/lib64/libnccl.so.2"})) {
    std::printf("  (no libnccl.so.2 here: not checked)\n");
    return;
  }
  // NCCL runs on a GPU's stream: a device without one is refused before
  // any communicator is made. Host collectives go to the host's (one rank).
  std::shared_ptr<Collectives> nccl = ncclCollectives(nullptr);
  CHECK_EQ(nccl->name(), std::string("nccl"));
  CHECK_EQ(nccl->worldSize(), 1);
  DeviceOptions options("host.effx");
  std::unique_ptr<Device> device = createHostMemoryDevice(options);
  device->allocate({0, 64, 0});
  CHECK_ERROR(nccl->allReduceSum(*device, {RegionKind::Arena, 0, 64},
                                 DType::F32),
              "host.effx: NCCL all-reduce on device ");
  CHECK_ERROR(nccl->allGather(*device, {RegionKind::Arena, 0, 32},
                              {RegionKind::Arena, 32, 32}),
              "which has no GPU stream (NCCL runs the collectives of models "
              "compiled with effc --target cuda)");
  float send[2] = {1, 2}, recv[2] = {0, 0};
  nccl->allGatherHost(send, recv, sizeof send);
  CHECK(recv[0] == 1 && recv[1] == 2);
}

TEST(ncclMissingIsOneLine) {
  ::setenv("EFFRT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  CHECK_ERROR(ncclCollectives(nullptr),
              "collectives on the GPU need NCCL (libnccl.so.2, in the CUDA "
              "toolkit's lib/ or the libnccl2 package): cannot load NCCL "
              "(tried /nonexistent/libnccl.so.2): ");
  ::unsetenv("EFFRT_NCCL_LIBRARY");
}

TEST(cudaSessionNeedsTheDriver) {
  std::string path = tempPath("dot-cuda.effx");
  writeFileBytes(path, packEffx(dotModel(true)));
  if (DynamicLibrary::available({"libcuda.so.1"})) {
    std::printf("  (libcuda.so.1 loads here: the no-driver path is not "
                "checked)\n");
  } else {
    CHECK_ERROR(Session::open(path),
                "dot-cuda.effx: target 'cuda' needs an NVIDIA GPU and its "
                "driver: cannot load the CUDA driver (tried libcuda.so.1): "
                "libcuda.so.1: ");
  }
  // A bad manifest is reported before the driver is looked for.
  EffxParts parts = dotModel(true);
  parts.manifest["cuda_ptx"] = 90;
  std::string bad = tempPath("dot-cuda-bad.effx");
  writeFileBytes(bad, packEffx(parts));
  CHECK_ERROR(Session::open(bad), "dot-cuda-bad.effx: manifest: 'cuda_ptx' "
                                  "must be a name like \"compute_90\" (got "
                                  "90)");
}

TEST(cudaCheckpointsAreTheCpus) {
  // The CPU and CUDA dot models have one state layout: a checkpoint of
  // either loads into the other. A session that loads no code holds a cuda
  // model's state in host memory, without a GPU.
  std::string cpuPath = tempPath("dot.effx"), cudaPath = tempPath("dot2.effx");
  writeFileBytes(cpuPath, packEffx(dotModel(false)));
  writeFileBytes(cudaPath, packEffx(dotModel(true)));
  Session cpu = Session::open(cpuPath);
  Session gpu = Session::open(cudaPath, [] {
    SessionOptions o;
    o.loadCode = false;
    return o;
  }());
  CHECK_EQ(stateLayoutId(cpu.manifest()), stateLayoutId(gpu.manifest()));
  float x[12];
  for (int i = 0; i < 12; ++i)
    x[i] = static_cast<float>(i % 5) - 2.0f;
  cpu.setInputBytes("x", x, sizeof x);
  cpu.step();
  std::string ckpt = tempPath("dot.safetensors");
  cpu.save(ckpt);
  gpu.load(ckpt);
  CHECK_EQ(gpu.globalStep(), 1);
  CHECK_EQ(gpu.optimizerStep().value_or(-1), 1);
  Tensor w = gpu.readState("w");
  // w -= 0.125 x^T 1: column sums of x are -2, -1, 0 ... exactly.
  float sums[3] = {0, 0, 0};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      sums[c] += x[r * 3 + c];
  CHECK_EQ(w.load<float>(0), 0.5f - 0.125f * sums[0]);
  CHECK_EQ(w.load<float>(2), 0.75f - 0.125f * sums[2]);
}

TEST(cpuModelRefusesDevice) {
  std::string path = tempPath("dot-device.effx");
  writeFileBytes(path, packEffx(dotModel(false)));
  SessionOptions o;
  o.device = 1;
  CHECK_ERROR(Session::open(path, o),
              "dot-device.effx: --device 1: the model is compiled for "
              "cpu-x86_64, which runs on this machine's CPU");
}
