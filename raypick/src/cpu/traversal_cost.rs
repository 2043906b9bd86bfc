//! What a GPU's BVH traversal costs per ray, counted on a CPU walk in dispatch
//! order: nodes visited, triangles tested, bytes read, the deepest stack, and the
//! SIMT efficiency of a warp. Two node layouts are counted:
//!
//! - [`NodeLayout::Binary`]: the binary nodes the GPU traverses
//!   (`shaders/bvh_traverse.wgsl`), counted on its CPU twin
//!   [`bvh_traverse`](super::bvh_traverse);
//! - [`NodeLayout::Wide`]: the CPU's compressed eight-wide nodes (boxes quantized
//!   to 8 bits per plane), collapsed with the binary tree's own leaves
//!   ([`WideLeaves::Binary`](super::wide_bvh::WideLeaves)), walked as a GPU lane
//!   would: the node's boxes tested, its entered leaves' triangles tested one by one
//!   at once (nearest leaf first), the nearest entered interior child visited next
//!   and the others pushed farthest first. The candidate layout for the GPU; its
//!   walk finds the binary traversal's answers.
//!
//! The shader runs an outer loop whose every pass first visits nodes (an inner loop,
//! until a node with a leaf child is entered) and then tests that node's leaf
//! triangles. The lanes of a warp run in lockstep: each pass's node loop takes as
//! many steps as its busiest lane, and so does its triangle loop; lanes that are
//! done, or have less to do, idle. SIMT efficiency is the useful lane-steps (every
//! lane's node visits and triangle tests) over the lane-steps executed (`WARP` × the
//! steps of the busiest lane, pass by pass), over all warps: 1.0 when every lane
//! does the same work, `1 / WARP` when one lane works alone. Consecutive rays share
//! a warp, as consecutive invocations do. A wide node visit is one step, though it
//! tests eight boxes where a binary one tests two: compare layouts by bytes per ray,
//! and by efficiency at a given layout.

use rayon::prelude::*;

use super::bvh_traverse::{Tally, traverse_tallied};
use super::bvh_walk::pop_pending;
use super::intersect::{RayFrame, beyond};
use super::query::{Closest, Collect};
use super::vector::Portable;
use super::wide_bvh::{WIDTH, WideBvh, WideNode};
use super::wide_boxes::{Planes, Slabs, nearest_first};
use super::wide_traverse::offer_leaf;
use crate::bvh::{Bvh, MAX_DEPTH};
use crate::options::{Cull, Mode, TraceOptions};
use crate::prepare::{is_valid_ray, sanitize_ray};
use crate::types::{BvhNode, Hit, PackedTriangle, Ray};

/// Lanes of a warp (NVIDIA; AMD's wave64 halves the efficiency's granularity).
pub const WARP: usize = 32;

/// A BVH node layout a GPU traversal reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum NodeLayout {
    /// Two children per node, boxes as `f32` ([`BvhNode`], 64 bytes): what the GPU
    /// traverses.
    #[default]
    Binary,
    /// Eight children per node, boxes quantized to 8 bits per plane ([`WideNode`],
    /// 128 bytes).
    Wide,
}

impl NodeLayout {
    /// Bytes of one node.
    pub fn node_bytes(self) -> usize {
        match self {
            NodeLayout::Binary => size_of::<BvhNode>(),
            NodeLayout::Wide => size_of::<WideNode>(),
        }
    }
}

impl std::fmt::Display for NodeLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NodeLayout::Binary => "binary",
            NodeLayout::Wide => "wide",
        })
    }
}

/// Per-ray cost of a GPU BVH traversal over a batch of rays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TraversalCost {
    /// The node layout counted.
    pub layout: NodeLayout,
    /// Rays counted.
    pub rays: usize,
    /// Nodes visited per ray (each reads one node and tests its children's boxes).
    pub nodes_per_ray: f64,
    /// Triangles tested per ray.
    pub triangles_per_ray: f64,
    /// Bytes read per ray: nodes and triangles visited, and the ray itself; plus the
    /// hit written.
    pub bytes_per_ray: f64,
    /// Useful lane-steps over lane-steps executed by warps of [`WARP`] lanes.
    pub simt_efficiency: f64,
    /// The most entries one ray's stack held.
    pub stack_max: usize,
}

