// RUN: effopt-opt %s --eff-memory-plan=report=true -o /dev/null 2>&1 | FileCheck %s
// RUN: effopt-opt %s --eff-memory-plan=attach-report=true | FileCheck --check-prefix=ATTR %s

// A forward ReLU whose output the backward reads (tagged saved), a forward
// Exp the backward also reads (untagged: an activation by its last reader), a
// dead forward buffer, a backward temporary and a parameter gradient.
// Schedule positions: 0 %relu, 1 %exp, 4 %loss, 5 %mask, 6 %grad, 7 fill
// %mask, 8 last read of %exp, 9 fill %grad, 10 last read of %relu.
// Live bytes peak at position 6 (64 + 96 + 256 + 32); largest-first placement
// puts %mask at 0, %exp at 256, %relu at 384, %grad at 448: arena 512.

// CHECK: allocated 512 bytes (512 B) = state 0 B + arena 512 B + io 0 B
// CHECK-NEXT: peak at schedule position 6 of 12: /l0/MatMul (gradient) (arena live 448, placement gaps 64)
// CHECK-NEXT: bytes at the peak by category:
// CHECK-NEXT: parameters 0
// CHECK-NEXT: buffers 0
// CHECK-NEXT: optimizer state 0
// CHECK-NEXT: gradients 32
// CHECK-NEXT: activations 160
// CHECK-NEXT: temporaries 256
// CHECK-NEXT: workspace 0
// CHECK-NEXT: batch and loss 0
// CHECK: per layer at the peak
// CHECK-NEXT: l0 0 B 0 B 32 B 160 B 256 B
// CHECK: live at the peak (4 buffers, largest first):
// CHECK-NEXT: bytes  category     decision    lifetime      node -> last use
// CHECK-NEXT: 256  temporaries  backward    5..7          /l0/Relu -> /l0/Relu (backward)
// CHECK-NEXT: 96  activations  forward     1..8          /l0/Exp -> /l0/Relu (backward)
// CHECK-NEXT: 64  activations  saved       0..10         /l0/Relu -> /l0/Relu (backward)
// CHECK-NEXT: 32  gradients    gradient    6..9          /l0/MatMul -> /l0/MatMul (gradient)

// The JSON for effc: one entry per buffer, in allocation order.
// ATTR: module attributes {eff.memory_report = "{\22buffers\22:[{\22bytes\22:64,\22category\22:\22activations\22

func.func @step(%arena: memref<?xi8>, %w: memref<8xf32>, %v: f32) attributes {eff.arena_arg = 0 : i64} {
  %relu = memref.alloc() : memref<16xf32> loc(fused<"eff.saved">["/l0/Relu"])
  %exp = memref.alloc() : memref<24xf32> loc("/l0/Exp")
  linalg.fill ins(%v : f32) outs(%relu : memref<16xf32>) loc(fused<"eff.saved">["/l0/Relu"])
  linalg.fill ins(%v : f32) outs(%exp : memref<24xf32>) loc("/l0/Exp")
  %loss = memref.alloc() : memref<4xf32> loc("/l0/Loss")
  %mask = memref.alloc() : memref<64xf32> loc(fused<"eff.backward">["/l0/Relu"])
  %grad = memref.alloc() : memref<8xf32> loc(fused<"eff.gradient">["/l0/MatMul"])
  linalg.fill ins(%v : f32) outs(%mask : memref<64xf32>) loc(fused<"eff.backward">["/l0/Relu"])
  memref.copy %exp, %exp : memref<24xf32> to memref<24xf32> loc(fused<"eff.backward">["/l0/Relu"])
  linalg.fill ins(%v : f32) outs(%grad : memref<8xf32>) loc(fused<"eff.gradient">["/l0/MatMul"])
  memref.copy %relu, %relu : memref<16xf32> to memref<16xf32> loc(fused<"eff.backward">["/l0/Relu"])
  return
}
