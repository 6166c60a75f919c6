// RUN: effopt-opt %s --split-input-file --eff-host-tasks=abi=cuda -verify-diagnostics
// RUN: not effopt-opt %s --split-input-file --eff-host-tasks=abi=rocm 2>&1 | FileCheck %s --check-prefix=ABI
// ABI: eff-host-tasks: abi must be cpu or cuda, got 'rocm'

// On a GPU only a host task can reach host memory: a call handed the
// host region's bytes (not a linalg op) has nowhere to run.
module {
  func.func private @opaque(memref<4xf32>)
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xf32>
    // expected-error @+1 {{eff-host-tasks: touches the host region (the optimizer's offloaded state) but is not a linalg op over views of the regions, so it cannot run as a host task (abi=cuda)}}
    call @opaque(%m) : (memref<4xf32>) -> ()
    return
  }
}

// -----

// A task that reads a whole device region (not a view at a constant
// offset) cannot be staged.
#id = affine_map<(d0) -> (d0)>
module {
  func.func @effx_step(%state: memref<?xi8>, %arena: memref<?xi8>, %io: memref<?xi8>, %host: memref<?xi8>) attributes {eff.arena_arg = 1 : i64} {
    %c0 = arith.constant 0 : index
    %m = memref.view %host[%c0][] : memref<?xi8> to memref<4xi8>
    %s = memref.subview %arena[0] [4] [1] : memref<?xi8> to memref<4xi8, strided<[1]>>
    // expected-error @+1 {{eff-host-tasks: touches the host region but uses a device region other than through a view at a constant offset; it cannot run on the host (abi=cuda)}}
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%s : memref<4xi8, strided<[1]>>) outs(%m : memref<4xi8>) {
    ^bb0(%a: i8, %o: i8):
      linalg.yield %a : i8
    }
    return
  }
}
