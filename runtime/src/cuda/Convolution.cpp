//===- Convolution.cpp - cuDNN convolutions of target cuda ----------------===//

#include "Convolution.h"
#include "TypeCodes.h"

#include "effrt/DynamicLibrary.h"
#include "effrt/Error.h"
#include "effrt/Kernels.h"

#include <algorithm>
#include <mutex>
#include <sstream>

using namespace effrt;
using namespace effrt::cuda;

const CudnnSymbols &cuda::cudnn() {
  // Never closed, as the driver and cuBLASLt.
  static std::once_flag once;
  static std::pair<DynamicLibrary, CudnnSymbols> *dnn = nullptr;
  static std::string *error = new std::string;
  std::call_once(once, [] {
    try {
      DynamicLibrary library = DynamicLibrary::open(
          "cuDNN 9", {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9",
                      "/usr/local/cuda/lib/libcudnn.so.9"});
      CudnnSymbols symbols;
      symbols.bind(library);
      dnn = new std::pair<DynamicLibrary, CudnnSymbols>(std::move(library),
                                                        symbols);
    } catch (const Error &e) {
      *error = e.what();
    }
  });
  if (!dnn)
    throw Error(*error);
  return dnn->second;
}

//===----------------------------------------------------------------------===//
// Problems
//===----------------------------------------------------------------------===//

std::array<int64_t, 4> ConvProblem::xDims() const {
  return {shape[0], shape[1], shape[2], shape[3]};
}
std::array<int64_t, 4> ConvProblem::wDims() const {
  int64_t g = groups() > 0 ? groups() : 1;
  return {shape[4], shape[1] / g, shape[5], shape[6]};
}
std::array<int64_t, 4> ConvProblem::yDims() const {
  return {shape[0], shape[4], shape[7], shape[8]};
}

static const char *kindName(int32_t kind) {
  switch (kind) {
  case EFFRT_CONV2D_FWD:
    return "forward";
  case EFFRT_CONV2D_BWD_DATA:
    return "input gradient";
  case EFFRT_CONV2D_BWD_WEIGHTS:
    return "filter gradient";
  default:
    return "unknown kind";
  }
}

std::string ConvProblem::describe() const {
  std::ostringstream os;
  auto dims = [&](const std::array<int64_t, 4> &d) {
    os << "[" << d[0] << ", " << d[1] << ", " << d[2] << ", " << d[3] << "]";
  };
  os << typeCodeName(type) << " " << shape[5] << "x" << shape[6]
     << " convolution " << kindName(kind) << " of x ";
  dims(xDims());
  os << ", w ";
  dims(wDims());
  os << " (stride " << shape[9] << "x" << shape[10] << ", dilation "
     << shape[11] << "x" << shape[12] << ", padding " << shape[13] << ","
     << shape[14] << "," << shape[15] << "," << shape[16] << ", groups "
     << shape[17] << ")";
  return os.str();
}

std::string cuda::checkConvolution(const ConvProblem &p) {
  if (p.kind != EFFRT_CONV2D_FWD && p.kind != EFFRT_CONV2D_BWD_DATA &&
      p.kind != EFFRT_CONV2D_BWD_WEIGHTS)
    return "unknown convolution kind " + std::to_string(p.kind);
  if (p.type < 0 || p.type > 2)
    return "unknown element type code " + std::to_string(p.type);
  const auto &s = p.shape;
  for (int i : {0, 1, 2, 3, 4, 5, 6, 7, 8})
    if (s[i] <= 0)
      return "a convolution with an empty dimension: " + p.describe();
  for (int i : {9, 10, 11, 12, 17})
    if (s[i] <= 0)
      return "strides, dilations and groups must be positive: " +
             p.describe();
  for (int i : {13, 14, 15, 16})
    if (s[i] < 0)
      return "negative padding: " + p.describe();
  if (s[1] % s[17] != 0 || s[4] % s[17] != 0)
    return "channels not divisible by the groups: " + p.describe();
  for (int d = 0; d < 2; ++d) {
    int64_t span = s[2 + d] + s[13 + d] + s[15 + d] - s[11 + d] * (s[5 + d] - 1);
    int64_t out = span <= 0 ? 0 : (span - 1) / s[9 + d] + 1;
    if (out != s[7 + d])
      return "output size " + std::to_string(s[7 + d]) + " does not match " +
             std::to_string(out) + " windows: " + p.describe();
  }
  return "";
}

