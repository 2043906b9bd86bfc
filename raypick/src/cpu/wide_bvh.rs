//! The CPU's own layout of a BVH: eight children per node in structure-of-arrays
//! form, so one vector instruction tests a ray against eight boxes, and leaf
//! triangles in blocks of eight, so one pass of the brute-force arithmetic tests a
//! whole leaf. Collapsed from the binary [`Bvh`] both backends share: its triangles
//! and its boxes bit for bit ([`ExactNode`]), so the answers do not change.
//! [`WideBvh::build`] collapses the same binary tree as the builder leaves it,
//! before the finishing copies that a [`Bvh`] needs and the collapse does not.
//!
//! The same collapse makes the GPU's eight-wide nodes ([`WideNode`], in
//! [`WideNodes`](super::wide_nodes::WideNodes)), whose boxes it quantizes outward
//! to 8 bits per plane, so every box still holds what the binary one holds.

use std::borrow::Cow;
use std::mem::MaybeUninit;

use super::intersect::{SoaTriangles, box_margins};
use super::wide_traverse::prefetch_lines;
use crate::bvh::Bvh;
use crate::bvh::build::LeafOrder;
use crate::types::{BvhChild, BvhNode, PackedTriangle};
use rayon::prelude::*;

/// Children per wide node and triangles per leaf block.
pub const WIDTH: usize = 8;

/// Marks an unused child slot.
pub const EMPTY: u32 = u32::MAX;

/// Eight children as the GPU's wide layout keeps them: boxes quantized to 8 bits
/// per plane relative to the node's own box (structure of arrays), and what each
/// child is. 128 bytes: two cache lines where the children's boxes as `f32` would
/// take four.
///
/// A child's box is `origin + q * step` per plane, computed in `f32` as written; the
/// step is a power of two, so `q * step` is exact, and the codes are chosen so that
/// the decoded box contains the child's box (minima rounded down, maxima up). Box
/// tests on the decoded boxes are therefore as conservative as on the boxes
/// themselves. A node whose boxes this cannot hold (coordinates near `f32`'s
/// limits) keeps them exactly, as [`ExactBoxes`] beside the nodes, at index `exact`.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct WideNode {
    /// Minimum corner of the node's box.
    pub origin: [f32; 3],
    /// Quantization step per axis (a power of two).
    pub step: [f32; 3],
    /// Box minima in steps from `origin`, per axis and child (rounded down).
    pub lo: [[u8; WIDTH]; 3],
    /// Box maxima in steps from `origin`, per axis and child (rounded up).
    pub hi: [[u8; WIDTH]; 3],
    /// Wide node index (interior), first leaf block (leaf), or [`EMPTY`]; in the
    /// GPU's layout ([`WideNodes`](super::wide_nodes::WideNodes)) a leaf's first
    /// triangle.
    pub child: [u32; WIDTH],
    /// 0 for an interior child, else the number of leaf blocks (at most 32); in the
    /// GPU's layout the leaf's triangle count.
    pub blocks: [u8; WIDTH],
    /// Index of the node's [`ExactBoxes`] beside the nodes, or [`EMPTY`] when the
    /// quantized boxes hold.
    pub exact: u32,
    /// The used slots, bit per lane (those whose child is not [`EMPTY`]).
    pub occupied: u8,
}

impl Default for WideNode {
    fn default() -> Self {
        Self {
            origin: [0.0; 3],
            step: [1.0; 3],
            lo: [[0; WIDTH]; 3],
            hi: [[0; WIDTH]; 3],
            child: [EMPTY; WIDTH],
            blocks: [0; WIDTH],
            exact: EMPTY,
            occupied: 0,
        }
    }
}

const _: () = assert!(size_of::<WideNode>() == 128);

/// The children's boxes of a node as `f32`, per axis and child (unused slots: an
/// inverted box).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct ExactBoxes {
    /// Box minima.
    pub lo: [[f32; WIDTH]; 3],
    /// Box maxima.
    pub hi: [[f32; WIDTH]; 3],
}

impl Default for ExactBoxes {
    fn default() -> Self {
        Self {
            lo: [[f32::MAX; WIDTH]; 3],
            hi: [[-f32::MAX; WIDTH]; 3],
        }
    }
}

/// The six rows of a node's planes, minima then maxima per axis (`lo[0..3]`, then
/// `hi[0..3]`): a ray takes its near and far row on each axis by its offset
/// ([`PlaneRows`](super::wide_boxes::PlaneRows)), chosen once for its direction.
pub(super) type Rows = [[f32; WIDTH]; 6];

impl ExactBoxes {
    /// The planes as six rows ([`Rows`]).
    #[inline(always)]
    pub(super) fn rows(&self) -> &Rows {
        const _: () = assert!(std::mem::offset_of!(ExactBoxes, lo) == 0);
        const _: () = assert!(std::mem::offset_of!(ExactBoxes, hi) == size_of::<[[f32; WIDTH]; 3]>());
        const _: () = assert!(size_of::<ExactBoxes>() == size_of::<Rows>());
        // SAFETY: `repr(C)`, `lo` at the start and `hi` directly after it (checked
        // above): the struct is six rows of `f32`, and the pointer covers it whole.
        unsafe { &*std::ptr::from_ref(self).cast::<Rows>() }
    }
}

impl WideNode {
    /// The decoded box plane `q` on `axis`.
    #[inline(always)]
    pub fn decode(&self, axis: usize, q: u8) -> f32 {
        self.origin[axis] + q as f32 * self.step[axis]
    }

    /// The largest code that decodes to at most `x`, if any.
    fn code_below(&self, axis: usize, x: f32) -> Option<u8> {
        let guess = ((x - self.origin[axis]) / self.step[axis]).clamp(0.0, 255.0) as u8;
        let fits = |q: u8| self.decode(axis, q) <= x;
        let below = (0..=guess).rev().find(|&q| fits(q))?;
        Some(
            (below..=255)
                .take_while(|&q| fits(q))
                .last()
                .unwrap_or(below),
        )
    }

    /// The smallest code that decodes to at least `x`, if any.
    fn code_above(&self, axis: usize, x: f32) -> Option<u8> {
        let guess = ((x - self.origin[axis]) / self.step[axis]).clamp(0.0, 255.0) as u8;
        let fits = |q: u8| self.decode(axis, q) >= x;
        let above = (guess..=255).find(|&q| fits(q))?;
        Some(
            (0..=above)
                .rev()
                .take_while(|&q| fits(q))
                .last()
                .unwrap_or(above),
        )
    }

