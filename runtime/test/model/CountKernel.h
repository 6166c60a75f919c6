/*===- CountKernel.h - The PTX kernel of the CUDA test model ------*- C -*-===//
 *
 * Included by model/TestCudaModel.c (which loads it) and TestModels.cpp
 * (which stores it as the .effx's device code section).
 *
 *===----------------------------------------------------------------------===*/

#ifndef EFFRT_TEST_MODEL_COUNTKERNEL_H
#define EFFRT_TEST_MODEL_COUNTKERNEL_H

/* *counter += 1 (an int64 in global memory). */
static const char kCountPtx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry effrt_test_count(.param .u64 counter)\n"
    "{\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [counter];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  ld.global.u64 %rd3, [%rd2];\n"
    "  add.s64 %rd3, %rd3, 1;\n"
    "  st.global.u64 [%rd2], %rd3;\n"
    "  ret;\n"
    "}\n";

#endif /* EFFRT_TEST_MODEL_COUNTKERNEL_H */
