// RUN: effopt-opt %s --eff-fold-collective-copies --split-input-file | FileCheck %s

// A bucket of two tensors: each buffer becomes its slice of the bucket (the
// bucket turned into bytes, allocated before the first writer), its writer
// writes there, and the copies are gone. The bucket's own uses see it as
// f32 again.
// CHECK-LABEL: func.func @bucket(
// CHECK-NEXT: %[[RAW:.*]] = memref.alloc() {eff.collective_buffer} : memref<40xi8>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[RAW]][%[[C0]]][] : memref<40xi8> to memref<2x3xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<2x3xf32>)
// CHECK-NEXT: %[[C24:.*]] = arith.constant 24 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[RAW]][%[[C24]]][] : memref<40xi8> to memref<4xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[B]] : memref<4xf32>)
// CHECK: %[[BUCKET:.*]] = memref.view %[[RAW]][%{{.*}}][] : memref<40xi8> to memref<10xf32>
// CHECK-NOT: copy
// CHECK: call @sum(%[[BUCKET]])
func.func private @sum(memref<10xf32>)
func.func @bucket(%x: f32, %y: f32) {
  %a = memref.alloc() : memref<2x3xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<2x3xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%y : f32) outs(%b : memref<4xf32>)
  %bucket = memref.alloc() {eff.collective_buffer} : memref<10xf32>
  %s0 = memref.subview %bucket[0] [6] [1] : memref<10xf32> to memref<6xf32, strided<[1]>>
  %v0 = memref.expand_shape %s0 [[0, 1]] output_shape [2, 3] : memref<6xf32, strided<[1]>> into memref<2x3xf32>
  linalg.copy ins(%a : memref<2x3xf32>) outs(%v0 : memref<2x3xf32>)
  %s1 = memref.subview %bucket[6] [4] [1] : memref<10xf32> to memref<4xf32, strided<[1], offset: 6>>
  linalg.copy ins(%b : memref<4xf32>) outs(%s1 : memref<4xf32, strided<[1], offset: 6>>)
  call @sum(%bucket) : (memref<10xf32>) -> ()
  return
}

// -----

// A send buffer filled from a reshaped buffer: the buffer gets the send
// buffer's bytes, in the same element order.
// CHECK-LABEL: func.func @send_reshaped(
// CHECK-NEXT: %[[RAW:.*]] = memref.alloc() {eff.collective_buffer} : memref<24xi8>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[G:.*]] = memref.view %[[RAW]][%[[C0]]][] : memref<24xi8> to memref<2x3xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<2x3xf32>)
// CHECK-NEXT: memref.collapse_shape %[[G]]
// CHECK-NEXT: %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[SEND:.*]] = memref.view %[[RAW]][%[[C0B]]][] : memref<24xi8> to memref<6xf32>
// CHECK-NEXT: call @scatter(%[[SEND]])
func.func private @scatter(memref<6xf32>)
func.func @send_reshaped(%x: f32) {
  %g = memref.alloc() : memref<2x3xf32>
  linalg.fill ins(%x : f32) outs(%g : memref<2x3xf32>)
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  %send = memref.alloc() {eff.collective_buffer} : memref<6xf32>
  memref.copy %flat, %send : memref<6xf32> to memref<6xf32>
  call @scatter(%send) : (memref<6xf32>) -> ()
  return
}

// -----

// Not folded: the source is read after the copy (the collective changes
// the buffer, the reader needs the old values).
// CHECK-LABEL: func.func @read_after(
// CHECK: memref.copy
func.func private @scatter(memref<6xf32>)
func.func private @read(memref<6xf32>)
func.func @read_after(%x: f32) {
  %g = memref.alloc() : memref<6xf32>
  linalg.fill ins(%x : f32) outs(%g : memref<6xf32>)
  %send = memref.alloc() {eff.collective_buffer} : memref<6xf32>
  memref.copy %g, %send : memref<6xf32> to memref<6xf32>
  call @scatter(%send) : (memref<6xf32>) -> ()
  call @read(%g) : (memref<6xf32>) -> ()
  return
}