    /// Quantizes `boxes` (`count` children) into this node; returns `false` (and
    /// leaves the codes meaningless) when some decoded box would not contain its
    /// child's.
    fn quantize(&mut self, boxes: &ExactBoxes, count: usize) -> bool {
        for axis in 0..3 {
            let lo = boxes.lo[axis][..count]
                .iter()
                .fold(f32::INFINITY, |a, &b| a.min(b));
            let hi = boxes.hi[axis][..count]
                .iter()
                .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            self.origin[axis] = lo;
            self.step[axis] = step_for(lo, hi);
            for lane in 0..count {
                let (Some(ql), Some(qh)) = (
                    self.code_below(axis, boxes.lo[axis][lane]),
                    self.code_above(axis, boxes.hi[axis][lane]),
                ) else {
                    return false;
                };
                self.lo[axis][lane] = ql;
                self.hi[axis][lane] = qh;
            }
        }
        true
    }
}

/// The smallest power of two (at least `f32::MIN_POSITIVE`, at most 2^127) whose 255
/// steps from `lo` reach `hi`, or 2^127.
fn step_for(lo: f32, hi: f32) -> f32 {
    let mut step = f32::MIN_POSITIVE;
    let wanted = (hi - lo) / 255.0;
    if wanted.is_finite() && wanted > step {
        step = f32::from_bits((wanted.to_bits() + 0x007f_ffff) & 0xff80_0000);
    }
    while step < 1.7014118e38 && lo + 255.0 * step < hi {
        step *= 2.0;
    }
    step
}

/// Up to eight triangles of one leaf as structure of arrays: five cache lines.
/// Unused lanes are degenerate and never hit. Their ids are kept apart (a
/// `BlockLookup` beside each block), read only for a hit: the traversal loads one
/// line fewer per block.
pub type LeafBlock = SoaTriangles<WIDTH>;

/// What the hits of a leaf block look up once its test accepts a lane: its
/// triangles' ids in the caller's mesh, and the margins by which their boxes
/// are padded ([`box_margins`](super::intersect::box_margins)). One cache line,
/// apart from the triangles that every test of the block reads.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
pub(crate) struct BlockLookup {
    /// The triangles' ids in the caller's mesh, a lane each.
    pub(crate) ids: [u32; WIDTH],
    /// The triangles' box margins, a lane each.
    pub(crate) margins: [f32; WIDTH],
}

const _: () = assert!(size_of::<BlockLookup>() == 64);

impl BlockLookup {
    /// The lookup of `block`, whose triangles' ids are `ids`.
    fn new(block: &LeafBlock, ids: [u32; WIDTH]) -> Self {
        Self {
            ids,
            margins: box_margins(block),
        }
    }
}

/// Eight children with their boxes as `f32` planes, the binary tree's own
/// (structure of arrays, so one vector instruction tests a ray against eight boxes;
/// unused slots hold an inverted box), and what each child is: the CPU's node, 256
/// bytes, four cache lines. A visit loads the planes and tests them, with nothing
/// to decode on the chain of dependent steps from one node to the next, which is
/// what a lone ray's walk waits on.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct ExactNode {
    /// The children's boxes.
    pub boxes: ExactBoxes,
    /// Wide node index (interior), first leaf block (leaf), or [`EMPTY`].
    pub child: [u32; WIDTH],
    /// 0 for an interior child, else the number of leaf blocks (at most 32).
    pub blocks: [u8; WIDTH],
    /// The used slots, bit per lane (those whose child is not [`EMPTY`]).
    pub occupied: u8,
}

const _: () = assert!(size_of::<ExactNode>() == 256);

impl ExactNode {
    /// The node `node` of a collapsed tree: its exact boxes in `exact` where it
    /// keeps them, else its decoded ones.
    fn new(node: &WideNode, exact: &[ExactBoxes]) -> Self {
        Self {
            boxes: decoded_boxes(node, exact),
            child: node.child,
            blocks: node.blocks,
            occupied: node.occupied,
        }
    }
}

/// A BVH in the CPU's wide layout. Node 0 is the root.
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    pub(crate) nodes: Vec<ExactNode>,
    pub(crate) blocks: Vec<LeafBlock>,
    /// Beside each leaf block, what its accepted hits look up.
    pub(crate) lookups: Vec<BlockLookup>,
    pub(crate) mesh_triangles: usize,
    /// The binary tree it was collapsed from, kept only by [`WideBvh::refittable`].
    pub(crate) binary: Option<std::sync::Arc<Bvh>>,
    /// Per axis, a bound on the size of every plane a ray's slab test can meet
    /// ([`plane_reach`]); infinite or NaN when some plane is.
    pub(crate) reach: [f32; 3],
}

impl WideBvh {
    /// Collapses a binary BVH: each wide node takes the children of a binary node
    /// and keeps opening its largest interior child until it has eight; a subtree of
    /// at most [`WIDTH`] triangles becomes one leaf block (its triangles are
    /// contiguous), so blocks are full and nodes few.
    pub fn from_bvh(bvh: &Bvh) -> Self {
        let collapsed = Collapse::into_blocks(bvh).collapsed(bvh.triangles().len()).exact_nodes();
        Self::packed(collapsed, &LeafTriangles::Ordered(bvh.triangles()), bvh.mesh_triangle_count())
    }

    /// Builds the BVH of `mesh` (default options) in this layout: the tree of
    /// `from_bvh(&Bvh::build(mesh))` (the same nodes and blocks, a block's
    /// triangles perhaps in another order), collapsed from the binary tree as the
    /// builder leaves it, without the copy that closes the gaps in its node array
    /// or the one that gathers its triangles into leaf order. The binary tree is
    /// split only down to runs of [`WIDTH`] triangles, each of which the collapse
    /// makes one block whatever its shape below.
    pub fn build(mesh: &crate::Mesh) -> Self {
        let bottom = crate::bvh::build::Bottom::Blocks(WIDTH);
        let built = crate::bvh::build::build_tree(mesh, &Default::default(), bottom);
        // The build's boxes go before the collapse and its binary nodes before the
        // packing, so that the wide tree and its blocks reuse their memory.
        let (nodes, ranges, order) = built.into_leaf_order();
        let collapsed = Collapse::into_blocks_of(&nodes, &ranges).collapsed(order.len()).exact_nodes();
        drop((nodes, ranges));
        Self::packed(collapsed, &LeafTriangles::Built(&order), mesh.triangle_count())
    }

    /// The tree of a collapse's exact nodes and its leaf blocks' triangles
    /// ([`Tree::exact_nodes`]), its blocks packed from `triangles`.
    fn packed(
        (nodes, block_triangles): (Vec<ExactNode>, Vec<(u32, u32)>),
        triangles: &LeafTriangles,
        mesh_triangles: usize,
    ) -> Self {
        let (blocks, lookups) = triangles.packed_blocks(&block_triangles);
        WideBvh {
            reach: plane_reach(&nodes),
            nodes,
            blocks,
            lookups,
            mesh_triangles,
            binary: None,
        }
    }

