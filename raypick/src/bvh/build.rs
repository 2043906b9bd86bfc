//! The builder: binned SAH at the top, Morton-ordered SAH sweeps below.
//!
//! Works on an array of `PrimRef`s (a triangle's padded box and id, 32 bytes, SIMD
//! registers) that is partitioned in place, so every pass over a node's triangles is
//! sequential in memory. Per binned node there are two passes: one bins the
//! centroids on all three axes (of a strided sample on large nodes), one
//! partitions and gathers each side's box and centroid bounds for the next level.
//! Large nodes bin in parallel and build their two subtrees in parallel
//! (`rayon::join`), each into its own window of the one node array (module `nodes`).
//!
//! Subtrees of at most [`BuildOptions::morton_subtree`] triangles (which fit the
//! caches) are sorted along a Morton curve and split where an SAH sweep along it
//! is lowest (module `morton`): no partitioning, no binning, and leaves chosen by the
//! SAH cost of the whole subtree. Subtrees of long thin triangles, whose boxes
//! overlap (`SLIVERS`), are split as larger ones are instead, until their parts
//! no longer overlap as much. On meshes binned at every level, nodes of at most
//! `SWEEP_MAX` triangles sort them along each axis and take the best of every
//! split instead.

use glam::{Vec3, Vec3A, Vec4};
use rayon::prelude::*;

use super::nodes::{self, NodeArray, NodeWindow, Room};
use super::{Bvh, MAX_DEPTH, SAH_DEPTH, memory, morton};
use crate::Mesh;
use crate::prepare::{hittable, pack_hittable};
use crate::types::{BvhChild, BvhNode, PackedTriangle};

/// Builder settings.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildOptions {
    /// Most triangles in one leaf (1..=255).
    pub max_leaf_size: usize,
    /// SAH bins per axis (2..=16); small nodes use fewer.
    pub bins: usize,
    /// SAH cost of visiting a node, relative to one triangle test.
    pub traversal_cost: f32,
    /// Subtrees of at most this many triangles are sorted once along a Morton curve
    /// and split where an SAH sweep along that order is lowest, instead of being
    /// binned and partitioned at every level: a build of 1M triangles in about half
    /// the time of binning throughout. Larger subtrees build a little faster still
    /// (4096: some 10% less build time), but on CAD meshes, whose long thin
    /// triangles a single curve orders poorly, they trace markedly slower (4096:
    /// 10% fewer incoherent rays per second, and picks at the image centre taking
    /// twice as long, on 8 copies of assimp's 121k-triangle engine). Subtrees of
    /// long thin triangles whose boxes overlap (`SLIVERS`) are split as larger
    /// ones are, whatever their size. 0 bins every level. Meshes of fewer than
    /// [`MORTON_MIN_TRIANGLES`] hittable triangles are binned throughout.
    pub morton_subtree: usize,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            max_leaf_size: 8,
            bins: 16,
            traversal_cost: 1.0,
            morton_subtree: 1024,
        }
    }
}

/// Meshes with fewer hittable triangles than this are binned at every level. Their
/// builds are short either way, and there the Morton sweeps' coarser trees cost the
/// most: mid-sized meshes, long thin CAD triangles above all, trace markedly faster
/// through binned trees (`benches/side_by_side.rs`), for about twice the build time.
pub const MORTON_MIN_TRIANGLES: usize = 1 << 18;

/// Most SAH bins per axis.
const MAX_BINS: usize = 16;

/// Subtrees of at most [`BuildOptions::morton_subtree`] triangles whose triangles'
/// boxes have a summed surface above this many times their own box's are split as
/// larger ones are (binned, or swept along each axis), not along a Morton curve:
/// long thin triangles, whose boxes overlap, are ones the curve through their
/// centroids orders poorly. The small triangles of a scanned surface sum to 1.5–2.4
/// times their subtree's box (the Stanford dragon's subtrees, 10th to 90th
/// percentile), those of a CAD part to 1.9–7 (8 copies of assimp's engine,
/// median 3.7).
const SLIVERS: f32 = 2.5;

/// Whether `prims`, whose box is `bounds`, overlap too much for a Morton sweep
/// ([`SLIVERS`]). False when the areas are not finite (coordinates near `f32`'s
/// limits), which the Morton sweep takes as before.
fn slivered(prims: &[PrimRef], bounds: &Aabb) -> bool {
    let sum: f32 = prims.iter().map(|p| p.aabb().half_area()).sum();
    sum > SLIVERS * bounds.half_area()
}

/// Nodes with more triangles than this bin in parallel and build their subtrees in
/// parallel.
const PARALLEL_THRESHOLD: usize = 16 * 1024;

/// Nodes of at most this many triangles sweep every split of their centroids
/// sorted along each axis ([`Builder::swept_split`]) instead of binning them: an
/// exact SAH split, for less work than filling and merging bins for so few.
const SWEEP_MAX: usize = 32;

/// Nodes with more triangles than this choose their split from an evenly strided
/// sample of about this many (some 64 per bin): as good a split (on the built-in
/// 1M-triangle scene the same SAH cost, and within 1% as many boxes visited per
/// ray), at a fraction of the binning work. The children's boxes come from the
/// partition pass, which sees every triangle.
const BIN_SAMPLE: usize = 1024;

/// A triangle's padded bounding box; the box minimum's `w` holds the triangle's
/// index in the packed triangle array (as bits).
#[derive(Clone, Copy, Debug, bytemuck::Zeroable)]
#[repr(C, align(16))]
pub(super) struct PrimRef {
    pub(super) lo: Vec4,
    pub(super) hi: Vec4,
}

impl PrimRef {
    /// The box `lo..hi` of triangle `id`.
    pub(super) fn new(lo: Vec3, hi: Vec3, id: u32) -> Self {
        Self {
            lo: lo.extend(f32::from_bits(id)),
            hi: hi.extend(0.0),
        }
    }

    fn id(&self) -> u32 {
        self.lo.w.to_bits()
    }

    /// The box (`w` lanes carry no meaning).
    #[inline(always)]
    pub(super) fn aabb(&self) -> Aabb {
        Aabb {
            lo: self.lo,
            hi: self.hi,
        }
    }

    /// Twice the centroid (`w` is meaningless).
    #[inline(always)]
    pub(super) fn centroid2(&self) -> Vec4 {
        self.lo + self.hi
    }

    /// Grows `boxes` by this box and `centroids` by its centroid.
    #[inline(always)]
    fn add_to(&self, (boxes, centroids): &mut (Aabb, Aabb)) {
        boxes.grow(self.lo, self.hi);
        let centroid = self.centroid2();
        centroids.grow(centroid, centroid);
    }
}

/// An axis-aligned box (`w` lanes carry no meaning).
#[derive(Clone, Copy, Debug)]
pub(super) struct Aabb {
    pub(super) lo: Vec4,
    pub(super) hi: Vec4,
}

impl Aabb {
    pub(super) const EMPTY: Aabb = Aabb {
        lo: Vec4::splat(f32::INFINITY),
        hi: Vec4::splat(f32::NEG_INFINITY),
    };