// -----

// Not folded: an argument has no allocation to move; a buffer that is no
// collective's is left alone.
// CHECK-LABEL: func.func @not_allocated(
// CHECK: memref.copy %{{.*}}, %{{.*}}
// CHECK: memref.copy %{{.*}}, %{{.*}}
func.func private @scatter(memref<6xf32>)
func.func @not_allocated(%g: memref<6xf32>, %x: f32) {
  %send = memref.alloc() {eff.collective_buffer} : memref<6xf32>
  memref.copy %g, %send : memref<6xf32> to memref<6xf32>
  call @scatter(%send) : (memref<6xf32>) -> ()
  %h = memref.alloc() : memref<6xf32>
  linalg.fill ins(%x : f32) outs(%h : memref<6xf32>)
  %other = memref.alloc() : memref<6xf32>
  memref.copy %h, %other : memref<6xf32> to memref<6xf32>
  call @scatter(%other) : (memref<6xf32>) -> ()
  return
}

// -----

// With an arena (eff.arena_arg), the folds are kept where the planned
// arena does not grow: here the send buffer takes the gradient's place.
// CHECK-LABEL: func.func @arena_kept(
// CHECK: memref.alloc() {eff.collective_buffer} : memref<4096xi8>
// CHECK-NOT: memref.copy
func.func private @scatter(memref<1024xf32>)
func.func @arena_kept(%arena: memref<?xi8>, %x: f32) attributes {eff.arena_arg = 0 : i64} {
  %g = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%x : f32) outs(%g : memref<1024xf32>)
  %send = memref.alloc() {eff.collective_buffer} : memref<1024xf32>
  memref.copy %g, %send : memref<1024xf32> to memref<1024xf32>
  call @scatter(%send) : (memref<1024xf32>) -> ()
  return
}

// -----

// A bucket whose first tensor is written before a large temporary: folded,
// the whole bucket would live beside the temporary (4 + 4096 + 8192
// bytes), more than the copy costs at the end (2 x 4100): the copies stay.
// CHECK-LABEL: func.func @arena_would_grow(
// CHECK: memref.alloc() {eff.collective_buffer} : memref<1025xf32>
// CHECK: memref.copy
// CHECK: linalg.copy
func.func private @sum(memref<1025xf32>)
func.func private @use(memref<2048xf32>)
func.func @arena_would_grow(%arena: memref<?xi8>, %x: f32) attributes {eff.arena_arg = 0 : i64} {
  %a = memref.alloc() : memref<f32>
  linalg.fill ins(%x : f32) outs(%a : memref<f32>)
  %t = memref.alloc() : memref<2048xf32>
  linalg.fill ins(%x : f32) outs(%t : memref<2048xf32>)
  call @use(%t) : (memref<2048xf32>) -> ()
  %b = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%x : f32) outs(%b : memref<1024xf32>)
  %bucket = memref.alloc() {eff.collective_buffer} : memref<1025xf32>
  %s0 = memref.subview %bucket[0] [1] [1] : memref<1025xf32> to memref<1xf32, strided<[1]>>
  %v0 = memref.collapse_shape %s0 [] : memref<1xf32, strided<[1]>> into memref<f32>
  memref.copy %a, %v0 : memref<f32> to memref<f32>
  %s1 = memref.subview %bucket[1] [1024] [1] : memref<1025xf32> to memref<1024xf32, strided<[1], offset: 1>>
  linalg.copy ins(%b : memref<1024xf32>) outs(%s1 : memref<1024xf32, strided<[1], offset: 1>>)
  call @sum(%bucket) : (memref<1025xf32>) -> ()
  return
}

// -----