    /// The box around everything in the BVH (the root's children's boxes), or
    /// `None` when it is empty.
    pub fn bounds(&self) -> Option<(glam::Vec3, glam::Vec3)> {
        let root = self.nodes.first()?;
        let boxes = &root.boxes;
        let (mut lo, mut hi) = (glam::Vec3::INFINITY, glam::Vec3::NEG_INFINITY);
        for lane in (0..WIDTH).filter(|&l| root.child[l] != EMPTY) {
            for axis in 0..3 {
                lo[axis] = lo[axis].min(boxes.lo[axis][lane]);
                hi[axis] = hi[axis].max(boxes.hi[axis][lane]);
            }
        }
        (lo.x <= hi.x).then_some((lo, hi))
    }

    /// Number of wide nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes of node and leaf data.
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val(self.nodes.as_slice())
            + std::mem::size_of_val(self.blocks.as_slice())
            + std::mem::size_of_val(self.lookups.as_slice())
    }

    /// Triangles of the mesh the BVH was built from.
    pub fn mesh_triangle_count(&self) -> usize {
        self.mesh_triangles
    }
}

/// The boxes of `node`'s children: its exact ones in `exact` where it keeps them,
/// else decoded from its codes (unused slots decode to a point).
#[inline(always)]
pub(super) fn decoded_boxes(node: &WideNode, exact: &[ExactBoxes]) -> ExactBoxes {
    if node.exact != EMPTY {
        return exact[node.exact as usize];
    }
    let mut boxes = ExactBoxes::default();
    for axis in 0..3 {
        for lane in 0..WIDTH {
            boxes.lo[axis][lane] = node.decode(axis, node.lo[axis][lane]);
            boxes.hi[axis][lane] = node.decode(axis, node.hi[axis][lane]);
        }
    }
    boxes
}

/// Per axis, a bound on the size of every plane the slab tests of `nodes` use: the
/// largest magnitude of a used slot's planes. A NaN makes the axis's reach NaN for
/// good, so that it never claims a finite bound it does not have.
pub(super) fn plane_reach(nodes: &[ExactNode]) -> [f32; 3] {
    let wider_each = |a: [f32; 3], b: [f32; 3]| std::array::from_fn(|axis| wider(a[axis], b[axis]));
    nodes
        .par_chunks(REACH_CHUNK)
        .map(|chunk| {
            let mut reach = [0.0f32; 3];
            for node in chunk {
                for (axis, reach) in reach.iter_mut().enumerate() {
                    let boxes = &node.boxes;
                    for lane in (0..WIDTH).filter(|&lane| node.occupied & (1u8 << lane) != 0) {
                        *reach = wider(*reach, boxes.lo[axis][lane].abs());
                        *reach = wider(*reach, boxes.hi[axis][lane].abs());
                    }
                }
            }
            reach
        })
        .reduce(|| [0.0; 3], wider_each)
}

/// Nodes per task of [`plane_reach`].
const REACH_CHUNK: usize = 8 * 1024;

/// The larger of a reach so far and a size, a NaN in either for good (the first
/// one met): so the reach of a whole is that of its parts, in order.
fn wider(reach: f32, size: f32) -> f32 {
    if !reach.is_nan() && (size.is_nan() || size > reach) { size } else { reach }
}

/// Leaf blocks packed per parallel task, at the least: enough to outweigh a task's
/// cost.
const BLOCKS_PER_TASK: usize = 1024;

/// How many leaf blocks ahead of the one it packs a task asks for the triangles
/// it will read: enough for the reads to arrive in time, on the 1M-triangle
/// dragon a fifth less time packing than without.
const PREFETCH_AHEAD: usize = 4;

/// Subtrees of more triangles than this are collapsed in parallel with their
/// siblings, each into a tree of its own that its parent's splices in: enough
/// work to outweigh a task.
const PARALLEL_COLLAPSE: u32 = 1 << 15;

/// Marks a child index that stands for a spliced subtree ([`Tree::splice`]):
/// the rest of the bits are the splice's place in its tree's list. Far above any
/// node index (a tree has fewer nodes than triangles), and [`EMPTY`] is checked
/// first.
const SPLICED: u32 = 1 << 31;

/// The wide nodes, exact boxes and leaf blocks of a collapsed tree: a node before
/// its subtrees, subtrees and leaf blocks in lane order.
pub(super) struct Tree {
    pub(super) nodes: Vec<WideNode>,
    pub(super) exact: Vec<ExactBoxes>,
    /// Each leaf block's triangles (first, count) in the binary tree's order: the
    /// blocks are packed after the collapse, in parallel
    /// ([`LeafTriangles::packed_blocks`]).
    pub(super) block_triangles: Vec<(u32, u32)>,
    /// Subtrees collapsed apart, in lane order, each to go where this tree's
    /// arrays ended when it was spliced in ([`Tree::flattened`]).
    splices: Vec<Splice>,
}

/// A subtree spliced into a tree: where it goes among the tree's own nodes,
/// exact boxes and leaf blocks (before the one at each of these indices), and
/// the subtree.
struct Splice {
    at: Lengths,
    /// What the subtree holds, its own splices included ([`Tree::total`]).
    size: Lengths,
    /// What the tree's splices before this one hold.
    before: Lengths,
    tree: Tree,
}

impl Splice {
    /// What the tree's splices up to this one (itself included) hold.
    fn through(&self) -> Lengths {
        self.before + self.size
    }
}

/// Counts of nodes, exact boxes and leaf blocks.
#[derive(Clone, Copy, Default)]
struct Lengths {
    nodes: usize,
    exact: usize,
    blocks: usize,
}

impl std::ops::Add for Lengths {
    type Output = Lengths;

    fn add(self, other: Lengths) -> Lengths {
        Lengths {
            nodes: self.nodes + other.nodes,
            exact: self.exact + other.exact,
            blocks: self.blocks + other.blocks,
        }
    }
}

/// Where every item of a tree with spliced subtrees lands once it is flattened:
/// a [`Placement`] for the tree and each subtree spliced into it however deep,
/// and the runs of each one's own items, in the order they land.
struct Layout<'t> {
    plans: Vec<Placement<'t>>,
    runs: Vec<Run>,
    total: Lengths,
}

/// Where the own items of one tree of a [`Layout`] land.
struct Placement<'t> {
    tree: &'t Tree,
    /// Where the tree's first item of each array lands.
    base: Lengths,
}

