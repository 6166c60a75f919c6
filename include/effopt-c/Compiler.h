/*===- Compiler.h - the compiler's C interface --------------------*- C -*-===//
 *
 * A plain C ABI over the compiler library (effopt/Driver/Compiler.h) for
 * other languages: the Python package loads libeffopt-compiler.so with
 * ctypes. Options are given by effc's flag names and values, as effc spells
 * them on its command line (without the dashes):
 *
 *   const char *names[] = {"optimizer", "lr", "freeze"};
 *   const char *values[] = {"adamw", "3e-4", "^(mask)$"};
 *   char error[1024];
 *   if (effopt_compile("gpt.onnx", "gpt.effx", "gpt.report", 3, names, values,
 *                      error, sizeof error) != 0)
 *     fprintf(stderr, "%s\n", error);
 *
 * Every call is independent (its own MLIRContext); calls are serialized by
 * the library. Nothing is printed: errors come back as one line in `error`.
 *
 *===----------------------------------------------------------------------===*/

#ifndef EFFOPT_C_COMPILER_H
#define EFFOPT_C_COMPILER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C ABI's version; grows when functions are added. */
#define EFFOPT_COMPILER_C_API_VERSION 1
int effopt_compiler_api_version(void);

/* Compiles the ONNX model at `onnx_path` with the `count` options
 * `names[i]=values[i]` (effc's flags: optimizer, lr, weight-decay, momentum,
 * beta1, beta2, eps, schedule, warmup-steps, total-steps, min-lr,
 * clip-grad-norm, no-weight-decay, remat (also budget:BYTES), accum,
 * precision, loss-scale..., memory-budget, freeze, shape (name=d0,d1,...;
 * may repeat), target, arch, opt-level, mode, schedule-memory).
 *
 * `effx_path` non-NULL: runs the whole pipeline and writes the .effx.
 * `effx_path` NULL: a plan: the pipeline stops after the memory plan (no
 * code is generated and no weight is copied).
 * `report_prefix` non-NULL: writes the memory report as PREFIX.json,
 * PREFIX.txt (effc --report's table) and PREFIX.svg.
 *
 * 0 on success; otherwise non-zero and the first error, one line, in
 * `error` (truncated to error_size). */
int effopt_compile(const char *onnx_path, const char *effx_path,
                   const char *report_prefix, int count,
                   const char *const *names, const char *const *values,
                   char *error, size_t error_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EFFOPT_C_COMPILER_H */