    #[inline(always)]
    fn grow(&mut self, lo: Vec4, hi: Vec4) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }

    #[inline(always)]
    pub(super) fn union(self, other: Aabb) -> Aabb {
        Aabb {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    /// The box's size along each axis, with `w` 0 so that scales made from it are 0
    /// in `w` too. The `w` lanes of a [`PrimRef`]'s box hold a triangle's index,
    /// which as a float is denormal; multiplying one by anything but zero costs a
    /// microcode assist of some hundred cycles on Intel cores.
    pub(super) fn extent(&self) -> Vec4 {
        (self.hi - self.lo).truncate().extend(0.0)
    }

    /// Half the surface area (the SAH only needs ratios); 0 for an empty box.
    #[inline(always)]
    pub(super) fn half_area(&self) -> f32 {
        let d = (self.hi - self.lo).max(Vec4::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    pub(super) fn lo3(&self) -> Vec3 {
        self.lo.truncate()
    }

    pub(super) fn hi3(&self) -> Vec3 {
        self.hi.truncate()
    }
}

/// The box of a packed triangle (its three vertices),
/// padded outward so that rounding in box tests can never cull a hit.
pub fn triangle_box(tri: &PackedTriangle) -> (Vec3, Vec3) {
    vertices_box([tri.v0, tri.v1, tri.v2])
}

/// The padded box of a triangle given by its vertices (see [`triangle_box`]).
#[inline]
pub fn vertices_box(vertices: [Vec3; 3]) -> (Vec3, Vec3) {
    // In vector registers (`Vec3A`): some four times faster than three scalar lanes,
    // with the same operations, so the same box.
    let (lo, hi) = vertices_bounds(vertices.map(Vec3A::from));
    let (lo, hi) = pad(lo, hi);
    (lo.into(), hi.into())
}

/// How far [`vertices_box`] pads the box of a triangle given by its vertices on
/// every side ([`box_margin`]).
#[inline]
pub(crate) fn vertices_margin(vertices: [Vec3A; 3]) -> f32 {
    let (lo, hi) = vertices_bounds(vertices);
    box_margin(lo, hi)
}

/// The unpadded box of three vertices.
#[inline(always)]
fn vertices_bounds([a, b, c]: [Vec3A; 3]) -> (Vec3A, Vec3A) {
    (a.min(b).min(c), a.max(b).max(c))
}

/// The fraction of a triangle box's magnitude (its largest coordinate or extent)
/// by which [`triangle_box`] pads it outward, plus `f32::MIN_POSITIVE`.
pub(crate) const BOX_PADDING: f32 = 1.0 / 262_144.0;

/// Pads a box outward by [`BOX_PADDING`] of its coordinates' magnitude.
#[inline(always)]
fn pad(lo: Vec3A, hi: Vec3A) -> (Vec3A, Vec3A) {
    let margin = box_margin(lo, hi);
    (lo - margin, hi + margin)
}

/// How far [`triangle_box`] pads the box from `lo` to `hi` on every side:
/// [`BOX_PADDING`] of its magnitude (its largest coordinate or extent), plus
/// `f32::MIN_POSITIVE`.
#[inline(always)]
fn box_margin(lo: Vec3A, hi: Vec3A) -> f32 {
    let magnitude = lo
        .abs()
        .max(hi.abs())
        .max_element()
        .max((hi - lo).max_element());
    magnitude * BOX_PADDING + f32::MIN_POSITIVE
}

/// A tree as the builder leaves it: the node array with the gaps that parallel
/// builds leave between their windows, and the hittable triangles' boxes in leaf
/// order, each carrying its triangle's id; the triangles themselves are packed
/// from the mesh as they are read, so no packed copy of the whole mesh is written
/// and read back. [`BuiltTree::into_bvh`] closes the gaps and packs the triangles
/// in leaf order; the CPU's collapse reads the nodes as they are and needs
/// neither, its leaf blocks packed from the leaf order alone
/// ([`BuiltTree::into_leaf_order`]).
pub(crate) struct BuiltTree<'m> {
    /// Interior nodes, node 0 the root; no child refers to a slot in a gap.
    pub(crate) nodes: Vec<BvhNode>,
    /// Each interior node's triangles `(first, end)` in leaf order, by node index.
    pub(crate) ranges: Vec<(u32, u32)>,
    /// The unused runs `(first, count)` of `nodes`.
    gaps: Vec<(usize, usize)>,
    /// The mesh, whose triangles are packed as they are read.
    mesh: &'m Mesh,
    /// The hittable triangles' boxes in leaf order (each carries its triangle's id).
    prims: Vec<PrimRef>,
    depth: usize,
    mesh_triangles: usize,
}

impl<'m> BuiltTree<'m> {
    /// Hittable triangles in the leaves.
    #[cfg(test)]
    fn triangle_count(&self) -> usize {
        self.prims.len()
    }

    /// The tree's interior nodes and their triangle ranges (as [`BuiltTree`]'s
    /// fields), and its leaf order, the boxes freed ([`LeafOrder`]).
    pub(crate) fn into_leaf_order(self) -> (Vec<BvhNode>, Vec<(u32, u32)>, LeafOrder<'m>) {
        let mut ids = memory::with_capacity(self.prims.len());
        self.prims.par_iter().map(PrimRef::id).collect_into_vec(&mut ids);
        let order = LeafOrder { mesh: self.mesh, ids };
        (self.nodes, self.ranges, order)
    }

    /// The tree as a [`Bvh`]: its nodes without gaps, its triangles in leaf order.
    pub(crate) fn into_bvh(self) -> Bvh {
        // The ranges, then the node array with its gaps, go before the larger
        // buffers that follow take their memory.
        let BuiltTree {
            nodes,
            ranges,
            gaps,
            mesh,
            prims,
            depth,
            mesh_triangles,
        } = self;
        drop(ranges);
        let end = nodes.len();
        let nodes = nodes::compact(nodes, end, gaps);
        let mut triangles = memory::with_capacity(prims.len());
        prims
            .par_iter()
            .map(|p| hittable_triangle(mesh, p.id()))
            .collect_into_vec(&mut triangles);
        Bvh {
            nodes,
            triangles,
            depth,
            mesh_triangles,
        }
    }
}

/// Triangle `id` of `mesh`, a hittable one, packed.
#[inline(always)]
fn hittable_triangle(mesh: &Mesh, id: u32) -> PackedTriangle {
    pack_hittable(mesh.triangle(id as usize), id)
}

/// A built tree's leaf order without its boxes: the id of the triangle at each
/// position, and the mesh that the triangles are packed from as they are read.
/// All that packing the CPU's leaf blocks needs of the build once its nodes are
/// collapsed: 4 bytes a triangle where the boxes take 32, so that the build's
/// largest buffer is freed before the blocks take their memory, which then comes
/// from pages the process has just used rather than ones never touched.
pub(crate) struct LeafOrder<'m> {
    mesh: &'m Mesh,
    ids: Vec<u32>,
}

impl LeafOrder<'_> {
    /// Positions in the leaf order: the tree's hittable triangles.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The triangle at position `index` of the leaf order.
    #[inline(always)]
    pub(crate) fn leaf_triangle(&self, index: usize) -> PackedTriangle {
        hittable_triangle(self.mesh, self.ids[index])
    }

    /// Where the mesh keeps the vertex indices of the triangle at position `index`
    /// of the leaf order, for a prefetch.
    #[inline(always)]
    pub(crate) fn leaf_indices(&self, index: usize) -> *const [u32; 3] {
        self.mesh.indices().as_ptr().wrapping_add(self.ids[index] as usize)
    }
}

/// Builds the tree of a mesh down to `bottom`, leaving it as [`BuiltTree`]
/// describes.
pub(crate) fn build_tree<'m>(mesh: &'m Mesh, options: &BuildOptions, bottom: Bottom) -> BuiltTree<'m> {
    build_tree_in(mesh, options, bottom, bottom.room())
}

/// [`build_tree`] with windows of `room` in the node array: where one runs out
/// ([`NodeArray::overflowed`]), the tree is built again from the first pass
/// (which puts the triangles back in the mesh's order) with room for any tree,
/// and so is the same tree either way.
fn build_tree_in<'m>(mesh: &'m Mesh, options: &BuildOptions, bottom: Bottom, room: Room) -> BuiltTree<'m> {
    let options = BuildOptions {
        max_leaf_size: options.max_leaf_size.clamp(1, 255),
        bins: options.bins.clamp(2, MAX_BINS),
        ..options.clone()
    };
    try_build(mesh, &options, bottom, room).unwrap_or_else(|| {
        try_build(mesh, &options, bottom, Room::Any)
            .unwrap_or_else(|| unreachable!("windows with room for any tree never run out"))
    })
}