/// A run of a tree's own items that land together: from its own item `from` on,
/// in `plans[plan]`, at `at` of the flattened arrays (per array).
#[derive(Clone, Copy)]
struct Run {
    plan: usize,
    from: Lengths,
    at: Lengths,
}

/// Items per task when a [`Layout`] gathers an array.
const GATHER_CHUNK: usize = 1024;

impl<'t> Layout<'t> {
    /// The layout of `tree` and everything spliced into it.
    fn of(tree: &'t Tree) -> Self {
        let mut layout = Layout {
            plans: Vec::new(),
            runs: Vec::new(),
            total: tree.total(),
        };
        layout.place(tree, Lengths::default());
        layout
    }

    /// Lays out `tree`, whose first items land at `base`, and its splices: the
    /// own items before a splice land after `base` and everything spliced in
    /// before them, and so does the splice.
    fn place(&mut self, tree: &'t Tree, base: Lengths) {
        let plan = self.plans.len();
        self.plans.push(Placement { tree, base });
        let mut from = Lengths::default();
        for splice in &tree.splices {
            self.runs.push(Run {
                plan,
                from,
                at: base + from + splice.before,
            });
            self.place(&splice.tree, base + splice.at + splice.before);
            from = splice.at;
        }
        self.runs.push(Run {
            plan,
            from,
            at: base + from + tree.spliced(),
        });
    }

    /// The flattened array that `field` picks, each item made by `item` from its
    /// tree's placement and its index among that tree's own items, in parallel.
    fn gather<T: Send>(
        &self,
        field: fn(&Lengths) -> usize,
        item: impl Fn(&Placement<'t>, usize) -> T + Sync + Send,
    ) -> Vec<T> {
        let total = field(&self.total);
        let mut out = crate::bvh::memory::with_capacity(total);
        (0..total)
            .into_par_iter()
            .with_min_len(GATHER_CHUNK)
            .map(|i| {
                // The last run that starts at or before `i` holds it: runs before
                // it that start there too are empty.
                let run = &self.runs[self.runs.partition_point(|run| field(&run.at) <= i) - 1];
                item(&self.plans[run.plan], field(&run.from) + i - field(&run.at))
            })
            .collect_into_vec(&mut out);
        out
    }
}

impl Placement<'_> {
    /// Where the tree's own item `index` of the array `field` picks lands: after
    /// the splices made before that item was.
    fn place(&self, index: u32, field: fn(&Lengths) -> usize) -> u32 {
        let index = index as usize;
        let splices = &self.tree.splices;
        let k = splices.partition_point(|splice| field(&splice.at) <= index);
        let shift = k.checked_sub(1).map_or(0, |last| field(&splices[last].through()));
        (field(&self.base) + index + shift) as u32
    }

    /// One of the tree's own nodes with every index moved to where it lands.
    fn moved(&self, node: &WideNode) -> WideNode {
        let mut node = *node;
        for (child, &count) in node.child.iter_mut().zip(&node.blocks) {
            if *child == EMPTY {
                continue;
            }
            *child = if count > 0 {
                self.place(*child, |l| l.blocks)
            } else if *child & SPLICED != 0 {
                // A spliced subtree's root is its first node: after this tree's own
                // nodes and the subtrees spliced in before it.
                let splice = &self.tree.splices[(*child & !SPLICED) as usize];
                (self.base.nodes + splice.at.nodes + splice.before.nodes) as u32
            } else {
                self.place(*child, |l| l.nodes)
            };
        }
        if node.exact != EMPTY {
            node.exact = self.place(node.exact, |l| l.exact);
        }
        node
    }
}

/// Where the leaves of a collapsed tree go.
pub(super) enum Leaves<'a> {
    /// Into leaf blocks, packed afterwards ([`LeafTriangles::packed_blocks`]): a
    /// subtree of at most [`WIDTH`] triangles (`ranges`: each binary node's
    /// triangle range) becomes one leaf.
    Blocks { ranges: Cow<'a, [(u32, u32)]> },
    /// Nowhere: the binary tree's own leaves stay leaves, as their first triangle
    /// and triangle count in the binary tree's order.
    Ranges,
}

/// The triangles of a binary tree's leaves.
pub(super) enum LeafTriangles<'a> {
    /// In leaf order (a [`Bvh`]'s).
    Ordered(&'a [PackedTriangle]),
    /// Packed from the mesh as they are read, in a built tree's leaf order.
    Built(&'a LeafOrder<'a>),
}

impl LeafTriangles<'_> {
    /// Asks the cache for the mesh's vertex indices of the `count` triangles from
    /// leaf position `first` on, where they lie apart ([`LeafTriangles::Built`]:
    /// read in an order the hardware's prefetcher cannot guess); a hint only, and
    /// none off x86-64.
    #[inline(always)]
    fn prefetch(&self, first: u32, count: u32) {
        if let LeafTriangles::Built(order) = self {
            for k in 0..count as usize {
                prefetch_lines::<1>(order.leaf_indices(first as usize + k).cast());
            }
        }
    }

    /// The triangle at leaf position `k`.
    #[inline(always)]
    fn triangle(&self, k: usize) -> PackedTriangle {
        match self {
            LeafTriangles::Ordered(triangles) => triangles[k],
            LeafTriangles::Built(order) => order.leaf_triangle(k),
        }
    }

    /// Writes the leaf block of the `count` triangles from leaf position `first`
    /// on into `slot` and returns their lookup: each triangle packed straight into
    /// its lane of the block where it stays, the other lanes left zero.
    fn pack(&self, first: u32, count: u32, slot: &mut MaybeUninit<LeafBlock>) -> BlockLookup {
        debug_assert!(count as usize <= WIDTH, "a leaf block holds at most {WIDTH} triangles");
        let block = slot.write(LeafBlock::default());
        let mut ids = [0; WIDTH];
        for (lane, id) in ids.iter_mut().enumerate().take(count as usize) {
            let triangle = self.triangle(first as usize + lane);
            block.set_lane(lane, &triangle);
            *id = triangle.id;
        }
        BlockLookup::new(block, ids)
    }

    /// The leaf blocks of these triangles that a flattened tree's
    /// `block_triangles` name, and their lookups.
    pub(super) fn packed_blocks(&self, block_triangles: &[(u32, u32)]) -> (Vec<LeafBlock>, Vec<BlockLookup>) {
        // Packing reads every triangle and writes every block: memory-bound work
        // that two threads share well, unlike the walk over the nodes. Each block
        // and lookup is written where it stays, not made and then moved there.
        let count = block_triangles.len();
        let mut blocks: Vec<LeafBlock> = crate::bvh::memory::with_capacity(count);
        let mut lookups: Vec<BlockLookup> = crate::bvh::memory::with_capacity(count);
        blocks.spare_capacity_mut()[..count]
            .par_iter_mut()
            .zip(&mut lookups.spare_capacity_mut()[..count])
            .enumerate()
            .with_min_len(BLOCKS_PER_TASK)
            .for_each(|(k, (block, lookup))| {
                if let Some(&(first, count)) = block_triangles.get(k + PREFETCH_AHEAD) {
                    self.prefetch(first, count);
                }
                let (first, count) = block_triangles[k];
                lookup.write(self.pack(first, count, block));
            });
        // SAFETY: the loop above wrote each of the first `count` elements of both.
        unsafe {
            blocks.set_len(count);
            lookups.set_len(count);
        }
        (blocks, lookups)
    }
}

