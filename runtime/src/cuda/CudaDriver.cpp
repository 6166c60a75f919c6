//===- CudaDriver.cpp - The CUDA driver and cuBLASLt of this process ------===//

#include "CudaDriver.h"

#include "effrt/Error.h"

#include <cstdlib>
#include <mutex>

using namespace effrt;
using namespace effrt::cuda;

std::string cuda::initFailureHint(CUresult result) {
  switch (result) {
  case CUDA_ERROR_STUB_LIBRARY:
    return " (the library found is the CUDA toolkit's stub: no NVIDIA "
           "driver is installed)";
  case CUDA_ERROR_NO_DEVICE: {
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible ? std::string(" (no GPU is visible; CUDA_VISIBLE_DEVICES=") +
                         visible + ")"
                   : std::string(" (no GPU is visible)");
  }
  default:
    return "";
  }
}

std::unique_ptr<Driver>
Driver::open(std::initializer_list<const char *> fileNames) {
  std::unique_ptr<Driver> d(
      new Driver(DynamicLibrary::open("the CUDA driver", fileNames)));
  d->api_.bind(d->library_);
  CUresult init = d->api_.cuInit(0);
  if (init != CUDA_SUCCESS)
    fail("the CUDA driver (", d->fileName(),
         ") cannot start: cuInit: ", d->describe(init), initFailureHint(init));
  d->check(d->api_.cuDriverGetVersion(&d->version_), "cuDriverGetVersion");
  return d;
}

const Driver &Driver::get() {
  // Never closed: the driver's own exit handlers may still run after
  // static destructors.
  static std::once_flag once;
  static Driver *driver = nullptr;
  static std::string *error = new std::string;
  std::call_once(once, [] {
    try {
      driver = open({"libcuda.so.1"}).release();
    } catch (const Error &e) {
      *error = e.what();
    }
  });
  if (!driver)
    throw Error(*error);
  return *driver;
}

std::string Driver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  // The stub library answers even these with an error.
  if (api_.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api_.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text)
    out += std::string(" (") + text + ")";
  else if (!name && result == CUDA_ERROR_STUB_LIBRARY)
    out = "CUDA_ERROR_STUB_LIBRARY";
  return out;
}

void Driver::check(CUresult result, const std::string &what) const {
  if (result != CUDA_SUCCESS)
    fail(what, ": ", describe(result));
}

const CublasLtSymbols &cuda::cublasLt() {
  // Never closed, as the driver.
  static std::once_flag once;
  static std::pair<DynamicLibrary, CublasLtSymbols> *lt = nullptr;
  static std::string *error = new std::string;
  std::call_once(once, [] {
    try {
      DynamicLibrary library = DynamicLibrary::open(
          "cuBLASLt",
          {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"});
      CublasLtSymbols symbols;
      symbols.bind(library);
      lt = new std::pair<DynamicLibrary, CublasLtSymbols>(std::move(library),
                                                          symbols);
    } catch (const Error &e) {
      *error = e.what();
    }
  });
  if (!lt)
    throw Error(*error);
  return lt->second;
}
