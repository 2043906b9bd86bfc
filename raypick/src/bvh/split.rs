//! Splitting a BVH into self-contained chunks that each fit a storage binding.
//!
//! Nodes are laid out depth-first, so every subtree is a contiguous run of nodes
//! and of triangles. A chunk is one subtree with its indices rebased to start at
//! zero; the chunks of a BVH together hold every leaf once. Tracing every chunk
//! and keeping the best hit gives the answer of the whole BVH.

use super::Bvh;
use crate::types::{BvhChild, BvhNode, PackedTriangle};

/// One self-contained piece of a BVH.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhChunk {
    /// Nodes; node 0 is the chunk's root.
    pub nodes: Vec<BvhNode>,
    /// The triangles its leaves refer to.
    pub triangles: Vec<PackedTriangle>,
}

/// Subtree sizes in nodes, per node (depth-first layout: node `i`'s subtree is
/// `i .. i + size[i]`).
fn subtree_sizes(nodes: &[BvhNode]) -> Vec<u32> {
    let mut size = vec![1u32; nodes.len()];
    // Children come after their parent, so a reverse sweep sees children first.
    for i in (0..nodes.len()).rev() {
        for child in &nodes[i].children {
            if !child.is_leaf() && !child.is_empty() {
                size[i] += size[child.index as usize];
            }
        }
    }
    size
}

impl Bvh {
    /// Splits the BVH into chunks of at most `max_nodes` nodes and `max_triangles`
    /// triangles each (a BVH that fits is one chunk). Chunks are subtrees, listed
    /// from the root's left to its right.
    pub fn split(&self, max_nodes: usize, max_triangles: usize) -> Vec<BvhChunk> {
        let size = subtree_sizes(&self.nodes);
        let ranges = self.subtree_ranges();
        if self.nodes.len() <= max_nodes && self.triangles.len() <= max_triangles {
            return vec![BvhChunk {
                nodes: self.nodes.clone(),
                triangles: self.triangles.clone(),
            }];
        }
        let mut chunks = Vec::new();
        let mut pending: Vec<BvhChild> = self.nodes[0].children.iter().rev().copied().collect();
        while let Some(child) = pending.pop() {
            if child.is_empty() {
                continue;
            }
            let (first, end) = if child.is_leaf() {
                (child.index, child.index + child.count)
            } else {
                ranges[child.index as usize]
            };
            let nodes = if child.is_leaf() {
                1
            } else {
                size[child.index as usize] as usize
            };
            let fits = nodes <= max_nodes && (end - first) as usize <= max_triangles;
            if fits || child.is_leaf() {
                chunks.push(self.chunk(&child, first, end, &size));
            } else {
                pending.extend(self.nodes[child.index as usize].children.iter().rev());
            }
        }
        chunks
    }

    /// The chunk rooted at `child`, indices rebased.
    fn chunk(&self, child: &BvhChild, first: u32, end: u32, size: &[u32]) -> BvhChunk {
        let triangles = self.triangles[first as usize..end as usize].to_vec();
        if child.is_leaf() {
            let leaf = BvhChild { index: 0, ..*child };
            return BvhChunk {
                nodes: vec![BvhNode {
                    children: [leaf, BvhChild::EMPTY],
                }],
                triangles,
            };
        }
        let base = child.index;
        let nodes = self.nodes[base as usize..(base + size[base as usize]) as usize]
            .iter()
            .map(|node| {
                let mut node = *node;
                for c in &mut node.children {
                    if c.is_leaf() {
                        c.index -= first;
                    } else if !c.is_empty() {
                        c.index -= base;
                    }
                }
                node
            })
            .collect();
        BvhChunk { nodes, triangles }
    }
}
