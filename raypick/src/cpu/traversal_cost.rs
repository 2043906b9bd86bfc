//! What a GPU's BVH traversal costs per ray, counted on a CPU walk in dispatch
//! order: nodes visited, triangles tested, bytes read, the deepest stack, and the
//! SIMT efficiency of a warp. Two node layouts are counted:
//!
//! - [`NodeLayout::Binary`]: the binary nodes the GPU traverses
//!   (`shaders/bvh_traverse.wgsl`), counted on its CPU twin
//!   [`bvh_traverse`](super::bvh_traverse);
//! - [`NodeLayout::Wide`]: the GPU's compressed eight-wide nodes (boxes quantized
//!   to 8 bits per plane, the binary tree's own leaves: [`WideNodes`]),
//!   counted on the twin of `shaders/wide_bvh_traverse.wgsl`,
//!   [`wide_bvh_traverse`](super::wide_bvh_traverse): the node's boxes tested, its
//!   entered leaves' triangles tested one by one at once (nearest leaf first), the
//!   nearest entered interior child visited next and the others pushed farthest
//!   first.
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

use super::bvh_traverse::{Tally, traverse_tallied as binary_tallied};
use super::query::Closest;
use super::wide_bvh_traverse::{STACK_ENTRIES, traverse_tallied};
use super::wide_nodes::WideNodes;
use crate::bvh::Bvh;
use crate::options::TraceOptions;
pub use crate::options::NodeLayout;
use crate::prepare::{is_valid_ray, sanitize_ray};
use crate::types::{Hit, PackedTriangle, Ray};

/// Lanes of a warp (NVIDIA; AMD's wave64 halves the efficiency's granularity).
pub const WARP: usize = 32;

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

/// Sums over warps: nodes, triangles, executed lane-steps, deepest stack (the useful
/// lane-steps are the nodes and triangles).
#[derive(Clone, Copy, Default)]
struct Sums {
    nodes: u64,
    triangles: u64,
    executed: u64,
    stack_max: usize,
}

impl Sums {
    fn add(self, b: Sums) -> Sums {
        Sums {
            nodes: self.nodes + b.nodes,
            triangles: self.triangles + b.triangles,
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
            (sums.nodes + sums.triangles) as f64 / sums.executed as f64
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
        binary_tallied(bvh, ray, options.cull, options.mode, &mut closest, passes);
    })
}

/// The cost of tracing `rays` (closest hit) through `wide`, the eight-wide nodes
/// of a BVH over `triangles`, with the GPU's traversal of them, counted on its twin
/// [`wide_bvh_traverse`](super::wide_bvh_traverse) (a ray that would overflow the
/// stack is counted up to there: the GPU hands it to the CPU).
pub fn wide_traversal_cost(
    wide: &WideNodes,
    triangles: &[PackedTriangle],
    rays: &[Ray],
    options: &TraceOptions,
) -> TraversalCost {
    count(NodeLayout::Wide, rays, |ray, passes| {
        let mut closest = Closest::default();
        let test = (options.cull, options.mode);
        traverse_tallied(wide, triangles, ray, test, STACK_ENTRIES, &mut closest, passes);
    })
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
