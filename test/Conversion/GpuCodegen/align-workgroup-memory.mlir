// RUN: effopt-opt %s --split-input-file --eff-gpu-align-workgroup-memory | FileCheck %s
// RUN: effopt-opt %s --split-input-file --eff-gpu-align-workgroup-memory="alignment=32" | FileCheck %s --check-prefix=WIDE
// RUN: not effopt-opt %s --split-input-file --eff-gpu-align-workgroup-memory="alignment=12" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: eff-gpu-align-workgroup-memory: alignment 12 is not a power of two

// Every workgroup buffer of every kernel gets at least 16 bytes (32 when
// asked); one already aligned further keeps its own; private memory is
// left alone.
// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: workgroup(%{{.*}} : memref<512xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64xi32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
// CHECK-SAME: private(%{{.*}} : memref<4xf32, #gpu.address_space<private>>)
// WIDE: workgroup(%{{.*}} : memref<512xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %{{.*}} : memref<64xi32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
gpu.module @kernels {
  gpu.func @kernel(%out: memref<512xf32>)
      workgroup(%a : memref<512xf32, #gpu.address_space<workgroup>>,
                %b : memref<64xi32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
      private(%p : memref<4xf32, #gpu.address_space<private>>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %a[%c0] : memref<512xf32, #gpu.address_space<workgroup>>
    memref.store %v, %out[%c0] : memref<512xf32>
    gpu.return
  }
}
