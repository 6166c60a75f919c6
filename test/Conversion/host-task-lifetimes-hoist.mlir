// RUN: effopt-opt %s --split-input-file --eff-host-task-lifetimes=hoist=true | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-host-task-lifetimes | FileCheck %s --check-prefix=STAY

// On a GPU each update starts as soon as what it reads is complete. The
// backward writes the second parameter's gradient first (the last layer's
// gradients come first); the learning-rate op of the optimizer
// (provenance "optimizer") moves up to the top, where nothing it reads is
// written; each update (a task: it touches the host region) moves up to
// right after the op that writes its gradient, above the rest of the
// backward, so the second update now runs first: the two only read the
// same bytes (the learning rate). Without `hoist` nothing moves.
// CHECK-LABEL: func.func @effx_step(
// CHECK: %[[LR:.*]] = memref.alloc() : memref<f32>
// CHECK: linalg.fill {{.*}} outs(%[[LR]] : memref<f32>)
// CHECK: %[[G2:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[G2]] : memref<4xf32>)
// CHECK-NEXT: memref.view
// CHECK-NEXT: memref.view
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[G2]], %[[LR]] : memref<4xf32>, memref<f32>)
// CHECK: %[[G1:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[G1]] : memref<4xf32>)
// CHECK-NEXT: memref.view
// CHECK-NEXT: memref.view
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[G1]], %[[LR]] : memref<4xf32>, memref<f32>)
// CHECK: %[[X:.*]] = memref.alloc() : memref<64xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[X]] : memref<64xf32>)
// The views the updates read were copied along; the originals are gone.
// CHECK-NOT: memref.view
// CHECK-NOT: linalg
// CHECK: return
// STAY: linalg.fill {{.*}} outs(%{{.*}} : memref<64xf32>)
// STAY: linalg.fill {{.*}} outs(%{{.*}} : memref<f32>)
// STAY: linalg.generic
// STAY: linalg.generic
#id = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#opt = loc(fused<"eff.optimizer">["lr"])
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %one = arith.constant 1.0 : f32
    %g2 = memref.alloc() : memref<4xf32>
    linalg.fill ins(%one : f32) outs(%g2 : memref<4xf32>)
    %g1 = memref.alloc() : memref<4xf32>
    linalg.fill ins(%one : f32) outs(%g1 : memref<4xf32>)
    %x = memref.alloc() : memref<64xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<64xf32>)
    %lr = memref.alloc() : memref<f32>
    linalg.fill ins(%one : f32) outs(%lr : memref<f32>) loc(#opt)
    %w1 = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    %m1 = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #s, #id, #id], iterator_types = ["parallel"]}
        ins(%g1, %lr : memref<4xf32>, memref<f32>) outs(%m1, %w1 : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %l: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %s = arith.mulf %m2, %l : f32
      %w2 = arith.subf %wi, %s : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    %w2v = memref.view %state[%c16][] : memref<?xi8> to memref<4xf32>
    %m2v = memref.view %host[%c16][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #s, #id, #id], iterator_types = ["parallel"]}
        ins(%g2, %lr : memref<4xf32>, memref<f32>) outs(%m2v, %w2v : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %l: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %s = arith.mulf %m2, %l : f32
      %w2 = arith.subf %wi, %s : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    return
  }
}

// -----

// An update does not pass an op that reads what it writes (the weight it
// updates, read by a copy), nor one whose buffers are not traced (a call).
// CHECK-LABEL: func.func @effx_step(
// CHECK: linalg.copy
// CHECK-NEXT: memref.view
// CHECK-NEXT: linalg.generic
// CHECK: call @opaque
// CHECK-NEXT: memref.view
// CHECK-NEXT: memref.view
// CHECK-NEXT: linalg.generic
#id = affine_map<(d0) -> (d0)>
module {
  func.func private @opaque()
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %g = memref.alloc() : memref<4xf32>
    %w = memref.view %state[%c0][] : memref<?xi8> to memref<4xf32>
    %t = memref.alloc() : memref<4xf32>
    linalg.copy ins(%w : memref<4xf32>) outs(%t : memref<4xf32>)
    %u = memref.alloc() : memref<4xf32>
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g : memref<4xf32>) outs(%m, %w : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2 = arith.addf %gi, %mi : f32
      %w2 = arith.subf %wi, %m2 : f32
      linalg.yield %m2, %w2 : f32, f32
    }
    call @opaque() : () -> ()
    %w2 = memref.view %state[%c16][] : memref<?xi8> to memref<4xf32>
    %m2 = memref.view %host[%c16][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g : memref<4xf32>) outs(%m2, %w2 : memref<4xf32>, memref<4xf32>) {
    ^bb0(%gi: f32, %mi: f32, %wi: f32):
      %m2x = arith.addf %gi, %mi : f32
      %w2x = arith.subf %wi, %m2x : f32
      linalg.yield %m2x, %w2x : f32, f32
    }
    return
  }
}

// -----

// A task that reads a constant global (8-bit Adam's quantization table):
// the global conflicts with nothing and is not an allocation to keep
// alive; the task still waits for the gradient's writer.
// CHECK-LABEL: func.func @effx_step(
// CHECK: linalg.fill
// CHECK-NEXT: memref.get_global @table
// CHECK: linalg.generic
// CHECK-NOT: memref.dealloc %{{.*}} : memref<4xf32, strided
// CHECK: memref.dealloc %{{.*}} : memref<4xf32>
// CHECK-NEXT: return
#id = affine_map<(d0) -> (d0)>
module {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %g = memref.alloc() : memref<4xf32>
    linalg.fill ins(%one : f32) outs(%g : memref<4xf32>)
    %x = memref.alloc() : memref<64xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<64xf32>)
    %t = memref.get_global @table : memref<4xf32>
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%g, %t : memref<4xf32>, memref<4xf32>) outs(%m : memref<4xf32>) {
    ^bb0(%gi: f32, %ti: f32, %mi: f32):
      %p = arith.mulf %gi, %ti : f32
      %r = arith.addf %p, %mi : f32
      linalg.yield %r : f32
    }
    return
  }
}
