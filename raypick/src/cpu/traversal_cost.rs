//! What the GPU's BVH traversal (`shaders/bvh_traverse.wgsl`) costs per ray, counted
//! on its CPU twin [`bvh_traverse`](super::bvh_traverse) in dispatch order: nodes
//! visited, triangles tested, bytes read, and the SIMT efficiency of a warp.
//!
//! The shader runs an outer loop whose every pass first visits nodes (an inner loop,
//! until a node with a leaf child is entered) and then tests that node's leaf
//! triangles. The lanes of a warp run in lockstep: each pass's node loop takes as many
//! steps as its busiest lane, and so does its triangle loop; lanes that are done, or
//! have less to do, idle. SIMT efficiency is the useful lane-steps (every lane's node
//! visits and triangle tests) over the lane-steps executed (`WARP` × the steps of
//! the busiest lane, pass by pass), over all warps: 1.0 when every lane does the same
//! work, `1 / WARP` when one lane works alone. Consecutive rays share a warp, as
//! consecutive invocations do.

use rayon::prelude::*;

use super::bvh_traverse::{Tally, traverse_tallied};
use super::query::Closest;
use crate::bvh::Bvh;
use crate::options::TraceOptions;
use crate::prepare::sanitize_ray;
use crate::types::{BvhNode, Hit, PackedTriangle, Ray};

/// Lanes of a warp (NVIDIA; AMD's wave64 halves the efficiency's granularity).
pub const WARP: usize = 32;

/// Per-ray cost of the GPU's BVH traversal over a batch of rays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TraversalCost {
    /// Rays counted.
    pub rays: usize,
    /// Nodes visited per ray (each reads one node and tests its two child boxes).
    pub nodes_per_ray: f64,
    /// Triangles tested per ray.
    pub triangles_per_ray: f64,
    /// Bytes read per ray: nodes and triangles visited, and the ray itself; plus the
    /// hit written.
    pub bytes_per_ray: f64,
    /// Useful lane-steps over lane-steps executed by warps of [`WARP`] lanes.
    pub simt_efficiency: f64,
}

/// One ray's work, pass by pass of the shader's outer loop: (nodes, triangles).
#[derive(Default)]
struct Passes {
    passes: Vec<(u32, u32)>,
    /// The last pass reached its leaves: the next node visit starts a new pass.
    closed: bool,
}

impl Tally for Passes {
    fn node(&mut self, leaves: bool) {
        if self.closed || self.passes.is_empty() {
            self.passes.push((0, 0));
            self.closed = false;
        }
        let last = self.passes.last_mut().expect("a pass");
        last.0 += 1;
        self.closed = leaves;
    }

    fn triangle(&mut self) {
        if let Some(last) = self.passes.last_mut() {
            last.1 += 1;
        }
    }
}

/// Sums over warps: (nodes, triangles, useful lane-steps, executed lane-steps).
type Sums = (u64, u64, u64, u64);

/// The cost of one warp's rays.
fn warp_cost(bvh: &Bvh, rays: &[Ray], options: &TraceOptions) -> Sums {
    let lanes: Vec<Passes> = rays
        .iter()
        .map(|ray| {
            let mut passes = Passes::default();
            let ray = sanitize_ray(ray);
            let mut closest = Closest::default();
            traverse_tallied(bvh, &ray, options.cull, options.mode, &mut closest, &mut passes);
            passes
        })
        .collect();
    let most = lanes.iter().map(|l| l.passes.len()).max().unwrap_or(0);
    let (mut nodes, mut triangles, mut executed) = (0u64, 0u64, 0u64);
    for pass in 0..most {
        let at = |lane: &Passes| lane.passes.get(pass).copied().unwrap_or((0, 0));
        let busiest_nodes = lanes.iter().map(|l| at(l).0).max().unwrap_or(0);
        let busiest_triangles = lanes.iter().map(|l| at(l).1).max().unwrap_or(0);
        executed += WARP as u64 * u64::from(busiest_nodes + busiest_triangles);
        nodes += lanes.iter().map(|l| u64::from(at(l).0)).sum::<u64>();
        triangles += lanes.iter().map(|l| u64::from(at(l).1)).sum::<u64>();
    }
    (nodes, triangles, nodes + triangles, executed)
}

/// The cost of tracing `rays` (closest hit) through `bvh` with the GPU's traversal.
pub fn traversal_cost(bvh: &Bvh, rays: &[Ray], options: &TraceOptions) -> TraversalCost {
    let (nodes, triangles, useful, executed) = rays
        .par_chunks(WARP)
        .map(|warp| warp_cost(bvh, warp, options))
        .reduce(
            || (0, 0, 0, 0),
            |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3),
        );
    let n = rays.len().max(1) as f64;
    let size = |bytes: usize| bytes as f64;
    let io = size(size_of::<Ray>() + size_of::<Hit>());
    TraversalCost {
        rays: rays.len(),
        nodes_per_ray: nodes as f64 / n,
        triangles_per_ray: triangles as f64 / n,
        bytes_per_ray: (nodes as f64 * size(size_of::<BvhNode>())
            + triangles as f64 * size(size_of::<PackedTriangle>()))
            / n
            + io,
        simt_efficiency: if executed > 0 {
            useful as f64 / executed as f64
        } else {
            1.0
        },
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
