//! The binned SAH builder.
//!
//! Works on an array of `PrimRef`s (a triangle's box and id, 32 bytes) that is
//! partitioned in place, so every pass over a node's triangles is sequential in
//! memory. Per node: one pass for the centroid bounds, one pass binning the centroids
//! on all three axes, one partition pass. Large nodes bin in parallel and build their
//! two subtrees in parallel (`rayon::join`), each into its own node array that the
//! parent then appends.

use glam::Vec3;
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
    /// SAH bins per axis (2..=64).
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

/// Nodes with more triangles than this bin in parallel and build their subtrees in
/// parallel.
const PARALLEL_THRESHOLD: usize = 32 * 1024;

/// A triangle's bounding box and its index in the packed triangle array.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct PrimRef {
    lo: Vec3,
    id: u32,
    hi: Vec3,
    _pad: u32,
}

impl PrimRef {
    /// Twice the centroid (saves a multiply; all comparisons are relative).
    #[inline(always)]
    fn centroid2(&self) -> Vec3 {
        self.lo + self.hi
    }
}

/// An axis-aligned box.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    lo: Vec3,
    hi: Vec3,
}

impl Aabb {
    const EMPTY: Aabb = Aabb {
        lo: Vec3::splat(f32::INFINITY),
        hi: Vec3::splat(f32::NEG_INFINITY),
    };

