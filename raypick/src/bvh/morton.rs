//! Small subtrees built along a Morton curve.
//!
//! Below a size set by [`BuildOptions::morton_subtree`], binning and partitioning
//! every level costs more than it needs to. Such a subtree's triangles are sorted
//! once by the Morton code of their centroids (10 bits per axis over the subtree's
//! own centroid bounds, in cubic cells: the widest axis spans 1024 of them and the
//! others as many as their extent takes, so a flat subtree is first cut across its
//! long axes rather than its thin one). Every node then splits its run of that
//! order where the SAH is lowest: one sweep from each end gathers the boxes of
//! every prefix and suffix (on long runs only around the best of 32 chunk
//! boundaries), and the split is an index (nothing is moved). A left child starts
//! where its parent does and a right child ends where its parent does, so each
//! takes one of its two sweeps' costs from its parent's ([`Sweeps`]) and makes
//! only the other, with the same values bit for bit. Boxes are gathered
//! bottom-up, and a node small enough to be a leaf becomes one when the SAH cost of
//! its whole subtree is not lower.
//!
//! From [`SAH_DEPTH`] on, nodes are split in the middle as in the binned builder,
//! so the depth bound holds here too; equal codes (all centroids in one cell) are
//! split in the middle as well.

use super::SAH_DEPTH;
use super::build::{Aabb, BuildOptions, PrimRef};
use super::nodes::NodeWindow;
use crate::types::{BvhChild, BvhNode};

/// Bits of a Morton code per axis.
const BITS: u32 = 10;

/// Builds the subtree of `prims` (which start at triangle `first` of the final
/// order and have the centroid bounds `centroids`; at least two of them) at depth
/// `depth`, appending its interior nodes to `nodes` depth-first; sorts `prims`
/// along the curve. Returns the child slot that refers to the subtree and the
/// depth of its deepest leaf.
pub(super) fn build(
    prims: &mut [PrimRef],
    first: usize,
    centroids: Aabb,
    depth: usize,
    options: &BuildOptions,
    whole_runs: usize,
    nodes: &mut NodeWindow,
) -> (BvhChild, usize) {
    let codes = sort_by_code(prims, centroids);
    let mut builder = Builder {
        prims,
        codes: &codes,
        first,
        options,
        whole_runs,
        nodes,
        sweeps: Vec::new(),
    };
    let built = builder.node(0, codes.len(), depth, Sweeps::NONE);
    (built.child, built.depth)
}

/// The box around the boxes of `prims`.
fn boxes_bound(prims: &[PrimRef]) -> Aabb {
    prims.iter().fold(Aabb::EMPTY, |b, p| b.union(p.aabb()))
}

/// Sorts `prims` by the Morton code of their centroids; returns the sorted codes.
fn sort_by_code(prims: &mut [PrimRef], centroids: Aabb) -> Vec<u32> {
    let extent = centroids.extent();
    let cells = (1u32 << BITS) as f32;
    let widest = extent.truncate().max_element();
    let scale = glam::Vec4::select(
        extent.cmpgt(glam::Vec4::ZERO),
        glam::Vec4::splat(cells * (1.0 - 1e-6) / widest),
        glam::Vec4::ZERO,
    );
    let mut keys: Vec<u64> = prims
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let cell = ((p.centroid2() - centroids.lo) * scale)
                .clamp(glam::Vec4::ZERO, glam::Vec4::splat(cells - 1.0));
            (cell_code(cell) as u64) << 32 | i as u64
        })
        .collect();
    keys.sort_unstable();
    let sorted: Vec<PrimRef> = keys.iter().map(|&k| prims[k as u32 as usize]).collect();
    prims.copy_from_slice(&sorted);
    keys.iter().map(|&k| (k >> 32) as u32).collect()
}