/// A binary BVH's nodes being collapsed eight-wide.
pub(super) struct Collapse<'a> {
    pub(super) nodes: &'a [BvhNode],
    pub(super) leaves: Leaves<'a>,
    /// Subtrees of more triangles than this are collapsed in parallel
    /// ([`PARALLEL_COLLAPSE`]; in tests, also none or nearly all; only leaf blocks
    /// tell how many triangles a subtree holds, so [`Leaves::Ranges`] collapses
    /// serially).
    pub(super) parallel_above: u32,
    /// Whether every node keeps its boxes exactly (the CPU's [`ExactNode`]s), or
    /// only those whose quantized boxes would not hold them (the GPU's).
    pub(super) exact: bool,
}

impl<'a> Collapse<'a> {
    /// The collapse of `bvh` into leaf blocks, every node with exact boxes, large
    /// subtrees in parallel.
    pub(super) fn into_blocks(bvh: &'a Bvh) -> Self {
        Collapse {
            nodes: bvh.nodes(),
            leaves: Leaves::Blocks {
                ranges: Cow::Owned(bvh.subtree_ranges()),
            },
            parallel_above: PARALLEL_COLLAPSE,
            exact: true,
        }
    }

    /// The collapse into leaf blocks, like [`Collapse::into_blocks`], of a tree's
    /// interior `nodes` and their triangle `ranges` as the builder left them
    /// ([`BuiltTree::into_leaf_order`](crate::bvh::build::BuiltTree::into_leaf_order)).
    pub(super) fn into_blocks_of(nodes: &'a [BvhNode], ranges: &'a [(u32, u32)]) -> Self {
        Collapse {
            nodes,
            leaves: Leaves::Blocks {
                ranges: Cow::Borrowed(ranges),
            },
            parallel_above: PARALLEL_COLLAPSE,
            exact: true,
        }
    }

    /// The collapsed tree, its buffers sized for `triangles` triangles in leaf
    /// blocks (0 for [`Leaves::Ranges`], which makes none), flattened; its leaf
    /// blocks' triangles are [`Tree::block_triangles`].
    pub(super) fn tree(&self, triangles: usize) -> Tree {
        self.collapsed(triangles).flattened()
    }

    /// The collapsed tree as the collapse leaves it: subtrees collapsed in
    /// parallel spliced in, not yet in place, and no leaf block packed.
    fn collapsed(&self, triangles: usize) -> Tree {
        let mut tree = Tree::with_capacity(triangles, self.exact);
        if !self.nodes.is_empty() {
            self.collapse(&mut tree, self.children(0));
        }
        tree
    }

    /// A binary child, as a leaf when it is one or its subtree fits one block.
    fn as_leaf(&self, c: &BvhChild) -> BvhChild {
        let Leaves::Blocks { ranges } = &self.leaves else {
            return *c;
        };
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
    }

    /// The slots of a wide node over these binary children: opens the largest
    /// interior child until there are eight.
    fn open(&self, mut slots: Slots) -> Slots {
        while slots.len < WIDTH {
            let widest = slots
                .as_slice()
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.is_leaf())
                .max_by(|(_, a), (_, b)| half_area(a).total_cmp(&half_area(b)));
            let Some((i, _)) = widest else { break };
            let opened = slots.swap_remove(i);
            for child in self.children(opened.index).as_slice() {
                slots.push(*child);
            }
        }
        slots
    }

    /// The children of binary node `node`, as slots.
    fn children(&self, node: u32) -> Slots {
        let mut slots = Slots::default();
        for child in &self.nodes[node as usize].children {
            if !child.is_empty() {
                slots.push(self.as_leaf(child));
            }
        }
        slots
    }

    /// Collapses the subtree of these binary children into `tree`; returns the
    /// index of its wide node. Interior children of more than
    /// [`Collapse::parallel_above`] triangles are collapsed in parallel, each into a
    /// tree of its own, then spliced in in lane order: the same tree as a serial
    /// collapse.
    fn collapse(&self, tree: &mut Tree, slots: Slots) -> u32 {
        let slots = self.open(slots);
        let mut subtrees = self.large_subtrees(&slots);
        let index = tree.nodes.len();
        tree.nodes.push(WideNode::default());
        let mut node = WideNode::default();
        for (lane, slot) in slots.as_slice().iter().enumerate() {
            if slot.is_leaf() {
                self.leaf(tree, slot, &mut node, lane);
            } else if let Some(subtree) = subtrees.get_mut(lane).and_then(Option::take) {
                node.child[lane] = tree.splice(subtree);
            } else {
                node.child[lane] = self.collapse(tree, self.children(slot.index));
            }
        }
        tree.finish(index, node, slots.as_slice(), self.exact);
        index as u32
    }

    /// The trees of the interior slots of more than [`Collapse::parallel_above`]
    /// triangles, collapsed in parallel (`None` for the other slots).
    fn large_subtrees(&self, slots: &Slots) -> Vec<Option<Tree>> {
        let triangles = |slot: &BvhChild| {
            Some(self.triangles(slot) as usize)
                .filter(|&n| !slot.is_leaf() && n > self.parallel_above as usize)
        };
        if !slots.as_slice().iter().any(|slot| triangles(slot).is_some()) {
            return Vec::new();
        }
        slots
            .as_slice()
            .par_iter()
            .map(|slot| {
                let triangles = triangles(slot)?;
                let mut subtree = Tree::with_capacity(triangles, self.exact);
                self.collapse(&mut subtree, self.children(slot.index));
                Some(subtree)
            })
            .collect()
    }

    /// Triangles under a slot; 0 for [`Leaves::Ranges`], which knows only its
    /// leaves' counts.
    fn triangles(&self, slot: &BvhChild) -> u32 {
        match &self.leaves {
            Leaves::Blocks { .. } if slot.is_leaf() => slot.count,
            Leaves::Blocks { ranges } => {
                let (first, end) = ranges[slot.index as usize];
                end - first
            }
            Leaves::Ranges => 0,
        }
    }

    /// Makes a leaf slot `node`'s child `lane`: its triangles as leaf blocks of
    /// `tree` (packed by [`Collapse::tree`]), or its triangle range as it is.
    fn leaf(&self, tree: &mut Tree, slot: &BvhChild, node: &mut WideNode, lane: usize) {
        if let Leaves::Ranges = self.leaves {
            node.child[lane] = slot.index;
            node.blocks[lane] = slot.count as u8; // leaves hold at most 255
            return;
        }
        let (first, end) = (slot.index, slot.index + slot.count);
        node.child[lane] = tree.block_triangles.len() as u32;
        node.blocks[lane] = slot.count.div_ceil(WIDTH as u32) as u8;
        let starts = (first..end).step_by(WIDTH);
        tree.block_triangles.extend(starts.map(|start| (start, (end - start).min(WIDTH as u32))));
    }
}

