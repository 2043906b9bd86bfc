//! The CPU's own layout of a BVH: eight children per node in structure-of-arrays
//! form, so one vector instruction tests a ray against eight boxes, and leaf
//! triangles in blocks of eight, so one pass of the brute-force arithmetic tests a
//! whole leaf. Collapsed from the binary [`Bvh`] both backends share (its boxes and
//! its triangles, bit for bit), so the answers do not change.

use super::intersect::SoaTriangles;
use crate::bvh::Bvh;
use crate::types::{BvhChild, PackedTriangle};

/// Children per wide node and triangles per leaf block.
pub const WIDTH: usize = 8;

/// Marks an unused child slot.
pub const EMPTY: u32 = u32::MAX;

/// Eight children: boxes as structure of arrays, and what each child is.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct WideNode {
    /// Box minima, per axis and child (unused slots: an inverted box).
    pub lo: [[f32; WIDTH]; 3],
    /// Box maxima, per axis and child.
    pub hi: [[f32; WIDTH]; 3],
    /// Wide node index (interior), first leaf block (leaf), or [`EMPTY`].
    pub child: [u32; WIDTH],
    /// 0 for an interior child, else the number of leaf blocks.
    pub blocks: [u32; WIDTH],
}

impl Default for WideNode {
    fn default() -> Self {
        Self {
            lo: [[f32::MAX; WIDTH]; 3],
            hi: [[-f32::MAX; WIDTH]; 3],
            child: [EMPTY; WIDTH],
            blocks: [0; WIDTH],
        }
    }
}

/// Up to eight triangles of one leaf as structure of arrays, with their ids.
/// Unused lanes are degenerate and never hit.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeafBlock {
    /// The triangles.
    pub triangles: SoaTriangles<WIDTH>,
    /// Triangle ids in the caller's mesh.
    pub id: [u32; WIDTH],
}

/// A BVH in the CPU's wide layout. Node 0 is the root.
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    pub(crate) nodes: Vec<WideNode>,
    pub(crate) blocks: Vec<LeafBlock>,
    pub(crate) mesh_triangles: usize,
    /// The binary tree it was collapsed from, kept only by [`WideBvh::refittable`].
    pub(crate) binary: Option<std::sync::Arc<Bvh>>,
}

impl WideBvh {
    /// Collapses a binary BVH: each wide node takes the children of a binary node
    /// and keeps opening its largest interior child until it has eight; a subtree of
    /// at most [`WIDTH`] triangles becomes one leaf block (its triangles are
    /// contiguous), so blocks are full and nodes few.
    pub fn from_bvh(bvh: &Bvh) -> Self {
        let mut wide = WideBvh {
            mesh_triangles: bvh.mesh_triangle_count(),
            ..Default::default()
        };
        let ranges = bvh.subtree_ranges();
        let as_leaf = |c: &BvhChild| -> BvhChild {
            if c.is_leaf() || c.is_empty() {
                return *c;
            }
            let (first, end) = ranges[c.index as usize];
            if (end - first) as usize <= WIDTH {
                BvhChild {
                    index: first,
                    count: end - first,
                    ..*c
                }
            } else {
                *c
            }
        };
        let root: Vec<BvhChild> = bvh.nodes()[0]
            .children
            .iter()
            .filter(|c| !c.is_empty())
            .map(as_leaf)
            .collect();
        wide.collapse(bvh, root, &as_leaf);
        wide
    }

    /// Number of wide nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of node and leaf data.
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val(self.nodes.as_slice()) + std::mem::size_of_val(self.blocks.as_slice())
    }

    /// Triangles of the mesh the BVH was built from.
    pub fn mesh_triangle_count(&self) -> usize {
        self.mesh_triangles
    }

    /// Builds the wide node for these binary children; returns its index.
    fn collapse(
        &mut self,
        bvh: &Bvh,
        mut slots: Vec<BvhChild>,
        as_leaf: &impl Fn(&BvhChild) -> BvhChild,
    ) -> u32 {
        while slots.len() < WIDTH {
            let widest = slots
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.is_leaf())
                .max_by(|(_, a), (_, b)| half_area(a).total_cmp(&half_area(b)));
            let Some((i, _)) = widest else { break };
            let opened = slots.swap_remove(i);
            let children = bvh.nodes()[opened.index as usize].children;
            slots.extend(children.iter().filter(|c| !c.is_empty()).map(as_leaf));
        }
        let index = self.nodes.len();
        self.nodes.push(WideNode::default());
        let mut node = WideNode::default();
        for (lane, slot) in slots.iter().enumerate() {
            for axis in 0..3 {
                node.lo[axis][lane] = slot.lo[axis];
                node.hi[axis][lane] = slot.hi[axis];
            }
            if slot.is_leaf() {
                let first = slot.index as usize;
                let triangles = &bvh.triangles()[first..first + slot.count as usize];
                node.child[lane] = self.blocks.len() as u32;
                node.blocks[lane] = triangles.len().div_ceil(WIDTH) as u32;
                self.blocks.extend(triangles.chunks(WIDTH).map(leaf_block));
            } else {
                let grandchildren = bvh.nodes()[slot.index as usize].children;
                let children = grandchildren
                    .iter()
                    .filter(|c| !c.is_empty())
                    .map(as_leaf)
                    .collect();
                node.child[lane] = self.collapse(bvh, children, as_leaf);
            }
        }
        self.nodes[index] = node;
        index as u32
    }
}

fn half_area(c: &BvhChild) -> f32 {
    let d = c.hi - c.lo;
    d.x * d.y + d.y * d.z + d.z * d.x
}

fn leaf_block(triangles: &[PackedTriangle]) -> LeafBlock {
    let mut id = [0; WIDTH];
    for (slot, tri) in id.iter_mut().zip(triangles) {
        *slot = tri.id;
    }
    LeafBlock {
        triangles: SoaTriangles::new(triangles),
        id,
    }
}