/// The Morton code of a grid cell (`cell`, its coordinates clamped to the grid;
/// a NaN coordinate counts as 0, as the saturating cast takes it): `x` on the
/// highest of each three bits, `z` on the lowest.
#[inline(always)]
fn cell_code(cell: glam::Vec4) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_and_si128, _mm_cvtsi128_si32, _mm_cvttps_epi32, _mm_or_si128, _mm_set1_epi32,
            _mm_shuffle_epi32, _mm_slli_epi32,
        };
        // All three axes at once: the truncating conversion is the cast's on the
        // grid's 0..1024, and NaN's 0x8000_0000 spreads to 0 as 0 does.
        // SAFETY: SSE2, all these use, is part of every x86-64 CPU.
        unsafe {
            let step = |x: __m128i, shifted: __m128i, mask: i32| _mm_and_si128(_mm_or_si128(x, shifted), _mm_set1_epi32(mask));
            let x = _mm_cvttps_epi32(cell.into());
            let x = step(x, _mm_slli_epi32::<16>(x), 0x0300_00FF);
            let x = step(x, _mm_slli_epi32::<8>(x), 0x0300_F00F);
            let x = step(x, _mm_slli_epi32::<4>(x), 0x030C_30C3);
            let x = step(x, _mm_slli_epi32::<2>(x), 0x0924_9249);
            let lane = |x: __m128i| _mm_cvtsi128_si32(x) as u32;
            lane(x) << 2 | lane(_mm_shuffle_epi32::<1>(x)) << 1 | lane(_mm_shuffle_epi32::<2>(x))
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        spread(cell.x as u32) << 2 | spread(cell.y as u32) << 1 | spread(cell.z as u32)
    }
}

/// The built subtree whose root is interior node `index`, over boxes whose union
/// is `bounds`, with its SAH `cost` and the depth of its deepest leaf.
fn interior(index: usize, bounds: Aabb, cost: f32, depth: usize) -> Built {
    Built {
        child: BvhChild {
            lo: bounds.lo3(),
            index: index as u32,
            hi: bounds.hi3(),
            count: 0,
        },
        bounds,
        cost,
        depth,
    }
}

/// Spreads `x` (below 1024) to every third bit: one axis of a 30-bit Morton code.
#[inline(always)]
pub(crate) fn spread(x: u32) -> u32 {
    let x = (x | x << 16) & 0x0300_00FF;
    let x = (x | x << 8) & 0x0300_F00F;
    let x = (x | x << 4) & 0x030C_30C3;
    (x | x << 2) & 0x0924_9249
}

/// A built subtree: its child slot and its SAH cost (box half-areas times
/// triangle counts at the leaves, plus the traversal cost times the half-area of
/// every interior node).
struct Built {
    child: BvhChild,
    bounds: Aabb,
    cost: f32,
    /// Depth of the deepest leaf.
    depth: usize,
}

struct Builder<'a, 'b> {
    prims: &'a [PrimRef],
    codes: &'a [u32],
    first: usize,
    options: &'a BuildOptions,
    /// Runs of at most this many triangles become leaves as they are (at least 1).
    whole_runs: usize,
    nodes: &'a mut NodeWindow<'b>,
    /// The sweep costs of the nodes on the path from the subtree's root to the
    /// node being built ([`Sweeps`]), each node's after its parent's, and above
    /// them those of the sweep under way.
    sweeps: Vec<f32>,
}

/// Where the costs of a node's full sweeps lie in [`Builder::sweeps`], when known:
/// `prefix[k]` is the SAH area term of the `k + 1` triangles from the node's start
/// (the left side of the split after them), `suffix[k]` that of the triangles
/// from `k + 1` to the node's end (the right side of the same split). A prefix
/// holds for every run that starts where it does, so a left child inherits its
/// parent's; a suffix for every run that ends where it does, so a right child
/// inherits its parent's from its own start on.
#[derive(Clone, Copy)]
struct Sweeps {
    prefix: Option<usize>,
    suffix: Option<usize>,
}

impl Sweeps {
    const NONE: Sweeps = Sweeps {
        prefix: None,
        suffix: None,
    };
}

impl Builder<'_, '_> {
    /// The subtree of `prims[start..end]` (at least one) at depth `depth`, whose
    /// parent left it `known` sweep costs.
    fn node(&mut self, start: usize, end: usize, depth: usize, known: Sweeps) -> Built {
        let count = end - start;
        if count <= self.whole_runs {
            return self.leaf(start, count, boxes_bound(&self.prims[start..end]), depth);
        }
        if count == 2 {
            return self.pair(start, depth);
        }
        self.split_node(start, end, depth, known)
    }

