//===- CudaApi.h - The CUDA driver and cuBLASLt, reached through dlopen -*-===//
//
// The types and constants of the CUDA driver API and cuBLASLt that the CUDA
// device uses, and their functions as symbol tables (effrt/DynamicLibrary.h)
// filled from libcuda.so.1 and libcublasLt.so.13 at run time: libeffrt has
// no link-time dependency on CUDA, so effrun builds and runs where CUDA is
// absent.
//
// Where the toolkit's headers were found at configure time
// (EFFRT_HAVE_CUDA_HEADERS) the declarations are theirs, so every signature
// below is checked against cuda.h and cublasLt.h; elsewhere the few types
// and constants used are declared here, with the same names and values.
//
// The symbols are the ABI names the headers' macros map to (cuMemAlloc is
// cuMemAlloc_v2): dlsym sees no macros.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDAAPI_H
#define EFFRT_SRC_CUDA_CUDAAPI_H

#include "effrt/DynamicLibrary.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#ifdef EFFRT_HAVE_CUDA_HEADERS
#include <cublasLt.h>
#include <cuda.h>
#else
extern "C" {
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef CUstream cudaStream_t;

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
} CUresult;
typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
} CUdevice_attribute;
typedef enum CUstream_flags_enum {
  CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;
typedef enum CUevent_flags_enum { CU_EVENT_DISABLE_TIMING = 0x2 } CUevent_flags;
typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
} CUstreamCaptureMode;
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
} CUstreamCaptureStatus;
typedef enum CUjit_option_enum { CU_JIT_OPTIMIZATION_LEVEL = 7 } CUjit_option;
typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
} CUfunction_attribute;
#define CU_MEMHOSTALLOC_PORTABLE 0x01
typedef void (*CUhostFn)(void *userData);

typedef enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
} cudaDataType;
typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
} cublasComputeType_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
typedef enum {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
} cublasLtMatmulDescAttributes_t;
typedef enum { CUBLASLT_EPILOGUE_BIAS = 4 } cublasLtEpilogue_t;
typedef enum {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
} cublasLtMatrixLayoutAttribute_t;
typedef enum {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
} cublasLtMatmulPreferenceAttributes_t;
}
#endif // EFFRT_HAVE_CUDA_HEADERS

/// The driver API functions the device calls (libcuda.so.1).
#define EFFRT_CUDA_DRIVER_SYMBOLS(X)                                           \
  X(cuInit, CUresult, unsigned int)                                            \
  X(cuDriverGetVersion, CUresult, int *)                                       \
  X(cuGetErrorName, CUresult, CUresult, const char **)                         \
  X(cuGetErrorString, CUresult, CUresult, const char **)                       \
  X(cuDeviceGetCount, CUresult, int *)                                         \
  X(cuDeviceGet, CUresult, CUdevice *, int)                                    \
  X(cuDeviceGetName, CUresult, char *, int, CUdevice)                          \
  X(cuDeviceGetAttribute, CUresult, int *, CUdevice_attribute, CUdevice)       \
  X(cuDeviceTotalMem_v2, CUresult, size_t *, CUdevice)                         \
  X(cuDevicePrimaryCtxRetain, CUresult, CUcontext *, CUdevice)                 \
  X(cuDevicePrimaryCtxRelease_v2, CUresult, CUdevice)                          \
  X(cuCtxSetCurrent, CUresult, CUcontext)                                      \
  X(cuCtxGetCurrent, CUresult, CUcontext *)                                    \
  X(cuMemGetInfo_v2, CUresult, size_t *, size_t *)                             \
  X(cuMemAlloc_v2, CUresult, CUdeviceptr *, size_t)                            \
  X(cuMemFree_v2, CUresult, CUdeviceptr)                                       \
  X(cuMemHostAlloc, CUresult, void **, size_t, unsigned int)                   \
  X(cuMemFreeHost, CUresult, void *)                                           \
  X(cuMemcpyHtoDAsync_v2, CUresult, CUdeviceptr, const void *, size_t,         \
    CUstream)                                                                  \
  X(cuMemcpyDtoHAsync_v2, CUresult, void *, CUdeviceptr, size_t, CUstream)     \
  X(cuMemcpyDtoDAsync_v2, CUresult, CUdeviceptr, CUdeviceptr, size_t,          \
    CUstream)                                                                  \
  X(cuMemsetD8Async, CUresult, CUdeviceptr, unsigned char, size_t, CUstream)   \
  X(cuMemsetD16Async, CUresult, CUdeviceptr, unsigned short, size_t, CUstream) \
  X(cuMemsetD32Async, CUresult, CUdeviceptr, unsigned int, size_t, CUstream)   \
  X(cuStreamCreate, CUresult, CUstream *, unsigned int)                        \
  X(cuStreamDestroy_v2, CUresult, CUstream)                                    \
  X(cuStreamSynchronize, CUresult, CUstream)                                   \
  X(cuStreamWaitEvent, CUresult, CUstream, CUevent, unsigned int)              \
  X(cuLaunchHostFunc, CUresult, CUstream, CUhostFn, void *)                    \
  X(cuStreamBeginCapture_v2, CUresult, CUstream, CUstreamCaptureMode)          \
  X(cuStreamEndCapture, CUresult, CUstream, CUgraph *)                         \
  X(cuStreamIsCapturing, CUresult, CUstream, CUstreamCaptureStatus *)          \
  X(cuGraphInstantiateWithFlags, CUresult, CUgraphExec *, CUgraph,             \
    unsigned long long)                                                        \
  X(cuGraphLaunch, CUresult, CUgraphExec, CUstream)                            \
  X(cuGraphExecDestroy, CUresult, CUgraphExec)                                 \
  X(cuGraphDestroy, CUresult, CUgraph)                                         \
  X(cuEventCreate, CUresult, CUevent *, unsigned int)                          \
  X(cuEventDestroy_v2, CUresult, CUevent)                                      \
  X(cuEventRecord, CUresult, CUevent, CUstream)                                \
  X(cuEventSynchronize, CUresult, CUevent)                                     \
  X(cuModuleLoadData, CUresult, CUmodule *, const void *)                      \
  X(cuModuleLoadDataEx, CUresult, CUmodule *, const void *, unsigned int,      \
    CUjit_option *, void **)                                                   \
  X(cuModuleUnload, CUresult, CUmodule)                                        \
  X(cuModuleGetFunction, CUresult, CUfunction *, CUmodule, const char *)       \
  X(cuFuncSetAttribute, CUresult, CUfunction, CUfunction_attribute, int)       \
  X(cuLaunchKernel, CUresult, CUfunction, unsigned int, unsigned int,          \
    unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,      \
    CUstream, void **, void **)