/// The tree of a mesh down to `bottom` (with `options` in range), its node array
/// in windows of `room`; `None` when one ran out.
fn try_build<'m>(mesh: &'m Mesh, options: &BuildOptions, bottom: Bottom, room: Room) -> Option<BuiltTree<'m>> {
    // One indexed pass learns from each triangle's vertices whether it can be hit
    // and its box, writes the boxes of the hittable ones in place, at the front of
    // each chunk, and gathers the bounds of the boxes and of their centroids;
    // where chunks left out triangles that can never be hit, the gaps they leave
    // are then closed ([`close_gaps`]). Nothing is packed here: the leaves pack
    // their triangles from the mesh, in leaf order.
    let count = mesh.triangle_count();
    let mut prims: Vec<PrimRef> = memory::scratch(count);
    let chunks: Vec<FirstPass> = prims
        .par_chunks_mut(FIRST_PASS_CHUNK)
        .enumerate()
        .map(|(chunk, prims)| chunk_boxes(mesh, chunk * FIRST_PASS_CHUNK, prims))
        .collect();
    let first_pass = chunks.iter().fold(FirstPass::default(), FirstPass::merge);
    close_gaps(&mut prims, &chunks, first_pass.kept);
    let mut tree = BuiltTree {
        nodes: Vec::new(),
        ranges: Vec::new(),
        gaps: Vec::new(),
        mesh,
        prims,
        depth: 1, // the root
        mesh_triangles: count,
    };
    if tree.prims.is_empty() {
        tree.nodes.push(BvhNode {
            children: [BvhChild::EMPTY; 2],
        });
        tree.ranges.push((0, 0));
        return Some(tree);
    }
    let (bounds, centroids) = first_pass.bounds;
    let builder = Builder {
        options,
        morton_subtree: if tree.prims.len() >= MORTON_MIN_TRIANGLES {
            options.morton_subtree
        } else {
            0
        },
        whole_runs: bottom.whole_runs(),
    };
    let array = NodeArray::new(room);
    let slots = room.slots(tree.prims.len());
    let (mut nodes, mut ranges) = (memory::scratch(slots), memory::scratch(slots));
    let mut window = NodeWindow::new(&mut nodes, &mut ranges, &array);
    let (root, depth) = builder.build_child(&mut tree.prims, 0, bounds, centroids, 0, &mut window);
    let end = window.len();
    if array.overflowed() {
        return None;
    }
    nodes.truncate(end);
    ranges.truncate(end);
    if root.is_leaf() {
        // A single leaf: the root node holds it and an empty slot.
        nodes.push(BvhNode {
            children: [root, BvhChild::EMPTY],
        });
        ranges.push((0, root.count));
    }
    tree.nodes = nodes;
    tree.ranges = ranges;
    tree.gaps = array.into_gaps();
    tree.depth = depth.max(1);
    Some(tree)
}

/// Triangles per task of the first pass.
const FIRST_PASS_CHUNK: usize = 16 * 1024;

/// What the first pass gathers besides the triangles' boxes (of a chunk, or of
/// the mesh): the bounds of the hittable triangles' boxes and of their centroids,
/// and how many triangles are hittable.
struct FirstPass {
    /// Bounds of the boxes and of the centroids.
    bounds: (Aabb, Aabb),
    /// Hittable triangles, whose boxes were kept.
    kept: usize,
}

impl Default for FirstPass {
    fn default() -> Self {
        Self {
            bounds: (Aabb::EMPTY, Aabb::EMPTY),
            kept: 0,
        }
    }
}

impl FirstPass {
    fn merge(self, other: &FirstPass) -> FirstPass {
        FirstPass {
            bounds: union_bounds(self.bounds, other.bounds),
            kept: self.kept + other.kept,
        }
    }
}

/// Writes the boxes of the hittable triangles among those from `first` on (as
/// many as `prims` holds) to the front of `prims`, in order, and gathers their
/// bounds.
fn chunk_boxes(mesh: &Mesh, first: usize, prims: &mut [PrimRef]) -> FirstPass {
    let mut pass = FirstPass::default();
    for k in first..first + prims.len() {
        let vertices = mesh.triangle(k);
        if hittable(vertices) {
            let (lo, hi) = vertices_box(vertices);
            let prim = PrimRef::new(lo, hi, k as u32);
            prim.add_to(&mut pass.bounds);
            prims[pass.kept] = prim;
            pass.kept += 1;
        }
    }
    pass
}

/// Makes the boxes that the first pass kept at the front of each of its `chunks`
/// of `prims` one run of `kept`: each gap before position `kept` (the end of a
/// chunk that left out triangles) takes, in order, the kept boxes that lie at or
/// after it. Only as many boxes move as there are gaps before `kept`, at most as
/// many as triangles left out, where keeping the mesh's order would move every
/// box after the first gap; the order is the mesh's but for those, and the same
/// on any number of threads (the chunks are of a fixed size).
fn close_gaps(prims: &mut Vec<PrimRef>, chunks: &[FirstPass], kept: usize) {
    let len = prims.len();
    let chunk_ranges = || {
        chunks.iter().enumerate().map(move |(k, chunk)| {
            let start = k * FIRST_PASS_CHUNK;
            (start, start + chunk.kept, (start + FIRST_PASS_CHUNK).min(len))
        })
    };
    let gaps = chunk_ranges().flat_map(|(_, end_kept, end)| end_kept.min(kept)..end.min(kept));
    let beyond = chunk_ranges().flat_map(|(start, end_kept, _)| start.max(kept)..end_kept);
    for (gap, from) in gaps.zip(beyond) {
        prims[gap] = prims[from];
    }
    prims.truncate(kept);
}

/// Bounds of the boxes and of the centroids.
fn bounds_and_centroids(prims: &[PrimRef]) -> (Aabb, Aabb) {
    let fold = |mut bounds: (Aabb, Aabb), p: &PrimRef| {
        p.add_to(&mut bounds);
        bounds
    };
    let empty = (Aabb::EMPTY, Aabb::EMPTY);
    prims
        .par_chunks(8192)
        .map(|c| c.iter().fold(empty, fold))
        .reduce(|| empty, union_bounds)
}

/// The union of two (box bounds, centroid bounds) pairs.
fn union_bounds(a: (Aabb, Aabb), b: (Aabb, Aabb)) -> (Aabb, Aabb) {
    (a.0.union(b.0), a.1.union(b.1))
}

/// Per-bin boxes and triangle counts for the three axes.
#[derive(Clone, Copy)]
struct Bins {
    boxes: [[Aabb; 3]; MAX_BINS],
    counts: [[u32; 3]; MAX_BINS],
}

impl Bins {
    const EMPTY: Bins = Bins {
        boxes: [[Aabb::EMPTY; 3]; MAX_BINS],
        counts: [[0; 3]; MAX_BINS],
    };

    /// The bins of every `stride`-th of `prims`. Neighbours often fall into the
    /// same bin, so two sets of bins take turns: an update then rarely waits for
    /// the previous one.
    fn of(prims: &[PrimRef], stride: usize, binner: &Binner) -> Bins {
        let (mut even, mut odd) = (Bins::EMPTY, Bins::EMPTY);
        let mut sample = prims.iter().step_by(stride);
        while let Some(p) = sample.next() {
            even.add(binner, p);
            match sample.next() {
                Some(p) => odd.add(binner, p),
                None => break,
            }
        }
        even.merge(&odd)
    }

    #[inline(always)]
    fn add(&mut self, binner: &Binner, p: &PrimRef) {
        for (axis, bin) in binner.bins(p).into_iter().enumerate() {
            self.boxes[bin][axis].grow(p.lo, p.hi);
            self.counts[bin][axis] += 1;
        }
    }

    fn merge(mut self, other: &Bins) -> Bins {
        for (a, b) in self.boxes.iter_mut().zip(&other.boxes) {
            for axis in 0..3 {
                a[axis] = a[axis].union(b[axis]);
            }
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            for axis in 0..3 {
                a[axis] += b[axis];
            }
        }
        self
    }
}

/// Maps a centroid to a bin on each axis.
#[derive(Clone, Copy)]
struct Binner {
    origin: Vec4,
    scale: Vec4,
    last: f32,
}

impl Binner {
    fn new(centroids: Aabb, bins: usize) -> Self {
        let extent = centroids.extent();
        let scale = Vec4::select(
            extent.cmpgt(Vec4::ZERO),
            Vec4::splat(bins as f32 * (1.0 - 1e-6)) / extent,
            Vec4::ZERO,
        );
        Self {
            origin: centroids.lo,
            scale,
            last: (bins - 1) as f32,
        }
    }

