//! The GPU's eight-wide layout of a BVH ([`NodeLayout::Wide`](crate::NodeLayout)):
//! the binary [`Bvh`]'s nodes collapsed eight-wide as the CPU's [`WideBvh`]'s are,
//! their boxes quantized outward the same way, but its leaves kept: a leaf child
//! is a binary leaf, as its first triangle and triangle count in the binary tree's
//! order, because a GPU lane tests a leaf's triangles one at a time (merged leaves
//! would cost it extra tests) and the triangles then upload unchanged.
//!
//! [`WideBvh`]: super::wide_bvh::WideBvh

use glam::Vec3;

use super::wide_bvh::{Collapse, EMPTY, ExactBoxes, Leaves, WIDTH, WideNode, decoded_boxes};
use crate::bvh::Bvh;
use crate::types::{BvhChild, BvhNode, EMPTY_CHILD, WideBvhNode};

/// Rows of 16 bytes in one [`WideBvhNode`].
pub const NODE_ROWS: usize = size_of::<WideBvhNode>() / 16;
/// Rows of 16 bytes in one node's exact boxes.
pub const EXACT_ROWS: usize = size_of::<ExactBoxes>() / 16;

/// A binary BVH's nodes in the GPU's eight-wide layout. Node 0 is the root. The
/// triangles are the binary tree's ([`Bvh::triangles`]).
#[derive(Clone, Debug, Default)]
pub struct WideNodes {
    pub(crate) nodes: Vec<WideNode>,
    /// Exact boxes of the nodes whose quantized boxes would not hold them.
    pub(crate) exact: Vec<ExactBoxes>,
}

impl WideNodes {
    /// Collapses the nodes of `bvh`.
    #[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
    pub fn from_bvh(bvh: &Bvh) -> Self {
        Self::from_nodes(bvh.nodes())
    }

    /// Collapses binary `nodes` (node 0 the root).
    pub(crate) fn from_nodes(nodes: &[BvhNode]) -> Self {
        let collapse = Collapse {
            nodes,
            leaves: Leaves::Ranges,
            parallel_above: u32::MAX,
            exact: false,
        };
        let tree = collapse.tree(0);
        Self {
            nodes: tree.nodes,
            exact: tree.exact,
        }
    }

    /// Number of wide nodes.
    #[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of nodes that keep exact boxes.
    #[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
    pub fn exact_count(&self) -> usize {
        self.exact.len()
    }

    /// The children of node `node`: decoded boxes, node index or first triangle, and
    /// triangle count; [`BvhChild::EMPTY`] in unused slots. The shader's
    /// `wide_child`, lane by lane.
    #[inline(always)]
    pub fn children(&self, node: u32) -> [BvhChild; WIDTH] {
        let node = &self.nodes[node as usize];
        let boxes = decoded_boxes(node, &self.exact);
        std::array::from_fn(|lane| {
            if node.child[lane] == EMPTY {
                return BvhChild::EMPTY;
            }
            let plane = |planes: &[[f32; WIDTH]; 3]| Vec3::from(planes.map(|axis| axis[lane]));
            BvhChild {
                lo: plane(&boxes.lo),
                index: node.child[lane],
                hi: plane(&boxes.hi),
                count: u32::from(node.blocks[lane]),
            }
        })
    }

    /// Bytes of the GPU buffer ([`WideNodes::gpu_rows`]).
    pub fn gpu_bytes(&self) -> usize {
        16 * (self.nodes.len() * NODE_ROWS + self.exact.len() * EXACT_ROWS)
    }

    /// The node buffer the GPU reads: a [`WideBvhNode`] per node, then the exact
    /// boxes ([`EXACT_ROWS`] rows each), as 16-byte rows.
    pub fn gpu_rows(&self) -> Vec<[u32; 4]> {
        self.gpu_rows_at(0)
    }

    /// [`WideNodes::gpu_rows`] for a buffer where they start at row `first_row` (the
    /// exact boxes' row indices count from the buffer's start; child indices stay
    /// the tree's own).
    pub fn gpu_rows_at(&self, first_row: usize) -> Vec<[u32; 4]> {
        let first_exact = first_row + self.nodes.len() * NODE_ROWS;
        let mut rows = Vec::with_capacity(self.gpu_bytes() / 16);
        for node in &self.nodes {
            let exact = match node.exact {
                EMPTY => EMPTY_CHILD,
                e => (first_exact + e as usize * EXACT_ROWS) as u32,
            };
            let gpu = gpu_node(node, exact);
            rows.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&gpu)));
        }
        for exact in &self.exact {
            let planes = exact.lo.iter().chain(&exact.hi);
            for axis in planes {
                for half in axis.chunks(4) {
                    rows.push(std::array::from_fn(|k| half[k].to_bits()));
                }
            }
        }
        rows
    }
}

/// `node` as the GPU reads it, its exact boxes at row `exact`.
fn gpu_node(node: &WideNode, exact: u32) -> WideBvhNode {
    // A byte per child: children 0..4 in the first word, 4..8 in the second.
    let words = |bytes: &[u8; WIDTH]| -> [u32; 2] {
        [
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        ]
    };
    let planes = |codes: &[[u8; WIDTH]; 3]| -> [u32; 6] {
        let [x, y, z] = codes.map(|axis| words(&axis));
        [x[0], x[1], y[0], y[1], z[0], z[1]]
    };
    WideBvhNode {
        origin: Vec3::from(node.origin),
        exact,
        step: Vec3::from(node.step),
        _pad0: 0,
        lo: planes(&node.lo),
        hi: planes(&node.hi),
        child: node.child,
        count: words(&node.blocks),
        _pad1: [0; 2],
    }
}
