// An optimizer lowered per parameter: each update recomputes the step's
// scalars (here lr * 2^-step) into the same planned bytes; the second
// computation launches nothing (nothing wrote its inputs or outputs since
// the first), the third stays (the learning rate was written in between).
// Independent small elementwise ops share one launch ("small batch"): the
// two updates and the learning-rate write; an op reading what a batch
// member writes starts a new launch. Run as on the CPU and with every
// launch emulated: the same values (exact: powers of two).

// RUN: effopt-opt %s --eff-gpu-form-kernels=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: effopt-opt %s --eff-gpu-form-kernels | FileCheck %s --check-prefix=KERNELS
// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cpu
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.gpu
// RUN: diff %t.cpu %t.gpu
// Blocks and threads in descending order: the same values (no race the
// ascending order hides).
// RUN: effopt-opt %s --eff-gpu-form-kernels --eff-gpu-emulate-launches=descending=true --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.desc
// RUN: diff %t.cpu %t.desc
// RUN: FileCheck %s < %t.gpu

// REMARK: remark: recomputes what an earlier op stored in the same memory: no kernel
// REMARK: remark: small batch: one launch runs this op and the 2 after it
// KERNELS-LABEL: func.func @step
// KERNELS-COUNT-4: gpu.launch
// KERNELS-NOT: gpu.launch
// KERNELS: return

// p1 = 1 - 0.25 * 1 (lr 1, step 2), p2 = 2 - 0.25 * 2, lr doubled to 2,
// p3 = 3 - 0.5 * 3.
// CHECK: [0.75,  0.75,
// CHECK: [1.5,  1.5,
// CHECK: [1.5,  1.5,
// CHECK: [2]

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>

func.func @step(%arena: memref<4096xi8>, %lr: memref<f32>, %t: memref<i64>,
                %p1: memref<768xf32>, %p2: memref<768xf32>,
                %p3: memref<768xf32>) attributes {eff.arena_arg = 0 : i64} {
  %c0 = arith.constant 0 : index
  %two = arith.constant 2.0 : f32
  %s1 = memref.view %arena[%c0][] : memref<4096xi8> to memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []}
      ins(%lr, %t : memref<f32>, memref<i64>) outs(%s1 : memref<f32>) {
  ^bb0(%l: f32, %n: i64, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %neg = arith.negf %nf : f32
    %p = math.exp2 %neg : f32
    %r = arith.mulf %l, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]}
      ins(%p1, %s1 : memref<768xf32>, memref<f32>) outs(%p1 : memref<768xf32>) {
  ^bb0(%a: f32, %k: f32, %o: f32):
    %d = arith.mulf %a, %k : f32
    %r = arith.subf %a, %d : f32
    linalg.yield %r : f32
  }
  %s2 = memref.view %arena[%c0][] : memref<4096xi8> to memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []}
      ins(%lr, %t : memref<f32>, memref<i64>) outs(%s2 : memref<f32>) {
  ^bb0(%l: f32, %n: i64, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %neg = arith.negf %nf : f32
    %p = math.exp2 %neg : f32
    %r = arith.mulf %l, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]}
      ins(%p2, %s2 : memref<768xf32>, memref<f32>) outs(%p2 : memref<768xf32>) {
  ^bb0(%a: f32, %k: f32, %o: f32):
    %d = arith.mulf %a, %k : f32
    %r = arith.subf %a, %d : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%lr : memref<f32>) outs(%lr : memref<f32>) {
  ^bb0(%l: f32, %o: f32):
    %r = arith.mulf %l, %two : f32
    linalg.yield %r : f32
  }
  %s3 = memref.view %arena[%c0][] : memref<4096xi8> to memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []}
      ins(%lr, %t : memref<f32>, memref<i64>) outs(%s3 : memref<f32>) {
  ^bb0(%l: f32, %n: i64, %o: f32):
    %nf = arith.sitofp %n : i64 to f32
    %neg = arith.negf %nf : f32
    %p = math.exp2 %neg : f32
    %r = arith.mulf %l, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]}
      ins(%p3, %s3 : memref<768xf32>, memref<f32>) outs(%p3 : memref<768xf32>) {
  ^bb0(%a: f32, %k: f32, %o: f32):
    %d = arith.mulf %a, %k : f32
    %r = arith.subf %a, %d : f32
    linalg.yield %r : f32
  }
  return
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %n = arith.constant 2 : i64
  %arena = memref.alloc() : memref<4096xi8>
  %lr = memref.alloc() : memref<f32>
  %t = memref.alloc() : memref<i64>
  %p1 = memref.alloc() : memref<768xf32>
  %p2 = memref.alloc() : memref<768xf32>
  %p3 = memref.alloc() : memref<768xf32>
  memref.store %one, %lr[] : memref<f32>
  memref.store %n, %t[] : memref<i64>
  linalg.fill ins(%one : f32) outs(%p1 : memref<768xf32>)
  linalg.fill ins(%two : f32) outs(%p2 : memref<768xf32>)
  linalg.fill ins(%three : f32) outs(%p3 : memref<768xf32>)
  func.call @step(%arena, %lr, %t, %p1, %p2, %p3) : (memref<4096xi8>, memref<f32>, memref<i64>, memref<768xf32>, memref<768xf32>, memref<768xf32>) -> ()
  %u1 = memref.cast %p1 : memref<768xf32> to memref<*xf32>
  func.call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %p2 : memref<768xf32> to memref<*xf32>
  func.call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %p3 : memref<768xf32> to memref<*xf32>
  func.call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lr : memref<f32> to memref<*xf32>
  func.call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  return
}
