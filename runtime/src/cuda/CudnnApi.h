//===- CudnnApi.h - cuDNN's backend (graph) API, reached through dlopen -*-===//
//
// The types, constants and functions of cuDNN 9's backend API that the
// convolutions (Convolution.cpp) use, as a symbol table filled from
// libcudnn.so.9 at run time: like the driver and cuBLASLt (CudaApi.h),
// nothing links against cuDNN, so effrun builds and runs where it is absent.
//
// Where the toolkit's cudnn_graph.h was found at configure time
// (EFFRT_HAVE_CUDNN_HEADERS) the declarations are its own and every
// signature below is checked against it; elsewhere the few types and
// constants used are declared here with the header's names and values.
//
// The backend API rather than the legacy cudnnConvolutionForward family:
// cuDNN 9 deprecates the latter, and only the former says which engines
// are deterministic and which round through TF32 (their numerical notes).
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDNNAPI_H
#define EFFRT_SRC_CUDA_CUDNNAPI_H

#include "CudaApi.h"

#include <cstdint>

#ifdef EFFRT_HAVE_CUDNN_HEADERS
#include <cudnn_graph.h>
#else
extern "C" {
typedef struct cudnnContext *cudnnHandle_t;
typedef void *cudnnBackendDescriptor_t;
typedef enum { CUDNN_STATUS_SUCCESS = 0 } cudnnStatus_t;
typedef enum {
  CUDNN_DATA_FLOAT = 0,
  CUDNN_DATA_HALF = 2,
  CUDNN_DATA_BFLOAT16 = 9,
} cudnnDataType_t;
typedef enum { CUDNN_CROSS_CORRELATION = 1 } cudnnConvolutionMode_t;
typedef enum {
  CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100,
  CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101,
  CUDNN_ATTR_CONVOLUTION_DILATIONS = 102,
  CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103,
  CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104,
  CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105,
  CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106,
  CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  CUDNN_ATTR_ENGINECFG_ENGINE = 300,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA = 706,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA = 707,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC = 708,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W = 709,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX = 710,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY = 711,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA = 712,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA = 713,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC = 714,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW = 715,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X = 716,
  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY = 717,
  CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  CUDNN_ATTR_TENSOR_STRIDES = 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303,
  CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE = 1305,
} cudnnBackendAttributeName_t;
typedef enum {
  CUDNN_TYPE_HANDLE = 0,
  CUDNN_TYPE_DATA_TYPE = 1,
  CUDNN_TYPE_INT64 = 3,
  CUDNN_TYPE_FLOAT = 4,
  CUDNN_TYPE_VOID_PTR = 6,
  CUDNN_TYPE_CONVOLUTION_MODE = 7,
  CUDNN_TYPE_HEUR_MODE = 8,
  CUDNN_TYPE_NUMERICAL_NOTE = 11,
  CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  CUDNN_TYPE_BEHAVIOR_NOTE = 19,
} cudnnBackendAttributeType_t;
typedef enum {
  CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1,
  CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR = 11,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR = 12,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17,
} cudnnBackendDescriptorType_t;
typedef enum {
  CUDNN_NUMERICAL_NOTE_TENSOR_CORE = 0,
  CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS = 1,
  CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION = 2,
  CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC = 4,
  CUDNN_NUMERICAL_NOTE_TYPE_COUNT = 10,
} cudnnBackendNumericalNote_t;
typedef enum {
  CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION = 0,
  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT = 5,
} cudnnBackendBehaviorNote_t;
typedef enum { CUDNN_HEUR_MODE_A = 3 } cudnnBackendHeurMode_t;
}
#endif // EFFRT_HAVE_CUDNN_HEADERS

namespace effrt::cuda {

/// The handle attributes of the operation graph and the execution plan
/// (800 and 400). cuDNN 9.19 marks their names deprecated in favour of a
/// device-property descriptor (deviceless plans, 9.8+), but every 9.x
/// takes them, and the handle is what a device with a context has.
inline constexpr auto kOperationGraphHandle =
    static_cast<cudnnBackendAttributeName_t>(800);
inline constexpr auto kExecutionPlanHandle =
    static_cast<cudnnBackendAttributeName_t>(400);

} // namespace effrt::cuda

/// The cuDNN functions the convolutions call (libcudnn.so.9).
#define EFFRT_CUDNN_SYMBOLS(X)                                                 \
  X(cudnnGetVersion, size_t)                                                   \
  X(cudnnGetErrorString, const char *, cudnnStatus_t)                          \
  X(cudnnGetLastErrorString, void, char *, size_t)                             \
  X(cudnnCreate, cudnnStatus_t, cudnnHandle_t *)                               \
  X(cudnnDestroy, cudnnStatus_t, cudnnHandle_t)                                \
  X(cudnnSetStream, cudnnStatus_t, cudnnHandle_t, cudaStream_t)                \
  X(cudnnBackendCreateDescriptor, cudnnStatus_t, cudnnBackendDescriptorType_t, \
    cudnnBackendDescriptor_t *)                                                \
  X(cudnnBackendDestroyDescriptor, cudnnStatus_t, cudnnBackendDescriptor_t)    \
  X(cudnnBackendFinalize, cudnnStatus_t, cudnnBackendDescriptor_t)             \
  X(cudnnBackendSetAttribute, cudnnStatus_t, cudnnBackendDescriptor_t,         \
    cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t,         \
    const void *)                                                              \
  X(cudnnBackendGetAttribute, cudnnStatus_t, cudnnBackendDescriptor_t const,   \
    cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t,         \
    int64_t *, void *)                                                         \
  X(cudnnBackendExecute, cudnnStatus_t, cudnnHandle_t,                         \
    cudnnBackendDescriptor_t, cudnnBackendDescriptor_t)

namespace effrt::cuda {

EFFRT_SYMBOL_TABLE(CudnnSymbols, EFFRT_CUDNN_SYMBOLS);

#ifdef EFFRT_HAVE_CUDNN_HEADERS
#define EFFRT_CUDNN_CHECK_SIGNATURE_(name, ret, ...)                           \
  static_assert(std::is_same_v<ret (*)(__VA_ARGS__), decltype(&::name)>,       \
                #name " differs from its declaration in cudnn_graph.h");
EFFRT_CUDNN_SYMBOLS(EFFRT_CUDNN_CHECK_SIGNATURE_)
#undef EFFRT_CUDNN_CHECK_SIGNATURE_
#endif

/// cuDNN's symbols, bound on first use from libcudnn.so.9 (the loader's
/// path, then the toolkit's lib64 and lib). Throws Error, in one line,
/// where cuDNN 9 is not installed.
const CudnnSymbols &cudnn();

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDNNAPI_H
