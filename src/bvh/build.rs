//! The binned SAH builder.
//!
//! Works on an array of `PrimRef`s (a triangle's padded box and id, 32 bytes, SIMD
//! registers) that is partitioned in place, so every pass over a node's triangles is
//! sequential in memory. Per node there are two passes: one bins the centroids on
//! all three axes (the children's boxes then come from the bins), one partitions and
//! gathers each side's centroid bounds for the next level. Large nodes bin in
//! parallel and build their two subtrees in parallel (`rayon::join`), each into its
//! own node array that the parent then appends.

use glam::{Vec3, Vec4};
use rayon::prelude::*;

use super::{Bvh, MAX_DEPTH, SAH_DEPTH};
use crate::Mesh;
use crate::prepare::{is_hittable, pack_triangle};
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
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            max_leaf_size: 8,
            bins: 16,
            traversal_cost: 1.0,
        }
    }
}

/// Most SAH bins per axis.
const MAX_BINS: usize = 16;

/// Nodes with more triangles than this bin in parallel and build their subtrees in
/// parallel.
const PARALLEL_THRESHOLD: usize = 16 * 1024;

/// A triangle's padded bounding box; the box minimum's `w` holds the triangle's
/// index in the packed triangle array (as bits).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct PrimRef {
    lo: Vec4,
    hi: Vec4,
}

impl PrimRef {
    fn id(&self) -> u32 {
        self.lo.w.to_bits()
    }

    /// Twice the centroid (`w` is meaningless).
    #[inline(always)]
    fn centroid2(&self) -> Vec4 {
        self.lo + self.hi
    }
}

/// An axis-aligned box (`w` lanes carry no meaning).
#[derive(Clone, Copy, Debug)]
struct Aabb {
    lo: Vec4,
    hi: Vec4,
}

impl Aabb {
    const EMPTY: Aabb = Aabb {
        lo: Vec4::splat(f32::INFINITY),
        hi: Vec4::splat(f32::NEG_INFINITY),
    };