/// One ray's work, pass by pass of the shader's outer loop: (nodes, triangles).
#[derive(Default)]
struct Passes {
    passes: Vec<(u32, u32)>,
    /// The last pass reached its leaves: the next node visit starts a new pass.
    closed: bool,
    /// The deepest stack.
    stack_max: usize,
}

impl Tally for Passes {
    fn node(&mut self, leaves: bool) {
        if self.closed || self.passes.is_empty() {
            self.passes.push((0, 0));
        }
        self.passes.last_mut().expect("a pass").0 += 1;
        self.closed = leaves;
    }

    fn triangle(&mut self) {
        if let Some(last) = self.passes.last_mut() {
            last.1 += 1;
        }
    }

    fn stack(&mut self, depth: usize) {
        self.stack_max = self.stack_max.max(depth);
    }
}

/// Sums over warps: nodes, triangles, useful and executed lane-steps, deepest stack.
#[derive(Clone, Copy, Default)]
struct Sums {
    nodes: u64,
    triangles: u64,
    useful: u64,
    executed: u64,
    stack_max: usize,
}

impl Sums {
    fn add(self, b: Sums) -> Sums {
        Sums {
            nodes: self.nodes + b.nodes,
            triangles: self.triangles + b.triangles,
            useful: self.useful + b.useful,
            executed: self.executed + b.executed,
            stack_max: self.stack_max.max(b.stack_max),
        }
    }
}

/// The cost of one warp whose lanes did `lanes`.
fn warp_cost(lanes: &[Passes]) -> Sums {
    let most = lanes.iter().map(|l| l.passes.len()).max().unwrap_or(0);
    let mut sums = Sums {
        stack_max: lanes.iter().map(|l| l.stack_max).max().unwrap_or(0),
        ..Sums::default()
    };
    for pass in 0..most {
        let at = |lane: &Passes| lane.passes.get(pass).copied().unwrap_or((0, 0));
        let busiest_nodes = lanes.iter().map(|l| at(l).0).max().unwrap_or(0);
        let busiest_triangles = lanes.iter().map(|l| at(l).1).max().unwrap_or(0);
        sums.executed += WARP as u64 * u64::from(busiest_nodes + busiest_triangles);
        sums.nodes += lanes.iter().map(|l| u64::from(at(l).0)).sum::<u64>();
        sums.triangles += lanes.iter().map(|l| u64::from(at(l).1)).sum::<u64>();
    }
    sums.useful = sums.nodes + sums.triangles;
    sums
}

/// Counts `walk` (one valid ray's traversal, telling its passes) over `rays`, warp
/// by warp.
fn count(layout: NodeLayout, rays: &[Ray], walk: impl Fn(&Ray, &mut Passes) + Sync) -> TraversalCost {
    let sums = rays
        .par_chunks(WARP)
        .map(|warp| {
            let lanes: Vec<Passes> = warp
                .iter()
                .map(|ray| {
                    let mut passes = Passes::default();
                    // An invalid ray is written as a miss before any node is read.
                    let ray = sanitize_ray(ray);
                    if is_valid_ray(&ray) {
                        walk(&ray, &mut passes);
                    }
                    passes
                })
                .collect();
            warp_cost(&lanes)
        })
        .reduce(Sums::default, Sums::add);
    let n = rays.len().max(1) as f64;
    let io = (size_of::<Ray>() + size_of::<Hit>()) as f64;
    TraversalCost {
        layout,
        rays: rays.len(),
        nodes_per_ray: sums.nodes as f64 / n,
        triangles_per_ray: sums.triangles as f64 / n,
        bytes_per_ray: (sums.nodes as f64 * layout.node_bytes() as f64
            + sums.triangles as f64 * size_of::<PackedTriangle>() as f64)
            / n
            + io,
        simt_efficiency: if sums.executed > 0 {
            sums.useful as f64 / sums.executed as f64
        } else {
            1.0
        },
        stack_max: sums.stack_max,
    }
}