    #[inline(always)]
    fn bins(&self, p: &PrimRef) -> [usize; 3] {
        let b =
            ((p.centroid2() - self.origin) * self.scale).clamp(Vec4::ZERO, Vec4::splat(self.last));
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_cvtsi128_si32, _mm_cvttps_epi32, _mm_shuffle_epi32};
            // All three axes in one truncating conversion, which is `to_bin`'s cast
            // on every lane the clamp leaves: its maximum (`_mm_max_ps`) gives 0 for
            // NaN, so each lane is in `0..=last`.
            // SAFETY: SSE2, all these use, is part of every x86-64 CPU.
            unsafe {
                let bins = _mm_cvttps_epi32(b.into());
                let lane = |x| _mm_cvtsi128_si32(x) as u32 as usize;
                [lane(bins), lane(_mm_shuffle_epi32::<1>(bins)), lane(_mm_shuffle_epi32::<2>(bins))]
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        [to_bin(b.x), to_bin(b.y), to_bin(b.z)]
    }

    /// The bin on `axis` of a centroid coordinate `c` (twice the centroid, as
    /// [`PrimRef::centroid2`] gives it).
    #[inline(always)]
    fn bin_of(&self, c: f32, axis: usize) -> usize {
        to_bin(((c - self.origin[axis]) * self.scale[axis]).clamp(0.0, self.last))
    }

    /// The split `bin_of(c, axis) < bin` as one comparison: `c` is left of the
    /// returned value exactly when it falls in a bin below `bin` ([`left_of`]).
    /// `bin_of` never decreases as `c` grows (each of its steps rounds monotonely),
    /// so the value is the least `c` whose bin is `bin` or above, found by bisecting
    /// the ordered `f32`s.
    fn threshold(&self, axis: usize, bin: usize) -> f32 {
        // The least key in (low, high] whose bin is `bin` or above: +∞'s always is.
        let low = i64::from(ordered(f32::NEG_INFINITY)) - 1;
        let (mut low, mut high) = (low, i64::from(ordered(f32::INFINITY)));
        while high - low > 1 {
            let mid = (low + high) / 2;
            if self.bin_of(from_ordered(mid as u32), axis) >= bin {
                high = mid;
            } else {
                low = mid;
            }
        }
        from_ordered(high as u32)
    }
}

/// `x` as an integer that orders as the `f32`s do (-0 just below +0; NaNs beyond
/// the infinity of their sign): the sign bit flipped for positive values, every
/// bit for negative ones.
#[inline(always)]
fn ordered(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits >> 31 == 0 { bits | 1 << 31 } else { !bits }
}

/// The `f32` whose [`ordered`] key is `key`.
#[inline(always)]
fn from_ordered(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 { key & !(1 << 31) } else { !key })
}

/// Whether the centroid coordinate on `axis` of `centroid2` (twice the centroid,
/// as [`PrimRef::centroid2`] gives it) lies left of a split at `threshold`
/// ([`Binner::threshold`]): below it, or NaN (whose bin is 0). One comparison of
/// the whole vector, which fails for NaN, and the axis's bit of its mask: no
/// choice of a lane per triangle.
#[inline(always)]
fn left_of(centroid2: Vec4, axis: usize, threshold: f32) -> bool {
    centroid2.cmpge(Vec4::splat(threshold)).bitmask() & 1 << axis == 0
}

/// A bin position, already clamped to `0..=last`, as an index. NaN, which a
/// centroid extent too small for its reciprocal gives (`0 · ∞` for subnormal
/// coordinates), goes to bin 0: the saturating cast is defined for every value.
#[inline(always)]
fn to_bin(x: f32) -> usize {
    x as u32 as usize
}

/// The best SAH split: axis, first bin of the right side, cost.
struct Split {
    axis: usize,
    bin: usize,
    cost: f32,
}

struct Builder<'a> {
    options: &'a BuildOptions,
    /// `options.morton_subtree`, or 0 for a small mesh.
    morton_subtree: usize,
    /// Runs of at most this many triangles become leaves as they are
    /// ([`Bottom::whole_runs`]).
    whole_runs: usize,
}

/// How far down a tree is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bottom {
    /// Until the SAH says leaf: the binary tree's own shape, which the GPU walks.
    Split,
    /// A run of at most this many triangles becomes one leaf as it is: for the
    /// CPU's collapse, which makes every subtree of at most [`WIDTH`] triangles one
    /// leaf block of the same triangles under the same box, whatever its shape, so
    /// splitting such runs would be work thrown away.
    ///
    /// [`WIDTH`]: crate::cpu::wide_bvh::WIDTH
    Blocks(usize),
}

impl Bottom {
    /// The size of run up to which runs become leaves unsplit (1: a single
    /// triangle, which always does).
    fn whole_runs(self) -> usize {
        match self {
            Bottom::Split => 1,
            Bottom::Blocks(size) => size.max(1),
        }
    }

    /// The room of the node array's windows: half of any tree's for runs of
    /// several triangles kept whole, which leave far fewer nodes.
    fn room(self) -> Room {
        if self.whole_runs() > 1 { Room::Half } else { Room::Any }
    }
}

