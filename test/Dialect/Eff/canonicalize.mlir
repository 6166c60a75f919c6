// RUN: effopt-opt %s -canonicalize -split-input-file | FileCheck %s

// The folders and canonicalization patterns of the eff dialect. Their job is
// to remove the shape arithmetic exporters emit and trivial identities, on
// small inline constants only; weights are never evaluated.

//===----------------------------------------------------------------------===//
// The ONNX shape chain
//===----------------------------------------------------------------------===//

// torch's `x.view(x.size(0), -1)` exports as Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape. Every shape op folds away, leaving the constant target
// shape and one reshape with a static type.
// CHECK-LABEL: func.func @onnx_shape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<8x4x4xf32>)
// CHECK-DAG: %[[TARGET:.*]] = eff.constant dense<[8, -1]> : tensor<2xi64>
// CHECK-DAG: %[[Y:.*]] = eff.reshape %[[X]] : tensor<8x4x4xf32> to tensor<8x16xf32>
// CHECK-NOT: eff.shape_of
// CHECK-NOT: eff.gather
// CHECK-NOT: eff.concat
// CHECK: return %[[Y]], %[[TARGET]]
func.func @onnx_shape_chain(%x: tensor<8x4x4xf32>) -> (tensor<8x16xf32>, tensor<2xi64>) {
  %shape = eff.shape_of %x : tensor<8x4x4xf32> -> tensor<3xi64>
  %zero = eff.constant dense<0> : tensor<i64>
  %batch = eff.gather %shape, %zero {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %unsqueezed = eff.reshape %batch : tensor<i64> to tensor<1xi64>
  %minus_one = eff.constant dense<-1> : tensor<1xi64>
  %target = eff.concat %unsqueezed, %minus_one {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %flat = eff.reshape %x : tensor<8x4x4xf32> to tensor<8x2x8xf32>
  %y = eff.reshape %flat : tensor<8x2x8xf32> to tensor<8x16xf32>
  return %y, %target : tensor<8x16xf32>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @shape_of_scalar
// CHECK: %[[C:.*]] = eff.constant dense<> : tensor<0xi64>
// CHECK: return %[[C]]
func.func @shape_of_scalar(%x: tensor<f32>) -> tensor<0xi64> {
  %0 = eff.shape_of %x : tensor<f32> -> tensor<0xi64>
  return %0 : tensor<0xi64>
}

//===----------------------------------------------------------------------===//
// Arithmetic on constants
//===----------------------------------------------------------------------===//

// -----

// [2, 1] + [3] broadcasts to [2, 3].
// CHECK-LABEL: func.func @add_int_broadcast
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[11, 21, 31], [12, 22, 32]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @add_int_broadcast() -> tensor<2x3xi64> {
  %a = eff.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %b = eff.constant dense<[10, 20, 30]> : tensor<3xi64>
  %0 = eff.add %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @sub_float_scalar_broadcast
// CHECK: %[[C:.*]] = eff.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @sub_float_scalar_broadcast() -> tensor<2xf32> {
  %a = eff.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %b = eff.constant dense<0.5> : tensor<f32>
  %0 = eff.sub %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Integer arithmetic wraps: 100 * 3 = 300 = 44 (mod 256).
// CHECK-LABEL: func.func @mul_int_wraps
// CHECK: %[[C:.*]] = eff.constant dense<[44, -6]> : tensor<2xi8>
// CHECK-NEXT: return %[[C]]
func.func @mul_int_wraps() -> tensor<2xi8> {
  %a = eff.constant dense<[100, -2]> : tensor<2xi8>
  %b = eff.constant dense<3> : tensor<i8>
  %0 = eff.mul %a, %b : (tensor<2xi8>, tensor<i8>) -> tensor<2xi8>
  return %0 : tensor<2xi8>
}

// -----

// CHECK-LABEL: func.func @mul_float_broadcast
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[2.000000e+00, 6.000000e+00], [4.000000e+00, 1.200000e+01]]> : tensor<2x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @mul_float_broadcast() -> tensor<2x2xf32> {
  %a = eff.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %b = eff.constant dense<[2.0, 6.0]> : tensor<2xf32>
  %0 = eff.mul %a, %b : (tensor<2x1xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Signed integer division truncates toward zero.
// CHECK-LABEL: func.func @div_int_truncates
// CHECK: %[[C:.*]] = eff.constant dense<[3, -3, -3, 3]> : tensor<4xi32>
// CHECK-NEXT: return %[[C]]
func.func @div_int_truncates() -> tensor<4xi32> {
  %a = eff.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %b = eff.constant dense<[2, 2, -2, -2]> : tensor<4xi32>
  %0 = eff.div %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// 200 is a ui8, not -56.
// CHECK-LABEL: func.func @div_unsigned
// CHECK: %[[C:.*]] = eff.constant dense<[100, 3]> : tensor<2xui8>
// CHECK-NEXT: return %[[C]]
func.func @div_unsigned() -> tensor<2xui8> {
  %a = eff.constant dense<[200, 7]> : tensor<2xui8>
  %b = eff.constant dense<2> : tensor<2xui8>
  %0 = eff.div %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// Division by zero and -128 / -1 in i8 are undefined: left for the runtime.
// CHECK-LABEL: func.func @div_int_undefined_not_folded
// CHECK: eff.div
// CHECK: eff.div
func.func @div_int_undefined_not_folded() -> (tensor<2xi32>, tensor<i8>) {
  %a = eff.constant dense<[1, 2]> : tensor<2xi32>
  %z = eff.constant dense<[1, 0]> : tensor<2xi32>
  %0 = eff.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %min = eff.constant dense<-128> : tensor<i8>
  %m1 = eff.constant dense<-1> : tensor<i8>
  %1 = eff.div %min, %m1 : (tensor<i8>, tensor<i8>) -> tensor<i8>
  return %0, %1 : tensor<2xi32>, tensor<i8>
}

// -----

// CHECK-LABEL: func.func @div_float
// CHECK: %[[C:.*]] = eff.constant dense<[2.500000e-01, 0x7F800000]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @div_float() -> tensor<2xf32> {
  %a = eff.constant dense<1.0> : tensor<2xf32>
  %b = eff.constant dense<[4.0, 0.0]> : tensor<2xf32>
  %0 = eff.div %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Exponents of any size: 3^65 wraps modulo 2^64.
// CHECK-LABEL: func.func @pow_int
// CHECK: %[[C:.*]] = eff.constant dense<[81, 1024, 1, 7752514261426648835]> : tensor<4xi64>
// CHECK-NEXT: return %[[C]]
func.func @pow_int() -> tensor<4xi64> {
  %a = eff.constant dense<[3, 2, 5, 3]> : tensor<4xi64>
  %b = eff.constant dense<[4, 10, 0, 65]> : tensor<4xi64>
  %0 = eff.pow %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// An integer to a negative power is not an integer.
// CHECK-LABEL: func.func @pow_int_negative_exponent_not_folded
// CHECK: eff.pow
func.func @pow_int_negative_exponent_not_folded() -> tensor<i32> {
  %a = eff.constant dense<2> : tensor<i32>
  %b = eff.constant dense<-1> : tensor<i32>
  %0 = eff.pow %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// CHECK-LABEL: func.func @pow_float
// CHECK: %[[C:.*]] = eff.constant dense<[8.000000e+00, 3.000000e+00, 2.500000e-01]> : tensor<3xf32>
// CHECK-NEXT: return %[[C]]
func.func @pow_float() -> tensor<3xf32> {
  %a = eff.constant dense<[2.0, 9.0, 2.0]> : tensor<3xf32>
  %b = eff.constant dense<[3.0, 0.5, -2.0]> : tensor<3xf32>
  %0 = eff.pow %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @max_min_signed
// CHECK-DAG: %[[MAX:.*]] = eff.constant dense<[1, 5]> : tensor<2xi32>
// CHECK-DAG: %[[MIN:.*]] = eff.constant dense<[-1, 3]> : tensor<2xi32>
// CHECK: return %[[MAX]], %[[MIN]]
func.func @max_min_signed() -> (tensor<2xi32>, tensor<2xi32>) {
  %a = eff.constant dense<[-1, 5]> : tensor<2xi32>
  %b = eff.constant dense<[1, 3]> : tensor<2xi32>
  %0 = eff.max %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = eff.min %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// 255 is the largest ui8, not -1.
// CHECK-LABEL: func.func @max_min_unsigned
// CHECK-DAG: %[[MAX:.*]] = eff.constant dense<[255, 7]> : tensor<2xui8>
// CHECK-DAG: %[[MIN:.*]] = eff.constant dense<[1, 0]> : tensor<2xui8>
// CHECK: return %[[MAX]], %[[MIN]]
func.func @max_min_unsigned() -> (tensor<2xui8>, tensor<2xui8>) {
  %a = eff.constant dense<[255, 0]> : tensor<2xui8>
  %b = eff.constant dense<[1, 7]> : tensor<2xui8>
  %0 = eff.max %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  %1 = eff.min %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %0, %1 : tensor<2xui8>, tensor<2xui8>
}

// -----

// CHECK-LABEL: func.func @max_min_float_broadcast
// CHECK-DAG: %[[MAX:.*]] = eff.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[MIN:.*]] = eff.constant dense<[-1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK: return %[[MAX]], %[[MIN]]
func.func @max_min_float_broadcast() -> (tensor<2xf32>, tensor<2xf32>) {
  %a = eff.constant dense<[-1.0, 2.0]> : tensor<2xf32>
  %zero = eff.constant dense<0.0> : tensor<f32>
  %0 = eff.max %a, %zero : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = eff.min %a, %zero : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Two splats give a splat, however large the result.
// CHECK-LABEL: func.func @add_splats_any_size
// CHECK: %[[C:.*]] = eff.constant dense<3.000000e+00> : tensor<1024x1024xf32>
// CHECK-NEXT: return %[[C]]
func.func @add_splats_any_size() -> tensor<1024x1024xf32> {
  %a = eff.constant dense<1.0> : tensor<1024x1024xf32>
  %b = eff.constant dense<2.0> : tensor<1024xf32>
  %0 = eff.add %a, %b : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @cmp_float_broadcast
// CHECK-DAG: %[[LT:.*]] = eff.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: %[[GE:.*]] = eff.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK: return %[[LT]], %[[GE]]
func.func @cmp_float_broadcast() -> (tensor<3xi1>, tensor<3xi1>) {
  %a = eff.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = eff.constant dense<2.0> : tensor<f32>
  %0 = eff.cmp lt, %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  %1 = eff.cmp ge, %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  return %0, %1 : tensor<3xi1>, tensor<3xi1>
}

// -----

// NaN is unordered: only `ne` holds.
// CHECK-LABEL: func.func @cmp_nan
// CHECK-DAG: %[[TRUE:.*]] = eff.constant dense<true> : tensor<i1>
// CHECK-DAG: %[[FALSE:.*]] = eff.constant dense<false> : tensor<i1>
// CHECK: return %[[FALSE]], %[[TRUE]], %[[FALSE]], %[[FALSE]]
func.func @cmp_nan() -> (tensor<i1>, tensor<i1>, tensor<i1>, tensor<i1>) {
  %nan = eff.constant dense<0x7FC00000> : tensor<f32>
  %one = eff.constant dense<1.0> : tensor<f32>
  %0 = eff.cmp eq, %nan, %nan : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %1 = eff.cmp ne, %nan, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %2 = eff.cmp lt, %nan, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %3 = eff.cmp ge, %nan, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0, %1, %2, %3 : tensor<i1>, tensor<i1>, tensor<i1>, tensor<i1>
}

// -----

// CHECK-LABEL: func.func @cmp_int_signed
// CHECK: %[[C:.*]] = eff.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-NEXT: return %[[C]]
func.func @cmp_int_signed() -> tensor<3xi1> {
  %a = eff.constant dense<[-5, 0, 5]> : tensor<3xi64>
  %b = eff.constant dense<0> : tensor<i64>
  %0 = eff.cmp lt, %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

// 200 > 100 as ui8 (as a signed byte, 200 would be -56).
// CHECK-LABEL: func.func @cmp_unsigned
// CHECK: %[[C:.*]] = eff.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT: return %[[C]]
func.func @cmp_unsigned() -> tensor<2xi1> {
  %a = eff.constant dense<[200, 50]> : tensor<2xui8>
  %b = eff.constant dense<100> : tensor<ui8>
  %0 = eff.cmp gt, %a, %b : (tensor<2xui8>, tensor<ui8>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_splats_any_size
// CHECK: %[[C:.*]] = eff.constant dense<true> : tensor<1024x1024xi1>
// CHECK-NEXT: return %[[C]]
func.func @cmp_splats_any_size() -> tensor<1024x1024xi1> {
  %a = eff.constant dense<1> : tensor<1024x1024xi32>
  %b = eff.constant dense<2> : tensor<i32>
  %0 = eff.cmp lt, %a, %b : (tensor<1024x1024xi32>, tensor<i32>) -> tensor<1024x1024xi1>
  return %0 : tensor<1024x1024xi1>
}

// -----

// true > false.
// CHECK-LABEL: func.func @cmp_bool
// CHECK: %[[C:.*]] = eff.constant dense<[false, true]> : tensor<2xi1>
// CHECK-NEXT: return %[[C]]
func.func @cmp_bool() -> tensor<2xi1> {
  %a = eff.constant dense<[false, true]> : tensor<2xi1>
  %b = eff.constant dense<false> : tensor<i1>
  %0 = eff.cmp gt, %a, %b : (tensor<2xi1>, tensor<i1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @where_splat_condition
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NOT: eff.where
// CHECK: return %[[A]], %[[B]]
func.func @where_splat_condition(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = eff.constant dense<true> : tensor<4xi1>
  %f = eff.constant dense<false> : tensor<i1>
  %0 = eff.where %t, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = eff.where %f, %a, %b : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The chosen value has the wrong shape: it would have to be broadcast.
// CHECK-LABEL: func.func @where_splat_condition_needs_broadcast
// CHECK: eff.where
func.func @where_splat_condition_needs_broadcast(%a: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %t = eff.constant dense<true> : tensor<i1>
  %0 = eff.where %t, %a, %b : (tensor<i1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @where_same_values
// CHECK-SAME: (%[[C:.*]]: tensor<4xi1>, %[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]]
func.func @where_same_values(%c: tensor<4xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = eff.where %c, %a, %a : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

// -----

// Narrowing wraps; widening extends by the source's signedness.
// CHECK-LABEL: func.func @cast_int_to_int
// CHECK-DAG: %[[NARROW:.*]] = eff.constant dense<[44, -1]> : tensor<2xi8>
// CHECK-DAG: %[[SEXT:.*]] = eff.constant dense<[-1, 127]> : tensor<2xi32>
// CHECK-DAG: %[[ZEXT:.*]] = eff.constant dense<[255, 127]> : tensor<2xi32>
// CHECK-DAG: %[[BOOL:.*]] = eff.constant dense<[1, 0]> : tensor<2xi64>
// CHECK: return %[[NARROW]], %[[SEXT]], %[[ZEXT]], %[[BOOL]]
func.func @cast_int_to_int() -> (tensor<2xi8>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>) {
  %wide = eff.constant dense<[300, -1]> : tensor<2xi64>
  %0 = eff.cast %wide : tensor<2xi64> to tensor<2xi8>
  %signed = eff.constant dense<[-1, 127]> : tensor<2xi8>
  %1 = eff.cast %signed : tensor<2xi8> to tensor<2xi32>
  %unsigned = eff.constant dense<[255, 127]> : tensor<2xui8>
  %2 = eff.cast %unsigned : tensor<2xui8> to tensor<2xi32>
  %bool = eff.constant dense<[true, false]> : tensor<2xi1>
  %3 = eff.cast %bool : tensor<2xi1> to tensor<2xi64>
  return %0, %1, %2, %3 : tensor<2xi8>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @cast_int_to_float
// CHECK-DAG: %[[SIGNED:.*]] = eff.constant dense<[-3.000000e+00, 7.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[UNSIGNED:.*]] = eff.constant dense<[2.000000e+02, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[BOOL:.*]] = eff.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xbf16>
// CHECK: return %[[SIGNED]], %[[UNSIGNED]], %[[BOOL]]
func.func @cast_int_to_float() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xbf16>) {
  %signed = eff.constant dense<[-3, 7]> : tensor<2xi32>
  %0 = eff.cast %signed : tensor<2xi32> to tensor<2xf32>
  %unsigned = eff.constant dense<[200, 1]> : tensor<2xui8>
  %1 = eff.cast %unsigned : tensor<2xui8> to tensor<2xf32>
  %bool = eff.constant dense<[true, false]> : tensor<2xi1>
  %2 = eff.cast %bool : tensor<2xi1> to tensor<2xbf16>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xbf16>
}

// -----

// Float to integer truncates toward zero.
// CHECK-LABEL: func.func @cast_float_to_int
// CHECK-DAG: %[[SIGNED:.*]] = eff.constant dense<[2, -2, 0]> : tensor<3xi32>
// CHECK-DAG: %[[UNSIGNED:.*]] = eff.constant dense<[255, 0]> : tensor<2xui8>
// CHECK: return %[[SIGNED]], %[[UNSIGNED]]
func.func @cast_float_to_int() -> (tensor<3xi32>, tensor<2xui8>) {
  %a = eff.constant dense<[2.7, -2.7, -0.5]> : tensor<3xf32>
  %0 = eff.cast %a : tensor<3xf32> to tensor<3xi32>
  %b = eff.constant dense<[255.9, -0.5]> : tensor<2xf64>
  %1 = eff.cast %b : tensor<2xf64> to tensor<2xui8>
  return %0, %1 : tensor<3xi32>, tensor<2xui8>
}

// -----

// Out-of-range values and NaN have no defined integer: left for the runtime.
// CHECK-LABEL: func.func @cast_float_to_int_undefined_not_folded
// CHECK-COUNT-3: eff.cast
func.func @cast_float_to_int_undefined_not_folded() -> (tensor<2xi8>, tensor<ui8>, tensor<i32>) {
  %a = eff.constant dense<[1.0, 300.0]> : tensor<2xf32>
  %0 = eff.cast %a : tensor<2xf32> to tensor<2xi8>
  %b = eff.constant dense<-1.0> : tensor<f32>
  %1 = eff.cast %b : tensor<f32> to tensor<ui8>
  %nan = eff.constant dense<0x7FC00000> : tensor<f32>
  %2 = eff.cast %nan : tensor<f32> to tensor<i32>
  return %0, %1, %2 : tensor<2xi8>, tensor<ui8>, tensor<i32>
}

// -----

// Rounds to nearest even: 1 + 2^-8 is halfway between two bf16 values.
// CHECK-LABEL: func.func @cast_float_to_float
// CHECK-DAG: %[[BF16:.*]] = eff.constant dense<[1.000000e+00, 3.140630e+00]> : tensor<2xbf16>
// CHECK-DAG: %[[F64:.*]] = eff.constant dense<2.500000e-01> : tensor<2xf64>
// CHECK: return %[[BF16]], %[[F64]]
func.func @cast_float_to_float() -> (tensor<2xbf16>, tensor<2xf64>) {
  %a = eff.constant dense<[1.00390625, 3.14159]> : tensor<2xf32>
  %0 = eff.cast %a : tensor<2xf32> to tensor<2xbf16>
  %b = eff.constant dense<0.25> : tensor<2xf16>
  %1 = eff.cast %b : tensor<2xf16> to tensor<2xf64>
  return %0, %1 : tensor<2xbf16>, tensor<2xf64>
}

// -----

// Anything to i1 is `!= 0`; NaN is not zero.
// CHECK-LABEL: func.func @cast_to_bool
// CHECK-DAG: %[[FROM_FLOAT:.*]] = eff.constant dense<[false, true, true, false]> : tensor<4xi1>
// CHECK-DAG: %[[FROM_INT:.*]] = eff.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK: return %[[FROM_FLOAT]], %[[FROM_INT]]
func.func @cast_to_bool() -> (tensor<4xi1>, tensor<3xi1>) {
  %a = eff.constant dense<[0.0, -2.0, 0x7FC00000, -0.0]> : tensor<4xf32>
  %0 = eff.cast %a : tensor<4xf32> to tensor<4xi1>
  %b = eff.constant dense<[0, 5, 256]> : tensor<3xi64>
  %1 = eff.cast %b : tensor<3xi64> to tensor<3xi1>
  return %0, %1 : tensor<4xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = eff.cast %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @neg
// CHECK-DAG: %[[F:.*]] = eff.constant dense<[-1.500000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[I:.*]] = eff.constant dense<[-3, 0]> : tensor<2xi32>
// CHECK: return %[[F]], %[[I]]
func.func @neg() -> (tensor<2xf32>, tensor<2xi32>) {
  %a = eff.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %0 = eff.neg %a : tensor<2xf32>
  %b = eff.constant dense<[3, 0]> : tensor<2xi32>
  %1 = eff.neg %b : tensor<2xi32>
  return %0, %1 : tensor<2xf32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @logical_not
// CHECK: %[[C:.*]] = eff.constant dense<[false, true]> : tensor<2xi1>
// CHECK-NEXT: return %[[C]]
func.func @logical_not() -> tensor<2xi1> {
  %a = eff.constant dense<[true, false]> : tensor<2xi1>
  %0 = eff.logical_not %a : tensor<2xi1>
  return %0 : tensor<2xi1>
}

//===----------------------------------------------------------------------===//
// Identities
//===----------------------------------------------------------------------===//

// -----

// IEEE: x + -0.0 and x - +0.0 are x for every x, including -0.0.
// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: eff.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @arith_identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %minus_zero = eff.constant dense<-0.0> : tensor<f32>
  %zero = eff.constant dense<0.0> : tensor<f32>
  %one = eff.constant dense<1.0> : tensor<4xf32>
  %0 = eff.add %x, %minus_zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = eff.add %minus_zero, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = eff.sub %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = eff.mul %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = eff.mul %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = eff.div %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = eff.pow %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// -0.0 + +0.0 is +0.0, and -0.0 - -0.0 is +0.0: with the other zero, the
// result is not x when x is -0.0.
// CHECK-LABEL: func.func @float_zero_sign_matters
// CHECK: eff.add
// CHECK: eff.sub
func.func @float_zero_sign_matters(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = eff.constant dense<0.0> : tensor<f32>
  %minus_zero = eff.constant dense<-0.0> : tensor<f32>
  %0 = eff.add %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = eff.sub %x, %minus_zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @int_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xui8>, %[[B:.*]]: tensor<4xi1>)
// CHECK-NOT: eff.
// CHECK: return %[[X]], %[[X]], %[[B]]
func.func @int_identities(%x: tensor<4xui8>, %b: tensor<4xi1>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xi1>) {
  %zero = eff.constant dense<0> : tensor<ui8>
  %one = eff.constant dense<1> : tensor<ui8>
  %true = eff.constant dense<true> : tensor<i1>
  %0 = eff.add %x, %zero : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %1 = eff.div %x, %one : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  // i1 multiplication is `and`: true is its identity.
  %2 = eff.mul %b, %true : (tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xui8>, tensor<4xi1>
}

// -----

// The identity constant is bigger than x: the result is a broadcast of x,
// not x, so nothing folds.
// CHECK-LABEL: func.func @identities_do_not_fold_when_broadcasting
// CHECK: eff.add
// CHECK: eff.add
// CHECK: eff.sub
// CHECK: eff.mul
// CHECK: eff.div
// CHECK: eff.pow
func.func @identities_do_not_fold_when_broadcasting(%x: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %minus_zero = eff.constant dense<-0.0> : tensor<2x4xf32>
  %zero = eff.constant dense<0.0> : tensor<2x4xf32>
  %one = eff.constant dense<1.0> : tensor<2x4xf32>
  %0 = eff.add %x, %minus_zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = eff.add %minus_zero, %x : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = eff.sub %x, %zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = eff.mul %x, %one : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = eff.div %x, %one : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = eff.pow %x, %one : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// 0 - x is not x, and 1 / x is not x.
// CHECK-LABEL: func.func @identities_are_one_sided
// CHECK: eff.sub
// CHECK: eff.div
func.func @identities_are_one_sided(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = eff.constant dense<0.0> : tensor<f32>
  %one = eff.constant dense<1.0> : tensor<f32>
  %0 = eff.sub %zero, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = eff.div %one, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.transpose %x {permutation = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_constant
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @transpose_constant() -> tensor<3x2xi32> {
  %a = eff.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = eff.transpose %a {permutation = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// result[i] = x[p[q[i]]]: [0, 2, 1, 3] then [1, 0, 3, 2] is [2, 0, 3, 1].
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK-NEXT: %[[T:.*]] = eff.transpose %[[X]] {permutation = array<i64: 2, 0, 3, 1>} : tensor<2x3x4x5xf32> -> tensor<4x2x5x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4x5xf32>) -> tensor<4x2x5x3xf32> {
  %0 = eff.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %1 = eff.transpose %0 {permutation = array<i64: 1, 0, 3, 2>} : tensor<2x4x3x5xf32> -> tensor<4x2x5x3xf32>
  return %1 : tensor<4x2x5x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_transpose_is_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_of_transpose_is_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = eff.transpose %x {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = eff.transpose %0 {permutation = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// A weight gradient computed as x^T dy and transposed into W's layout is
// computed in W's layout: (X^T DY)^T = DY^T X.
// CHECK-LABEL: func.func @transpose_of_linear
// CHECK-SAME: (%[[X:.*]]: tensor<8x3xf32>, %[[DY:.*]]: tensor<8x5xf32>)
// CHECK-NEXT: %[[G:.*]] = eff.linear %[[DY]], %[[X]] {eff.gradient, transpose_a = true} : (tensor<8x5xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @transpose_of_linear(%x: tensor<8x3xf32>, %dy: tensor<8x5xf32>) -> tensor<5x3xf32> {
  %0 = eff.linear %x, %dy {eff.gradient, transpose_a = true} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
  %1 = eff.transpose %0 {permutation = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  return %1 : tensor<5x3xf32>
}

// -----

// Both flags: (A^T B^T)^T = B A, alpha, beta and a one-element bias kept.
// CHECK-LABEL: func.func @transpose_of_linear_both_flags
// CHECK-SAME: (%[[A:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<3x4xf32>, %[[C:.*]]: tensor<1x1xf32>)
// CHECK-NEXT: %[[G:.*]] = eff.linear %[[B]], %[[A]], %[[C]] {alpha = 2.000000e+00 : f64, beta = 5.000000e-01 : f64} : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<1x1xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: return %[[G]]
func.func @transpose_of_linear_both_flags(%a: tensor<4x2xf32>, %b: tensor<3x4xf32>, %c: tensor<1x1xf32>) -> tensor<3x2xf32> {
  %0 = eff.linear %a, %b, %c {alpha = 2.0 : f64, beta = 0.5 : f64, transpose_a = true, transpose_b = true} : (tensor<4x2xf32>, tensor<3x4xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  %1 = eff.transpose %0 {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// An accumulation chain of bf16 partial products into an f32 sum, rounded to
// bf16 and transposed (eff-chunk-cross-entropy's tied-embedding gradient):
// every link is computed transposed, the rounding after the last.
// CHECK-LABEL: func.func @transpose_of_accumulated_linears
// CHECK-SAME: (%[[X0:.*]]: tensor<8x3xbf16>, %[[D0:.*]]: tensor<8x5xbf16>, %[[X1:.*]]: tensor<8x3xbf16>, %[[D1:.*]]: tensor<8x5xbf16>, %[[Z:.*]]: tensor<f32>)
// CHECK-NEXT: %[[S0:.*]] = eff.linear %[[D0]], %[[X0]], %[[Z]] {transpose_a = true} : (tensor<8x5xbf16>, tensor<8x3xbf16>, tensor<f32>) -> tensor<5x3xf32>
// CHECK-NEXT: %[[S1:.*]] = eff.linear %[[D1]], %[[X1]], %[[S0]] {transpose_a = true} : (tensor<8x5xbf16>, tensor<8x3xbf16>, tensor<5x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT: %[[R:.*]] = eff.cast %[[S1]] : tensor<5x3xf32> to tensor<5x3xbf16>
// CHECK-NEXT: return %[[R]]
func.func @transpose_of_accumulated_linears(%x0: tensor<8x3xbf16>, %d0: tensor<8x5xbf16>, %x1: tensor<8x3xbf16>, %d1: tensor<8x5xbf16>, %zero: tensor<f32>) -> tensor<5x3xbf16> {
  %0 = eff.linear %x0, %d0, %zero {transpose_a = true} : (tensor<8x3xbf16>, tensor<8x5xbf16>, tensor<f32>) -> tensor<3x5xf32>
  %1 = eff.linear %x1, %d1, %0 {transpose_a = true} : (tensor<8x3xbf16>, tensor<8x5xbf16>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %2 = eff.cast %1 : tensor<3x5xf32> to tensor<3x5xbf16>
  %3 = eff.transpose %2 {permutation = array<i64: 1, 0>} : tensor<3x5xbf16> -> tensor<5x3xbf16>
  return %3 : tensor<5x3xbf16>
}

// -----

// Left alone: the product has another use (it would be computed twice), and
// a bias of full shape that is not a product would need its own transpose.
// CHECK-LABEL: func.func @transpose_of_linear_kept
// CHECK: %[[P:.*]] = eff.linear
// CHECK-NEXT: %[[T:.*]] = eff.transpose %[[P]]
// CHECK: %[[Q:.*]] = eff.linear
// CHECK-NEXT: %[[U:.*]] = eff.transpose %[[Q]]
// CHECK-NEXT: %[[C:.*]] = eff.cast
// CHECK-NEXT: %[[V:.*]] = eff.transpose %[[C]]
// CHECK-NEXT: return %[[T]], %[[P]], %[[U]], %[[V]]
func.func @transpose_of_linear_kept(%x: tensor<8x3xf32>, %dy: tensor<8x5xf32>, %c: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> (tensor<5x3xf32>, tensor<3x5xf32>, tensor<5x3xf32>, tensor<5x3xbf16>) {
  %0 = eff.linear %x, %dy {transpose_a = true} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
  %1 = eff.transpose %0 {permutation = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  %2 = eff.linear %x, %dy, %c {transpose_a = true} : (tensor<8x3xf32>, tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %3 = eff.transpose %2 {permutation = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  %4 = eff.cast %y : tensor<3x5xf32> to tensor<3x5xbf16>
  %5 = eff.transpose %4 {permutation = array<i64: 1, 0>} : tensor<3x5xbf16> -> tensor<5x3xbf16>
  return %1, %0, %3, %5 : tensor<5x3xf32>, tensor<3x5xf32>, tensor<5x3xf32>, tensor<5x3xbf16>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.reshape %x : tensor<2x3xf32> to tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<3x2xi64> {
  %a = eff.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %0 = eff.reshape %a : tensor<2x3xi64> to tensor<3x2xi64>
  return %0 : tensor<3x2xi64>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = eff.reshape %[[X]] : tensor<2x3x4xf32> to tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = eff.reshape %x : tensor<2x3x4xf32> to tensor<24xf32>
  %1 = eff.reshape %0 : tensor<24xf32> to tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape_is_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_of_reshape_is_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.reshape %x : tensor<2x3xf32> to tensor<6xf32>
  %1 = eff.reshape %0 : tensor<6xf32> to tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_to_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.broadcast_to %x : tensor<2x3xf32> to tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_constant
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[1, 2], [1, 2], [1, 2]]> : tensor<3x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_to_constant() -> tensor<3x2xi32> {
  %a = eff.constant dense<[[1, 2]]> : tensor<1x2xi32>
  %0 = eff.broadcast_to %a : tensor<1x2xi32> to tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// CHECK-LABEL: func.func @concat_constants
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[1, 2, 7], [3, 4, 7]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @concat_constants() -> tensor<2x3xi64> {
  %a = eff.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = eff.constant dense<7> : tensor<2x1xi64>
  %0 = eff.concat %a, %b {axis = -1 : i64} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @concat_single_input
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single_input(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @slice_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @slice_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, strides = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Reversing keeps the shape but is not the identity.
// CHECK-LABEL: func.func @slice_reverse_is_not_identity
// CHECK: eff.slice
func.func @slice_reverse_is_not_identity(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = eff.slice %x {starts = array<i64: 2>, limits = array<i64: -1>, strides = array<i64: -1>} : tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @slice_constant
// CHECK: %[[C:.*]] = eff.constant dense<{{\[}}[2, 4], [10, 12]]> : tensor<2x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @slice_constant() -> tensor<2x2xi32> {
  %a = eff.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]> : tensor<3x4xi32>
  %0 = eff.slice %a {starts = array<i64: 0, 1>, limits = array<i64: 3, 4>, strides = array<i64: 2, 2>} : tensor<3x4xi32> -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @slice_constant_negative_stride
// CHECK: %[[C:.*]] = eff.constant dense<[5, 3, 1]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @slice_constant_negative_stride() -> tensor<3xi64> {
  %a = eff.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>
  %0 = eff.slice %a {starts = array<i64: 5>, limits = array<i64: -1>, strides = array<i64: -2>} : tensor<6xi64> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// Negative indices count from the end.
// CHECK-LABEL: func.func @gather_constants
// CHECK-DAG: %[[ROWS:.*]] = eff.constant dense<{{\[}}[5, 6], [1, 2]]> : tensor<2x2xi32>
// CHECK-DAG: %[[COLUMN:.*]] = eff.constant dense<[2, 4, 6]> : tensor<3xi32>
// CHECK: return %[[ROWS]], %[[COLUMN]]
func.func @gather_constants() -> (tensor<2x2xi32>, tensor<3xi32>) {
  %data = eff.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %rows = eff.constant dense<[-1, 0]> : tensor<2xi64>
  %0 = eff.gather %data, %rows {axis = 0 : i64} : (tensor<3x2xi32>, tensor<2xi64>) -> tensor<2x2xi32>
  %last = eff.constant dense<1> : tensor<i32>
  %1 = eff.gather %data, %last {axis = 1 : i64} : (tensor<3x2xi32>, tensor<i32>) -> tensor<3xi32>
  return %0, %1 : tensor<2x2xi32>, tensor<3xi32>
}

// -----

// An index out of range is left for the runtime to report.
// CHECK-LABEL: func.func @gather_out_of_range_not_folded
// CHECK: eff.gather
func.func @gather_out_of_range_not_folded() -> tensor<i32> {
  %data = eff.constant dense<[1, 2, 3]> : tensor<3xi32>
  %index = eff.constant dense<3> : tensor<i64>
  %0 = eff.gather %data, %index {axis = 0 : i64} : (tensor<3xi32>, tensor<i64>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// CHECK-LABEL: func.func @pad_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @pad_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = eff.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>, value = 1.0 : f64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

//===----------------------------------------------------------------------===//
// Weights are never folded
//===----------------------------------------------------------------------===//

// -----

// `dense_resource` blobs are model weights: no folder reads them, so they are
// neither copied nor evaluated at compile time.
// CHECK-LABEL: func.func @dense_resource_not_folded
// CHECK: %[[W:.*]] = eff.constant dense_resource<weight> : tensor<2x2xf32>
// CHECK: eff.neg %[[W]]
// CHECK: eff.transpose %[[W]]
// CHECK: eff.reshape %[[W]]
// CHECK: eff.add %[[W]], %[[W]]
// CHECK: eff.cast %[[W]]
// CHECK: eff.slice %[[W]]
func.func @dense_resource_not_folded() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xbf16>, tensor<1x2xf32>) {
  %w = eff.constant dense_resource<weight> : tensor<2x2xf32>
  %0 = eff.neg %w : tensor<2x2xf32>
  %1 = eff.transpose %w {permutation = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %2 = eff.reshape %w : tensor<2x2xf32> to tensor<4xf32>
  %3 = eff.add %w, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %4 = eff.cast %w : tensor<2x2xf32> to tensor<2x2xbf16>
  %5 = eff.slice %w {starts = array<i64: 1, 0>, limits = array<i64: 2, 2>, strides = array<i64: 1, 1>} : tensor<2x2xf32> -> tensor<1x2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xbf16>, tensor<1x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// Casts that cancel: a round trip through a type that holds every value of
// the source folds away; one through a narrower or inexact type does not
// (f32 -> bf16 rounds, f16 -> bf16 loses mantissa bits, i32 -> i8 wraps).
// CHECK-LABEL: func.func @cast_round_trips
// CHECK-SAME: (%[[F:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf16>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NEXT: %[[BF:.*]] = eff.cast %[[F]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[BACK:.*]] = eff.cast %[[BF]] : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: %[[HB:.*]] = eff.cast %[[H]] : tensor<4xf16> to tensor<4xbf16>
// CHECK-NEXT: %[[HBACK:.*]] = eff.cast %[[HB]] : tensor<4xbf16> to tensor<4xf16>
// CHECK-NEXT: %[[I8:.*]] = eff.cast %[[I]] : tensor<4xi32> to tensor<4xi8>
// CHECK-NEXT: %[[IBACK:.*]] = eff.cast %[[I8]] : tensor<4xi8> to tensor<4xi32>
// CHECK-NEXT: return %[[F]], %[[H]], %[[I]], %[[BACK]], %[[HBACK]], %[[IBACK]]
func.func @cast_round_trips(%f: tensor<4xf32>, %h: tensor<4xf16>, %i: tensor<4xi32>)
    -> (tensor<4xf32>, tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xf16>, tensor<4xi32>) {
  %0 = eff.cast %f : tensor<4xf32> to tensor<4xf64>
  %1 = eff.cast %0 : tensor<4xf64> to tensor<4xf32>
  %2 = eff.cast %h : tensor<4xf16> to tensor<4xf32>
  %3 = eff.cast %2 : tensor<4xf32> to tensor<4xf16>
  %4 = eff.cast %i : tensor<4xi32> to tensor<4xi64>
  %5 = eff.cast %4 : tensor<4xi64> to tensor<4xi32>
  %6 = eff.cast %f : tensor<4xf32> to tensor<4xbf16>
  %7 = eff.cast %6 : tensor<4xbf16> to tensor<4xf32>
  %8 = eff.cast %h : tensor<4xf16> to tensor<4xbf16>
  %9 = eff.cast %8 : tensor<4xbf16> to tensor<4xf16>
  %10 = eff.cast %i : tensor<4xi32> to tensor<4xi8>
  %11 = eff.cast %10 : tensor<4xi8> to tensor<4xi32>
  return %1, %3, %5, %7, %9, %11 : tensor<4xf32>, tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xf16>, tensor<4xi32>
}