/// The cuBLASLt functions effrt_cuda_gemm calls (libcublasLt.so.13).
#define EFFRT_CUBLASLT_SYMBOLS(X)                                              \
  X(cublasLtCreate, cublasStatus_t, cublasLtHandle_t *)                        \
  X(cublasLtDestroy, cublasStatus_t, cublasLtHandle_t)                         \
  X(cublasLtGetVersion, size_t)                                                \
  X(cublasLtGetStatusString, const char *, cublasStatus_t)                     \
  X(cublasLtMatmulDescCreate, cublasStatus_t, cublasLtMatmulDesc_t *,          \
    cublasComputeType_t, cudaDataType_t)                                       \
  X(cublasLtMatmulDescDestroy, cublasStatus_t, cublasLtMatmulDesc_t)           \
  X(cublasLtMatmulDescSetAttribute, cublasStatus_t, cublasLtMatmulDesc_t,      \
    cublasLtMatmulDescAttributes_t, const void *, size_t)                      \
  X(cublasLtMatrixLayoutCreate, cublasStatus_t, cublasLtMatrixLayout_t *,      \
    cudaDataType, uint64_t, uint64_t, int64_t)                                 \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t, cublasLtMatrixLayout_t)       \
  X(cublasLtMatrixLayoutSetAttribute, cublasStatus_t, cublasLtMatrixLayout_t,  \
    cublasLtMatrixLayoutAttribute_t, const void *, size_t)                     \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t,                            \
    cublasLtMatmulPreference_t *)                                              \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t,                           \
    cublasLtMatmulPreference_t)                                                \
  X(cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                      \
    cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,          \
    const void *, size_t)                                                      \
  X(cublasLtMatmulAlgoGetHeuristic, cublasStatus_t, cublasLtHandle_t,          \
    cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,      \
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,                            \
    cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *) \
  X(cublasLtMatmul, cublasStatus_t, cublasLtHandle_t, cublasLtMatmulDesc_t,    \
    const void *, const void *, cublasLtMatrixLayout_t, const void *,          \
    cublasLtMatrixLayout_t, const void *, const void *,                        \
    cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,                    \
    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t)

namespace effrt::cuda {

EFFRT_SYMBOL_TABLE(DriverSymbols, EFFRT_CUDA_DRIVER_SYMBOLS);
EFFRT_SYMBOL_TABLE(CublasLtSymbols, EFFRT_CUBLASLT_SYMBOLS);

#ifdef EFFRT_HAVE_CUDA_HEADERS
// Every signature above is the headers' own.
#define EFFRT_CUDA_CHECK_SIGNATURE_(name, ret, ...)                            \
  static_assert(std::is_same_v<ret (*)(__VA_ARGS__), decltype(&::name)>,       \
                #name " differs from its declaration in the CUDA headers");
EFFRT_CUDA_DRIVER_SYMBOLS(EFFRT_CUDA_CHECK_SIGNATURE_)
EFFRT_CUBLASLT_SYMBOLS(EFFRT_CUDA_CHECK_SIGNATURE_)
#undef EFFRT_CUDA_CHECK_SIGNATURE_
#endif

} // namespace effrt::cuda

#endif // EFFRT_SRC_CUDA_CUDAAPI_H