    #[inline(always)]
    fn grow(&mut self, lo: Vec4, hi: Vec4) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }

    #[inline(always)]
    fn union(self, other: Aabb) -> Aabb {
        Aabb {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    /// Half the surface area (the SAH only needs ratios); 0 for an empty box.
    #[inline(always)]
    fn half_area(&self) -> f32 {
        let d = (self.hi - self.lo).max(Vec4::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    fn lo3(&self) -> Vec3 {
        self.lo.truncate()
    }

    fn hi3(&self) -> Vec3 {
        self.hi.truncate()
    }
}

/// The box of a packed triangle (its three vertices),
/// padded outward so that rounding in box tests can never cull a hit.
fn triangle_box(tri: &PackedTriangle) -> (Vec3, Vec3) {
    let (a, b, c) = (tri.v0, tri.v1, tri.v2);
    pad(a.min(b).min(c), a.max(b).max(c))
}

/// Pads a box outward by a small fraction of its coordinates' magnitude.
pub(crate) fn pad(lo: Vec3, hi: Vec3) -> (Vec3, Vec3) {
    let magnitude = lo
        .abs()
        .max(hi.abs())
        .max_element()
        .max((hi - lo).max_element());
    let margin = magnitude * (1.0 / 262_144.0) + f32::MIN_POSITIVE;
    (lo - margin, hi + margin)
}

/// Builds the BVH of a mesh.
pub(crate) fn build(mesh: &Mesh, options: &BuildOptions) -> Bvh {
    let options = BuildOptions {
        max_leaf_size: options.max_leaf_size.clamp(1, 255),
        bins: options.bins.clamp(2, MAX_BINS),
        ..options.clone()
    };
    let packed: Vec<PackedTriangle> = mesh
        .indices()
        .par_iter()
        .enumerate()
        .map(|(k, idx)| pack_triangle(idx.map(|i| mesh.positions()[i as usize]), k as u32))
        .collect();
    let mut prims: Vec<PrimRef> = packed
        .par_iter()
        .filter(|tri| is_hittable(tri))
        .map(|tri| {
            let (lo, hi) = triangle_box(tri);
            PrimRef {
                lo: lo.extend(f32::from_bits(tri.id)),
                hi: hi.extend(0.0),
            }
        })
        .collect();
    let mut bvh = Bvh {
        mesh_triangles: mesh.triangle_count(),
        ..Bvh::default()
    };
    if prims.is_empty() {
        bvh.nodes = vec![BvhNode {
            children: [BvhChild::EMPTY; 2],
        }];
        bvh.depth = 1; // the root
        return bvh;
    }
    let (bounds, centroids) = bounds_and_centroids(&prims);
    let builder = Builder { options: &options };
    let mut nodes = Vec::with_capacity(prims.len() / 2 + 1);
    let root = builder.build_child(&mut prims, 0, bounds, centroids, 0, &mut nodes);
    if root.is_leaf() {
        // A single leaf: the root node holds it and an empty slot.
        nodes.push(BvhNode {
            children: [root, BvhChild::EMPTY],
        });
    }
    bvh.depth = depth_of(&nodes);
    bvh.nodes = nodes;
    bvh.triangles = prims.par_iter().map(|p| packed[p.id() as usize]).collect();
    bvh
}

/// Bounds of the boxes and of the centroids.
fn bounds_and_centroids(prims: &[PrimRef]) -> (Aabb, Aabb) {
    let fold = |(mut b, mut c): (Aabb, Aabb), p: &PrimRef| {
        b.grow(p.lo, p.hi);
        let centroid = p.centroid2();
        c.grow(centroid, centroid);
        (b, c)
    };
    let empty = (Aabb::EMPTY, Aabb::EMPTY);
    prims
        .par_chunks(8192)
        .map(|c| c.iter().fold(empty, fold))
        .reduce(|| empty, |a, b| (a.0.union(b.0), a.1.union(b.1)))
}

/// Interior nodes on the longest root-to-leaf path.
fn depth_of(nodes: &[BvhNode]) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(0u32, 1usize)];
    while let Some((index, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        for child in &nodes[index as usize].children {
            if !child.is_leaf() && !child.is_empty() {
                stack.push((child.index, depth + 1));
            }
        }
    }
    deepest
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
        let extent = centroids.hi - centroids.lo;
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
        [to_bin(b.x), to_bin(b.y), to_bin(b.z)]
    }

    #[inline(always)]
    fn bin(&self, p: &PrimRef, axis: usize) -> usize {
        let c = p.centroid2()[axis];
        to_bin(((c - self.origin[axis]) * self.scale[axis]).clamp(0.0, self.last))
    }
}

/// A bin position, already clamped to `0..=last`, as an index.
#[inline(always)]
fn to_bin(x: f32) -> usize {
    debug_assert!((0.0..MAX_BINS as f32).contains(&x));
    // SAFETY: callers clamp `x` to `[0, bins - 1]`; boxes of hittable triangles are
    // finite, so `x` is never NaN and fits a u32.
    unsafe { x.to_int_unchecked::<u32>() as usize }
}

/// The best SAH split: axis, first bin of the right side, cost, and the two sides'
/// boxes.
struct Split {
    axis: usize,
    bin: usize,
    cost: f32,
    left: Aabb,
    right: Aabb,
}

struct Builder<'a> {
    options: &'a BuildOptions,
}

