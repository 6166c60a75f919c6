//===- Convolution.h - cuDNN convolutions of target cuda --------*- C++ -*-===//
//
// effrt_cuda_conv2d_{fwd,bwd_data,bwd_weights} (CudaRuntime.cpp) run each
// convolution, or gradient, as one single-operation graph of cuDNN's
// backend API on NCHW tensors in the step's memory, with the device's
// library workspace (the plan's "library workspace", shared with
// cuBLASLt: every call runs on the step stream, one after another).
//
// The first call of a shape (the step's first run, never captured) asks
// cuDNN's heuristics (mode A) for its ranked engine configurations and
// keeps the first that
//   - is deterministic (no NONDETERMINISTIC note): remat and resume stay
//     bit-identical, as the GPU suite checks;
//   - accumulates in f32 (no REDUCED_PRECISION_REDUCTION), and for f32
//     data rounds nothing to TF32 or f16 (no TENSOR_CORE or
//     DOWN_CONVERT_INPUTS note) unless the step allows TF32;
//   - needs no runtime compilation (NVRTC at load, not in every image);
//   - finalizes, with a workspace no larger than the device's.
// Later calls of the shape reuse that plan.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CONVOLUTION_H
#define EFFRT_SRC_CUDA_CONVOLUTION_H

#include "CudnnApi.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace effrt::cuda {

/// One call: `kind` an EFFRT_CONV2D_* code, `shape` the 18 values of
/// EFFRT_CONV2D_SHAPE_ARGS, `type` effrt_cuda_gemm's code (0 f32, 1 f16,
/// 2 bf16) of every tensor.
struct ConvProblem {
  int32_t kind = 0;
  int32_t type = 0;
  std::array<int64_t, 18> shape{};

  int64_t n() const { return shape[0]; }
  int64_t c() const { return shape[1]; }
  int64_t f() const { return shape[4]; }
  int64_t groups() const { return shape[17]; }
  /// x [N, C, H, W], w [F, C/groups, KH, KW], y [N, F, OH, OW].
  std::array<int64_t, 4> xDims() const;
  std::array<int64_t, 4> wDims() const;
  std::array<int64_t, 4> yDims() const;
  /// "bf16 3x3 stride 2 convolution forward of x [32, 64, 56, 56]".
  std::string describe() const;
};

/// Why `p` is not a convolution these calls run, or "": the kind and type
/// codes, positive sizes, strides and dilations, padding >= 0, channels
/// divisible by the groups, and output sizes that match the input, window
/// and padding.
std::string checkConvolution(const ConvProblem &p);

/// Whether an engine with these notes may run `type` (see above).
bool convolutionEngineAcceptable(
    const std::vector<cudnnBackendNumericalNote_t> &numerical,
    const std::vector<cudnnBackendBehaviorNote_t> &behavior, int32_t type,
    bool allowTf32);

/// The largest power of two up to 16 that divides `address`.
int64_t byteAlignment(const void *address);

/// An owned backend descriptor.
class Descriptor {
public:
  Descriptor() = default;
  /// Creates one of `type`. Throws Error naming `what`.
  Descriptor(const CudnnSymbols &api, cudnnBackendDescriptorType_t type,
             const char *what);
  Descriptor(Descriptor &&other) noexcept;
  Descriptor &operator=(Descriptor &&other) noexcept;
  ~Descriptor();
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t *address() { return &d_; }

private:
  const CudnnSymbols *api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

/// The finalized operation of `p` (and the tensor and convolution
/// descriptors it refers to), with tensors aligned to `alignment` bytes
/// (x, w, y). Needs no GPU: cuDNN builds these on the host.
struct ConvOperation {
  Descriptor x, w, y, convolution, operation;
};
ConvOperation buildConvOperation(const CudnnSymbols &api, const ConvProblem &p,
                                 const std::array<int64_t, 3> &alignment);

/// Throws Error "cuDNN: WHAT: <status name> (<cuDNN's last message>)"
/// unless `status` is CUDNN_STATUS_SUCCESS.
void checkCudnn(const CudnnSymbols &api, cudnnStatus_t status,
                const char *what);

/// The cuDNN handle of one context and the plans chosen in it.
class Convolutions {
public:
  /// cudnnCreate on the current context. Throws Error where cuDNN is
  /// absent or refuses the GPU.
  Convolutions();
  ~Convolutions();
  Convolutions(const Convolutions &) = delete;
  Convolutions &operator=(const Convolutions &) = delete;

  /// Queues `p` on `stream`: x, w, y (forward), dy, w, dx (input gradient)
  /// or x, dy, dw (filter gradient) as `a`, `b`, `out`, in the order of
  /// the EFFRT_CONV2D_* entry points.
  void run(const ConvProblem &p, const void *a, const void *b, void *out,
           CUstream stream, CUdeviceptr workspace, uint64_t workspaceBytes,
           bool allowTf32);

private:
  struct Plan;
  const Plan &planFor(const ConvProblem &p,
                      const std::array<int64_t, 3> &alignment,
                      uint64_t workspaceBytes, bool allowTf32);

  const CudnnSymbols &api_;
  cudnnHandle_t handle_ = nullptr;
  std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans_;
};

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CONVOLUTION_H