impl Builder<'_> {
    /// Builds the subtree of `prims` (starting at triangle `first` of the final
    /// order; `bounds` and `centroids` are theirs) at depth `depth` and returns the
    /// child slot that refers to it and the depth of its deepest leaf (interior
    /// nodes above it). Interior nodes go to `nodes` in depth-first order.
    fn build_child(
        &self,
        prims: &mut [PrimRef],
        first: usize,
        bounds: Aabb,
        centroids: Aabb,
        depth: usize,
        nodes: &mut NodeWindow,
    ) -> (BvhChild, usize) {
        let count = prims.len();
        let leaf = BvhChild {
            lo: bounds.lo3(),
            index: first as u32,
            hi: bounds.hi3(),
            count: count as u32,
        };
        if count <= self.whole_runs || nodes.overflowed() {
            // A tree that ran out of room will be built again: no use going on.
            return (leaf, depth);
        }
        if count <= self.morton_subtree && !slivered(prims, &bounds) {
            return morton::build(prims, first, centroids, depth, self.options, self.whole_runs, nodes);
        }
        let spread = centroids.hi.truncate().cmpgt(centroids.lo.truncate()).any();
        let max_leaf = self.options.max_leaf_size;
        // SAH costs overflow for coordinates near f32's limits: split at the median then.
        let sah = depth < SAH_DEPTH && spread;
        let swept = (sah && count <= SWEEP_MAX)
            .then(|| self.swept_split(prims, bounds))
            .flatten();
        let binned = (sah && count > SWEEP_MAX)
            .then(|| self.best_split(prims, centroids, bounds))
            .filter(|best| best.cost.is_finite());
        let (split, sides) = if let Some((split, cost)) = swept {
            if count <= max_leaf && count as f32 <= cost {
                return (leaf, depth);
            }
            let (left, right) = prims.split_at(split);
            (split, [bounds_and_centroids(left), bounds_and_centroids(right)])
        } else if let Some(best) = binned {
            if count <= max_leaf && count as f32 <= best.cost {
                return (leaf, depth);
            }
            let binner = Binner::new(centroids, self.bins_for(count));
            let threshold = binner.threshold(best.axis, best.bin);
            let left = |p: &PrimRef| left_of(p.centroid2(), best.axis, threshold);
            if count > PARALLEL_PARTITION {
                partition_in_blocks(prims, left)
            } else {
                partition(prims, left)
            }
        } else {
            if count <= max_leaf {
                return (leaf, depth);
            }
            let split = median_split(prims, centroids);
            let (left, right) = prims.split_at(split);
            (
                split,
                [bounds_and_centroids(left), bounds_and_centroids(right)],
            )
        };
        debug_assert!(split > 0 && split < count);
        debug_assert!(depth < MAX_DEPTH);

        let (left, right) = prims.split_at_mut(split);
        let [(lb, lc), (rb, rc)] = sides;
        let range = (first as u32, (first + count) as u32);
        let index = nodes.push(
            BvhNode {
                children: [BvhChild::EMPTY; 2],
            },
            range,
        );
        let d = depth + 1;
        let ((left_child, left_depth), (right_child, right_depth)) = if count > PARALLEL_THRESHOLD {
            nodes.join(
                split,
                |nodes| self.build_child(left, first, lb, lc, d, nodes),
                |nodes| self.build_child(right, first + split, rb, rc, d, nodes),
            )
        } else {
            (
                self.build_child(left, first, lb, lc, d, nodes),
                self.build_child(right, first + split, rb, rc, d, nodes),
            )
        };
        nodes.set(
            index,
            BvhNode {
                children: [left_child, right_child],
            },
        );
        let child = BvhChild {
            lo: bounds.lo3(),
            index: index as u32,
            hi: bounds.hi3(),
            count: 0,
        };
        (child, left_depth.max(right_depth))
    }

    /// The SAH-cheapest split of a node of at most [`SWEEP_MAX`] triangles among
    /// every split of its centroids sorted along each axis: `prims` left sorted
    /// along the chosen axis, the size of the left side and the cost; `None` when
    /// every cost overflows.
    fn swept_split(&self, prims: &mut [PrimRef], bounds: Aabb) -> Option<(usize, f32)> {
        let n = prims.len();
        let parent_area = bounds.half_area().max(f32::MIN_POSITIVE);
        // Per axis, the order of the centroids: sorted keys of centroid and index.
        let mut order = [[0u64; SWEEP_MAX]; 3];
        for (axis, order) in order.iter_mut().enumerate() {
            for ((i, p), key) in prims.iter().enumerate().zip(order.iter_mut()) {
                *key = u64::from(ordered(p.centroid2()[axis])) << 32 | i as u64;
            }
            order[..n].sort_unstable();
        }
        let at = |key: u64| &prims[key as u32 as usize];
        // Area of the boxes from each split on.
        let mut right_area = [0.0f32; SWEEP_MAX];
        let (mut best_axis, mut best_split, mut best_cost) = (0, 0, f32::INFINITY);
        for (axis, order) in order.iter().enumerate() {
            let mut right = Aabb::EMPTY;
            for i in (1..n).rev() {
                right = right.union(at(order[i]).aabb());
                right_area[i] = right.half_area();
            }
            let mut left = Aabb::EMPTY;
            for i in 1..n {
                left = left.union(at(order[i - 1]).aabb());
                let cost = self.options.traversal_cost
                    + (left.half_area() * i as f32 + right_area[i] * (n - i) as f32) / parent_area;
                if cost < best_cost {
                    (best_axis, best_split, best_cost) = (axis, i, cost);
                }
            }
        }
        if !best_cost.is_finite() {
            return None;
        }
        let mut unsorted = [bytemuck::Zeroable::zeroed(); SWEEP_MAX];
        unsorted[..n].copy_from_slice(prims);
        for (p, &key) in prims.iter_mut().zip(&order[best_axis]) {
            *p = unsorted[key as u32 as usize];
        }
        Some((best_split, best_cost))
    }

    /// Bins for a node of `count` triangles: fewer for small nodes, where evaluating
    /// many bins would cost more than the triangles themselves.
    fn bins_for(&self, count: usize) -> usize {
        (count / 2).max(4).min(self.options.bins)
    }

    /// Bins the centroids on all three axes and evaluates the SAH at every bin
    /// boundary.
    fn best_split(&self, prims: &[PrimRef], centroids: Aabb, bounds: Aabb) -> Split {
        let n = self.bins_for(prims.len());
        let binner = Binner::new(centroids, n);
        let stride = (prims.len() / BIN_SAMPLE).max(1);
        let bins = if prims.len() > PARALLEL_THRESHOLD {
            prims
                .par_chunks(8 * 1024 * stride)
                .map(|chunk| Bins::of(chunk, stride, &binner))
                .reduce(|| Bins::EMPTY, |a, b| a.merge(&b))
        } else {
            Bins::of(prims, stride, &binner)
        };
        let mut best = Split {
            axis: 0,
            bin: 1,
            cost: f32::INFINITY,
        };
        let parent_area = bounds.half_area().max(f32::MIN_POSITIVE);
        // Right-side boxes and counts: bins i..n.
        let mut right_box = [Aabb::EMPTY; MAX_BINS];
        let mut right_count = [0u32; MAX_BINS];
        for axis in 0..3 {
            if centroids.hi[axis] <= centroids.lo[axis] {
                continue;
            }
            let (mut b, mut c) = (Aabb::EMPTY, 0u32);
            for i in (1..n).rev() {
                b = b.union(bins.boxes[i][axis]);
                c += bins.counts[i][axis];
                right_box[i] = b;
                right_count[i] = c;
            }
            let (mut b, mut c) = (Aabb::EMPTY, 0u32);
            for i in 1..n {
                b = b.union(bins.boxes[i - 1][axis]);
                c += bins.counts[i - 1][axis];
                if c == 0 || right_count[i] == 0 {
                    continue;
                }
                let cost = self.options.traversal_cost
                    + (b.half_area() * c as f32 + right_box[i].half_area() * right_count[i] as f32)
                        / parent_area;
                if cost < best.cost {
                    best = Split { axis, bin: i, cost };
                }
            }
        }
        best
    }
}

/// Moves `prims` matching `left` to the front; returns how many there are and the
/// bounds of the boxes and of the centroids of each side.
fn partition(prims: &mut [PrimRef], left: impl Fn(&PrimRef) -> bool) -> (usize, [(Aabb, Aabb); 2]) {
    let (mut lefts, mut rights) = ((Aabb::EMPTY, Aabb::EMPTY), (Aabb::EMPTY, Aabb::EMPTY));
    let mut i = 0;
    let mut j = prims.len();
    loop {
        while i < j && left(&prims[i]) {
            prims[i].add_to(&mut lefts);
            i += 1;
        }
        while i < j && !left(&prims[j - 1]) {
            prims[j - 1].add_to(&mut rights);
            j -= 1;
        }
        if i >= j {
            return (i, [lefts, rights]);
        }
        prims.swap(i, j - 1);
    }
}

/// Nodes of more triangles than this are partitioned in blocks on all threads
/// ([`partition_in_blocks`]); smaller ones, of which there are enough to keep the
/// threads busy, one after another in place ([`partition`]), which moves less.
const PARALLEL_PARTITION: usize = 512 * 1024;

/// Triangles per block of [`partition_in_blocks`]: a fixed number, so that the
/// order it leaves (and so the tree) is the same on any number of threads.
const PARTITION_BLOCK: usize = 32 * 1024;

/// [`partition`] on all threads: each block of [`PARTITION_BLOCK`] triangles is
/// partitioned on its own, and then the right-side triangles that lie before the
/// split swap places with as many left-side ones after it, run against run. The
/// bounds of each side are the union of the blocks', the same as one pass's.
fn partition_in_blocks(prims: &mut [PrimRef], left: impl Fn(&PrimRef) -> bool + Sync) -> (usize, [(Aabb, Aabb); 2]) {
    let blocks: Vec<(usize, [(Aabb, Aabb); 2])> = prims
        .par_chunks_mut(PARTITION_BLOCK)
        .map(|block| partition(block, &left))
        .collect();
    let empty = (Aabb::EMPTY, Aabb::EMPTY);
    let split: usize = blocks.iter().map(|(lefts, _)| lefts).sum();
    let sides = blocks.iter().fold([empty; 2], |[l, r], (_, [bl, br])| {
        [union_bounds(l, *bl), union_bounds(r, *br)]
    });
    // Each block is its left run then its right run: the right runs' parts before
    // the split and the left runs' parts after it are out of place, as many of
    // one as of the other.
    let (mut misplaced_right, mut misplaced_left) = (Vec::new(), Vec::new());
    for (k, &(lefts, _)) in blocks.iter().enumerate() {
        let start = k * PARTITION_BLOCK;
        let (middle, end) = (start + lefts, (start + PARTITION_BLOCK).min(prims.len()));
        if middle < end.min(split) {
            misplaced_right.push(middle..end.min(split));
        }
        if start.max(split) < middle {
            misplaced_left.push(start.max(split) - split..middle - split);
        }
    }
    let (head, tail) = prims.split_at_mut(split);
    let swaps = paired_runs(runs_of(head, &misplaced_right), runs_of(tail, &misplaced_left));
    swaps.into_par_iter().for_each(|(a, b)| a.swap_with_slice(b));
    (split, sides)
}

