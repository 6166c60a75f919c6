// What eff-host-tasks abi=cuda makes of a step computes what the step
// computes: run without host tasks and with the cuda tasks emulated on
// host memory (test-eff-emulate-host-task-copies: the staging buffer
// starts as 0xff bytes, so a byte a task reads that was not copied down
// reads as NaN; the copies are memref.copy, the task a direct call), the
// regions end the same. The step has
//  - an update reading a gradient (arena) and a weight (state) it writes,
//    and a moment in the host region;
//  - an op that writes half of an arena buffer: the other half must come
//    back up as it was;
//  - two views of overlapping gradient bytes (one slot) read by an op
//    writing a second weight;
//  - a device op between the tasks.
// Nothing here runs on a GPU.

// RUN: effopt-opt %s --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.sync
// RUN: effopt-opt %s --eff-host-tasks=abi=cuda --test-eff-emulate-host-task-copies --convert-linalg-to-loops --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-math-to-llvm --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | grep -v base@ > %t.cuda
// RUN: diff %t.sync %t.cuda
// RUN: FileCheck %s < %t.cuda
// RUN: effopt-opt %s --eff-host-tasks=abi=cuda | FileCheck %s --check-prefix=TASKS

// TASKS-COUNT-3: call @effrt_cuda_host_task_start
// TASKS-NOT: call @effrt_cuda_host_task_start

// state: w = w0 - (m0 + g) = [0,1,2,3] - ([100..103] + [200..203]) and
// v = g1 + g2 = [212..215] + [214..217]; then the rest of state as it was.
// CHECK: [-300,  -301,  -302,  -303,  426,  428,  430,  432,  8,  9,  10,  11,  12,  13,  14,  15]
// arena: g, the fill (7s), half written from the moment ([300, 302]),
// the gradients read by the third task.
// CHECK: [200,  201,  202,  203,  7,  7,  7,  7,  300,  302,  210,  211,
// host: m = m0 + g.
// CHECK: [300,  302,  304,  306,  104,

#id = affine_map<(d0) -> (d0)>
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c40 = arith.constant 40 : index
    %c48 = arith.constant 48 : index
    %seven = arith.constant 7.0 : f32
    %w = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    %v = memref.view %state[%c16][] : memref<?xi8> to memref<4xf32>
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    %g = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g : memref<4xf32>) outs(%m, %w : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %w2 = arith.subf %wi, %m2 : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    %other = memref.view %arena[%c16][] : memref<?xi8> to memref<4xf32>
    linalg.fill ins(%seven : f32) outs(%other : memref<4xf32>)
    %part = memref.view %arena[%c32][] : memref<?xi8> to memref<4xf32>
    %half = memref.subview %part[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    %m2 = memref.subview %m[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%m2 : memref<2xf32, strided<[1]>>) outs(%half : memref<2xf32, strided<[1]>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
    %g1 = memref.view %arena[%c48][] : memref<?xi8> to memref<4xf32>
    %c56 = arith.constant 56 : index
    %g2 = memref.view %arena[%c56][] : memref<?xi8> to memref<4xf32>
    %h = memref.view %host[%c16][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
        ins(%g1, %g2, %h : memref<4xf32>, memref<4xf32>, memref<4xf32>) outs(%v : memref<4xf32>) {
    ^bb0(%a: f32, %b: f32, %hi: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %z = arith.mulf %hi, %o : f32
      %zero = arith.subf %z, %z : f32
      %r = arith.addf %s, %zero : f32
      linalg.yield %r : f32
    }
    return
  }

  // Each region as f32s: element i of region r is 100 * r + i (io: 300 +
  // i is unused); state 0.., arena 200.., host 100.. .
  func.func private @fill(%bytes: memref<?xi8>, %n: index, %base: f32) {
    %c0 = arith.constant 0 : index
    %view = memref.view %bytes[%c0][%n] : memref<?xi8> to memref<?xf32>
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%view : memref<?xf32>) {
    ^bb0(%o: f32):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f32
      %r = arith.addf %f, %base : f32
      linalg.yield %r : f32
    }
    return
  }

  func.func private @show(%bytes: memref<?xi8>, %n: index) {
    %c0 = arith.constant 0 : index
    %view = memref.view %bytes[%c0][%n] : memref<?xi8> to memref<?xf32>
    %u = memref.cast %view : memref<?xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }

  func.func @main() {
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %s = memref.alloc(%c64) : memref<?xi8>
    %a = memref.alloc(%c256) : memref<?xi8>
    %i = memref.alloc(%c16) : memref<?xi8>
    %h = memref.alloc(%c64) : memref<?xi8>
    %n16 = arith.constant 16 : index
    %n64 = arith.constant 64 : index
    %n4 = arith.constant 4 : index
    %f0 = arith.constant 0.0 : f32
    %f100 = arith.constant 100.0 : f32
    %f200 = arith.constant 200.0 : f32
    %f300 = arith.constant 300.0 : f32
    call @fill(%s, %n16, %f0) : (memref<?xi8>, index, f32) -> ()
    call @fill(%a, %n64, %f200) : (memref<?xi8>, index, f32) -> ()
    call @fill(%i, %n4, %f300) : (memref<?xi8>, index, f32) -> ()
    call @fill(%h, %n16, %f100) : (memref<?xi8>, index, f32) -> ()
    call @effx_step(%s, %a, %i, %h) : (memref<?xi8>, memref<?xi8>, memref<?xi8>, memref<?xi8>) -> ()
    call @show(%s, %n16) : (memref<?xi8>, index) -> ()
    call @show(%a, %n64) : (memref<?xi8>, index) -> ()
    call @show(%h, %n16) : (memref<?xi8>, index) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
