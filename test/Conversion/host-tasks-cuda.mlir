// RUN: effopt-opt %s --split-input-file --eff-host-tasks=abi=cuda --cse | FileCheck %s

// On a GPU the update reads the gradient (arena) and the weight (state),
// both device memory: they are copied down into the task's staging slots
// (state first, then arena, each at a 256-byte boundary), the task runs on
// the copies and the host region, and the weight it wrote goes back up.
// The gradient is only read: it is not copied back.
// CHECK-LABEL: module attributes {eff.host_staging_bytes = 512 : i64}
// The arguments: to host (1) or device (0), region, offset, staging
// offset, bytes (constants the printer names by value).
// CHECK-LABEL: func.func @effx_step(
// CHECK: call @effrt_cuda_host_task_copy(%c1_i32, %c0_i32, %c0_i64, %c0_i64, %c16_i64)
// CHECK: call @effrt_cuda_host_task_copy(%c1_i32, %c1_i32, %c0_i64, %c256_i64, %c16_i64)
// CHECK: call @effrt_cuda_host_task_copy(%c0_i32, %c0_i32, %c0_i64, %c0_i64, %c16_i64)
// CHECK-NOT: effrt_cuda_host_task_copy
// CHECK: %[[F:.*]] = constant @effx_step_host_task_0
// CHECK-NEXT: %[[H:.*]] = call @effrt_cuda_host_task_start(%[[F]])
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<4xf32>)
// CHECK-NEXT: memref.view
// CHECK-NEXT: call @effrt_cuda_host_task_wait(%[[H]]) : (i64) -> ()
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8xf32>)
// CHECK-NEXT: return
// The task's device views are views of the staging buffer (its first
// argument) at their slots; the host region's stay views of the host.
// CHECK: func.func private @effx_step_host_task_0(%[[S:.*]]: memref<?xi8>, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>, %[[HO:.*]]: memref<?xi8>)
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[G:.*]] = memref.view %[[S]][%[[C256]]][] : memref<?xi8> to memref<4xf32>
// CHECK-DAG: %[[M:.*]] = memref.view %[[HO]]
// CHECK-DAG: %[[W:.*]] = memref.view %[[S]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[G]] : memref<4xf32>) outs(%[[M]], %[[W]] : memref<4xf32>, memref<4xf32>)
// CHECK: func.func private @effrt_cuda_host_task_start((memref<?xi8>, memref<?xi8>, memref<?xi8>, memref<?xi8>) -> ()) -> i64
// CHECK: func.func private @effrt_cuda_host_task_wait(i64)
// CHECK: func.func private @effrt_cuda_host_task_copy(i32, i32, i64, i64, i64)
#id = affine_map<(d0) -> (d0)>
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %cst = arith.constant 0.0 : f32
    %w = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    %g = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g : memref<4xf32>) outs(%m, %w : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %w2 = arith.subf %wi, %m2 : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    %other = memref.view %arena[%c64][] : memref<?xi8> to memref<4xf32>
    linalg.fill ins(%cst : f32) outs(%other : memref<4xf32>)
    %reuse = memref.view %arena[%c0][] : memref<?xi8> to memref<8xf32>
    linalg.fill ins(%cst : f32) outs(%reuse : memref<8xf32>)
    return
  }
}

// -----

// A master weight's update: the fp32 weight and the moment live on the
// host; the device's bf16 copy is written whole and never read, so it is
// only copied up. Two views of overlapping gradient bytes (the second
// starts 8 bytes in) share one slot of 24 bytes, each at its own place in
// it; a subview written in part is copied down too, so that the bytes the
// op leaves alone go back up unchanged.
// Each task lays its slots out from 0: the tasks run in order and share
// one buffer, as large as the largest task's.
// CHECK-LABEL: module attributes {eff.host_staging_bytes = 512 : i64}
// CHECK-LABEL: func.func @effx_step(
// CHECK: call @effrt_cuda_host_task_copy(%c1_i32, %c1_i32, %c128_i64, %c256_i64, %c24_i64)
// CHECK: call @effrt_cuda_host_task_copy(%c0_i32, %c0_i32, %c0_i64, %c0_i64, %c8_i64)
// CHECK: call @effrt_cuda_host_task_start
// CHECK: call @effrt_cuda_host_task_copy(%c1_i32, %c1_i32, %c512_i64, %c0_i64, %c16_i64)
// CHECK: call @effrt_cuda_host_task_copy(%c0_i32, %c1_i32, %c512_i64, %c0_i64, %c16_i64)
// CHECK-NOT: effrt_cuda_host_task_copy
// CHECK: call @effrt_cuda_host_task_start
// (The functions come out in reverse order: each goes right after the step.)
// CHECK: func.func private @effx_step_host_task_1(%[[S1:[a-z0-9]*]]: memref<?xi8>,
// CHECK: memref.view %[[S1]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK: memref.subview
// CHECK: func.func private @effx_step_host_task_0(%[[S:[a-z0-9]*]]: memref<?xi8>,
// CHECK-DAG: memref.view %[[S]][%{{.*}}][] : memref<?xi8> to memref<4xbf16>
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C264:.*]] = arith.constant 264 : index
// CHECK-DAG: memref.view %[[S]][%[[C256]]][] : memref<?xi8> to memref<4xf32>
// CHECK-DAG: memref.view %[[S]][%[[C264]]][] : memref<?xi8> to memref<4xf32>
#id = affine_map<(d0) -> (d0)>
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %c136 = arith.constant 136 : index
    %c512 = arith.constant 512 : index
    %copy = memref.view %state[%c0][] : memref<?xi8> to memref<4xbf16>
    %w = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    %g1 = memref.view %arena[%c128][] : memref<?xi8> to memref<4xf32>
    %g2 = memref.view %arena[%c136][] : memref<?xi8> to memref<4xf32>
    %part = memref.view %arena[%c512][] : memref<?xi8> to memref<4xf32>
    %half = memref.subview %part[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    %w2 = memref.subview %w[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
        ins(%g1, %g2 : memref<4xf32>, memref<4xf32>) outs(%w, %copy : memref<4xf32>, memref<4xbf16>) {
    ^bb0(%a: f32, %b: f32, %wi: f32, %ci: bf16):
      %s = arith.addf %a, %b : f32
      %n = arith.subf %wi, %s : f32
      %t = arith.truncf %n : f32 to bf16
      linalg.yield %n, %t : f32, bf16
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%w2 : memref<2xf32, strided<[1]>>) outs(%half : memref<2xf32, strided<[1]>>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
    return
  }
}

// -----

// A copy into the host region (Adafactor's state) is the linalg.copy it is,
// and runs as a task: the arena bytes it reads come down first.
// CHECK-LABEL: func.func @effx_step(
// CHECK: call @effrt_cuda_host_task_copy(%c1_i32, %c1_i32, %c0_i64, %c0_i64, %c16_i64)
// CHECK-NOT: effrt_cuda_host_task_copy
// CHECK: call @effrt_cuda_host_task_start
// CHECK-NOT: memref.copy
// CHECK: func.func private @effx_step_host_task_0(
// CHECK: linalg.copy
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    %g = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
    memref.copy %g, %m : memref<4xf32> to memref<4xf32>
    return
  }
}
