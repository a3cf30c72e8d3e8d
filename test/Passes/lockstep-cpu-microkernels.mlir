// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-cpu-microkernels))' | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-cpu-microkernels{rows=2 cols=8}))' | FileCheck %s --check-prefix=SMALL
// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-cpu-microkernels{panel-rows=8}))' | FileCheck %s --check-prefix=PANEL
// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-cpu-microkernels{lanes=16 cols=32 rows=8 panel-rows=8 strip-rows=8}))' | FileCheck %s --check-prefix=STRIP

#x = affine_map<(t, k, n) -> (t, k)>
#w = affine_map<(t, k, n) -> (k, n)>
#y = affine_map<(t, k, n) -> (t, n)>

// A projection Y[T, 20] = X[T, 64] W[64, 20] (k between t and n, as the
// ONNX lowering orders it). Fewer than 4 rows: a work item per panel of
// 4096 columns, k outermost in steps of 4, each row's X[t, k..k+3]
// broadcast and folded in order into Y, which is loaded and stored once
// per step, 8 columns at a time, the last 4 columns one at a time with the
// body's scalar fma; then the last 64 mod 4 values of k one at a time (none
// here). Otherwise a work item per group of column tiles
// of 16 (as many as 256 KiB of packed weights hold, 64 here, fewer when
// there are not 16 work items' worth: one here): its whole tiles' 64 x 16
// weights packed, k outermost, then 4 x 16 tiles in 8 vector accumulators
// over k from 0 to 64, the last T mod 4 rows a row at a time; the columns
// after the last whole tile (16 to 20) fold each output alone. The body is
// fma(w, x, acc), so every vector fma keeps the weight first.
// CHECK-LABEL: func.func @edge
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[T]], %c4
// CHECK: scf.if %[[FEW]] {
// CHECK: arith.ceildivui %c20, %c4096
// CHECK: scf.parallel (%[[P:.*]]) =
// CHECK: %[[N0:.*]] = arith.muli %[[P]], %c4096
// CHECK: %[[K4:.*]] = arith.muli %{{.*}}, %c4
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[K4]] step %c4
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %[[T]] step
// CHECK: %[[XV:.*]] = memref.load %arg0[%[[R]], %[[K]]]
// CHECK: %[[K1:.*]] = arith.addi %[[K]], %c1
// CHECK: %[[XV1:.*]] = memref.load %arg0[%[[R]], %[[K1]]]
// CHECK: %[[XS:.*]] = vector.broadcast %[[XV]] : f32 to vector<8xf32>
// CHECK: %[[XS1:.*]] = vector.broadcast %[[XV1]] : f32 to vector<8xf32>
// CHECK: scf.for %[[N:.*]] = %[[N0]] to %{{.*}} step %c8
// CHECK: %[[YV:.*]] = vector.load %arg2[%[[R]], %[[N]]]
// CHECK: %[[WV:.*]] = vector.load %arg1[%[[K]], %[[N]]] : memref<64x20xf32>, vector<8xf32>
// CHECK: %[[F:.*]] = math.fma %[[WV]], %[[XS]], %[[YV]] : vector<8xf32>
// CHECK: %[[WV1:.*]] = vector.load %arg1[%[[K1]], %[[N]]] : memref<64x20xf32>, vector<8xf32>
// CHECK: %[[F1:.*]] = math.fma %[[WV1]], %[[XS1]], %[[F]] : vector<8xf32>
// CHECK-COUNT-2: math.fma
// CHECK: vector.store %{{.*}}, %arg2[%[[R]], %[[N]]]
// CHECK: scf.for
// CHECK: math.fma %{{.*}}, %[[XV]], %{{.*}} : f32
// CHECK-COUNT-3: math.fma {{.*}} : f32
// CHECK: memref.store
// CHECK: scf.for %{{.*}} = %[[K4]] to %c64 step
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-NOT: math.fma {{.*}} : vector<8xf32>
// CHECK: math.fma {{.*}} : f32
// CHECK: scf.reduce
// CHECK: } else {
// Up to 32 rows the tiles read the weights in place, a cache line of the
// row 64 ahead prefetched (the last row past the end); more rows pack them.
// Each side cuts its own work items.
// CHECK: %[[DIRECT:.*]] = arith.cmpi ule, %[[T]], %c32
// CHECK: scf.if %[[DIRECT]] {
// CHECK: %[[NT:.*]] = arith.ceildivui %c20, %c16
// CHECK: %[[WANT:.*]] = arith.divui %{{.*}}, %c16
// CHECK: %[[CAP:.*]] = arith.minui %[[WANT]], %c64
// CHECK: %[[G:.*]] = arith.maxui %[[CAP]], %c1
// CHECK: %[[SPAN:.*]] = arith.muli %[[G]], %c16
// CHECK: arith.ceildivui %c20, %[[SPAN]]
// CHECK: %[[MT:.*]] = arith.ceildivui %[[T]], %c4
// CHECK: scf.parallel (%[[C:.*]]) =
// CHECK: %[[C0:.*]] = arith.muli %[[C]], %[[SPAN]]
// CHECK: %[[CE:.*]] = arith.addi %[[C0]], %[[SPAN]]
// CHECK: %[[END:.*]] = arith.minui %[[CE]], %c20
// CHECK: %[[FULL:.*]] = arith.divui %{{.*}}, %c16
// CHECK: %[[NF:.*]] = arith.addi %[[C0]],
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[FULL]] step
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[MT]] step
// CHECK: scf.for %[[DK:.*]] = %{{.*}} to %c64 step %{{.*}} iter_args(
// CHECK-COUNT-2: vector.load %arg1[%[[DK]],
// CHECK: %[[AHEAD:.*]] = arith.addi %[[DK]], %c64
// CHECK: %[[PF:.*]] = arith.minui %[[AHEAD]],
// CHECK: memref.prefetch %arg1[%[[PF]], %{{.*}}], read, locality<3>, data
// CHECK-NOT: memref.prefetch
// CHECK: math.fma
// CHECK: } else {
// CHECK: %[[PG:.*]] = arith.maxui %{{.*}}, %c1
// CHECK: %[[PSPAN:.*]] = arith.muli %[[PG]], %c16
// CHECK: %[[PMT:.*]] = arith.ceildivui %[[T]], %c4
// CHECK: scf.parallel (%[[PC:.*]]) =
// CHECK: %[[PC0:.*]] = arith.muli %[[PC]], %[[PSPAN]]
// CHECK: %[[PEND:.*]] = arith.minui %{{.*}}, %c20
// CHECK: %[[FULL2:.*]] = arith.divui %{{.*}}, %c16
// CHECK: %[[PNF:.*]] = arith.addi %[[PC0]],
// CHECK: %[[PACK:.*]] = memref.alloc(%[[PG]]) {alignment = 64 : i64} : memref<?x64x16xf32>
// CHECK: scf.for %[[PK:.*]] = %{{.*}} to %c64 step
// CHECK: scf.for %[[PT:.*]] = %{{.*}} to %[[FULL2]] step
// CHECK-COUNT-2: vector.store %{{.*}}, %[[PACK]][%[[PT]], %[[PK]], %{{.*}}]
// CHECK: scf.for %[[TT:.*]] = %{{.*}} to %[[FULL2]] step
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[PMT]] step
// CHECK: scf.if
// CHECK-COUNT-8: vector.load %arg2
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.load %[[PACK]][%[[TT]],
// CHECK: vector.broadcast
// CHECK-COUNT-2: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-COUNT-3: vector.broadcast
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store %{{.*}}, %arg2
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[T]] step
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: math.fma {{.*}} : vector<8xf32>
// CHECK: memref.dealloc %[[PACK]]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[T]]
// CHECK: scf.for %{{.*}} = %[[PNF]] to %[[PEND]]
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: math.fma {{.*}} : f32
// CHECK-NOT: linalg.generic
// With panel-rows=8 (the pipelines' setting) fewer than 8 rows take the
// panels, and the tiles keep 4 rows.
// PANEL-LABEL: func.func @edge
// PANEL: arith.cmpi ult, %{{.*}}, %c8
// PANEL: } else {
// PANEL: arith.ceildivui %{{.*}}, %c4
// SMALL-LABEL: func.func @edge
// SMALL: arith.cmpi ult, %{{.*}}, %c2
// SMALL: memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64x8xf32>
// SMALL: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>) {
func.func @edge(%x: memref<?x64xf32>, %w: memref<64x20xf32>, %y: memref<?x20xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<?x64xf32>, memref<64x20xf32>) outs(%y : memref<?x20xf32>) {
  ^bb0(%in: f32, %wt: f32, %acc: f32):
    %r = math.fma %wt, %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A chunk's partial, Y[1, T, 3, 64] = fold over k of X[1, T, 3, 256] and
// W[3, 256, 64], k its fourth loop: the chunk dim j (and the unit dim) are
// batch dims, so a work item is one (unit, j, panel) or, with more than 32
// rows, (unit, j, group of column tiles), delinearized from one parallel
// dim with j before the columns. From 4 to 32 rows (the tiles reading W in
// place) j, which indexes the weights, gets no work items: each column tile
// loops over the 3 chunks around its row tiles, so that its weight rows are
// read in address order, and the prefetch runs on into the next chunk (row
// j·256 + k + 64, at most the last, 767). The fold runs over k in [0, 256)
// within the chunk, and nothing combines chunks here.
#xp = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#wp = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
#yp = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @partial
// CHECK: scf.if
// CHECK: %[[PANELS:.*]] = arith.ceildivui %c64, %c4096
// CHECK: %[[A:.*]] = arith.muli %c1{{.*}}, %c1{{.*}}
// CHECK: %[[B:.*]] = arith.muli %[[A]], %c3
// CHECK: %[[ITEMS:.*]] = arith.muli %[[B]], %[[PANELS]]
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%[[ITEMS]])
// CHECK: arith.remui %[[I]], %[[PANELS]]
// CHECK: arith.divui %[[I]], %[[PANELS]]
// CHECK: arith.remui %{{.*}}, %c3
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step
// CHECK: } else {
// CHECK: arith.cmpi ule, %{{.*}}, %c32
// CHECK: scf.if
// CHECK: scf.parallel
// CHECK-NOT: %c3
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c3 step
// CHECK: scf.for %[[DK:.*]] = %{{.*}} to %c256 step %{{.*}} iter_args
// CHECK: vector.load %arg1[%[[J]], %[[DK]], %{{.*}}] : memref<3x256x64xf32>, vector<8xf32>
// CHECK: %[[AHEAD:.*]] = arith.addi %[[DK]], %c64
// CHECK: %[[JROW:.*]] = arith.muli %[[J]], %c256
// CHECK: %[[ROW:.*]] = arith.addi %[[JROW]], %[[AHEAD]]
// CHECK: %[[ROWS:.*]] = arith.muli %c3, %c256
// CHECK: %[[LAST:.*]] = arith.subi %[[ROWS]], %c1
// CHECK: %[[PR:.*]] = arith.minui %[[ROW]], %[[LAST]]
// CHECK: %[[PJ:.*]] = arith.divui %[[PR]], %c256
// CHECK: %[[PK:.*]] = arith.remui %[[PR]], %c256
// CHECK: memref.prefetch %arg1[%[[PJ]], %[[PK]], %{{.*}}]
// CHECK: } else {
// CHECK: memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x256x16xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step %{{.*}} iter_args
func.func @partial(%x: memref<1x?x3x256xf32>, %w: memref<3x256x64xf32>, %y: memref<1x?x3x64xf32>) {
  linalg.generic {indexing_maps = [#xp, #wp, #yp],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<1x?x3x256xf32>, memref<3x256x64xf32>) outs(%y : memref<1x?x3x64xf32>) {
  ^bb0(%in: f32, %wt: f32, %acc: f32):
    %r = math.fma %in, %wt, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Weights transposed, W[40, 68] read as W[n, k]. With fewer rows than a
// tile: strips of 16 columns (then of 8), a tile of `rows` rows at a time
// (then a row at a time), with vector accumulators over all of k: each
// 8 x 8 block of W is loaded along its contiguous k and transposed in
// registers (24 shuffles) once for the tile's rows, and the block's 8
// values of k are folded in order; the last 68 % 8 = 4 values of k are
// gathered a column at a time; the last 40 % 8 columns alone. With many
// rows the column tile is packed into the same [k, 16] buffer as other
// weights, 8 x 8 blocks transposed the same way, the last values of k an
// element at a time, and the tiles run as for any weights.
#xt = affine_map<(t, n, k) -> (t, k)>
#wt = affine_map<(t, n, k) -> (n, k)>
#yt = affine_map<(t, n, k) -> (t, n)>
// CHECK-LABEL: func.func @transposed
// CHECK: scf.if
// CHECK: scf.parallel
// CHECK: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %c4
// CHECK: vector.load %arg2[%[[M]], %{{.*}}] : memref<?x40xf32>, vector<8xf32>
// CHECK-COUNT-7: vector.load %arg2
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.load %arg1[%[[S]], %[[K]]] : memref<40x68xf32>, vector<8xf32>
// CHECK-COUNT-48: vector.shuffle
// CHECK-NOT: vector.shuffle
// CHECK: memref.load %arg0[%[[M]], %[[K]]]
// CHECK-COUNT-8: math.fma {{.*}} : vector<8xf32>
// CHECK: scf.yield
// CHECK: vector.from_elements
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-COUNT-8: vector.store
// CHECK: scf.for %[[M1:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK-COUNT-2: vector.load %arg2[%[[M1]], %{{.*}}] : memref<?x40xf32>, vector<8xf32>
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.store
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8
// CHECK: vector.shuffle
// CHECK: scf.for
// CHECK: math.fma {{.*}} : f32
// CHECK: } else {
// CHECK: scf.parallel
// CHECK: %[[PACK:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x68x16xf32>
// CHECK: scf.for %[[PT:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %c64 step %c8
// CHECK: vector.load %arg1[%{{.*}}, %[[K0]]] : memref<40x68xf32>, vector<8xf32>
// CHECK-COUNT-24: vector.shuffle
// CHECK: vector.store %{{.*}}, %[[PACK]][%[[PT]], %[[K0]], %{{.*}}]
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c16{{.*}} step
// CHECK: %[[N:.*]] = arith.addi %{{.*}}, %[[J]]
// CHECK: scf.for %[[K:.*]] = %c64{{.*}} to %c68 step
// CHECK: %[[V:.*]] = memref.load %arg1[%[[N]], %[[K]]] : memref<40x68xf32>
// CHECK: memref.store %[[V]], %[[PACK]][%[[PT]], %[[K]], %[[J]]]
// CHECK: iter_args
// CHECK: vector.load %[[PACK]]
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-NOT: linalg.generic
// With AVX-512's lanes and strip-rows=8 (the x86-64-v4 pipeline's): up to
// 8 rows take the strips, 8 rows a tile, 16 x 16 blocks (64 shuffles) of
// one vector<16xf32> for the strip's 16 columns; the packed tiles
// transpose 16 x 16 blocks too.
// STRIP-LABEL: func.func @transposed
// STRIP: arith.cmpi ult, %{{.*}}, %c9
// STRIP: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %c16
// STRIP: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8
// STRIP-COUNT-8: vector.load %arg2{{.*}} : memref<?x40xf32>, vector<16xf32>
// STRIP: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c16{{.*}} iter_args
// STRIP-COUNT-16: vector.load %arg1{{.*}} : memref<40x68xf32>, vector<16xf32>
// STRIP-COUNT-64: vector.shuffle
// STRIP-NOT: vector.shuffle
// STRIP-COUNT-8: math.fma {{.*}} : vector<16xf32>
// STRIP: } else {
// STRIP: memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x68x32xf32>
// STRIP-COUNT-16: vector.load %arg1{{.*}} : memref<40x68xf32>, vector<16xf32>
// STRIP-COUNT-64: vector.shuffle
func.func @transposed(%x: memref<?x68xf32>, %w: memref<40x68xf32>, %y: memref<?x40xf32>) {
  linalg.generic {indexing_maps = [#xt, #wt, #yt], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x68xf32>, memref<40x68xf32>) outs(%y : memref<?x40xf32>) {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %r = math.fma %in, %wv, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A partial over transposed weights (a tied lm_head's X · Wᵀ chunked over
// k: W[n, j·256 + k]). With few rows the chunk dim j indexes the weights,
// so it is no work item's: each item is a panel of columns, and j is
// looped inside each strip, around its rows, so that a strip's weight rows
// are read whole in address order (j outer would read a chunk's 1 KB of
// every row, then come back for the next).
#xq = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#wq = affine_map<(d0, d1, d2, d3) -> (d3, d1, d2)>
#yq = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @partial_transposed
// CHECK: scf.if
// CHECK: arith.ceildivui %c64, %c4096
// CHECK-NOT: arith.muli %{{.*}}, %c3
// CHECK: scf.parallel
// CHECK: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c3 step
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// CHECK: vector.load %arg2[%[[M]], %[[J]], %{{.*}}] : memref<?x3x64xf32>, vector<8xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: vector.load %arg1[%[[S]], %[[J]], %[[K]]] : memref<64x3x256xf32>, vector<8xf32>
// CHECK-COUNT-24: vector.shuffle
// CHECK: } else {
func.func @partial_transposed(%x: memref<?x3x256xf32>, %w: memref<64x3x256xf32>,
                              %y: memref<?x3x64xf32>) {
  linalg.generic {indexing_maps = [#xq, #wq, #yq],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<?x3x256xf32>, memref<64x3x256xf32>) outs(%y : memref<?x3x64xf32>) {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %r = math.fma %in, %wv, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A tied lm_head's partial (3 chunks of 256, both fills forwardable) with
// its combine right after it. Below 4 rows the strips run the combine: once
// a chunk's outputs are folded, each vector of them is added to the
// combine's output, the combine's own add in its order (out + partial),
// chunk 0 adding to the forwarded fill's 0 instead of the stored value
// (the scalar columns past the last vector likewise); the partial buffer
// is never stored there. From 4 rows the tiles store the partials, then the
// combine's fill and the combine run after them as before.
#xc = affine_map<(t, j, n, k) -> (t, j, k)>
#wc = affine_map<(t, j, n, k) -> (n, j, k)>
#pc = affine_map<(t, j, n, k) -> (t, j, n)>
#ci = affine_map<(t, n, j) -> (t, j, n)>
#co = affine_map<(t, n, j) -> (t, n)>
// CHECK-LABEL: func.func @partial_combine
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x40xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}) : memref<?x3x40xf32>
// CHECK-NOT: linalg.
// CHECK: scf.if
// CHECK-NOT: memref<?x3x40xf32>
// CHECK: scf.parallel
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c3 step
// CHECK: %[[ACC:.*]]:8 = scf.for %{{.*}} = %{{.*}} to %c256 step
// CHECK: %[[PREV:.*]] = vector.load %[[OUT]][%{{.*}}, %{{.*}}] : memref<?x40xf32>, vector<8xf32>
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[J]], %{{.*}} : index
// CHECK: %[[FROM:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[PREV]] : vector<8xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[FROM]], %[[ACC]]#0 : vector<8xf32>
// CHECK: vector.store %[[SUM]], %[[OUT]][
// CHECK: %[[SPREV:.*]] = memref.load %[[OUT]]
// CHECK: %[[SFROM:.*]] = arith.select %{{.*}}, %[[ZERO]], %[[SPREV]] : f32
// CHECK: %[[SSUM:.*]] = arith.addf %[[SFROM]], %{{.*}} : f32
// CHECK: memref.store %[[SSUM]], %[[OUT]]
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %[[P]]
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%[[OUT]] : memref<?x40xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]] : memref<?x3x40xf32>) outs(%[[OUT]] : memref<?x40xf32>) attrs = {lockstep.chunk_role = "combine"}
// CHECK: memref.copy %[[OUT]]
func.func @partial_combine(%x: memref<?x3x256xf32>, %w: memref<40x3x256xf32>, %y: memref<?x40xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.dim %x, %c0 : memref<?x3x256xf32>
  %out = memref.alloc(%t) : memref<?x40xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<?x40xf32>)
  %p = memref.alloc(%t) : memref<?x3x40xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<?x3x40xf32>)
  linalg.generic {indexing_maps = [#xc, #wc, #pc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3x256xf32>, memref<40x3x256xf32>) outs(%p : memref<?x3x40xf32>)
      attrs = {lockstep.chunk_role = "partial"} {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %r = math.fma %in, %wv, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#ci, #co], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p : memref<?x3x40xf32>) outs(%out : memref<?x40xf32>) attrs = {lockstep.chunk_role = "combine"} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  memref.copy %out, %y : memref<?x40xf32> to memref<?x40xf32>
  memref.dealloc %p : memref<?x3x40xf32>
  memref.dealloc %out : memref<?x40xf32>
  return
}

// -----

// Transposed weights whose static k is too long to pack a column tile
// (768 x 32 floats, 96 KiB, with the AVX-512 options; a reduction folded
// whole, as the adaptive controls fold one): the strips, which read W in
// place, at every number of rows, with no branch on the rows and no packed
// copy. With 16 columns (48 KiB) they pack and take the tiles as usual.
#xl = affine_map<(t, n, k) -> (t, k)>
#wl = affine_map<(t, n, k) -> (n, k)>
#yl = affine_map<(t, n, k) -> (t, n)>
// STRIP-LABEL: func.func @long_transposed
// STRIP-NOT: scf.if
// STRIP-NOT: memref.alloc
// STRIP: scf.parallel
// STRIP: vector.load %arg1[%{{.*}}, %{{.*}}] : memref<50x768xf32>, vector<16xf32>
// STRIP-NOT: linalg.generic
// STRIP: return
// CHECK-LABEL: func.func @long_transposed
// CHECK: scf.if
// CHECK: } else {
// CHECK: memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x768x16xf32>
func.func @long_transposed(%x: memref<?x768xf32>, %w: memref<50x768xf32>, %y: memref<?x50xf32>) {
  linalg.generic {indexing_maps = [#xl, #wl, #yl], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x768xf32>, memref<50x768xf32>) outs(%y : memref<?x50xf32>) {
  ^bb0(%in: f32, %wt: f32, %acc: f32):
    %r = math.fma %in, %wt, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left to convert-linalg-to-parallel-loops: a plain sum (its body is not
// the contract's fma), an f64 product, and transposed weights whose k is
// dynamic (they cannot be packed).
#xd = affine_map<(t, n, k) -> (t, k)>
#wd = affine_map<(t, n, k) -> (n, k)>
#wn = affine_map<(t, n, k) -> (k, n)>
#yd = affine_map<(t, n, k) -> (t, n)>
// CHECK-LABEL: func.func @kept
// CHECK-NOT: vector.
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: vector.
func.func @kept(%x: memref<?x64xf32>, %wk: memref<64x32xf32>, %y: memref<?x32xf32>,
                %xd: memref<?x64xf64>, %wdd: memref<64x32xf64>, %yd: memref<?x32xf64>,
                %xk: memref<?x?xf32>, %wt: memref<32x?xf32>) {
  linalg.generic {indexing_maps = [#xd, #wn, #yd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x64xf32>, memref<64x32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %s = arith.addf %in, %wv : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#xd, #wn, #yd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xd, %wdd : memref<?x64xf64>, memref<64x32xf64>) outs(%yd : memref<?x32xf64>) {
  ^bb0(%in: f64, %wv: f64, %acc: f64):
    %r = math.fma %in, %wv, %acc : f64
    linalg.yield %r : f64
  }
  linalg.generic {indexing_maps = [#xd, #wd, #yd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xk, %wt : memref<?x?xf32>, memref<32x?xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %r = math.fma %in, %wv, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A fill of the output just before: the tiles start their accumulators from
// its value (no load of the output, no fill); the few-rows panels, which
// fold in memory, run the fill first.
#xf = affine_map<(t, n, k) -> (t, k)>
#wf = affine_map<(t, n, k) -> (k, n)>
#yf = affine_map<(t, n, k) -> (t, n)>
// CHECK-LABEL: func.func @forwarded
// CHECK-SAME: (%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64x32xf32>, %[[Y:.*]]: memref<?x32xf32>, %[[C:.*]]: f32)
// CHECK: scf.if
// CHECK-NEXT: linalg.fill ins(%[[C]] : f32) outs(%[[Y]]
// CHECK: } else {
// CHECK-NOT: linalg.fill
// CHECK: %[[B:.*]] = vector.broadcast %[[C]] : f32 to vector<8xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[B]]
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @forwarded(%x: memref<?x64xf32>, %w: memref<64x32xf32>, %y: memref<?x32xf32>, %c: f32) {
  linalg.fill ins(%c : f32) outs(%y : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#xf, #wf, #yf], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<64x32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%in: f32, %wv: f32, %acc: f32):
    %r = math.fma %in, %wv, %acc : f32
    linalg.yield %r : f32
  }
  return
}
