//! The CPU's own layout of a BVH: eight children per node in structure-of-arrays
//! form, so one vector instruction tests a ray against eight boxes, and leaf
//! triangles in blocks of eight, so one pass of the brute-force arithmetic tests a
//! whole leaf. Collapsed from the binary [`Bvh`] both backends share: its triangles
//! bit for bit, and its boxes quantized outward (8 bits per plane relative to each
//! node's box, half the memory per node) below the top of the tree
//! ([`EXACT_ABOVE`]), so every box still holds what the binary one holds and the
//! answers do not change.

use super::intersect::SoaTriangles;
use crate::bvh::Bvh;
use crate::types::{BvhChild, BvhNode, PackedTriangle};
use rayon::prelude::*;

/// Children per wide node and triangles per leaf block.
pub const WIDTH: usize = 8;

/// Marks an unused child slot.
pub const EMPTY: u32 = u32::MAX;

/// Eight children: boxes quantized to 8 bits per plane relative to the node's own
/// box (structure of arrays, so one vector instruction tests a ray against eight
/// boxes), and what each child is. 128 bytes: two cache lines where the children's
/// boxes as `f32` would take four.
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
/// `hi[0..3]`): a ray takes its near and far row on each axis by index
/// ([`PlaneRows`](super::wide_boxes::PlaneRows)), chosen once for its direction.
pub(super) type Rows<T> = [[T; WIDTH]; 6];

/// The six rows ([`Rows`]) that start `lo` bytes into `s`: its minima, and the
/// maxima that follow them.
///
/// # Safety
/// `S` is `repr(C)` and holds six initialised rows of `T` from byte `lo` on.
#[inline(always)]
unsafe fn rows_at<S, T>(s: &S, lo: usize) -> &Rows<T> {
    // SAFETY: the caller's promise; the pointer comes from the whole struct, so it
    // may cover both fields.
    unsafe { &*std::ptr::from_ref(s).cast::<u8>().add(lo).cast::<Rows<T>>() }
}

impl ExactBoxes {
    /// The planes as six rows ([`Rows`]).
    #[inline(always)]
    pub(super) fn rows(&self) -> &Rows<f32> {
        const _: () = assert!(std::mem::offset_of!(ExactBoxes, hi) == std::mem::offset_of!(ExactBoxes, lo) + size_of::<[[f32; WIDTH]; 3]>());
        // SAFETY: `repr(C)`, and `hi` directly follows `lo` (checked above).
        unsafe { rows_at(self, std::mem::offset_of!(ExactBoxes, lo)) }
    }
}

impl WideNode {
    /// The codes as six rows ([`Rows`]).
    #[inline(always)]
    pub(super) fn code_rows(&self) -> &Rows<u8> {
        const _: () = assert!(std::mem::offset_of!(WideNode, hi) == std::mem::offset_of!(WideNode, lo) + size_of::<[[u8; WIDTH]; 3]>());
        // SAFETY: `repr(C)`, and `hi` directly follows `lo` (checked above).
        unsafe { rows_at(self, std::mem::offset_of!(WideNode, lo)) }
    }

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
/// Unused lanes are degenerate and never hit. Their ids are kept apart
/// ([`WideBvh`]'s `block_ids`), read only for a hit: the traversal loads one line
/// fewer per block.
pub type LeafBlock = SoaTriangles<WIDTH>;

/// A BVH in the CPU's wide layout. Node 0 is the root. The nodes that keep exact
/// boxes come first: node `i` keeps `exact[i]` for every `i < exact.len()` (and
/// the root is one of them whenever any node is), so that a traversal finds a
/// node's exact boxes from its index alone and loads them alongside the node.
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    pub(crate) nodes: Vec<WideNode>,
    /// Exact boxes of the first `exact.len()` nodes: those above more than
    /// [`EXACT_ABOVE`] triangles, and those whose quantized boxes would not hold.
    pub(crate) exact: Vec<ExactBoxes>,
    pub(crate) blocks: Vec<LeafBlock>,
    /// The ids in the caller's mesh of each leaf block's triangles.
    pub(crate) block_ids: Vec<[u32; WIDTH]>,
    pub(crate) mesh_triangles: usize,
    /// The binary tree it was collapsed from, kept only by [`WideBvh::refittable`].
    pub(crate) binary: Option<std::sync::Arc<Bvh>>,
    /// Per axis, a bound on the size of every plane a ray's slab test can meet and
    /// of the terms that decode it ([`plane_reach`]); infinite or NaN when some
    /// plane is.
    pub(crate) reach: [f32; 3],
}

