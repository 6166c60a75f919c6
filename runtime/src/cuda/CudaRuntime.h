//===- CudaRuntime.h - What CUDA host code imports --------------*- C++ -*-===//
//
// The functions CudaRuntime.cpp defines for the host code of cuda .effx
// files: the MLIR GPU runtime ABI (MLIR 22's signatures) and the matrix
// products of effrt/Kernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_SRC_CUDA_CUDARUNTIME_H
#define EFFRT_SRC_CUDA_CUDARUNTIME_H

#include "CudaApi.h"

#include "effrt/Kernels.h"

extern "C" {
CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize);
CUmodule mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(CUmodule module);
CUfunction mgpuModuleGetFunction(CUmodule module, const char *name);
void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t paramsCount);
CUstream mgpuStreamCreate();
void mgpuStreamDestroy(CUstream stream);
void mgpuStreamSynchronize(CUstream stream);
void mgpuStreamWaitEvent(CUstream stream, CUevent event);
CUevent mgpuEventCreate();
void mgpuEventDestroy(CUevent event);
void mgpuEventSynchronize(CUevent event);
void mgpuEventRecord(CUevent event, CUstream stream);
void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream, bool isHostShared);
void mgpuMemFree(void *ptr, CUstream stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, CUstream stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  CUstream stream);
void mgpuSetDefaultDevice(int32_t device);

/// Every function above and the products: referenced from CudaDevice.cpp,
/// so every program that can create a CUDA device links them.
extern void *const effrt_cuda_symbols[];
}

#endif // EFFRT_SRC_CUDA_CUDARUNTIME_H