    /// [`Builder::node`] of a run of at least two: split where [`Builder::split`]
    /// says, both sides built, and the run made a leaf instead when that is no
    /// costlier.
    fn split_node(&mut self, start: usize, end: usize, depth: usize, known: Sweeps) -> Built {
        let count = end - start;
        let mark = self.sweeps.len();
        let (mid, swept) = self.split(start, end, depth, known);
        let range = ((self.first + start) as u32, (self.first + end) as u32);
        let index = self.nodes.push(
            BvhNode {
                children: [BvhChild::EMPTY; 2],
            },
            range,
        );
        let left = Sweeps {
            prefix: swept.prefix,
            suffix: None,
        };
        let right = Sweeps {
            prefix: None,
            suffix: swept.suffix.map(|at| at + (mid - start)),
        };
        let left = self.node(start, mid, depth + 1, left);
        let right = self.node(mid, end, depth + 1, right);
        self.sweeps.truncate(mark);
        let (bounds, cost, leaf_cheaper) = self.joined(count, &left, &right);
        if leaf_cheaper {
            // Drop the subtree (the last nodes pushed).
            self.nodes.truncate(index);
            return self.leaf(start, count, bounds, depth);
        }
        self.nodes.set(
            index,
            BvhNode {
                children: [left.child, right.child],
            },
        );
        interior(index, bounds, cost, left.depth.max(right.depth))
    }

    /// The bounds and SAH cost of a subtree over `count` triangles whose root's
    /// children are `left` and `right`, and whether one leaf of them all would cost
    /// no more.
    fn joined(&self, count: usize, left: &Built, right: &Built) -> (Aabb, f32, bool) {
        let bounds = left.bounds.union(right.bounds);
        let area = bounds.half_area();
        let cost = self.options.traversal_cost * area + left.cost + right.cost;
        let leaf_cheaper = count <= self.options.max_leaf_size && count as f32 * area <= cost;
        (bounds, cost, leaf_cheaper)
    }

    /// The subtree of the two triangles from `start` at depth `depth`: what
    /// [`Builder::split_node`] makes of them (every split of a pair is between its
    /// two triangles), without sweeping their one split or pushing a node that the
    /// leaf then replaces. A subtree splits down to single triangles, a good
    /// part of the runs on the way being pairs.
    fn pair(&mut self, start: usize, depth: usize) -> Built {
        let [left, right] = [start, start + 1].map(|i| self.leaf(i, 1, self.prims[i].aabb(), depth + 1));
        let (bounds, cost, leaf_cheaper) = self.joined(2, &left, &right);
        if leaf_cheaper {
            return self.leaf(start, 2, bounds, depth);
        }
        let range = ((self.first + start) as u32, (self.first + start + 2) as u32);
        let index = self.nodes.push(
            BvhNode {
                children: [left.child, right.child],
            },
            range,
        );
        interior(index, bounds, cost, depth + 1)
    }

    /// A leaf of `prims[start..start + count]`, whose boxes' union is `bounds`.
    fn leaf(&self, start: usize, count: usize, bounds: Aabb, depth: usize) -> Built {
        Built {
            child: BvhChild {
                lo: bounds.lo3(),
                index: (self.first + start) as u32,
                hi: bounds.hi3(),
                count: count as u32,
            },
            bounds,
            cost: count as f32 * bounds.half_area(),
            depth,
        }
    }

    /// Where `prims[start..end]` splits, and the sweep costs its children may
    /// take from it (`known`, those its parent left it, and any it made): in the
    /// middle when all its codes are equal (the first and last are: they are
    /// sorted) or from [`SAH_DEPTH`] on, else where the SAH is lowest.
    fn split(&mut self, start: usize, end: usize, depth: usize, known: Sweeps) -> (usize, Sweeps) {
        if self.codes[start] == self.codes[end - 1] || depth >= SAH_DEPTH {
            return (start + (end - start) / 2, known);
        }
        if end - start < CHUNKED_SWEEP {
            return self.full_sweep(start, end, known);
        }
        (self.sweep(start, end), known)
    }

    /// The SAH-cheapest split of `prims[start..end]` (at least two, fewer than
    /// [`CHUNKED_SWEEP`]) along the curve, the middle if every cost overflows,
    /// and its sweep costs: those in `known`, the others made here.
    fn full_sweep(&mut self, start: usize, end: usize, known: Sweeps) -> (usize, Sweeps) {
        let prims = &self.prims[start..end];
        let n = prims.len();
        let prefix = known
            .prefix
            .unwrap_or_else(|| prefix_costs(&mut self.sweeps, prims, Side::EMPTY));
        let suffix = known
            .suffix
            .unwrap_or_else(|| suffix_costs(&mut self.sweeps, prims, Side::EMPTY));
        let best = cheapest(&self.sweeps[prefix..prefix + n - 1], &self.sweeps[suffix..suffix + n - 1]);
        let swept = Sweeps {
            prefix: Some(prefix),
            suffix: Some(suffix),
        };
        (start + best.unwrap_or(n / 2), swept)
    }