/// The slots of one wide node while it is opened: at most [`WIDTH`] plus the two
/// children of the slot last opened.
#[derive(Clone, Copy)]
struct Slots {
    items: [BvhChild; WIDTH + 1],
    len: usize,
}

impl Default for Slots {
    fn default() -> Self {
        Self {
            items: [bytemuck::Zeroable::zeroed(); WIDTH + 1],
            len: 0,
        }
    }
}

impl Slots {
    fn as_slice(&self) -> &[BvhChild] {
        &self.items[..self.len]
    }

    fn push(&mut self, child: BvhChild) {
        self.items[self.len] = child;
        self.len += 1;
    }

    fn swap_remove(&mut self, i: usize) -> BvhChild {
        let removed = self.items[i];
        self.len -= 1;
        self.items[i] = self.items[self.len];
        removed
    }
}

impl Tree {
    /// An empty tree with room for `triangles` triangles in typical leaves (some
    /// five triangles to a block, three blocks to a node), and for every node's
    /// exact boxes when the collapse keeps them all (`exact`), so that it seldom
    /// grows.
    fn with_capacity(triangles: usize, exact: bool) -> Self {
        let blocks = triangles / 5 + 1;
        let nodes = blocks / 3 + 1;
        Self {
            nodes: Vec::with_capacity(nodes),
            exact: Vec::with_capacity(if exact { nodes } else { 0 }),
            block_triangles: Vec::with_capacity(blocks),
            splices: Vec::new(),
        }
    }

    /// The counts of this tree's own nodes, exact boxes and leaf blocks.
    fn own(&self) -> Lengths {
        Lengths {
            nodes: self.nodes.len(),
            exact: self.exact.len(),
            blocks: self.block_triangles.len(),
        }
    }

    /// Splices in `subtree` (collapsed apart) after everything this tree holds so
    /// far, as a serial collapse would have put it there; returns the index that
    /// stands for its root until the tree is [`flattened`](Tree::flattened).
    /// Nothing is copied until then, and then everything once, however deeply
    /// subtrees were spliced into subtrees.
    fn splice(&mut self, subtree: Tree) -> u32 {
        let splice = Splice {
            at: self.own(),
            size: subtree.total(),
            before: self.spliced(),
            tree: subtree,
        };
        self.splices.push(splice);
        SPLICED | (self.splices.len() - 1) as u32
    }

    /// What the subtrees spliced in so far hold.
    fn spliced(&self) -> Lengths {
        self.splices.last().map(Splice::through).unwrap_or_default()
    }

    /// Nodes, exact boxes and leaf blocks, with those of every spliced subtree.
    fn total(&self) -> Lengths {
        self.own() + self.spliced()
    }

    /// This tree with every spliced subtree in its place and every index final:
    /// the tree a serial collapse makes.
    fn flattened(self) -> Tree {
        if self.splices.is_empty() {
            return self;
        }
        let layout = Layout::of(&self);
        Tree {
            nodes: layout.gather(|l| l.nodes, |plan, k| plan.moved(&plan.tree.nodes[k])),
            exact: layout.gather(|l| l.exact, |plan, k| plan.tree.exact[k]),
            block_triangles: layout.gather(|l| l.blocks, |plan, k| plan.tree.block_triangles[k]),
            splices: Vec::new(),
        }
    }

    /// The nodes of this tree, flattened, with their exact boxes ([`ExactNode`]),
    /// and its leaf blocks' triangles: made in place from the spliced subtrees, in
    /// one parallel pass, rather than flattened and then converted.
    fn exact_nodes(&self) -> (Vec<ExactNode>, Vec<(u32, u32)>) {
        let layout = Layout::of(self);
        let nodes = layout.gather(
            |l| l.nodes,
            |plan, k| {
                let node = &plan.tree.nodes[k];
                ExactNode {
                    child: plan.moved(node).child,
                    ..ExactNode::new(node, &plan.tree.exact)
                }
            },
        );
        let block_triangles = layout.gather(|l| l.blocks, |plan, k| plan.tree.block_triangles[k]);
        (nodes, block_triangles)
    }

    /// Quantizes `node`'s boxes (those of `slots`), or keeps them exactly when
    /// `exact` or when quantized boxes cannot hold them, and stores it at `index`.
    fn finish(&mut self, index: usize, mut node: WideNode, slots: &[BvhChild], exact: bool) {
        node.occupied = (1u32 << slots.len()).wrapping_sub(1) as u8;
        let mut boxes = ExactBoxes::default();
        for (lane, slot) in slots.iter().enumerate() {
            for axis in 0..3 {
                boxes.lo[axis][lane] = slot.lo[axis];
                boxes.hi[axis][lane] = slot.hi[axis];
            }
        }
        if exact || !node.quantize(&boxes, slots.len()) {
            node.exact = self.exact.len() as u32;
            self.exact.push(boxes);
        }
        self.nodes[index] = node;
    }
}