impl Builder<'_> {
    /// Builds the subtree of `prims` (starting at triangle `first` of the final
    /// order; `bounds` and `centroids` are theirs) and returns the child slot that
    /// refers to it. Interior nodes are appended to `nodes` in depth-first order.
    fn build_child(
        &self,
        prims: &mut [PrimRef],
        first: usize,
        bounds: Aabb,
        centroids: Aabb,
        depth: usize,
        nodes: &mut Vec<BvhNode>,
    ) -> BvhChild {
        let count = prims.len();
        let leaf = BvhChild {
            lo: bounds.lo3(),
            index: first as u32,
            hi: bounds.hi3(),
            count: count as u32,
        };
        if count == 1 {
            return leaf;
        }
        let spread = centroids.hi.truncate().cmpgt(centroids.lo.truncate()).any();
        // SAH costs overflow for coordinates near f32's limits: split at the median then.
        let sah = (depth < SAH_DEPTH && spread)
            .then(|| self.best_split(prims, centroids, bounds))
            .filter(|best| best.cost.is_finite());
        let (split, sides) = if let Some(best) = sah {
            if count <= self.options.max_leaf_size && count as f32 <= best.cost {
                return leaf;
            }
            let binner = Binner::new(centroids, self.bins_for(count));
            let (split, left_c, right_c) =
                partition(prims, |p| binner.bin(p, best.axis) < best.bin);
            (split, [(best.left, left_c), (best.right, right_c)])
        } else {
            if count <= self.options.max_leaf_size {
                return leaf;
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
        let [
            (left_bounds, left_centroids),
            (right_bounds, right_centroids),
        ] = sides;
        let index = nodes.len();
        nodes.push(BvhNode {
            children: [BvhChild::EMPTY; 2],
        });
        let children = if count > PARALLEL_THRESHOLD {
            let ((left_child, left_nodes), (right_child, right_nodes)) = rayon::join(
                || self.build_subtree(left, first, left_bounds, left_centroids, depth + 1),
                || {
                    self.build_subtree(
                        right,
                        first + split,
                        right_bounds,
                        right_centroids,
                        depth + 1,
                    )
                },
            );
            [
                append(nodes, left_child, left_nodes),
                append(nodes, right_child, right_nodes),
            ]
        } else {
            let left_child =
                self.build_child(left, first, left_bounds, left_centroids, depth + 1, nodes);
            let right_child = self.build_child(
                right,
                first + split,
                right_bounds,
                right_centroids,
                depth + 1,
                nodes,
            );
            [left_child, right_child]
        };
        nodes[index] = BvhNode { children };
        BvhChild {
            lo: bounds.lo3(),
            index: index as u32,
            hi: bounds.hi3(),
            count: 0,
        }
    }

    /// Bins for a node of `count` triangles: fewer for small nodes, where evaluating
    /// many bins would cost more than the triangles themselves.
    fn bins_for(&self, count: usize) -> usize {
        (count / 2).max(4).min(self.options.bins)
    }

    /// Builds a subtree into its own node array (indices relative to it).
    fn build_subtree(
        &self,
        prims: &mut [PrimRef],
        first: usize,
        bounds: Aabb,
        centroids: Aabb,
        depth: usize,
    ) -> (BvhChild, Vec<BvhNode>) {
        let mut nodes = Vec::with_capacity(prims.len() / 2 + 1);
        let child = self.build_child(prims, first, bounds, centroids, depth, &mut nodes);
        (child, nodes)
    }

    /// Bins the centroids on all three axes and evaluates the SAH at every bin
    /// boundary.
    fn best_split(&self, prims: &[PrimRef], centroids: Aabb, bounds: Aabb) -> Split {
        let n = self.bins_for(prims.len());
        let binner = Binner::new(centroids, n);
        let bins = if prims.len() > PARALLEL_THRESHOLD {
            prims
                .par_chunks(8 * 1024)
                .map(|chunk| {
                    let mut bins = Bins::EMPTY;
                    chunk.iter().for_each(|p| bins.add(&binner, p));
                    bins
                })
                .reduce(|| Bins::EMPTY, |a, b| a.merge(&b))
        } else {
            let mut bins = Bins::EMPTY;
            prims.iter().for_each(|p| bins.add(&binner, p));
            bins
        };
        let mut best = Split {
            axis: 0,
            bin: 1,
            cost: f32::INFINITY,
            left: Aabb::EMPTY,
            right: Aabb::EMPTY,
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
                    best = Split {
                        axis,
                        bin: i,
                        cost,
                        left: b,
                        right: right_box[i],
                    };
                }
            }
        }
        best
    }
}

/// Moves `prims` matching `left` to the front; returns how many there are and the
/// centroid bounds of each side.
fn partition(prims: &mut [PrimRef], left: impl Fn(&PrimRef) -> bool) -> (usize, Aabb, Aabb) {
    let (mut lc, mut rc) = (Aabb::EMPTY, Aabb::EMPTY);
    let mut i = 0;
    let mut j = prims.len();
    loop {
        while i < j && left(&prims[i]) {
            let c = prims[i].centroid2();
            lc.grow(c, c);
            i += 1;
        }
        while i < j && !left(&prims[j - 1]) {
            let c = prims[j - 1].centroid2();
            rc.grow(c, c);
            j -= 1;
        }
        if i >= j {
            return (i, lc, rc);
        }
        prims.swap(i, j - 1);
    }
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

/// Appends a subtree built into its own array after `nodes`, rebasing its interior
/// child indices; returns its child slot, rebased too.
fn append(nodes: &mut Vec<BvhNode>, mut child: BvhChild, subtree: Vec<BvhNode>) -> BvhChild {
    let offset = nodes.len() as u32;
    let rebase = |c: &mut BvhChild| {
        if !c.is_leaf() && !c.is_empty() {
            c.index += offset;
        }
    };
    rebase(&mut child);
    nodes.extend(subtree.into_iter().map(|mut node| {
        node.children.iter_mut().for_each(rebase);
        node
    }));
    child
}