impl WideBvh {
    /// Collapses a binary BVH: each wide node takes the children of a binary node
    /// and keeps opening its largest interior child until it has eight; a subtree of
    /// at most [`WIDTH`] triangles becomes one leaf block (its triangles are
    /// contiguous), so blocks are full and nodes few.
    ///
    /// Nodes above more than [`EXACT_ABOVE`] triangles keep their boxes exactly.
    pub fn from_bvh(bvh: &Bvh) -> Self {
        Self::collapsed(bvh, EXACT_ABOVE)
    }

    /// [`WideBvh::from_bvh`], with exact boxes for nodes above more than
    /// `exact_above` triangles (and wherever quantized boxes cannot hold).
    pub(super) fn collapsed(bvh: &Bvh, exact_above: u32) -> Self {
        let mut tree = Collapse::into_blocks(bvh, exact_above).tree(bvh.triangles().len());
        tree.exact_first();
        WideBvh {
            reach: plane_reach(&tree.nodes, &tree.exact),
            nodes: tree.nodes,
            exact: tree.exact,
            blocks: tree.blocks,
            block_ids: tree.block_ids,
            mesh_triangles: bvh.mesh_triangle_count(),
            binary: None,
        }
    }

    /// The boxes of `node`'s children, decoded (unused slots decode to a point; their
    /// child is [`EMPTY`]).
    #[inline(always)]
    pub fn boxes(&self, node: &WideNode) -> ExactBoxes {
        decoded_boxes(node, &self.exact)
    }

