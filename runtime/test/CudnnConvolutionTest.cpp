//===- CudnnConvolutionTest.cpp - cuDNN convolutions where no GPU is -----===//
//
// What of the cuDNN convolutions (src/cuda/Convolution.cpp) runs without a
// GPU: libcudnn.so.9 binds every symbol they call, cuDNN finalizes the
// tensor, convolution and operation descriptors they build (so every
// attribute name, type and count is one cuDNN accepts), the engine filter,
// and the shape checks. Plans and execution need a GPU: the GPU suite
// trains the CNNs through them (scripts/gpu/suite.py).
//
//===----------------------------------------------------------------------===//

#include "UnitTest.h"

#include "../src/cuda/Convolution.h"

#include "effrt/DynamicLibrary.h"
#include "effrt/Kernels.h"

#include <cstdio>

using namespace effrt;
using namespace effrt::cuda;

namespace {

bool haveCudnn() {
  if (DynamicLibrary::available({"libcudnn.so.9",
                                 "/usr/local/cuda/lib64/libcudnn.so.9",
                                 "/usr/local/cuda/lib/libcudnn.so.9"}))
    return true;
  std::printf("  (no libcudnn.so.9 here: not checked)\n");
  return false;
}

/// A strided, padded, grouped convolution: x [2, 8, 9, 7], w [6, 4, 3, 3],
/// stride 2x1, dilation 1x2, padding 1,2,0,1, 2 groups -> y [2, 6, 4, 6].
ConvProblem grouped(int32_t kind, int32_t type) {
  ConvProblem p;
  p.kind = kind;
  p.type = type;
  p.shape = {2, 8, 9, 7, 6, 3, 3, 4, 6, 2, 1, 1, 2, 1, 2, 0, 1, 2};
  return p;
}

} // namespace

TEST(cudnnHasEverySymbol) {
  if (!haveCudnn())
    return;
  CHECK(cudnn().cudnnGetVersion() >= 90000u);
}

TEST(cudnnBuildsEveryConvolutionOperation) {
  if (!haveCudnn())
    return;
  const CudnnSymbols &api = cudnn();
  for (int32_t kind :
       {EFFRT_CONV2D_FWD, EFFRT_CONV2D_BWD_DATA, EFFRT_CONV2D_BWD_WEIGHTS})
    for (int32_t type : {0, 1, 2}) {
      ConvProblem p = grouped(kind, type);
      CHECK_EQ(checkConvolution(p), std::string());
      // The least a tensor of the type can be aligned: its element size.
      int64_t least = type == 0 ? 4 : 2;
      ConvOperation op = buildConvOperation(api, p, {16, 16, least});
      CHECK(op.operation.get() != nullptr);
      CHECK(op.convolution.get() != nullptr);
    }
}

TEST(cudnnBuildsUngroupedAndNamesBadShapes) {
  if (!haveCudnn())
    return;
  ConvProblem p = grouped(EFFRT_CONV2D_FWD, 2);
  p.shape[17] = 1; // w [6, 8, 3, 3]
  CHECK_EQ(checkConvolution(p), std::string());
  CHECK(buildConvOperation(cudnn(), p, {16, 16, 16}).operation.get());
  p.shape[7] = 5; // an output height the windows do not give
  CHECK_EQ(checkConvolution(p),
           std::string("output size 5 does not match 4 windows: bf16 3x3 "
                       "convolution forward of x [2, 8, 9, 7], w [6, 8, 3, "
                       "3] (stride 2x1, dilation 1x2, padding 1,2,0,1, "
                       "groups 1)"));
}

TEST(cudnnRefusesMisalignedTensors) {
  if (!haveCudnn())
    return;
  // An f32 tensor 2-byte aligned: cuDNN's one-line refusal, named.
  CHECK_ERROR(buildConvOperation(cudnn(), grouped(EFFRT_CONV2D_FWD, 0),
                                 {16, 16, 2}),
              "cuDNN: finalizing a tensor: CUDNN_STATUS_BAD_PARAM");
}

TEST(convolutionChecksShapes) {
  ConvProblem p = grouped(EFFRT_CONV2D_BWD_DATA, 0);
  CHECK_EQ(checkConvolution(p), std::string());
  p.shape[17] = 3; // 8 channels in 3 groups
  CHECK(checkConvolution(p).find("not divisible by the groups") !=
        std::string::npos);
  p = grouped(EFFRT_CONV2D_FWD, 0);
  p.shape[13] = -1;
  CHECK(checkConvolution(p).find("negative padding") != std::string::npos);
  p = grouped(7, 0);
  CHECK_EQ(checkConvolution(p), std::string("unknown convolution kind 7"));
  p = grouped(EFFRT_CONV2D_FWD, 5);
  CHECK_EQ(checkConvolution(p), std::string("unknown element type code 5"));
}

TEST(convolutionEnginesAreDeterministicAndWide) {
  using N = std::vector<cudnnBackendNumericalNote_t>;
  using B = std::vector<cudnnBackendBehaviorNote_t>;
  // Tensor cores: bf16/f16 always; f32 only where TF32 is allowed.
  CHECK(convolutionEngineAcceptable(N{CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, B{},
                                    2, false));
  CHECK(!convolutionEngineAcceptable(N{CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, B{},
                                     0, false));
  CHECK(convolutionEngineAcceptable(N{CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, B{},
                                    0, true));
  CHECK(!convolutionEngineAcceptable(
      N{CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS}, B{}, 0, false));
  // Never: atomics, half-precision sums, NVRTC at run time.
  for (int32_t type : {0, 1, 2}) {
    CHECK(convolutionEngineAcceptable(N{}, B{}, type, false));
    CHECK(!convolutionEngineAcceptable(
        N{CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, B{}, type, true));
    CHECK(!convolutionEngineAcceptable(
        N{CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION}, B{}, type, true));
    CHECK(!convolutionEngineAcceptable(
        N{}, B{CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION}, type, true));
  }
}

TEST(convolutionAlignment) {
  alignas(16) static char bytes[64];
  CHECK_EQ(byteAlignment(bytes), int64_t(16));
  CHECK_EQ(byteAlignment(bytes + 2), int64_t(2));
  CHECK_EQ(byteAlignment(bytes + 8), int64_t(8));
  CHECK_EQ(byteAlignment(bytes + 1), int64_t(1));
}