/// The cost of tracing `rays` (closest hit) through `bvh` with the GPU's traversal
/// of binary nodes.
pub fn traversal_cost(bvh: &Bvh, rays: &[Ray], options: &TraceOptions) -> TraversalCost {
    count(NodeLayout::Binary, rays, |ray, passes| {
        let mut closest = Closest::default();
        traverse_tallied(bvh, ray, options.cull, options.mode, &mut closest, passes);
    })
}

/// The cost of tracing `rays` (closest hit) through `wide` with a GPU traversal of
/// the eight-wide layout ([`wide_walk`]). Collapse the tree with
/// [`WideLeaves::Binary`](super::wide_bvh::WideLeaves) for the layout a GPU would
/// read; leaves of more triangles cost more tests.
pub fn wide_traversal_cost(wide: &WideBvh, rays: &[Ray], options: &TraceOptions) -> TraversalCost {
    let block_triangles = wide.block_triangles();
    count(NodeLayout::Wide, rays, |ray, passes| {
        let mut closest = Closest::default();
        wide_walk(wide, &block_triangles, ray, options.cull, options.mode, &mut closest, passes);
    })
}

/// A pending child of the wide walk: wide node index and entry distance.
type Pending = (u32, f32);

/// One valid ray's ([`is_valid_ray`]) nearest hit through `wide` as a GPU lane
/// would walk the eight-wide layout, telling `tally` its work: at each node the
/// entered leaves' triangles are tested at once (nearest leaf first, a leaf skipped
/// once a nearer hit beat it), the nearest entered interior child is visited next
/// and the others are pushed farthest first. `block_triangles` holds the triangles
/// of each leaf block.
pub fn wide_walk(
    wide: &WideBvh,
    block_triangles: &[u8],
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    closest: &mut Closest,
    tally: &mut impl Tally,
) {
    if wide.nodes.is_empty() {
        return;
    }
    let frame = RayFrame::new(ray);
    let slabs = Slabs::<Portable>::new(ray, &frame);
    let mut stack = [(0u32, 0.0f32); MAX_DEPTH * (WIDTH - 1)];
    let mut depth = 0;
    let mut next = Some(0u32);
    loop {
        let index = match next.take() {
            Some(index) => index,
            None => match pop_pending(&stack, &mut depth, closest.bound(), |p: &Pending| p.1) {
                Some((index, _)) => index,
                None => return,
            },
        };
        let node = &wide.nodes[index as usize];
        let planes = Planes::<Portable>::of(wide, node);
        let (entered, near) = slabs.enter(&planes, closest.bound(), node.occupied as u32);
        let mut order = [0usize; WIDTH];
        let count = nearest_first(entered, &near, &mut order);
        let order = &order[..count];
        tally.node(order.iter().any(|&lane| node.blocks[lane] > 0));
        for &lane in order.iter().filter(|&&lane| node.blocks[lane] > 0) {
            if beyond(near[lane], closest.bound()) {
                continue; // a nearer leaf already beat this one
            }
            let (first, blocks) = (node.child[lane], u32::from(node.blocks[lane]));
            let blocks_at = first as usize..(first + blocks) as usize;
            let triangles: u32 = block_triangles[blocks_at].iter().map(|&n| u32::from(n)).sum();
            (0..triangles).for_each(|_| tally.triangle());
            if mode == Mode::Watertight {
                offer_leaf::<true>(wide, first, blocks, ray, &frame, cull, closest);
            } else {
                offer_leaf::<false>(wide, first, blocks, ray, &frame, cull, closest);
            }
        }
        let mut interior = order.iter().filter(|&&lane| node.blocks[lane] == 0);
        next = interior.next().map(|&lane| node.child[lane]);
        for &lane in interior.rev() {
            stack[depth] = (node.child[lane], near[lane]);
            depth += 1;
            tally.stack(depth);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_split_where_the_shader_reaches_leaves() {
        let mut p = Passes::default();
        p.node(false);
        p.node(true);
        p.triangle();
        p.triangle();
        p.node(false);
        p.node(false);
        p.node(true);
        p.triangle();
        assert_eq!(p.passes, [(2, 2), (3, 1)]);
    }
}