    /// The box around everything in the BVH (the root's children's decoded boxes),
    /// or `None` when it is empty.
    pub fn bounds(&self) -> Option<(glam::Vec3, glam::Vec3)> {
        let root = self.nodes.first()?;
        let boxes = self.boxes(root);
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
            + std::mem::size_of_val(self.exact.as_slice())
            + std::mem::size_of_val(self.blocks.as_slice())
            + std::mem::size_of_val(self.block_ids.as_slice())
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

/// Per axis, a bound on the size of every plane the slab tests of `nodes` use and
/// of each term that decodes it: `|origin| + 255 · step` of every quantized node
/// with children, and every used slot's exact planes. A NaN makes the axis's reach
/// NaN for good, so that it never claims a finite bound it does not have.
pub(super) fn plane_reach(nodes: &[WideNode], exact: &[ExactBoxes]) -> [f32; 3] {
    let mut reach = [0.0f32; 3];
    let mut widen = |axis: usize, size: f32| {
        let current = &mut reach[axis];
        if !current.is_nan() && (size.is_nan() || size > *current) {
            *current = size;
        }
    };
    for node in nodes.iter().filter(|node| node.occupied != 0) {
        for axis in 0..3 {
            if node.exact == EMPTY {
                widen(axis, node.origin[axis].abs() + 255.0 * node.step[axis]);
                continue;
            }
            let boxes = &exact[node.exact as usize];
            for lane in (0..WIDTH).filter(|&lane| node.occupied & (1u8 << lane) != 0) {
                widen(axis, boxes.lo[axis][lane].abs());
                widen(axis, boxes.hi[axis][lane].abs());
            }
        }
    }
    reach
}

/// Leaf blocks packed per parallel task, at the least: enough to outweigh a task's
/// cost.
const BLOCKS_PER_TASK: usize = 1024;

/// Subtrees of more triangles than this are collapsed in parallel with their
/// siblings, each into a tree of its own that is then appended to its parent's:
/// enough work to outweigh a task and the append.
const PARALLEL_COLLAPSE: u32 = 1 << 15;

/// Nodes above more than this many triangles keep their boxes exactly (as
/// [`ExactBoxes`]), not quantized: the top of the tree, which nearly every ray
/// visits and finds in cache, then tests its boxes without decoding them, a
/// shorter chain of dependent steps per visit, which is what a pick waits on. The
/// nodes below, which rays reach from memory, stay quantized, at half the bytes.
pub const EXACT_ABOVE: u32 = 128;

/// The wide nodes, exact boxes and leaf blocks of a collapsed tree, in the order of
/// [`WideBvh`]: a node before its subtrees, subtrees and leaf blocks in lane order.
pub(super) struct Tree {
    pub(super) nodes: Vec<WideNode>,
    pub(super) exact: Vec<ExactBoxes>,
    pub(super) blocks: Vec<LeafBlock>,
    pub(super) block_ids: Vec<[u32; WIDTH]>,
    /// While the nodes are collapsed, each leaf block's triangles (first, count) in
    /// the binary tree's order: the blocks are packed afterwards, in parallel.
    block_triangles: Vec<(u32, u32)>,
}

/// Where the leaves of a collapsed tree go.
pub(super) enum Leaves<'a> {
    /// Into leaf blocks of `triangles`: a subtree of at most [`WIDTH`] triangles
    /// (`ranges`: each binary node's triangle range) becomes one leaf.
    Blocks {
        triangles: &'a [PackedTriangle],
        ranges: Vec<(u32, u32)>,
    },
    /// Nowhere: the binary tree's own leaves stay leaves, as their first triangle
    /// and triangle count in the binary tree's order.
    Ranges,
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
    /// Nodes above more than this many triangles keep exact boxes
    /// ([`EXACT_ABOVE`]; `u32::MAX` for none: [`Leaves::Ranges`] knows no
    /// subtree sizes).
    pub(super) exact_above: u32,
}

impl<'a> Collapse<'a> {
    /// The collapse of `bvh` into leaf blocks, with exact boxes for nodes above
    /// more than `exact_above` triangles, large subtrees in parallel.
    pub(super) fn into_blocks(bvh: &'a Bvh, exact_above: u32) -> Self {
        Collapse {
            nodes: bvh.nodes(),
            leaves: Leaves::Blocks {
                triangles: bvh.triangles(),
                ranges: bvh.subtree_ranges(),
            },
            parallel_above: PARALLEL_COLLAPSE,
            exact_above,
        }
    }

    /// The collapsed tree, its buffers sized for `triangles` triangles in leaf
    /// blocks (0 for [`Leaves::Ranges`], which makes none).
    pub(super) fn tree(&self, triangles: usize) -> Tree {
        let mut tree = Tree::with_capacity(triangles);
        if !self.nodes.is_empty() {
            self.collapse(&mut tree, self.children(0));
        }
        if let Leaves::Blocks { triangles, .. } = &self.leaves {
            // Packing reads every triangle and writes every block: memory-bound
            // work that two threads share well, unlike the walk over the nodes.
            let count = tree.block_triangles.len();
            tree.blocks = crate::bvh::memory::with_capacity(count);
            tree.block_ids = crate::bvh::memory::with_capacity(count);
            tree.block_triangles
                .par_iter()
                .with_min_len(BLOCKS_PER_TASK)
                .map(|&(first, count)| {
                    let triangles = &triangles[first as usize..][..count as usize];
                    let mut ids = [0; WIDTH];
                    for (id, tri) in ids.iter_mut().zip(triangles) {
                        *id = tri.id;
                    }
                    (SoaTriangles::new(triangles), ids)
                })
                .unzip_into_vecs(&mut tree.blocks, &mut tree.block_ids);
        }
        tree
    }