    /// The SAH-cheapest split of `prims[start..end]` (at least [`CHUNKED_SWEEP`])
    /// along the curve; the middle if every cost overflows. The run is first cut
    /// into [`CHUNKS`] chunks, whose boxes place the split to within a chunk (one
    /// pass, no costs per triangle); only the two chunks around the best boundary
    /// are then swept triangle by triangle.
    fn sweep(&mut self, start: usize, end: usize) -> usize {
        let prims = &self.prims[start..end];
        let n = prims.len();
        let size = n.div_ceil(CHUNKS);
        let mut chunks = [Aabb::EMPTY; CHUNKS];
        for (chunk, run) in chunks.iter_mut().zip(prims.chunks(size)) {
            *chunk = boxes_bound(run);
        }
        let used = n.div_ceil(size);
        // Boxes of the chunks before (prefix) and from (suffix) every boundary k.
        let (mut before, mut after) = ([Aabb::EMPTY; CHUNKS + 1], [Aabb::EMPTY; CHUNKS + 1]);
        for k in 0..used {
            before[k + 1] = before[k].union(chunks[k]);
        }
        for k in (0..used).rev() {
            after[k] = after[k + 1].union(chunks[k]);
        }
        let (mut best, mut best_cost) = (1, f32::INFINITY);
        for k in 1..used {
            let left = (k * size) as f32;
            let cost = before[k].half_area() * left + after[k].half_area() * (n as f32 - left);
            if cost < best_cost {
                (best, best_cost) = (k, cost);
            }
        }
        if !best_cost.is_finite() {
            return start + n / 2;
        }
        // Refine within chunks best - 1 and best.
        let (a, b) = ((best - 1) * size, ((best + 1) * size).min(n));
        let left = Side {
            bounds: before[best - 1],
            count: a,
        };
        let right = Side {
            bounds: after[best + 1],
            count: n - b,
        };
        start + self.sweep_window(prims, a, b, left, right, best * size)
    }

    /// The SAH-cheapest split `i` of `prims` with `a < i < b`, where everything
    /// before `a` is `left` and everything from `b` on is `right`; `fallback` if
    /// every cost overflows.
    fn sweep_window(
        &mut self,
        prims: &[PrimRef],
        a: usize,
        b: usize,
        left: Side,
        right: Side,
        fallback: usize,
    ) -> usize {
        let mark = self.sweeps.len();
        let window = &prims[a..b];
        let prefix = prefix_costs(&mut self.sweeps, window, left);
        let suffix = suffix_costs(&mut self.sweeps, window, right);
        let best = cheapest(&self.sweeps[prefix..suffix], &self.sweeps[suffix..]);
        self.sweeps.truncate(mark);
        best.map_or(fallback, |i| a + i)
    }
}

/// Appends to `sweeps` the SAH area term of the left side of every split of
/// `prims` (at least two) after `left`: for the split before `prims[i]`, the box
/// and count of `left` and `prims[..i]`, at `i - 1`. Returns where they start.
fn prefix_costs(sweeps: &mut Vec<f32>, prims: &[PrimRef], left: Side) -> usize {
    let at = sweeps.len();
    sweeps.resize(at + prims.len() - 1, 0.0);
    let (mut bounds, mut count) = (left.bounds, left.count as u32);
    for (cost, p) in sweeps[at..].iter_mut().zip(prims) {
        bounds = bounds.union(p.aabb());
        count += 1;
        *cost = bounds.half_area() * count as f32;
    }
    at
}

/// Appends to `sweeps` the SAH area term of the right side of every split of
/// `prims` (at least two) before `right`: for the split before `prims[i]`, the
/// box and count of `prims[i..]` and `right`, at `i - 1`. Returns where they
/// start.
fn suffix_costs(sweeps: &mut Vec<f32>, prims: &[PrimRef], right: Side) -> usize {
    let at = sweeps.len();
    sweeps.resize(at + prims.len() - 1, 0.0);
    let (mut bounds, mut count) = (right.bounds, right.count as u32);
    for (cost, p) in sweeps[at..].iter_mut().rev().zip(prims[1..].iter().rev()) {
        bounds = bounds.union(p.aabb());
        count += 1;
        *cost = bounds.half_area() * count as f32;
    }
    at
}

