// RUN: effopt-opt %s --eff-gpu-share-kernels | FileCheck %s

// Outlined kernels that are the same but for their names and locations are
// one gpu.module, the first; each launch of an erased one launches the kept
// kernel with its own arguments. A different constant, workgroup buffer,
// constant table or use-def structure keeps a module of its own.

// CHECK-LABEL: func.func @step
// CHECK: gpu.launch_func @scale_0::@scale_0 {{.*}} args(%[[A:.*]] : memref<64xf32>, %[[B:.*]] : memref<64xf32>)
// CHECK: gpu.launch_func @scale_0::@scale_0 {{.*}} args(%[[B]] : memref<64xf32>, %[[A]] : memref<64xf32>)
// CHECK: gpu.launch_func @scale_other_constant::@scale_other_constant
// CHECK: gpu.launch_func @reduce_0::@reduce_0
// CHECK: gpu.launch_func @reduce_0::@reduce_0
// CHECK: gpu.launch_func @reduce_wider::@reduce_wider
// CHECK: gpu.launch_func @table_0::@table_0
// CHECK: gpu.launch_func @table_other_values::@table_other_values
// CHECK: gpu.launch_func @table_0::@table_0
// CHECK: gpu.launch_func @swapped::@swapped

// CHECK: gpu.module @scale_0
// CHECK-NOT: gpu.module @scale_1
// CHECK: gpu.module @scale_other_constant
// CHECK: gpu.module @reduce_0
// CHECK-NOT: gpu.module @reduce_1
// CHECK: gpu.module @reduce_wider
// CHECK: gpu.module @table_0
// CHECK: gpu.module @table_other_values
// CHECK-NOT: gpu.module @table_same_values
// CHECK: gpu.module @swapped
// CHECK-NOT: gpu.module

module attributes {gpu.container_module} {
  func.func @step(%a: memref<64xf32>, %b: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @scale_0::@scale_0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>, %b : memref<64xf32>)
    gpu.launch_func @scale_1::@scale_1 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%b : memref<64xf32>, %a : memref<64xf32>)
    gpu.launch_func @scale_other_constant::@scale_other_constant blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>, %b : memref<64xf32>)
    gpu.launch_func @reduce_0::@reduce_0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @reduce_1::@reduce_1 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%b : memref<64xf32>)
    gpu.launch_func @reduce_wider::@reduce_wider blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @table_0::@table_0 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @table_other_values::@table_other_values blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @table_same_values::@table_same_values blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%b : memref<64xf32>)
    gpu.launch_func @swapped::@swapped blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>, %b : memref<64xf32>)
    return
  }

  gpu.module @scale_0 {
    gpu.func @scale_0(%x: memref<64xf32>, %y: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %v = memref.load %x[%i] : memref<64xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @scale_1 {
    gpu.func @scale_1(%x: memref<64xf32>, %y: memref<64xf32>) kernel {
      %i = gpu.thread_id x loc("elsewhere")
      %two = arith.constant 2.0 : f32
      %v = memref.load %x[%i] : memref<64xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @scale_other_constant {
    gpu.func @scale_other_constant(%x: memref<64xf32>, %y: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %two = arith.constant 3.0 : f32
      %v = memref.load %x[%i] : memref<64xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i] : memref<64xf32>
      gpu.return
    }
  }

  gpu.module @reduce_0 {
    gpu.func @reduce_0(%x: memref<64xf32>)
        workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c0 = arith.constant 0 : index
      %r = memref.load %s[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %r, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @reduce_1 {
    gpu.func @reduce_1(%x: memref<64xf32>)
        workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c0 = arith.constant 0 : index
      %r = memref.load %s[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %r, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @reduce_wider {
    gpu.func @reduce_wider(%x: memref<64xf32>)
        workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c0 = arith.constant 0 : index
      %r = memref.load %s[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %r, %x[%i] : memref<64xf32>
      gpu.return
    }
  }

  // A constant table copied into the module under the same name: only
  // its values tell the modules apart.
  gpu.module @table_0 {
    memref.global "private" constant @lookup : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @table_0(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %t = memref.get_global @lookup : memref<2xf32>
      %c1 = arith.constant 1 : index
      %v = memref.load %t[%c1] : memref<2xf32>
      memref.store %v, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @table_other_values {
    memref.global "private" constant @lookup : memref<2xf32> = dense<[1.0, 5.0]>
    gpu.func @table_other_values(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %t = memref.get_global @lookup : memref<2xf32>
      %c1 = arith.constant 1 : index
      %v = memref.load %t[%c1] : memref<2xf32>
      memref.store %v, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @table_same_values {
    memref.global "private" constant @lookup : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @table_same_values(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %t = memref.get_global @lookup : memref<2xf32>
      %c1 = arith.constant 1 : index
      %v = memref.load %t[%c1] : memref<2xf32>
      memref.store %v, %x[%i] : memref<64xf32>
      gpu.return
    }
  }

  // @scale_0's ops, but it reads y and writes x.
  gpu.module @swapped {
    gpu.func @swapped(%x: memref<64xf32>, %y: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %v = memref.load %y[%i] : memref<64xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
}