// Decided buffer by buffer where folding all would grow the arena: the
// first bucket (as in @arena_would_grow) keeps its copies, the second,
// written after the large temporary, is folded (its writer writes into it).
// CHECK-LABEL: func.func @arena_per_buffer(
// CHECK: %[[FIRST:.*]] = memref.alloc() {eff.collective_buffer} : memref<1025xf32>
// CHECK: memref.copy
// CHECK: linalg.copy
// CHECK: call @sum(%[[FIRST]])
// CHECK-NEXT: %[[RAW:.*]] = memref.alloc() {eff.collective_buffer} : memref<4100xi8>
// CHECK: %[[LATE:.*]] = memref.view %[[RAW]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[LATE]] : memref<1025xf32>)
// CHECK-NOT: copy
// CHECK: return
func.func private @sum(memref<1025xf32>)
func.func private @use(memref<2048xf32>)
func.func @arena_per_buffer(%arena: memref<?xi8>, %x: f32) attributes {eff.arena_arg = 0 : i64} {
  %a = memref.alloc() : memref<f32>
  linalg.fill ins(%x : f32) outs(%a : memref<f32>)
  %t = memref.alloc() : memref<2048xf32>
  linalg.fill ins(%x : f32) outs(%t : memref<2048xf32>)
  call @use(%t) : (memref<2048xf32>) -> ()
  %b = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%x : f32) outs(%b : memref<1024xf32>)
  %bucket = memref.alloc() {eff.collective_buffer} : memref<1025xf32>
  %s0 = memref.subview %bucket[0] [1] [1] : memref<1025xf32> to memref<1xf32, strided<[1]>>
  %v0 = memref.collapse_shape %s0 [] : memref<1xf32, strided<[1]>> into memref<f32>
  memref.copy %a, %v0 : memref<f32> to memref<f32>
  %s1 = memref.subview %bucket[1] [1024] [1] : memref<1025xf32> to memref<1024xf32, strided<[1], offset: 1>>
  linalg.copy ins(%b : memref<1024xf32>) outs(%s1 : memref<1024xf32, strided<[1], offset: 1>>)
  call @sum(%bucket) : (memref<1025xf32>) -> ()
  %c = memref.alloc() : memref<1025xf32>
  linalg.fill ins(%x : f32) outs(%c : memref<1025xf32>)
  %second = memref.alloc() {eff.collective_buffer} : memref<1025xf32>
  memref.copy %c, %second : memref<1025xf32> to memref<1025xf32>
  call @sum(%second) : (memref<1025xf32>) -> ()
  return
}

// -----

// A bucket of one tensor copied whole into another collective's buffer (a
// stage-1 shard of a gradient that is its own bucket): the first copy is
// folded (the bucket turns into bytes), the second reads the bucket's view
// and stays; the source a copy reads is the one it has when it is folded.
// CHECK-LABEL: func.func @bucket_copied_on(
// CHECK-NEXT: %[[RAW:.*]] = memref.alloc() {eff.collective_buffer} : memref<24xi8>
// CHECK: %[[G:.*]] = memref.view %[[RAW]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<6xf32>)
// CHECK: %[[BUCKET:.*]] = memref.view %[[RAW]]
// CHECK-NEXT: call @sum(%[[BUCKET]])
// CHECK-NEXT: %[[SEND:.*]] = memref.alloc() {eff.collective_buffer} : memref<6xf32>
// CHECK-NEXT: memref.copy %[[BUCKET]], %[[SEND]]
// CHECK-NEXT: call @shard(%[[SEND]])
func.func private @sum(memref<6xf32>)
func.func private @shard(memref<6xf32>)
func.func @bucket_copied_on(%x: f32) {
  %g = memref.alloc() : memref<6xf32>
  linalg.fill ins(%x : f32) outs(%g : memref<6xf32>)
  %bucket = memref.alloc() {eff.collective_buffer} : memref<6xf32>
  memref.copy %g, %bucket : memref<6xf32> to memref<6xf32>
  call @sum(%bucket) : (memref<6xf32>) -> ()
  %send = memref.alloc() {eff.collective_buffer} : memref<6xf32>
  memref.copy %bucket, %send : memref<6xf32> to memref<6xf32>
  call @shard(%send) : (memref<6xf32>) -> ()
  return
}
