// RUN: effopt-opt %s --split-input-file --eff-host-tasks | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-host-task-lifetimes | FileCheck %s --check-prefix=LIFE

// After the memory plan: the update (it reads the gradient's arena slot
// and writes the moment in the host region and the weight in state)
// becomes a task. The fill of other arena bytes runs while it does; the
// fill that reuses the gradient's slot waits for it first.
// CHECK-LABEL: func.func @effx_step(
// CHECK: %[[F:.*]] = constant @effx_step_host_task_0
// CHECK-NEXT: %[[H:.*]] = call @effrt_host_task_start(%[[F]])
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<4xf32>)
// CHECK-NEXT: memref.view
// CHECK-NEXT: call @effrt_host_task_wait(%[[H]]) : (i64) -> ()
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8xf32>)
// CHECK-NEXT: return
// The task rebuilds the views it reads from the four regions.
// CHECK: func.func private @effx_step_host_task_0(%[[S:.*]]: memref<?xi8>, %[[A:.*]]: memref<?xi8>, %[[I:.*]]: memref<?xi8>, %[[HO:.*]]: memref<?xi8>)
// CHECK-DAG: memref.view %[[A]]
// CHECK-DAG: memref.view %[[HO]]
// CHECK-DAG: memref.view %[[S]]
// CHECK: linalg.generic
// CHECK: return
// CHECK: func.func private @effrt_host_task_start((memref<?xi8>, memref<?xi8>, memref<?xi8>, memref<?xi8>) -> ()) -> i64
// CHECK: func.func private @effrt_host_task_wait(i64)
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

// A step without a host region (three regions) is left alone.
// CHECK-LABEL: func.func @effx_step(
// CHECK-NOT: effrt_host_task
// CHECK: linalg.fill
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %w = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.fill ins(%cst : f32) outs(%w : memref<4xf32>)
    return
  }
}

// -----

// Before the plan: the gradient an update reads stays allocated until the
// first later op that touches the update's bytes (here one that reads the
// updated weight), where the task will be waited for; the gradient of the
// second update, read by nothing after it, until the end. Later tasks do
// not count (tasks run in order).
// LIFE-LABEL: func.func @effx_step(
// LIFE: %[[G1:.*]] = memref.alloc() : memref<4xf32>
// LIFE: %[[G2:.*]] = memref.alloc() : memref<4xf32>
// LIFE: linalg.generic {{.*}} ins(%[[G1]]
// LIFE: linalg.generic {{.*}} ins(%[[G2]]
// LIFE: %[[T:.*]] = memref.alloc() : memref<4xf32>
// LIFE-NEXT: memref.dealloc %[[G1]]
// LIFE-NEXT: linalg.copy ins(%{{.*}} : memref<4xf32>) outs(%[[T]] : memref<4xf32>)
// LIFE-NEXT: memref.dealloc %[[G2]]
// LIFE-NEXT: return
#id = affine_map<(d0) -> (d0)>
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %w = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    %v = memref.view %state[%c64][] : memref<?xi8> to memref<4xf32>
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    %n = memref.view %host[%c64][] : memref<?xi8> to memref<4xf32>
    %g1 = memref.alloc() : memref<4xf32>
    %g2 = memref.alloc() : memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g1 : memref<4xf32>) outs(%m, %w : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %w2 = arith.subf %wi, %m2 : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g2 : memref<4xf32>) outs(%n, %v : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %w2 = arith.subf %wi, %m2 : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    %t = memref.alloc() : memref<4xf32>
    linalg.copy ins(%w : memref<4xf32>) outs(%t : memref<4xf32>)
    return
  }
}