    /// A binary child, as a leaf when it is one or its subtree fits one block.
    fn as_leaf(&self, c: &BvhChild) -> BvhChild {
        let Leaves::Blocks { ranges, .. } = &self.leaves else {
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
    /// tree of its own, then appended in lane order: the same tree as a serial
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
                node.child[lane] = tree.append(subtree);
            } else {
                node.child[lane] = self.collapse(tree, self.children(slot.index));
            }
        }
        let triangles: u32 = slots.as_slice().iter().map(|slot| self.triangles(slot)).sum();
        tree.finish(index, node, slots.as_slice(), triangles > self.exact_above);
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
                let mut subtree = Tree::with_capacity(triangles);
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
            Leaves::Blocks { ranges, .. } => {
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
    /// five triangles to a block, seven blocks to a node), so that it seldom grows.
    fn with_capacity(triangles: usize) -> Self {
        let blocks = triangles / 5 + 1;
        Self {
            nodes: Vec::with_capacity(blocks / 7 + 1),
            exact: Vec::new(),
            blocks: Vec::new(),
            block_ids: Vec::new(),
            block_triangles: Vec::with_capacity(blocks),
        }
    }

    /// Appends `subtree` (collapsed apart, with leaf blocks), its indices moved past
    /// this tree's nodes, exact boxes and leaf blocks; returns the index of its
    /// root.
    fn append(&mut self, subtree: Tree) -> u32 {
        let (nodes, exact, blocks) = (self.nodes.len(), self.exact.len(), self.block_triangles.len());
        self.nodes.extend(subtree.nodes.into_iter().map(|mut node| {
            for (child, &count) in node.child.iter_mut().zip(&node.blocks) {
                if *child != EMPTY {
                    *child += if count > 0 { blocks } else { nodes } as u32;
                }
            }
            if node.exact != EMPTY {
                node.exact += exact as u32;
            }
            node
        }));
        self.exact.extend(subtree.exact);
        self.block_triangles.extend(subtree.block_triangles);
        nodes as u32
    }

    /// Renumbers the nodes so that those keeping exact boxes come first, in their
    /// order, with `exact[i]` the boxes of node `i` ([`WideBvh`]'s layout). The
    /// root, node 0 before and after, is made one of them whenever any node is,
    /// keeping its decoded boxes (which hold its children's). The other nodes keep
    /// their order too.
    fn exact_first(&mut self) {
        if self.exact.is_empty() {
            return;
        }
        if self.nodes[0].exact == EMPTY {
            let boxes = decoded_boxes(&self.nodes[0], &self.exact);
            self.nodes[0].exact = self.exact.len() as u32;
            self.exact.push(boxes);
        }
        let mut to = vec![0u32; self.nodes.len()];
        let (mut exact, mut other) = (0, self.exact.len() as u32);
        for (node, index) in self.nodes.iter().zip(&mut to) {
            let next = if node.exact == EMPTY { &mut other } else { &mut exact };
            *index = *next;
            *next += 1;
        }
        let mut boxes = vec![ExactBoxes::default(); self.exact.len()];
        let mut nodes = vec![WideNode::default(); self.nodes.len()];
        for (mut node, &index) in self.nodes.iter().copied().zip(&to) {
            for (child, &blocks) in node.child.iter_mut().zip(&node.blocks) {
                if blocks == 0 && *child != EMPTY {
                    *child = to[*child as usize];
                }
            }
            if node.exact != EMPTY {
                boxes[index as usize] = self.exact[node.exact as usize];
                node.exact = index;
            }
            nodes[index as usize] = node;
        }
        self.exact = boxes;
        self.nodes = nodes;
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

    /// Padded boxes of every triangle under a child slot.
    fn triangle_boxes(wide: &WideBvh, child: u32, blocks: u8, out: &mut Vec<(Vec3, Vec3)>) {
        if blocks > 0 {
            for block in &wide.blocks[child as usize..][..blocks as usize] {
                for lane in 0..WIDTH {
                    let v = block.triangle(lane).map(Vec3::from);
                    if v != [Vec3::ZERO; 3] {
                        out.push(vertices_box(v));
                    }
                }
            }
            return;
        }
        let node = &wide.nodes[child as usize];
        for lane in (0..WIDTH).filter(|&l| node.child[l] != EMPTY) {
            triangle_boxes(wide, node.child[lane], node.blocks[lane], out);
        }
    }

    /// Checks that every child's decoded box holds the padded box of every triangle
    /// below it; returns how many nodes keep exact boxes.
    fn check_boxes(mesh: &crate::Mesh) -> usize {
        // Every node quantized where it can be.
        let wide = WideBvh::collapsed(&Bvh::build(mesh), u32::MAX);
        let mut under = Vec::new();
        for node in &wide.nodes {
            let used = (0..WIDTH).filter(|&l| node.child[l] != EMPTY);
            assert_eq!(node.occupied, used.fold(0, |bits, l| bits | 1 << l));
            let boxes = wide.boxes(node);
            for lane in (0..WIDTH).filter(|&l| node.child[l] != EMPTY) {
                under.clear();
                triangle_boxes(&wide, node.child[lane], node.blocks[lane], &mut under);
                assert!(!under.is_empty());
                for &(lo, hi) in &under {
                    for axis in 0..3 {
                        assert!(
                            boxes.lo[axis][lane] <= lo[axis] && boxes.hi[axis][lane] >= hi[axis],
                            "axis {axis}: decoded [{}, {}] does not hold [{}, {}]",
                            boxes.lo[axis][lane],
                            boxes.hi[axis][lane],
                            lo[axis],
                            hi[axis]
                        );
                    }
                }
            }
        }
        wide.exact.len()
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
        let collapse = Collapse {
            // Every subtree of more than one leaf block in parallel: each node,
            // exact box and block of a subtree is appended to its parent's tree.
            parallel_above: WIDTH as u32,
            ..Collapse::into_blocks(&bvh, EXACT_ABOVE)
        };
        let parallel = collapse.tree(bvh.triangles().len());
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

    /// Asserts that the subtrees at node `a` of `before` and node `b` of `after`
    /// are the same tree: the same boxes (decoded or exact), slots and leaves,
    /// whatever their nodes' indices.
    fn same_subtree(before: &Tree, a: u32, after: &Tree, b: u32) {
        let (x, y) = (&before.nodes[a as usize], &after.nodes[b as usize]);
        assert_eq!((x.occupied, x.blocks), (y.occupied, y.blocks), "nodes {a} and {b}");
        let (bx, by) = (decoded_boxes(x, &before.exact), decoded_boxes(y, &after.exact));
        assert_eq!((bx.lo, bx.hi), (by.lo, by.hi), "nodes {a} and {b}");
        for lane in (0..WIDTH).filter(|&lane| x.child[lane] != EMPTY) {
            if x.blocks[lane] > 0 {
                assert_eq!(x.child[lane], y.child[lane]);
            } else {
                same_subtree(before, x.child[lane], after, y.child[lane]);
            }
        }
    }

    /// Asserts [`WideBvh`]'s layout: node `i` keeps `exact[i]` for `i <
    /// exact.len()`, the others keep none, and the root is among the first.
    fn assert_exact_first(nodes: &[WideNode], exact: &[ExactBoxes]) {
        for (i, node) in nodes.iter().enumerate() {
            let expected = if i < exact.len() { i as u32 } else { EMPTY };
            assert_eq!(node.exact, expected, "node {i} of {}", nodes.len());
        }
    }

    /// The collapsed tree of `bvh`, before its exact nodes are numbered first.
    fn collapsed_tree(bvh: &Bvh, exact_above: u32) -> Tree {
        Collapse::into_blocks(bvh, exact_above).tree(bvh.triangles().len())
    }

    /// Numbering the exact nodes first moves nodes, never changes the tree: on a
    /// tree whose top and whose nodes near the limits of f32 keep exact boxes, and
    /// on one where only a node deep below a quantized root does (the root then
    /// keeps its decoded boxes as exact ones).
    #[test]
    fn exact_nodes_come_first_in_the_same_tree() {
        let mut rng = Rng::new(19);
        let near_max = (Vec3::splat(3.0e38), Vec3::splat(f32::MAX));
        let scene = fixtures::builtin_scene(5_000);
        let mixed = Bvh::build(&kit::mesh(fixtures::concat(&[
            scene.clone(),
            fixtures::soup(100, &mut rng, near_max),
        ])));
        let top = collapsed_tree(&mixed, EXACT_ABOVE);
        let mut deep = collapsed_tree(&Bvh::build(&kit::mesh(scene)), u32::MAX);
        assert!(deep.exact.is_empty());
        let last = deep.nodes.len() - 1;
        deep.exact.push(decoded_boxes(&deep.nodes[last], &[]));
        deep.nodes[last].exact = 0;
        for (before, added) in [(top, 0), (deep, 1)] {
            let mut after = Tree {
                nodes: before.nodes.clone(),
                exact: before.exact.clone(),
                blocks: Vec::new(),
                block_ids: Vec::new(),
                block_triangles: Vec::new(),
            };
            after.exact_first();
            assert_exact_first(&after.nodes, &after.exact);
            assert_eq!(after.nodes.len(), before.nodes.len());
            assert_eq!(after.exact.len(), before.exact.len() + added);
            assert!(after.exact.len() > 1);
            same_subtree(&before, 0, &after, 0);
        }
        let wide = WideBvh::from_bvh(&mixed);
        assert_exact_first(&wide.nodes, &wide.exact);
    }

    /// Nodes above more than [`EXACT_ABOVE`] triangles keep exact boxes and the
    /// rest stay quantized, and the tree answers as the one quantized throughout.
    #[test]
    fn the_top_of_the_tree_keeps_exact_boxes() {
        let mut rng = Rng::new(17);
        let scene = fixtures::builtin_scene(20_000);
        let adversarial = fixtures::adversarial_rays(&scene, &mut rng, 1000);
        let mesh = kit::mesh(scene);
        let bvh = Bvh::build(&mesh);
        let wide = WideBvh::from_bvh(&bvh);
        let quantized = WideBvh::collapsed(&bvh, u32::MAX);
        assert!(quantized.exact.is_empty());
        let mut under = Vec::new();
        let mut exact = 0;
        for node in &wide.nodes {
            under.clear();
            for lane in (0..WIDTH).filter(|&l| node.child[l] != EMPTY) {
                triangle_boxes(&wide, node.child[lane], node.blocks[lane], &mut under);
            }
            let top = under.len() > EXACT_ABOVE as usize;
            assert_eq!(node.exact != EMPTY, top, "{} triangles below", under.len());
            exact += usize::from(top);
        }
        assert!(exact > 20 && exact < wide.nodes.len() / 2, "{exact} of {}", wide.nodes.len());
        let bounds = mesh.bounds().expect("a finite mesh");
        let mut rays = kit::rays(fixtures::random_rays(3000, &mut rng, bounds));
        rays.extend(kit::rays(fixtures::camera_rays(bounds, 40, 30)));
        rays.extend(kit::rays(adversarial));
        let cpu = crate::cpu::CpuBackend::with_threads(1).expect("a 1-thread pool");
        let options = crate::TraceOptions::default();
        let expected = cpu.trace(&CpuMesh::Bvh(quantized), &rays, &options);
        assert!(expected.iter().filter(|h| h.is_hit()).count() > rays.len() / 10);
        assert_eq!(cpu.trace(&CpuMesh::Bvh(wide), &rays, &options), expected);
    }
}