/// The split `i` (before the `i`-th triangle) whose `prefix[i - 1] + suffix[i -
/// 1]` is lowest, the last of equals (as a sweep from the end finds it first);
/// `None` when every cost overflows.
fn cheapest(prefix: &[f32], suffix: &[f32]) -> Option<usize> {
    let (mut best, mut best_cost) = (None, f32::INFINITY);
    for (i, (left, right)) in prefix.iter().zip(suffix).enumerate().rev() {
        let cost = left + right;
        if cost < best_cost {
            (best, best_cost) = (Some(i + 1), cost);
        }
    }
    best
}

/// Runs at least this long are swept chunk by chunk first.
const CHUNKED_SWEEP: usize = 256;

/// Chunks of a long run.
const CHUNKS: usize = 32;

/// The triangles on one side of a sweep window.
#[derive(Clone, Copy)]
struct Side {
    bounds: Aabb,
    count: usize,
}

impl Side {
    const EMPTY: Side = Side {
        bounds: Aabb::EMPTY,
        count: 0,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::Bvh;
    use crate::bvh::nodes::{NodeArray, Room};
    use crate::bvh::build::MORTON_MIN_TRIANGLES;
    use crate::kit::{self, Rng, fixtures};
    use bytemuck::Zeroable;
    use glam::Vec3;

    /// SAH cost of a tree relative to its root's box (1 per node visit and per
    /// triangle test, weighted by the probability of hitting the box).
    fn sah_cost(bvh: &Bvh) -> f64 {
        let area = |lo: glam::Vec3, hi: glam::Vec3| {
            let d = (hi - lo).max(glam::Vec3::ZERO).as_dvec3();
            d.x * d.y + d.y * d.z + d.z * d.x
        };
        let node_area = |c: &[BvhChild; 2]| area(c[0].lo.min(c[1].lo), c[0].hi.max(c[1].hi));
        let mut cost = 0.0;
        for node in bvh.nodes() {
            cost += node_area(&node.children);
            for c in node.children.iter().filter(|c| c.is_leaf()) {
                cost += c.count as f64 * area(c.lo, c.hi);
            }
        }
        cost / node_area(&bvh.nodes()[0].children)
    }

    /// Builds with Morton subtrees of at most `morton_subtree` triangles.
    fn build(mesh: &crate::Mesh, morton_subtree: usize) -> Bvh {
        let options = BuildOptions {
            morton_subtree,
            ..BuildOptions::default()
        };
        let bvh = Bvh::build_with(mesh, &options);
        bvh.validate(mesh).expect("a valid BVH");
        bvh
    }

    /// Sweeps along the curve see one order where binning sees three axes: on the
    /// built-in scene they cost a little SAH quality at this size (about 3% with
    /// subtrees of 16 triangles against the binned build's exact sweeps of such
    /// nodes, 10% with 4096, whatever the default) and none at 1M triangles.
    #[test]
    fn morton_subtrees_cost_little_quality() {
        let mesh = kit::mesh(fixtures::builtin_scene(2 * MORTON_MIN_TRIANGLES));
        let binned = sah_cost(&build(&mesh, 0));
        let default = BuildOptions::default().morton_subtree;
        for (morton_subtree, most) in [(16, 1.05), (default, 1.15), (4096, 1.15)] {
            let cost = sah_cost(&build(&mesh, morton_subtree));
            assert!(
                cost <= binned * most,
                "morton_subtree {morton_subtree}: SAH cost {cost:.2} vs {binned:.2} binned"
            );
        }
    }

    #[test]
    fn leaves_follow_the_options() {
        let mut rng = Rng::new(5);
        let bounds = (glam::Vec3::splat(-1.0), glam::Vec3::splat(1.0));
        let mesh = kit::mesh(fixtures::soup(
            MORTON_MIN_TRIANGLES + 1000,
            &mut rng,
            bounds,
        ));
        for max_leaf_size in [1, 3, 16] {
            let options = BuildOptions {
                max_leaf_size,
                ..BuildOptions::default()
            };
            let bvh = Bvh::build_with(&mesh, &options);
            bvh.validate(&mesh).expect("a valid BVH");
            let largest = bvh
                .nodes()
                .iter()
                .flat_map(|n| n.children)
                .map(|c| c.count as usize)
                .max();
            assert!(largest.is_some_and(|l| (1..=max_leaf_size).contains(&l)));
            if max_leaf_size == 1 {
                assert_eq!(bvh.nodes().len(), bvh.triangles().len() - 1);
            }
        }
    }

    /// The split of a node, of every part of a run, is the one a sweep of its
    /// whole run from both ends finds, whether it makes both sweeps' costs or
    /// takes one from its parent as a left or a right child (boxes repeated, so
    /// that costs tie).
    #[test]
    fn inherited_sweep_costs_split_as_whole_sweeps() {
        let mut rng = Rng::new(9);
        let n = 120;
        let mut prims: Vec<PrimRef> = Vec::with_capacity(n);
        for id in 0..n as u32 {
            let lo = rng.point_in_box(glam::Vec3::ZERO, glam::Vec3::splat(10.0));
            let hi = lo + rng.point_in_box(glam::Vec3::ZERO, glam::Vec3::ONE);
            let prim = match prims.last() {
                Some(last) if id % 3 == 0 => *last,
                _ => PrimRef::new(lo, hi, id),
            };
            prims.push(prim);
        }
        let codes: Vec<u32> = (0..n as u32).collect();
        let options = BuildOptions::default();
        let mut slots = vec![
            BvhNode {
                children: [BvhChild::EMPTY; 2],
            };
            n
        ];
        let mut ranges = vec![(0, 0); n];
        let array = NodeArray::new(Room::Any);
        let mut nodes = NodeWindow::new(&mut slots, &mut ranges, &array);
        let mut builder = Builder {
            prims: &prims,
            codes: &codes,
            first: 0,
            options: &options,
            whole_runs: 1,
            nodes: &mut nodes,
            sweeps: Vec::new(),
        };
        let whole = |builder: &mut Builder, start: usize, end: usize| {
            let run = &prims[start..end];
            start + builder.sweep_window(run, 0, run.len(), Side::EMPTY, Side::EMPTY, run.len() / 2)
        };
        for start in 0..n - 1 {
            for end in start + 2..=n {
                builder.sweeps.clear();
                let (split, _) = builder.full_sweep(start, end, Sweeps::NONE);
                assert_eq!(split, whole(&mut builder, start, end), "{start}..{end}");
            }
        }
        for (start, end) in [(0, n), (7, 95), (40, 42)] {
            for mid in start + 2..end - 1 {
                builder.sweeps.clear();
                let (_, parent) = builder.full_sweep(start, end, Sweeps::NONE);
                let left = Sweeps {
                    prefix: parent.prefix,
                    suffix: None,
                };
                let (split, _) = builder.full_sweep(start, mid, left);
                assert_eq!(split, whole(&mut builder, start, mid), "left {start}..{mid}");
                let right = Sweeps {
                    prefix: None,
                    suffix: parent.suffix.map(|at| at + (mid - start)),
                };
                let (split, _) = builder.full_sweep(mid, end, right);
                assert_eq!(split, whole(&mut builder, mid, end), "right {mid}..{end}");
            }
        }
    }

    #[test]
    fn one_cell_splits_in_the_middle() {
        // Every triangle in one Morton cell: the codes cannot order them, so every
        // node halves its run.
        let mut rng = Rng::new(6);
        // Centroids within 1e-4 of the origin, one near (1, 1, 1): cells are 1/1024
        // wide.
        let cluster = (glam::Vec3::ZERO, glam::Vec3::splat(1e-4));
        let far = (glam::Vec3::ONE, glam::Vec3::splat(1.001));
        // The far triangle first: the root's split is chosen from a strided sample,
        // which always holds the first triangle.
        let far_one = fixtures::soup(1, &mut rng, far);
        let mesh = kit::mesh(fixtures::concat(&[
            far_one,
            fixtures::soup(MORTON_MIN_TRIANGLES + 4096, &mut rng, cluster),
        ]));
        let bvh = build(&mesh, 1 << 20);
        let nodes = bvh.nodes();
        // Triangles under each node; children follow their parent.
        let mut under = vec![0u32; nodes.len()];
        let size = |under: &[u32], c: &BvhChild| match (c.is_leaf(), c.is_empty()) {
            (true, _) => c.count,
            (false, true) => 0,
            (false, false) => under[c.index as usize],
        };
        for i in (0..nodes.len()).rev() {
            under[i] = nodes[i].children.iter().map(|c| size(&under, c)).sum();
        }
        // The root splits off the far triangle; every node below halves its run.
        let [a, b] = nodes[0].children.map(|c| size(&under, &c));
        assert_eq!(a.min(b), 1);
        for node in &nodes[1..] {
            let [a, b] = node.children.map(|c| size(&under, &c));
            assert!(a.abs_diff(b) <= 1, "a node splits {a} / {b}");
        }
    }

    /// A pair's shortcut ([`Builder::pair`]) makes what the general path makes of
    /// it: the same child slot, bounds, cost (bit for bit) and depth, and the same
    /// node pushed, or none, for boxes that overlap, touch, lie apart, coincide or
    /// have no area, above and from [`SAH_DEPTH`], with leaves of one triangle
    /// and of eight.
    #[test]
    fn pairs_are_built_as_any_run_is() {
        let mut rng = Rng::new(17);
        let mut checked = [0usize; 2];
        for case in 0..400 {
            let corner = |rng: &mut Rng| Vec3::new(rng.range(-4.0, 4.0), rng.range(-4.0, 4.0), rng.range(-4.0, 4.0));
            let (lo, hi) = (corner(&mut rng), corner(&mut rng));
            let mut first = (lo.min(hi), lo.max(hi));
            let second = match case % 4 {
                0 => first,
                1 => (first.1, first.1 + (first.1 - first.0)),
                2 => {
                    // Segments along x, one after the other: no area at all.
                    first.1 = first.0 + Vec3::X * (first.1.x - first.0.x);
                    (first.1, first.1 + Vec3::X)
                }
                _ => {
                    let (lo, hi) = (corner(&mut rng), corner(&mut rng));
                    (lo.min(hi), lo.max(hi))
                }
            };
            let prims = [PrimRef::new(first.0, first.1, 0), PrimRef::new(second.0, second.1, 1)];
            let codes = if case % 3 == 0 { [7, 7] } else { [3, 9] };
            let options = BuildOptions {
                max_leaf_size: if case % 2 == 0 { 8 } else { 1 },
                ..BuildOptions::default()
            };
            let depth = if case % 5 == 0 { SAH_DEPTH } else { 3 };
            let build = |general: bool| {
                let array = NodeArray::new(Room::Any);
                let (mut nodes, mut ranges) = (vec![BvhNode::zeroed(); 4], vec![(0, 0); 4]);
                let mut window = NodeWindow::new(&mut nodes, &mut ranges, &array);
                let mut builder = Builder {
                    prims: &prims,
                    codes: &codes,
                    first: 40,
                    options: &options,
                    whole_runs: 1,
                    nodes: &mut window,
                    sweeps: Vec::new(),
                };
                let built = if general {
                    builder.split_node(0, 2, depth, Sweeps::NONE)
                } else {
                    builder.node(0, 2, depth, Sweeps::NONE)
                };
                let used = window.len();
                let summary = (built.child, built.bounds.lo3(), built.bounds.hi3(), built.cost.to_bits(), built.depth);
                (summary, nodes[..used].to_vec(), ranges[..used].to_vec())
            };
            let (pair, general) = (build(false), build(true));
            assert_eq!(pair, general, "case {case}");
            checked[usize::from(pair.1.is_empty())] += 1;
        }
        assert!(checked.iter().all(|&n| n > 50), "both leaves and nodes: {checked:?}");
    }

    /// A cell's code on the vector unit is the code of its three spread axes:
    /// across the grid, at its edges, and for NaN, which counts as 0.
    #[test]
    fn cell_codes_interleave_the_axes() {
        let mut rng = Rng::new(3);
        let last = ((1 << BITS) - 1) as f32;
        let edges = [0.0, 0.5, 1.0, last - 0.5, last, f32::NAN];
        for _ in 0..2000 {
            let mut pick = || match rng.below(3) {
                0 => edges[rng.below(edges.len())],
                _ => rng.range(0.0, last),
            };
            let cell = glam::Vec4::new(pick(), pick(), pick(), f32::from_bits(rng.next_u32() & 0x007f_ffff));
            let axis = |c: f32| spread(c as u32);
            assert_eq!(cell_code(cell), axis(cell.x) << 2 | axis(cell.y) << 1 | axis(cell.z), "cell {cell}");
        }
    }
}