fn half_area(c: &BvhChild) -> f32 {
    let d = c.hi - c.lo;
    d.x * d.y + d.y * d.z + d.z * d.x
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;
    use crate::bvh::vertices_box;
    use crate::cpu::CpuMesh;
    use crate::kit::{self, Rng, fixtures};
    use crate::{Accel, Ray};

    /// Padded boxes of every triangle under a child slot of `nodes` (leaves in
    /// `blocks`).
    fn triangle_boxes(nodes: &[ExactNode], blocks: &[LeafBlock], child: u32, count: u8, out: &mut Vec<(Vec3, Vec3)>) {
        if count > 0 {
            for block in &blocks[child as usize..][..count as usize] {
                for lane in 0..WIDTH {
                    let v = block.triangle(lane).map(Vec3::from);
                    if v != [Vec3::ZERO; 3] {
                        out.push(vertices_box(v));
                    }
                }
            }
            return;
        }
        let node = &nodes[child as usize];
        for lane in (0..WIDTH).filter(|&l| node.child[l] != EMPTY) {
            triangle_boxes(nodes, blocks, node.child[lane], node.blocks[lane], out);
        }
    }

    /// Checks that every child's box in `nodes` holds the padded box of every
    /// triangle below it, and that unused slots are marked so.
    fn check_nodes(nodes: &[ExactNode], blocks: &[LeafBlock]) {
        let mut under = Vec::new();
        for node in nodes {
            let used = (0..WIDTH).filter(|&l| node.child[l] != EMPTY);
            assert_eq!(node.occupied, used.fold(0, |bits, l| bits | 1 << l));
            let boxes = &node.boxes;
            for lane in (0..WIDTH).filter(|&l| node.child[l] != EMPTY) {
                under.clear();
                triangle_boxes(nodes, blocks, node.child[lane], node.blocks[lane], &mut under);
                assert!(!under.is_empty());
                for &(lo, hi) in &under {
                    for axis in 0..3 {
                        assert!(
                            boxes.lo[axis][lane] <= lo[axis] && boxes.hi[axis][lane] >= hi[axis],
                            "axis {axis}: [{}, {}] does not hold [{}, {}]",
                            boxes.lo[axis][lane],
                            boxes.hi[axis][lane],
                            lo[axis],
                            hi[axis]
                        );
                    }
                }
            }
        }
    }

    /// Checks that every child's box holds the padded box of every triangle below
    /// it, in the CPU's tree (the binary boxes) and in the same tree quantized
    /// where it can be (the GPU's boxes, decoded); returns how many nodes of the
    /// quantized tree keep exact boxes.
    fn check_boxes(mesh: &crate::Mesh) -> usize {
        let bvh = Bvh::build(mesh);
        let wide = WideBvh::from_bvh(&bvh);
        check_nodes(&wide.nodes, &wide.blocks);
        let quantized = Collapse {
            exact: false,
            ..Collapse::into_blocks(&bvh)
        }
        .tree(bvh.triangles().len());
        let decoded: Vec<ExactNode> = quantized.nodes.iter().map(|node| ExactNode::new(node, &quantized.exact)).collect();
        let (blocks, _) = LeafTriangles::Ordered(bvh.triangles()).packed_blocks(&quantized.block_triangles);
        check_nodes(&decoded, &blocks);
        quantized.exact.len()
    }

    #[test]
    fn decoded_boxes_hold_their_triangles_at_every_scale() {
        let mut rng = Rng::new(11);
        for (centre, size) in [
            (0.0, 1.0),
            (1e6, 1e-3),
            (-3e4, 1e4),
            (1e-30, 1e-30),
            (1e20, 1e25),
        ] {
            let bounds = (Vec3::splat(centre - size), Vec3::splat(centre + size));
            let mesh = kit::mesh(fixtures::soup(3000, &mut rng, bounds));
            assert_eq!(check_boxes(&mesh), 0, "centre {centre}, size {size}");
        }
    }

    /// The collapse that takes large subtrees in parallel builds the serial
    /// collapse's tree: the same nodes in the same order, the same exact boxes and
    /// leaf blocks.
    #[test]
    fn parallel_collapse_builds_the_serial_tree() {
        // Nodes near the limits of f32 keep exact boxes (see the next test).
        let mut rng = Rng::new(13);
        let near_max = (Vec3::splat(3.0e38), Vec3::splat(f32::MAX));
        let mesh = kit::mesh(fixtures::concat(&[
            fixtures::builtin_scene(20_000),
            fixtures::soup(300, &mut rng, near_max),
            fixtures::soup(300, &mut rng, (-near_max.1, -near_max.0)),
        ]));
        let bvh = Bvh::build(&mesh);
        // Quantized where they hold (the GPU's boxes) and exact throughout (the
        // CPU's).
        for exact in [false, true] {
            let collapse = Collapse {
                // Every subtree of more than one leaf block in parallel: each node,
                // exact box and block of a subtree is spliced into its parent's tree,
                // and subtrees into subtrees.
                parallel_above: WIDTH as u32,
                exact,
                ..Collapse::into_blocks(&bvh)
            };
            let parallel = collapse.tree(bvh.triangles().len());
            let (nodes, block_triangles) = collapse.collapsed(bvh.triangles().len()).exact_nodes();
            let serial = Collapse {
                parallel_above: u32::MAX,
                ..collapse
            }
            .tree(bvh.triangles().len());
            let fields = |n: &WideNode| (n.origin, n.step, n.lo, n.hi, n.child, n.blocks, n.exact, n.occupied);
            let fields = |tree: &Tree| tree.nodes.iter().map(fields).collect::<Vec<_>>();
            assert_eq!(fields(&parallel), fields(&serial));
            let planes = |tree: &Tree| tree.exact.iter().map(|e| (e.lo, e.hi)).collect::<Vec<_>>();
            assert!(!serial.exact.is_empty());
            assert_eq!(planes(&parallel), planes(&serial));
            assert_eq!(parallel.block_triangles, serial.block_triangles);
            // Laid out straight into exact nodes, the spliced tree is the serial
            // tree's nodes converted one by one.
            let converted: Vec<ExactNode> = serial.nodes.iter().map(|node| ExactNode::new(node, &serial.exact)).collect();
            let fields = |n: &ExactNode| (n.boxes.lo, n.boxes.hi, n.child, n.blocks, n.occupied);
            assert_eq!(nodes.iter().map(fields).collect::<Vec<_>>(), converted.iter().map(fields).collect::<Vec<_>>());
            assert_eq!(block_triangles, serial.block_triangles);
        }
    }

    /// Building straight into the wide layout gives the tree collapsed from the
    /// finished binary BVH, node for node and block for block, each block holding
    /// the same triangles with the same ids (in an order of its own where the
    /// binary tree sorted a run of up to eight further, which the direct build
    /// leaves unsplit): for no triangle, one, degenerate ones among others, a mesh
    /// built serially and ones large enough for parallel builds (gaps in the node
    /// array) and Morton subtrees.
    #[test]
    fn direct_build_is_the_collapsed_bvh() {
        let mut rng = Rng::new(14);
        let unit = (Vec3::splat(-1.0), Vec3::splat(1.0));
        let one = [[Vec3::ZERO, Vec3::X, Vec3::Y]];
        let degenerate: Vec<[Vec3; 3]> = (0..50)
            .map(|i| {
                let p = Vec3::splat(i as f32 * 0.01);
                [p, p, Vec3::ONE]
            })
            .collect();
        let with_degenerate = fixtures::concat(&[
            fixtures::soup(500, &mut rng, unit),
            raypick_testkit::raypick::Mesh::from_triangles(&degenerate),
        ]);
        for mesh in [
            raypick_testkit::raypick::Mesh::default(),
            raypick_testkit::raypick::Mesh::from_triangles(&one),
            with_degenerate,
            fixtures::soup(3000, &mut rng, unit),
            fixtures::builtin_scene(60_000),
            fixtures::builtin_scene(crate::bvh::build::MORTON_MIN_TRIANGLES + 5_000),
        ] {
            let mesh = kit::mesh(mesh);
            let direct = WideBvh::build(&mesh);
            let collapsed = WideBvh::from_bvh(&Bvh::build(&mesh));
            let nodes = |w: &WideBvh| {
                w.nodes.iter().map(|n| (n.boxes.lo, n.boxes.hi, n.child, n.blocks, n.occupied)).collect::<Vec<_>>()
            };
            // Each block's lanes as (id, vertices, edge norm and margin), by id.
            let blocks = |w: &WideBvh| {
                let lanes = |(block, lookup): (&LeafBlock, &BlockLookup)| {
                    let mut lanes: Vec<_> = (0..WIDTH)
                        .map(|lane| {
                            let bits = [block.edge_norm[lane], lookup.margins[lane]].map(f32::to_bits);
                            (lookup.ids[lane], block.triangle(lane), bits)
                        })
                        .collect();
                    lanes.sort_by_key(|&(id, ..)| id);
                    lanes
                };
                w.blocks.iter().zip(&w.lookups).map(lanes).collect::<Vec<_>>()
            };
            let triangles = mesh.triangle_count();
            assert_eq!(nodes(&direct), nodes(&collapsed), "{triangles} triangles");
            assert_eq!(blocks(&direct), blocks(&collapsed), "{triangles} triangles");
            assert_eq!(direct.mesh_triangles, collapsed.mesh_triangles);
            assert_eq!(direct.reach.map(f32::to_bits), collapsed.reach.map(f32::to_bits));
        }
    }

    #[test]
    fn boxes_near_the_limits_of_f32_are_kept_exactly() {
        // Padding these boxes overflows to infinity. An infinite maximum is
        // reached by the largest step, but from an origin at -infinity every code
        // decodes to -infinity: such nodes keep exact boxes, and the rest still
        // hold.
        let mut rng = Rng::new(12);
        let near_max = (Vec3::splat(3.0e38), Vec3::splat(f32::MAX));
        let mesh = kit::mesh(fixtures::concat(&[
            fixtures::soup(200, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0))),
            fixtures::soup(200, &mut rng, near_max),
            fixtures::soup(200, &mut rng, (-near_max.1, -near_max.0)),
        ]));
        assert!(check_boxes(&mesh) > 0);
        // Rays at every triangle from near it: through exact and quantized nodes
        // alike, the BVH gives brute force's answers.
        let cpu = crate::cpu::CpuBackend::with_threads(1).expect("a 1-thread pool");
        let brute = CpuMesh::with_accel(&mesh, Accel::Brute);
        let bvh = CpuMesh::with_accel(&mesh, Accel::Bvh);
        let rays: Vec<Ray> = mesh
            .triangles()
            .map(|[a, b, c]| {
                let aim = (a.as_dvec3() + b.as_dvec3() + c.as_dvec3()) / 3.0;
                let origin = aim - aim.signum() * (aim.abs() * 1e-3 + 10.0);
                Ray::new(origin.as_vec3(), (aim - origin).as_vec3())
            })
            .collect();
        let options = crate::TraceOptions::default();
        let expected = cpu.trace(&brute, &rays, &options);
        let hits = expected.iter().filter(|h| h.is_hit()).count();
        assert!(hits > 150, "{hits} hits");
        assert_eq!(cpu.trace(&bvh, &rays, &options), expected);
    }

    /// The reach of many nodes, gathered in parallel chunks, is a serial sweep's,
    /// bit for bit: the largest magnitude of each axis's used planes, unused lanes
    /// ignored, infinity kept, and the first NaN met kept for good.
    #[test]
    fn plane_reach_is_the_largest_used_plane() {
        let mut rng = Rng::new(23);
        let serial = |nodes: &[ExactNode]| {
            let mut reach = [0.0f32; 3];
            for node in nodes {
                for (axis, reach) in reach.iter_mut().enumerate() {
                    for lane in (0..WIDTH).filter(|&lane| node.occupied & (1u8 << lane) != 0) {
                        for plane in [node.boxes.lo[axis][lane], node.boxes.hi[axis][lane]] {
                            if !reach.is_nan() && (plane.abs().is_nan() || plane.abs() > *reach) {
                                *reach = plane.abs();
                            }
                        }
                    }
                }
            }
            reach
        };
        for case in 0..4 {
            let mut nodes: Vec<ExactNode> = (0..3 * REACH_CHUNK + 17)
                .map(|_| {
                    let mut boxes = ExactBoxes::default();
                    for axis in 0..3 {
                        for lane in 0..WIDTH {
                            boxes.lo[axis][lane] = rng.range(-100.0, 100.0);
                            boxes.hi[axis][lane] = rng.range(-100.0, 100.0);
                        }
                    }
                    let occupied = rng.next_u32() as u8 | 1;
                    ExactNode { boxes, child: [EMPTY; WIDTH], blocks: [0; WIDTH], occupied }
                })
                .collect();
            match case {
                1 => {
                    nodes[5].occupied &= !2;
                    nodes[5].boxes.hi[0][1] = 1e30;
                }
                2 => {
                    nodes[REACH_CHUNK + 3].boxes.lo[1][0] = f32::from_bits(0xffc0_0001);
                    nodes[2 * REACH_CHUNK + 5].boxes.hi[1][0] = f32::from_bits(0x7fc0_0002);
                }
                3 => nodes[2 * REACH_CHUNK].boxes.lo[2][0] = f32::NEG_INFINITY,
                _ => {}
            }
            let reach = plane_reach(&nodes);
            assert_eq!(reach.map(f32::to_bits), serial(&nodes).map(f32::to_bits), "case {case}");
            match case {
                1 => assert!(reach[0] <= 100.0),
                2 => assert_eq!(reach[1].to_bits(), 0x7fc0_0001),
                3 => assert_eq!(reach[2], f32::INFINITY),
                _ => {}
            }
        }
    }
}
