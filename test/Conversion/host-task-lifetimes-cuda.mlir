// RUN: effopt-opt %s --eff-host-task-lifetimes=abi=cuda | FileCheck %s
// RUN: effopt-opt %s --eff-host-task-lifetimes | FileCheck %s --check-prefix=CPU
// RUN: not effopt-opt %s --eff-host-task-lifetimes=abi=rocm 2>&1 | FileCheck %s --check-prefix=ABI

// On a GPU a copy into the host region (Adafactor's state) is the
// linalg.copy it is, a task: the buffer it reads stays allocated until the
// task is waited for (here the end). On the CPU it stays a memref.copy,
// run in place.
// CHECK-LABEL: func.func @effx_step(
// CHECK: %[[G:.*]] = memref.alloc() : memref<4xf32>
// CHECK: linalg.copy ins(%[[G]] : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// CHECK-NEXT: memref.dealloc %[[G]] : memref<4xf32>
// CHECK-NEXT: return
// CPU: memref.copy
// CPU-NOT: memref.dealloc
// ABI: eff-host-task-lifetimes: abi must be cpu or cuda, got 'rocm'
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %g = memref.alloc() : memref<4xf32>
    linalg.fill ins(%one : f32) outs(%g : memref<4xf32>)
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    memref.copy %g, %m : memref<4xf32> to memref<4xf32>
    return
  }
}