/// The runs of `prims` in `ranges` (in order, disjoint), as slices.
fn runs_of<'a>(mut prims: &'a mut [PrimRef], ranges: &[std::ops::Range<usize>]) -> Vec<&'a mut [PrimRef]> {
    let mut taken = 0;
    ranges
        .iter()
        .map(|range| {
            let (_, from_start) = std::mem::take(&mut prims).split_at_mut(range.start - taken);
            let (run, rest) = from_start.split_at_mut(range.len());
            (prims, taken) = (rest, range.end);
            run
        })
        .collect()
}

/// Pairs of equally long pieces, at most [`PARTITION_BLOCK`] triangles each,
/// that cut the runs `a` and `b` (as many triangles in all) in order.
fn paired_runs<'a>(a: Vec<&'a mut [PrimRef]>, b: Vec<&'a mut [PrimRef]>) -> Vec<(&'a mut [PrimRef], &'a mut [PrimRef])> {
    let mut pairs = Vec::new();
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    let (mut x, mut y): (&mut [PrimRef], &mut [PrimRef]) = (&mut [], &mut []);
    loop {
        if x.is_empty() {
            let Some(next) = a.next() else { break };
            x = next;
        }
        if y.is_empty() {
            let Some(next) = b.next() else { break };
            y = next;
        }
        let n = x.len().min(y.len()).min(PARTITION_BLOCK);
        let (x_piece, x_rest) = std::mem::take(&mut x).split_at_mut(n);
        let (y_piece, y_rest) = std::mem::take(&mut y).split_at_mut(n);
        pairs.push((x_piece, y_piece));
        (x, y) = (x_rest, y_rest);
    }
    pairs
}