    #[inline(always)]
    fn grow(&mut self, lo: Vec3, hi: Vec3) {
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

    /// Half the surface area (the SAH only needs ratios).
    #[inline(always)]
    fn half_area(&self) -> f32 {
        let d = (self.hi - self.lo).max(Vec3::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }
}

/// The box of a packed triangle as the kernels see it (`v0`, `v0 + e1`, `v0 + e2`),
/// padded outward so that rounding in box tests can never cull a hit.
fn triangle_box(tri: &PackedTriangle) -> (Vec3, Vec3) {
    let (a, b, c) = (tri.v0, tri.v0 + tri.e1, tri.v0 + tri.e2);
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
        bins: options.bins.clamp(2, 64),
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
                lo,
                id: tri.id,
                hi,
                _pad: 0,
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
        return bvh;
    }
    let bounds = bounds_of(&prims);
    let builder = Builder { options: &options };
    let mut nodes = Vec::with_capacity(prims.len() / 2 + 1);
    let root = builder.build_child(&mut prims, 0, bounds, 0, &mut nodes);
    if root.is_leaf() {
        // A single leaf: the root node holds it and an empty slot.
        nodes.push(BvhNode {
            children: [root, BvhChild::EMPTY],
        });
    }
    bvh.depth = depth_of(&nodes);
    bvh.nodes = nodes;
    bvh.triangles = prims.par_iter().map(|p| packed[p.id as usize]).collect();
    bvh
}

fn bounds_of(prims: &[PrimRef]) -> Aabb {
    let fold = |mut b: Aabb, p: &PrimRef| {
        b.grow(p.lo, p.hi);
        b
    };
    if prims.len() > PARALLEL_THRESHOLD {
        prims
            .par_chunks(8192)
            .map(|c| c.iter().fold(Aabb::EMPTY, fold))
            .reduce(|| Aabb::EMPTY, Aabb::union)
    } else {
        prims.iter().fold(Aabb::EMPTY, fold)
    }
}

fn centroid_bounds(prims: &[PrimRef]) -> Aabb {
    let fold = |mut b: Aabb, p: &PrimRef| {
        let c = p.centroid2();
        b.grow(c, c);
        b
    };
    if prims.len() > PARALLEL_THRESHOLD {
        prims
            .par_chunks(8192)
            .map(|c| c.iter().fold(Aabb::EMPTY, fold))
            .reduce(|| Aabb::EMPTY, Aabb::union)
    } else {
        prims.iter().fold(Aabb::EMPTY, fold)
    }
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

/// Per-bin box and triangle count, for the three axes.
#[derive(Clone)]
struct Bins {
    boxes: Vec<[Aabb; 3]>,
    counts: Vec<[u32; 3]>,
}

impl Bins {
    fn new(n: usize) -> Self {
        Self {
            boxes: vec![[Aabb::EMPTY; 3]; n],
            counts: vec![[0; 3]; n],
        }
    }

    fn merge(mut self, other: Bins) -> Bins {
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
    origin: Vec3,
    scale: Vec3,
    last: f32,
}

impl Binner {
    fn new(centroids: Aabb, bins: usize) -> Self {
        let extent = centroids.hi - centroids.lo;
        let scale = Vec3::select(
            extent.cmpgt(Vec3::ZERO),
            Vec3::splat(bins as f32 * (1.0 - 1e-6)) / extent,
            Vec3::ZERO,
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
            ((p.centroid2() - self.origin) * self.scale).clamp(Vec3::ZERO, Vec3::splat(self.last));
        [b.x as usize, b.y as usize, b.z as usize]
    }

    #[inline(always)]
    fn bin(&self, p: &PrimRef, axis: usize) -> usize {
        let c = p.centroid2()[axis];
        ((c - self.origin[axis]) * self.scale[axis]).clamp(0.0, self.last) as usize
    }
}

/// The best SAH split: axis, first bin of the right side, cost.
struct Split {
    axis: usize,
    bin: usize,
    cost: f32,
}

struct Builder<'a> {
    options: &'a BuildOptions,
}

impl Builder<'_> {
    /// Builds the subtree of `prims` (starting at triangle `first` of the final
    /// order) and returns the child slot that refers to it. Interior nodes are
    /// appended to `nodes` in depth-first order.
    fn build_child(
        &self,
        prims: &mut [PrimRef],
        first: usize,
        bounds: Aabb,
        depth: usize,
        nodes: &mut Vec<BvhNode>,
    ) -> BvhChild {
        let count = prims.len();
        let leaf = BvhChild {
            lo: bounds.lo,
            index: first as u32,
            hi: bounds.hi,
            count: count as u32,
        };
        if count == 1 {
            return leaf;
        }
        let centroids = centroid_bounds(prims);
        let split = if depth < SAH_DEPTH && centroids.hi.cmpgt(centroids.lo).any() {
            let split = self.best_split(prims, centroids, bounds);
            let leaf_cost = count as f32;
            if count <= self.options.max_leaf_size && leaf_cost <= split.cost {
                return leaf;
            }
            let binner = Binner::new(centroids, self.options.bins);
            partition(prims, |p| binner.bin(p, split.axis) < split.bin)
        } else {
            if count <= self.options.max_leaf_size {
                return leaf;
            }
            median_split(prims, centroids)
        };
        debug_assert!(split > 0 && split < count);
        debug_assert!(depth < MAX_DEPTH);

        let (left, right) = prims.split_at_mut(split);
        let (left_bounds, right_bounds) = (bounds_of(left), bounds_of(right));
        let index = nodes.len();
        nodes.push(BvhNode {
            children: [BvhChild::EMPTY; 2],
        });
        let children = if count > PARALLEL_THRESHOLD {
            let ((left_child, left_nodes), (right_child, right_nodes)) = rayon::join(
                || self.build_subtree(left, first, left_bounds, depth + 1),
                || self.build_subtree(right, first + split, right_bounds, depth + 1),
            );
            let left_child = append(nodes, left_child, left_nodes);
            let right_child = append(nodes, right_child, right_nodes);
            [left_child, right_child]
        } else {
            let left_child = self.build_child(left, first, left_bounds, depth + 1, nodes);
            let right_child =
                self.build_child(right, first + split, right_bounds, depth + 1, nodes);
            [left_child, right_child]
        };
        nodes[index] = BvhNode { children };
        BvhChild {
            lo: bounds.lo,
            index: index as u32,
            hi: bounds.hi,
            count: 0,
        }
    }

    /// Builds a subtree into its own node array (indices relative to it).
    fn build_subtree(
        &self,
        prims: &mut [PrimRef],
        first: usize,
        bounds: Aabb,
        depth: usize,
    ) -> (BvhChild, Vec<BvhNode>) {
        let mut nodes = Vec::with_capacity(prims.len() / 2 + 1);
        let child = self.build_child(prims, first, bounds, depth, &mut nodes);
        (child, nodes)
    }

    /// Bins the centroids on all three axes and evaluates the SAH at every bin
    /// boundary.
    fn best_split(&self, prims: &[PrimRef], centroids: Aabb, bounds: Aabb) -> Split {
        let n = self.options.bins;
        let binner = Binner::new(centroids, n);
        let fill = |mut bins: Bins, p: &PrimRef| {
            for (axis, bin) in binner.bins(p).into_iter().enumerate() {
                bins.boxes[bin][axis].grow(p.lo, p.hi);
                bins.counts[bin][axis] += 1;
            }
            bins
        };
        let bins = if prims.len() > PARALLEL_THRESHOLD {
            prims
                .par_chunks(16 * 1024)
                .map(|c| c.iter().fold(Bins::new(n), fill))
                .reduce(|| Bins::new(n), Bins::merge)
        } else {
            prims.iter().fold(Bins::new(n), fill)
        };
        let mut best = Split {
            axis: 0,
            bin: 1,
            cost: f32::INFINITY,
        };
        let parent_area = bounds.half_area().max(f32::MIN_POSITIVE);
        let mut right_cost = vec![0.0f32; n];
        for axis in 0..3 {
            if centroids.hi[axis] <= centroids.lo[axis] {
                continue;
            }
            // right_cost[i] = area × count of bins i..n.
            let (mut area_box, mut count) = (Aabb::EMPTY, 0u32);
            for i in (1..n).rev() {
                area_box = area_box.union(bins.boxes[i][axis]);
                count += bins.counts[i][axis];
                right_cost[i] = area_box.half_area() * count as f32;
            }
            let (mut area_box, mut count) = (Aabb::EMPTY, 0u32);
            for (bin, right) in right_cost.iter().enumerate().skip(1) {
                area_box = area_box.union(bins.boxes[bin - 1][axis]);
                count += bins.counts[bin - 1][axis];
                if count == 0 || count as usize == prims.len() {
                    continue;
                }
                let cost = self.options.traversal_cost
                    + (area_box.half_area() * count as f32 + right) / parent_area;
                if cost < best.cost {
                    best = Split { axis, bin, cost };
                }
            }
        }
        best
    }
}

/// Moves `prims` matching `left` to the front; returns how many there are.
fn partition(prims: &mut [PrimRef], left: impl Fn(&PrimRef) -> bool) -> usize {
    let mut i = 0;
    let mut j = prims.len();
    loop {
        while i < j && left(&prims[i]) {
            i += 1;
        }
        while i < j && !left(&prims[j - 1]) {
            j -= 1;
        }
        if i >= j {
            return i;
        }
        prims.swap(i, j - 1);
        i += 1;
        j -= 1;
    }
}

/// Splits at the median centroid along the widest centroid axis (or at the middle
/// of the array when all centroids coincide); returns the size of the left side.
fn median_split(prims: &mut [PrimRef], centroids: Aabb) -> usize {
    let mid = prims.len() / 2;
    let extent = centroids.hi - centroids.lo;
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