bool cuda::convolutionEngineAcceptable(
    const std::vector<cudnnBackendNumericalNote_t> &numerical,
    const std::vector<cudnnBackendBehaviorNote_t> &behavior, int32_t type,
    bool allowTf32) {
  for (cudnnBackendNumericalNote_t note : numerical) {
    if (note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
        note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
      return false;
    if (type == 0 && !allowTf32 &&
        (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
         note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
      return false;
  }
  for (cudnnBackendBehaviorNote_t note : behavior)
    if (note == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
      return false;
  return true;
}

int64_t cuda::byteAlignment(const void *address) {
  auto bits = reinterpret_cast<uintptr_t>(address);
  int64_t alignment = 16;
  while (alignment > 1 && bits % alignment != 0)
    alignment /= 2;
  return alignment;
}

//===----------------------------------------------------------------------===//
// Descriptors
//===----------------------------------------------------------------------===//

void cuda::checkCudnn(const CudnnSymbols &api, cudnnStatus_t status,
                      const char *what) {
  if (status == CUDNN_STATUS_SUCCESS)
    return;
  std::string message = std::string("cuDNN: ") + what + ": " +
                        api.cudnnGetErrorString(status);
  char last[512] = {0};
  api.cudnnGetLastErrorString(last, sizeof last);
  if (last[0]) {
    std::string text(last);
    // One line: cuDNN's message may hold several.
    std::replace(text.begin(), text.end(), '\n', ' ');
    message += " (" + text + ")";
  }
  throw Error(message);
}

Descriptor::Descriptor(const CudnnSymbols &api,
                       cudnnBackendDescriptorType_t type, const char *what)
    : api_(&api) {
  checkCudnn(api, api.cudnnBackendCreateDescriptor(type, &d_), what);
}

Descriptor::Descriptor(Descriptor &&other) noexcept
    : api_(other.api_), d_(other.d_) {
  other.d_ = nullptr;
}

Descriptor &Descriptor::operator=(Descriptor &&other) noexcept {
  if (this != &other) {
    if (d_)
      api_->cudnnBackendDestroyDescriptor(d_);
    api_ = other.api_;
    d_ = other.d_;
    other.d_ = nullptr;
  }
  return *this;
}

Descriptor::~Descriptor() {
  if (d_)
    api_->cudnnBackendDestroyDescriptor(d_);
}

namespace {

void set(const CudnnSymbols &api, const Descriptor &d,
         cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void *values, const char *what) {
  checkCudnn(api,
             api.cudnnBackendSetAttribute(d.get(), name, type, count, values),
             what);
}

void setDescriptor(const CudnnSymbols &api, const Descriptor &d,
                   cudnnBackendAttributeName_t name, const Descriptor &value,
                   const char *what) {
  cudnnBackendDescriptor_t v = value.get();
  set(api, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, what);
}

cudnnDataType_t dataType(int32_t type) {
  return type == 1   ? CUDNN_DATA_HALF
         : type == 2 ? CUDNN_DATA_BFLOAT16
                     : CUDNN_DATA_FLOAT;
}

/// Unique ids of the three tensors in the graph and the variant pack.
constexpr int64_t kX = 'x', kW = 'w', kY = 'y';

Descriptor tensor(const CudnnSymbols &api, const std::array<int64_t, 4> &dims,
                  int64_t uid, int32_t type, int64_t alignment) {
  Descriptor d(api, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "a tensor descriptor");
  // Packed NCHW.
  std::array<int64_t, 4> strides{dims[1] * dims[2] * dims[3],
                                 dims[2] * dims[3], dims[3], 1};
  cudnnDataType_t t = dataType(type);
  set(api, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t,
      "tensor data type");
  set(api, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(),
      "tensor dimensions");
  set(api, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(),
      "tensor strides");
  set(api, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid,
      "tensor id");
  set(api, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
      &alignment, "tensor alignment");
  checkCudnn(api, api.cudnnBackendFinalize(d.get()), "finalizing a tensor");
  return d;
}

} // namespace

ConvOperation cuda::buildConvOperation(const CudnnSymbols &api,
                                       const ConvProblem &p,
                                       const std::array<int64_t, 3> &alignment) {
  const auto &s = p.shape;
  ConvOperation op;
  op.x = tensor(api, p.xDims(), kX, p.type, alignment[0]);
  op.w = tensor(api, p.wDims(), kW, p.type, alignment[1]);
  op.y = tensor(api, p.yDims(), kY, p.type, alignment[2]);

  op.convolution = Descriptor(api, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                              "a convolution descriptor");
  const Descriptor &c = op.convolution;
  // Every type accumulates in f32 (PyTorch's bf16/f16 convolutions too).
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = 2;
  int64_t strides[2] = {s[9], s[10]}, dilations[2] = {s[11], s[12]};
  int64_t pre[2] = {s[13], s[14]}, post[2] = {s[15], s[16]};
  set(api, c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
      &compute, "convolution compute type");
  set(api, c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
      &mode, "convolution mode");
  set(api, c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1,
      &spatial, "convolution spatial dimensions");
  set(api, c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
      strides, "convolution strides");
  set(api, c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations,
      "convolution dilations");
  set(api, c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre,
      "convolution padding");
  set(api, c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post,
      "convolution padding");
  checkCudnn(api, api.cudnnBackendFinalize(c.get()),
             "finalizing the convolution descriptor");

  struct Attributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t alpha, beta, conv;
    // The operation's attributes for x, w and y (or their gradients).
    cudnnBackendAttributeName_t x, w, y;
  };
  Attributes a;
  switch (p.kind) {
  case EFFRT_CONV2D_FWD:
    a = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
    break;
  case EFFRT_CONV2D_BWD_DATA:
    a = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
    break;
  default:
    a = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
    break;
  }
  op.operation = Descriptor(api, a.type, "a convolution operation");
  const Descriptor &o = op.operation;
  float alpha = 1.0f, beta = 0.0f;
  set(api, o, a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, "operation alpha");
  set(api, o, a.beta, CUDNN_TYPE_FLOAT, 1, &beta, "operation beta");
  setDescriptor(api, o, a.conv, c, "operation convolution");
  setDescriptor(api, o, a.x, op.x, "operation x");
  setDescriptor(api, o, a.w, op.w, "operation w");
  setDescriptor(api, o, a.y, op.y, "operation y");
  checkCudnn(api, api.cudnnBackendFinalize(o.get()),
             "finalizing the convolution operation");
  return op;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

struct Convolutions::Plan {
  ConvOperation operation;
  Descriptor graph, heuristics;
  std::vector<Descriptor> configs;
  Descriptor plan;
  int64_t workspaceBytes = 0;
};

Convolutions::Convolutions() : api_(cudnn()) {
  checkCudnn(api_, api_.cudnnCreate(&handle_), "cudnnCreate");
}

Convolutions::~Convolutions() {
  plans_.clear();
  if (handle_)
    api_.cudnnDestroy(handle_);
}

namespace {

template <typename Note>
std::vector<Note> notesOf(const CudnnSymbols &api, const Descriptor &engine,
                          cudnnBackendAttributeName_t name,
                          cudnnBackendAttributeType_t type, int64_t most) {
  std::vector<Note> notes(static_cast<size_t>(most));
  int64_t count = 0;
  checkCudnn(api,
             api.cudnnBackendGetAttribute(engine.get(), name, type, most,
                                          &count, notes.data()),
             "engine notes");
  notes.resize(static_cast<size_t>(std::clamp<int64_t>(count, 0, most)));
  return notes;
}

} // namespace

const Convolutions::Plan &
Convolutions::planFor(const ConvProblem &p,
                      const std::array<int64_t, 3> &alignment,
                      uint64_t workspaceBytes, bool allowTf32) {
  std::vector<int64_t> key{p.kind, p.type, allowTf32 ? 1 : 0,
                           static_cast<int64_t>(workspaceBytes)};
  key.insert(key.end(), p.shape.begin(), p.shape.end());
  key.insert(key.end(), alignment.begin(), alignment.end());
  if (auto it = plans_.find(key); it != plans_.end())
    return *it->second;

  auto plan = std::make_unique<Plan>();
  plan->operation = buildConvOperation(api_, p, alignment);
  plan->graph = Descriptor(api_, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                           "an operation graph");
  setDescriptor(api_, plan->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                plan->operation.operation, "graph operations");
  set(api_, plan->graph, kOperationGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle_,
      "graph handle");
  checkCudnn(api_, api_.cudnnBackendFinalize(plan->graph.get()),
             "finalizing the operation graph");

  plan->heuristics = Descriptor(api_, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                "engine heuristics");
  setDescriptor(api_, plan->heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                plan->graph, "heuristics graph");
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set(api_, plan->heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
      1, &mode, "heuristics mode");
  checkCudnn(api_, api_.cudnnBackendFinalize(plan->heuristics.get()),
             "finalizing the engine heuristics");
  int64_t available = 0;
  checkCudnn(api_,
             api_.cudnnBackendGetAttribute(
                 plan->heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr),
             "counting the engine configurations");
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < available; ++i) {
    plan->configs.emplace_back(api_, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                               "an engine configuration");
    raw.push_back(plan->configs.back().get());
  }
  int64_t returned = 0;
  if (available > 0)
    checkCudnn(api_,
               api_.cudnnBackendGetAttribute(
                   plan->heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                   CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                   raw.data()),
               "reading the engine configurations");

  int refusedByNotes = 0, unsupported = 0, tooLarge = 0;
  int64_t smallestWorkspace = -1;
  for (int64_t i = 0; i < std::min(returned, available); ++i) {
    const Descriptor &config = plan->configs[static_cast<size_t>(i)];
    Descriptor engine(api_, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "an engine");
    int64_t one = 0;
    cudnnBackendDescriptor_t engineRaw = engine.get();
    checkCudnn(api_,
               api_.cudnnBackendGetAttribute(
                   config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one, &engineRaw),
               "reading an engine configuration's engine");
    auto numerical = notesOf<cudnnBackendNumericalNote_t>(
        api_, engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
        CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
    auto behavior = notesOf<cudnnBackendBehaviorNote_t>(
        api_, engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
        CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
    if (!convolutionEngineAcceptable(numerical, behavior, p.type, allowTf32)) {
      ++refusedByNotes;
      continue;
    }
    Descriptor candidate(api_, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                         "an execution plan");
    set(api_, candidate, kExecutionPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle_,
        "plan handle");
    setDescriptor(api_, candidate, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                  config, "plan engine configuration");
    // An engine the heuristics rank may still not support these tensors:
    // the next one is tried.
    if (api_.cudnnBackendFinalize(candidate.get()) != CUDNN_STATUS_SUCCESS) {
      ++unsupported;
      continue;
    }
    int64_t bytes = 0, count = 0;
    checkCudnn(api_,
               api_.cudnnBackendGetAttribute(
                   candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                   CUDNN_TYPE_INT64, 1, &count, &bytes),
               "reading the plan's workspace size");
    if (bytes < 0 || static_cast<uint64_t>(bytes) > workspaceBytes) {
      ++tooLarge;
      if (smallestWorkspace < 0 || bytes < smallestWorkspace)
        smallestWorkspace = bytes;
      continue;
    }
    plan->plan = std::move(candidate);
    plan->workspaceBytes = bytes;
    break;
  }
  if (!plan->plan.get()) {
    std::ostringstream why;
    why << "cuDNN has no engine for a " << p.describe() << ": of "
        << std::min(returned, available) << " ranked by its heuristics, "
        << refusedByNotes
        << " are nondeterministic, accumulate in low precision, round f32 "
           "to TF32 or compile at run time, "
        << unsupported << " refused these tensors and " << tooLarge
        << " need more than the " << workspaceBytes
        << " bytes of workspace";
    if (smallestWorkspace >= 0)
      why << " (the smallest " << smallestWorkspace << ")";
    why << "; compile with --convolution im2col";
    fail(why.str());
  }
  return *plans_.emplace(std::move(key), std::move(plan)).first->second;
}

void Convolutions::run(const ConvProblem &p, const void *a, const void *b,
                       void *out, CUstream stream, CUdeviceptr workspace,
                       uint64_t workspaceBytes, bool allowTf32) {
  if (std::string why = checkConvolution(p); !why.empty())
    fail(why);
  // The variant pack's pointers by tensor: x, w, y.
  const void *x, *w, *y;
  switch (p.kind) {
  case EFFRT_CONV2D_FWD:
    x = a, w = b, y = out;
    break;
  case EFFRT_CONV2D_BWD_DATA:
    y = a, w = b, x = out;
    break;
  default:
    x = a, y = b, w = out;
    break;
  }
  std::array<int64_t, 3> alignment{byteAlignment(x), byteAlignment(w),
                                   byteAlignment(y)};
  const Plan &plan = planFor(p, alignment, workspaceBytes, allowTf32);

  checkCudnn(api_, api_.cudnnSetStream(handle_, stream), "cudnnSetStream");
  Descriptor pack(api_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                  "a variant pack");
  int64_t uids[3] = {kX, kW, kY};
  void *pointers[3] = {const_cast<void *>(x), const_cast<void *>(w),
                       const_cast<void *>(y)};
  void *scratch = reinterpret_cast<void *>(workspace);
  set(api_, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
      uids, "variant pack ids");
  set(api_, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
      3, pointers, "variant pack pointers");
  set(api_, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
      &scratch, "variant pack workspace");
  checkCudnn(api_, api_.cudnnBackendFinalize(pack.get()),
             "finalizing the variant pack");
  checkCudnn(api_,
             api_.cudnnBackendExecute(handle_, plan.plan.get(), pack.get()),
             "cudnnBackendExecute");
}