/// Splits at the median centroid along the widest centroid axis (or at the middle
/// of the array when all centroids coincide); returns the size of the left side.
fn median_split(prims: &mut [PrimRef], centroids: Aabb) -> usize {
    let mid = prims.len() / 2;
    let extent = (centroids.hi - centroids.lo).truncate();
    if extent.max_element() > 0.0 {
        let axis = extent.max_position();
        prims.select_nth_unstable_by(mid, |a, b| {
            a.centroid2()[axis].total_cmp(&b.centroid2()[axis])
        });
    }
    mid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::{self, Rng, fixtures};

    /// Sizes of the runs under the interior nodes and leaves reachable from the
    /// root of `tree` (nodes in gaps are not).
    fn run_sizes(tree: &BuiltTree) -> (Vec<u32>, Vec<u32>) {
        let (mut interior, mut leaves) = (Vec::new(), Vec::new());
        let mut pending = vec![0usize];
        while let Some(node) = pending.pop() {
            let (first, end) = tree.ranges[node];
            interior.push(end - first);
            for child in tree.nodes[node].children.iter().filter(|c| !c.is_empty()) {
                if child.is_leaf() {
                    leaves.push(child.count);
                } else {
                    pending.push(child.index as usize);
                }
            }
        }
        (interior, leaves)
    }

    /// Built for blocks of eight, no node has eight triangles or fewer under it
    /// and no leaf more; split as the binary tree is, nodes of that size abound.
    /// Both ways, every hittable triangle is in a leaf: binned meshes, and Morton
    /// subtrees.
    #[test]
    fn blocks_leave_runs_of_their_size_unsplit() {
        let mut rng = Rng::new(21);
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        for mesh in [
            fixtures::soup(3000, &mut rng, unit),
            fixtures::builtin_scene(MORTON_MIN_TRIANGLES + 5_000),
        ] {
            let mesh = kit::mesh(mesh);
            let options = BuildOptions::default();
            let blocks = build_tree(&mesh, &options, Bottom::Blocks(8));
            let (interior, leaves) = run_sizes(&blocks);
            assert!(interior.iter().all(|&n| n > 8), "a node over 8 triangles or fewer");
            assert!(leaves.iter().all(|&n| n <= 8), "a leaf of more than 8");
            assert_eq!(leaves.iter().sum::<u32>() as usize, blocks.triangle_count());
            let split = build_tree(&mesh, &options, Bottom::Split);
            let (interior, leaves) = run_sizes(&split);
            assert!(interior.iter().filter(|&&n| n <= 8).count() > interior.len() / 2);
            assert_eq!(leaves.iter().sum::<u32>() as usize, split.triangle_count());
            assert_eq!(split.triangle_count(), blocks.triangle_count());
        }
    }

    /// Asserts that `a` and `b` are the same tree, read from their roots (their
    /// node arrays may place the nodes apart differently): the same children,
    /// triangle ranges, triangle order and depth.
    fn assert_same_tree(a: &BuiltTree, b: &BuiltTree) {
        let mut pending = vec![(0usize, 0usize)];
        while let Some((i, j)) = pending.pop() {
            assert_eq!(a.ranges[i], b.ranges[j], "nodes {i} and {j}");
            for (x, y) in a.nodes[i].children.iter().zip(&b.nodes[j].children) {
                assert_eq!((x.lo, x.hi, x.count), (y.lo, y.hi, y.count), "nodes {i} and {j}");
                if nodes::is_interior(x) {
                    pending.push((x.index as usize, y.index as usize));
                } else {
                    assert_eq!(x.index, y.index, "nodes {i} and {j}");
                }
            }
        }
        let ids = |tree: &BuiltTree| tree.prims.iter().map(PrimRef::id).collect::<Vec<_>>();
        assert_eq!(ids(a), ids(b));
        assert_eq!(a.depth, b.depth);
    }

    /// Meshes large enough to be built in parallel, in windows: one binned, one
    /// with Morton subtrees.
    fn parallel_meshes() -> [Mesh; 2] {
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        [
            kit::mesh(fixtures::soup(3 * PARALLEL_THRESHOLD, &mut Rng::new(5), unit)),
            kit::mesh(fixtures::builtin_scene(MORTON_MIN_TRIANGLES + 5_000)),
        ]
    }

    /// Built for blocks of eight, whose trees have about a node per five
    /// triangles, in windows of half the room: no window runs out, the tree is
    /// the one windows of room for any tree give, and its array spans no more
    /// than half as many slots as triangles, where theirs spans more.
    #[test]
    fn half_windows_hold_the_trees_of_blocks() {
        let options = BuildOptions::default();
        for mesh in parallel_meshes() {
            let bottom = Bottom::Blocks(8);
            assert_eq!(bottom.room(), Room::Half);
            let half = try_build(&mesh, &options, bottom, Room::Half).expect("half the room is enough");
            let any = try_build(&mesh, &options, bottom, Room::Any).expect("room for any tree");
            assert_same_tree(&half, &any);
            assert!(!any.gaps.is_empty(), "built in parallel");
            let half_room = Room::Half.slots(any.triangle_count());
            assert!(half.nodes.len() <= half_room, "{} slots", half.nodes.len());
            assert!(any.nodes.len() > half_room, "{} slots", any.nodes.len());
        }
    }

    /// A tree with more nodes than half windows hold (split down to single
    /// triangles, one node per triangle) runs out of them, and is built again
    /// into the tree that windows of room for any tree give.
    #[test]
    fn windows_that_run_out_build_the_tree_again() {
        let options = BuildOptions {
            max_leaf_size: 1,
            ..BuildOptions::default()
        };
        for mesh in parallel_meshes() {
            assert!(try_build(&mesh, &options, Bottom::Split, Room::Half).is_none(), "the windows run out");
            let again = build_tree_in(&mesh, &options, Bottom::Split, Room::Half);
            let any = build_tree_in(&mesh, &options, Bottom::Split, Room::Any);
            assert_same_tree(&again, &any);
        }
    }

    /// A split at `Binner::threshold` sends every centroid coordinate to the side
    /// its bin says: random ones, those next to the threshold, and the extremes.
    #[test]
    fn threshold_splits_as_the_bins_do() {
        let mut rng = Rng::new(41);
        for round in 0..400 {
            let centre = [0.0, 1e-30, -7.5, 3e5, -2e30][round % 5];
            let size = [1e-3f32, 1.0, 1e4, 1e-38, 1e30][rng.below(5)];
            let (a, b) = (centre + rng.range(-size, size), centre + rng.range(-size, size));
            let lo = Vec4::splat(a.min(b));
            let hi = Vec4::splat(a.max(b));
            if a == b {
                continue; // no split is ever sought along an axis without extent
            }
            let bins = 2 + rng.below(MAX_BINS - 1);
            let binner = Binner::new(Aabb { lo, hi }, bins);
            let axis = rng.below(3);
            for bin in 1..bins {
                let threshold = binner.threshold(axis, bin);
                let near = [threshold.next_down(), threshold, threshold.next_up()];
                let extremes = [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, f32::MAX, f32::MIN];
                let random = (0..20).map(|_| rng.range(lo.x - size, hi.x + size));
                for c in near.into_iter().chain(extremes).chain(random) {
                    // The other lanes hold what would fall on either side.
                    let mut centroid2 = Vec4::new(f32::NAN, f32::INFINITY, f32::NEG_INFINITY, threshold);
                    centroid2[axis] = c;
                    assert_eq!(
                        left_of(centroid2, axis, threshold),
                        binner.bin_of(c, axis) < bin,
                        "centroid {c} bin {bin} of {bins} threshold {threshold} origin {} scale {} bin_of {}", binner.origin[axis], binner.scale[axis], binner.bin_of(c, axis)
                    );
                }
            }
        }
    }

    /// The bins of all three axes at once are each axis's own, for centroids in and
    /// far outside the binned bounds, infinite and NaN ones, and bounds from tiny
    /// (whose scale overflows to infinity) to flat ones (no extent on an axis).
    #[test]
    fn bins_of_all_axes_are_each_axis_bin_of() {
        let mut rng = Rng::new(43);
        let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, 0.0, -0.0, 1e-40];
        for round in 0..300 {
            let centre = [0.0, 1e-30, -7.5, 3e5, -2e30][round % 5];
            let sizes = [0.0f32, 1e-3, 1.0, 1e4, 1e-38, 1e-44, 1e30];
            let size = Vec4::from_array(std::array::from_fn(|_| sizes[rng.below(sizes.len())]));
            let lo = Vec4::splat(centre) - size;
            let hi = Vec4::splat(centre) + size;
            let binner = Binner::new(Aabb { lo, hi }, 2 + rng.below(MAX_BINS - 1));
            for _ in 0..40 {
                let mut coordinate = |axis: usize| match rng.below(4) {
                    0 => odd[rng.below(odd.len())],
                    _ => rng.range(lo[axis] - size[axis], hi[axis] + size[axis]),
                };
                let a = Vec3::from_array(std::array::from_fn(&mut coordinate));
                let b = Vec3::from_array(std::array::from_fn(&mut coordinate));
                let p = PrimRef::new(a, b, rng.below(1 << 20) as u32);
                let each = std::array::from_fn(|axis| binner.bin_of(p.centroid2()[axis], axis));
                assert_eq!(binner.bins(&p), each, "box {a} {b} binned over {lo} {hi}");
            }
        }
    }

    /// Partitioned in blocks, on one thread or several, a large array is split as
    /// one pass splits it: the same triangles on each side, in the same order
    /// whatever the threads, and the same bounds of each side. Some splits leave
    /// one side nearly empty, some leave every block's runs out of place.
    #[test]
    fn partitions_in_blocks_split_as_one_pass_does() {
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        let soup = kit::mesh(fixtures::soup(5 * PARTITION_BLOCK + 777, &mut Rng::new(9), unit));
        let prims = prims_of(&soup.triangles().collect::<Vec<_>>());
        let ids = |prims: &[PrimRef]| {
            let mut ids: Vec<u32> = prims.iter().map(PrimRef::id).collect();
            ids.sort_unstable();
            ids
        };
        for (axis, threshold) in [(0, 0.0), (1, 0.9), (2, -0.999), (0, 2.0), (1, -2.0)] {
            let left = |p: &PrimRef| left_of(p.centroid2(), axis, threshold);
            let mut serial = prims.clone();
            let (split, sides) = partition(&mut serial, left);
            let on_threads = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let mut blocked = prims.clone();
                let (blocked_split, blocked_sides) = pool.install(|| partition_in_blocks(&mut blocked, left));
                assert_eq!(blocked_split, split, "axis {axis} at {threshold}");
                assert_eq!(format!("{blocked_sides:?}"), format!("{sides:?}"));
                let (lefts, rights) = blocked.split_at(split);
                assert!(lefts.iter().all(left) && !rights.iter().any(left));
                assert_eq!(ids(lefts), ids(&serial[..split]));
                assert_eq!(ids(rights), ids(&serial[split..]));
                blocked.iter().map(PrimRef::id).collect::<Vec<u32>>()
            };
            assert_eq!(on_threads(1), on_threads(3), "the order hangs on the blocks alone");
        }
    }

    /// Triangles that can never be hit, spread over many chunks of the first
    /// pass, are left out: the tree holds each hittable triangle once, and a mesh
    /// with the unhittable ones at its end (which leave no gap to close) builds the
    /// same tree as one without them.
    #[test]
    fn unhittable_triangles_leave_every_chunk() {
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        let soup = kit::mesh(fixtures::soup(3 * FIRST_PASS_CHUNK + 500, &mut Rng::new(13), unit));
        let triangles: Vec<[Vec3; 3]> = soup.triangles().collect();
        let degenerate = |k: usize| k % 7 == 3;
        let mixed: Vec<[Vec3; 3]> = (0..triangles.len())
            .map(|k| if degenerate(k) { [triangles[k][0]; 3] } else { triangles[k] })
            .collect();
        let mixed_mesh = Mesh::from_triangles(&mixed);
        let tree = build_tree(&mixed_mesh, &BuildOptions::default(), Bottom::Split);
        let mut ids: Vec<u32> = tree.prims.iter().map(PrimRef::id).collect();
        ids.sort_unstable();
        let can_hit: Vec<u32> = (0..mixed.len() as u32).filter(|&k| hittable(mixed[k as usize])).collect();
        assert!(can_hit.len() < mixed.len() - mixed.len() / 7, "a seventh can never be hit");
        assert!(ids == can_hit, "{} triangles in the tree, {} hittable", ids.len(), can_hit.len());

        let kept: Vec<[Vec3; 3]> = can_hit.iter().map(|&k| mixed[k as usize]).collect();
        let unhittable = mixed.iter().filter(|&&t| !hittable(t)).copied();
        let last: Vec<[Vec3; 3]> = kept.iter().copied().chain(unhittable).collect();
        let (last, kept) = (Mesh::from_triangles(&last), Mesh::from_triangles(&kept));
        let options = BuildOptions::default();
        let (with, without) = (
            build_tree(&last, &options, Bottom::Split),
            build_tree(&kept, &options, Bottom::Split),
        );
        assert_same_tree(&with, &without);
    }

    /// The leaf order that outlives a tree's boxes holds the tree's triangles at
    /// the same positions as the tree packed in leaf order does, with the same
    /// nodes and ranges: on a mesh with unhittable triangles (gaps closed in the
    /// first pass) large enough for parallel builds.
    #[test]
    fn leaf_order_keeps_every_position_of_the_tree() {
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        let soup = kit::mesh(fixtures::soup(2 * FIRST_PASS_CHUNK + 300, &mut Rng::new(17), unit));
        let triangles: Vec<[Vec3; 3]> = soup
            .triangles()
            .enumerate()
            .map(|(k, t)| if k % 5 == 1 { [t[0]; 3] } else { t })
            .collect();
        let mesh = Mesh::from_triangles(&triangles);
        let options = BuildOptions::default();
        let bottom = Bottom::Blocks(8);
        let bvh = build_tree(&mesh, &options, bottom).into_bvh();
        let built = build_tree(&mesh, &options, bottom);
        let (nodes, ranges) = (built.nodes.clone(), built.ranges.clone());
        let (order_nodes, order_ranges, order) = built.into_leaf_order();
        assert_eq!(order_nodes, nodes);
        assert_eq!(order_ranges, ranges);
        assert_eq!(order.ids.len(), bvh.triangles().len());
        assert!(order.ids.len() < triangles.len(), "a fifth can never be hit");
        for (k, triangle) in bvh.triangles().iter().enumerate() {
            assert_eq!(order.leaf_triangle(k), *triangle, "leaf position {k}");
            let indices = mesh.indices()[triangle.id as usize];
            // SAFETY: the pointer is into the mesh's index array, at a hittable id.
            assert_eq!(unsafe { *order.leaf_indices(k) }, indices, "leaf position {k}");
        }
    }

    /// Closing the first pass's gaps keeps every kept box once, those before the
    /// first gap and those that no gap needs where they were, and moves only as
    /// many as there are gaps before the kept count.
    #[test]
    fn closing_gaps_moves_only_what_fills_them() {
        let mut rng = Rng::new(5);
        for case in 0..40 {
            let chunk_count = 1 + case % 5;
            let len = chunk_count * FIRST_PASS_CHUNK - if case % 2 == 1 { 777 } else { 0 };
            let mut prims: Vec<PrimRef> = vec![bytemuck::Zeroable::zeroed(); len];
            let mut chunks = Vec::new();
            let mut expected = Vec::new();
            for (k, chunk) in prims.chunks_mut(FIRST_PASS_CHUNK).enumerate() {
                let kept = match rng.below(4) {
                    0 => chunk.len(),
                    1 => 0,
                    _ => rng.below(chunk.len() + 1),
                };
                for (i, p) in chunk.iter_mut().enumerate() {
                    let id = (k * FIRST_PASS_CHUNK + i) as u32;
                    *p = PrimRef::new(Vec3::ZERO, Vec3::ONE, if i < kept { id } else { u32::MAX });
                }
                expected.extend((0..kept).map(|i| (k * FIRST_PASS_CHUNK + i) as u32));
                chunks.push(FirstPass { kept, ..FirstPass::default() });
            }
            let before: Vec<u32> = prims.iter().map(PrimRef::id).collect();
            let kept = expected.len();
            close_gaps(&mut prims, &chunks, kept);
            let ids: Vec<u32> = prims.iter().map(PrimRef::id).collect();
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, expected, "case {case}: each kept box once");
            let gaps = before[..kept].iter().filter(|&&id| id == u32::MAX).count();
            let moved = ids.iter().zip(&before).filter(|(a, b)| a != b).count();
            assert_eq!(moved, gaps, "case {case}: only the gaps before {kept} change");
        }
    }

    /// The builder's boxes of `triangles`.
    fn prims_of(triangles: &[[Vec3; 3]]) -> Vec<PrimRef> {
        (0u32..)
            .zip(triangles)
            .map(|(i, &triangle)| {
                let (lo, hi) = vertices_box(triangle);
                PrimRef::new(lo, hi, i)
            })
            .collect()
    }

    /// The scales that bin centroids and give their Morton cells are 0 in `w`,
    /// where a triangle's boxes carry its index as a denormal float: a nonzero
    /// scale there would cost a microcode assist per triangle on Intel cores.
    #[test]
    fn centroid_scales_leave_the_index_lane_alone() {
        let triangles: Vec<[Vec3; 3]> = (0..40)
            .map(|i| {
                let at = Vec3::new(i as f32, (i % 7) as f32, (i % 3) as f32);
                [at, at + Vec3::X, at + Vec3::Y]
            })
            .collect();
        let prims = prims_of(&triangles);
        let (_, centroids) = bounds_and_centroids(&prims);
        assert!(centroids.hi.w > centroids.lo.w, "the ids spread the w lane");
        assert_eq!(centroids.extent().w, 0.0);
        assert!(centroids.extent().truncate().cmpgt(Vec3::ZERO).all());
        let binner = Binner::new(centroids, MAX_BINS);
        assert_eq!(binner.scale.w, 0.0);
        assert!(binner.scale.truncate().cmpgt(Vec3::ZERO).all());
    }

    /// A patch of small triangles stays with the Morton sweep, long thin triangles
    /// across the same box (a CAD part's) leave it, and so do no boxes whose areas
    /// overflow.
    #[test]
    fn only_overlapping_slivers_leave_the_morton_sweep() {
        // A 32 × 32 grid of unit squares, two triangles each: their boxes sum to
        // twice the grid's.
        let n = 32u32;
        let mut grid = Vec::new();
        for (x, y) in (0..n).flat_map(|y| (0..n).map(move |x| (x, y))) {
            let p = |dx: u32, dy: u32| Vec3::new((x + dx) as f32, (y + dy) as f32, 0.0);
            grid.push([p(0, 0), p(1, 0), p(1, 1)]);
            grid.push([p(0, 0), p(1, 1), p(0, 1)]);
        }
        // As many slivers across the same box, each from one side to the other.
        let mut rng = Rng::new(9);
        let side = n as f32;
        let slivers: Vec<[Vec3; 3]> = (0..grid.len())
            .map(|_| {
                let (a, b) = (rng.range(0.0, side), rng.range(0.0, side));
                [Vec3::new(0.0, a, 0.0), Vec3::new(side, b, 0.0), Vec3::new(side, b + 0.01, 0.0)]
            })
            .collect();
        let huge = vec![[Vec3::splat(-3e38), Vec3::splat(3e38), Vec3::new(3e38, -3e38, 0.0)]; 4];
        for (triangles, expected) in [(grid, false), (slivers, true), (huge, false)] {
            let prims = prims_of(&triangles);
            let (bounds, _) = bounds_and_centroids(&prims);
            assert_eq!(slivered(&prims, &bounds), expected, "{:?}", triangles[0]);
        }
    }

    /// The sweep over every sorted split of a small node is never costlier than
    /// the best binned split (each bin boundary is one of the sweep's splits, with
    /// the same boxes), and leaves its split's sides sorted apart along one axis.
    #[test]
    fn swept_split_is_no_costlier_than_binning() {
        let mut rng = Rng::new(43);
        let options = BuildOptions::default();
        let builder = Builder {
            options: &options,
            morton_subtree: 0,
            whole_runs: 1,
        };
        let mut cheaper = 0;
        for round in 0..2000 {
            let n = 2 + round % (SWEEP_MAX - 1);
            let scale = [1.0, 1e-3, 1e4][round % 3];
            let mut prims: Vec<PrimRef> = (0..n)
                .map(|i| {
                    let a = rng.point_in_box(glam::Vec3::splat(-scale), glam::Vec3::splat(scale));
                    let size = rng.range(0.0, scale * 0.5);
                    let b = a + glam::Vec3::new(rng.range(0.0, size), rng.range(0.0, size), rng.range(0.0, size));
                    PrimRef::new(a, b, i as u32)
                })
                .collect();
            let (bounds, centroids) = bounds_and_centroids(&prims);
            let binned = builder.best_split(&prims, centroids, bounds);
            let (split, cost) = builder.swept_split(&mut prims, bounds).expect("finite costs");
            assert!(cost <= binned.cost, "{n} boxes: swept {cost}, binned {}", binned.cost);
            cheaper += usize::from(cost < binned.cost);
            assert!((1..n).contains(&split));
            // The cost is the returned split's own.
            let (left, right) = prims.split_at(split);
            let area = |side: &[PrimRef]| bounds_and_centroids(side).0.half_area();
            let own = options.traversal_cost
                + (area(left) * split as f32 + area(right) * (n - split) as f32) / bounds.half_area();
            assert_eq!(cost, own, "{n} boxes split at {split}");
            let along = |p: &PrimRef| p.centroid2();
            let separated = (0..3).any(|axis| {
                let left = prims[..split].iter().map(|p| along(p)[axis]).fold(f32::MIN, f32::max);
                let right = prims[split..].iter().map(|p| along(p)[axis]).fold(f32::MAX, f32::min);
                left <= right
            });
            assert!(separated, "{n} boxes split at {split}");
            let mut ids: Vec<u32> = prims.iter().map(PrimRef::id).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
        }
        assert!(cheaper > 200, "{cheaper} sweeps beat the bins");
    }
}
