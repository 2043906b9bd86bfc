//! Traversal of the CPU's wide BVH ([`WideBvh`]): eight boxes per vector test,
//! the nearest entered child visited next and the others pushed farthest first
//! (and prefetched), leaves tested eight triangles at a time with the brute-force
//! arithmetic, on the same vector lanes as the boxes.
//!
//! Same answers as [`super::bvh_traverse`] (the mirror of the WGSL traversal) and as
//! brute force: the boxes are the binary BVH's, the box test enters every
//! box that test would with its margin
//! ([`BOX_MARGIN`](super::intersect::BOX_MARGIN); module `wide_boxes`), and a hit
//! replaces the best one when nearer or equally near with a lower triangle id.
//!
//! Generic over what is kept ([`Collect`]), like [`super::bvh_traverse`]: the
//! nearest hit ([`trace_rays`]), any hit ([`occluded_rays`]) or the sorted list of
//! the nearest hits ([`collect_rays`]). [`trace_rays`] sends groups of rays that
//! share an origin through the packet traversal (module `packet_traverse`), which
//! shares each node's fetch among them and gives the same answers.

use super::brute_force::offer_accepted;
use super::bvh_traverse::Tally;
use super::bvh_walk::pop_until;
use super::hit_list::HitList;
use super::interleaved_walks::{INTERLEAVED, interleave};
use super::intersect::{
    BoxFrame, RayFrame, is_valid_ray_on, lanes, padded_below_lanes, padded_beyond,
};
use super::moller_trumbore::moller_trumbore_block;
use super::packet_traverse::{PACKET, PacketStack, trace_packet};
use super::query::{AnyHit, Closest, Collect};
use super::simd::simd_dispatch;
use super::vector::Lanes8;
use super::watertight::watertight_block;
use super::wide_boxes::{Limit, SlabTest, Slabs};
use super::wide_bvh::{ExactNode, LeafBlock, WIDTH, WideBvh};
use crate::bvh::MAX_DEPTH;
use crate::options::{Cull, Mode, TraceOptions};
use crate::types::{Hit, MISS, Ray};

/// Room for one walk's pending children: at most `WIDTH - 1` per level above the
/// node visited (a tree at most `MAX_DEPTH` deep), and the whole row of lanes a
/// node's visit writes on top ([`Stack::push`]).
const STACK: usize = MAX_DEPTH * (WIDTH - 1) + WIDTH;

/// The pending children of one walk, the top at `depth - 1` (the walk keeps the
/// depth): each one's wide node index or first leaf block, its leaf block count
/// (0 for a node) and its entry distance, padded down as [`beyond`](super::intersect::beyond) pads it (so
/// a pop compares it with the bound as it is). A row per field, so that a node's visit
/// writes all its children with one vector store per field. One per walk of a
/// batch of rays, so that it is not initialised again for every ray (its entries
/// are written before they are read).
pub(super) struct Stack {
    child: [u32; STACK],
    blocks: [u32; STACK],
    entry: [f32; STACK],
}

impl Default for Stack {
    fn default() -> Self {
        Self {
            child: [0; STACK],
            blocks: [0; STACK],
            entry: [0.0; STACK],
        }
    }
}

impl Stack {
    /// The row of lanes from `at` (a walk's depth) of each field, where a node's
    /// visit writes its children.
    #[inline(always)]
    fn row_from(&mut self, at: usize) -> (&mut [u32; WIDTH], &mut [u32; WIDTH], &mut [f32; WIDTH]) {
        let (Some(child), Some(blocks), Some(entry)) = (
            self.child[at..].first_chunk_mut::<WIDTH>(),
            self.blocks[at..].first_chunk_mut::<WIDTH>(),
            self.entry[at..].first_chunk_mut::<WIDTH>(),
        ) else {
            unreachable!("a walk's stack holds a row of lanes above its deepest node's pending children")
        };
        (child, blocks, entry)
    }

    /// Pushes the children of `node` that the ray enters (`entered`, bit per lane)
    /// at their entry distances `near`, the farthest at the bottom and the nearest
    /// on top ([`Lanes8::push_order`]): a node's lanes are written whole, in that
    /// order, and the depth moves past the entered ones, so no branch depends on
    /// how many were entered or in which order.
    #[inline(always)]
    fn push<L: Lanes8>(&mut self, depth: &mut usize, node: &ExactNode, entered: u32, near: L::V) {
        self.push_in_order::<L>(depth, node, entered, near, L::push_order(near, entered));
    }

    /// [`Stack::push`] with the push order of `near` and `entered` made already.
    #[inline(always)]
    fn push_in_order<L: Lanes8>(&mut self, depth: &mut usize, node: &ExactNode, entered: u32, near: L::V, order: L::U) {
        let at = *depth;
        let (child, blocks, entry) = self.row_from(at);
        *child = L::store_u32(L::permute_u32(L::load_u32(&node.child), order));
        *blocks = L::store_u32(L::permute_u32(L::load_u8(&node.blocks), order));
        *entry = L::store(L::permute(padded_below_lanes::<L>(near), order));
        *depth = at + entered.count_ones() as usize;
    }

    /// Pushes the children of `node` that the ray enters (`entered`, bit per lane)
    /// at their entry distances `near` but the nearest (the lowest lane among
    /// equals), which it returns, farthest at the bottom; `None` when the ray
    /// enters none. Branches on the count and order of the entered children,
    /// which a lone walk waits on less than on the sort of [`Stack::push`]: one
    /// child, the most common case, goes straight to the next visit, and two or
    /// three are ordered by a few comparisons. Four or more have too many orders
    /// for a predictor to learn, and a search for each pushed child's place
    /// mispredicts its way through them: they are sorted without a branch, as
    /// [`Stack::push`] sorts them (entries that differ only in
    /// [`push_key`](super::vector::push_key)'s lane bits ordered by lane), and the
    /// top dropped, while the nearest, the same child, is found by a branch per
    /// child, which a hot pick's walk follows without waiting for the distances.
    /// The children pushed are asked of the memory system ([`prefetch`]): on a
    /// large mesh their loads are what the walk would wait on when it pops them,
    /// and in a pick whose nodes are cached the requests cost only a few
    /// instructions.
    #[inline(always)]
    fn push_but_nearest<L: Lanes8>(
        &mut self,
        wide: &WideBvh,
        depth: &mut usize,
        node: &ExactNode,
        entered: u32,
        near: L::V,
    ) -> Option<(u32, u32)> {
        if entered == 0 {
            return None;
        }
        let pending = |lane: usize| (node.child[lane], u32::from(node.blocks[lane]));
        let nearest = entered.trailing_zeros() as usize;
        let rest = entered & (entered - 1);
        if rest == 0 {
            return Some(pending(nearest));
        }
        // The distances as they are, for the sort of four or more.
        let near_lanes = near;
        // The entries padded on the lanes at once, as the stack keeps them, and
        // ordered by them: padding never reverses two distances' order.
        let near = L::store(padded_below_lanes::<L>(near));
        // The node's pushes land in the row of lanes above the depth, where an
        // index needs no check against the stack's end.
        let base = *depth;
        let (child, blocks, entry) = self.row_from(base);
        // Puts the child of `lane` in the row's `slot` and asks for its node or block.
        let mut push_at = |slot: usize, lane: usize| {
            let pushed_child = pending(lane);
            prefetch(wide, pushed_child.0, pushed_child.1);
            (child[slot], blocks[slot]) = pushed_child;
            entry[slot] = near[lane];
        };
        // Two or three children, the next most common cases, are ordered by
        // branches on their distances, each kept a branch ([`keep_branch`]): a hot
        // pick's walk goes on along the predicted order instead of waiting for the
        // distances. Equally near children are visited in their lanes' order.
        let second = rest.trailing_zeros() as usize;
        let third = rest & (rest - 1);
        if third == 0 {
            *depth = base + 1;
            if near[second] < near[nearest] {
                keep_branch();
                push_at(0, nearest);
                return Some(pending(second));
            }
            push_at(0, second);
            return Some(pending(nearest));
        }
        if third & (third - 1) == 0 {
            // Nearest to farthest: `p`, `q`, `r`; the farther two pushed, `r` below.
            let (mut p, mut q, mut r) = (nearest, second, third.trailing_zeros() as usize);
            if near[q] < near[p] {
                keep_branch();
                (p, q) = (q, p);
            }
            if near[r] < near[q] {
                keep_branch();
                (q, r) = (r, q);
                if near[q] < near[p] {
                    keep_branch();
                    (p, q) = (q, p);
                }
            }
            push_at(0, r);
            push_at(1, q);
            *depth = base + 2;
            return Some(pending(p));
        }
        // Four or more: each asked for without a branch on whether it is a leaf;
        // the nearest found by kept branches on the sort's keys (all distinct),
        // so that it is the top the sort then leaves, which is dropped.
        for lane in lanes(entered) {
            let (child, blocks) = pending(lane);
            prefetch_either(wide, child, blocks);
        }
        let keys = L::push_keys(near_lanes, entered);
        let key = L::store_u32(keys);
        let mut top = nearest;
        for lane in lanes(rest) {
            if key[lane] < key[top] {
                keep_branch();
                top = lane;
            }
        }
        self.push_in_order::<L>(depth, node, entered, near_lanes, L::key_order(keys));
        *depth -= 1;
        Some(pending(top))
    }

    /// Pops the nearest pending child that a hit at `bound` leaves worth visiting
    /// (dropping the others on the way, [`beyond`](super::intersect::beyond) it): its node or first block and
    /// its block count; `None` once none is left.
    #[inline(always)]
    fn pop(&self, depth: &mut usize, bound: f32) -> Option<(u32, u32)> {
        // The walk leaves `depth` at the entry it takes.
        pop_until(&self.entry, depth, |&entry| !padded_beyond(entry, bound))?;
        Some((self.child[*depth], self.blocks[*depth]))
    }
}

/// Offers the hits of one ray to `collect` until it says stop, telling `tally`
/// its work; an invalid ray ([`is_valid_ray`](crate::prepare::is_valid_ray)) has none. `stack` is scratch space.
#[inline(always)]
fn traverse<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    collect: &mut impl Collect,
    stack: &mut Stack,
    tally: &mut impl Tally,
) {
    if Walk::<L>::walks(wide, ray) {
        let mut walk = Walk::<L>::new(wide, ray, collect.bound());
        // A loop for each slab test, the test a constant in each: the walk makes
        // no choice of test at its nodes.
        match walk.test() {
            SlabTest::Forward => while walk.step::<WATERTIGHT, false>(SlabTest::Forward, wide, cull, collect, stack, tally) {},
            SlabTest::Folded => while walk.step::<WATERTIGHT, false>(SlabTest::Folded, wide, cull, collect, stack, tally) {},
            SlabTest::Plain => while walk.step::<WATERTIGHT, false>(SlabTest::Plain, wide, cull, collect, stack, tally) {},
        }
    }
}

/// One ray's walk through the tree, a step at a time ([`Walk::step`]): the ray,
/// its frames, and the depth of its stack of pending children (kept by the
/// caller).
///
/// A step pops the nearest pending child that can still change the answer and
/// visits it: a leaf is tested, a node's boxes are tested and the children
/// entered pushed, the nearest on top. The planes a ray meets first and last on
/// each axis are picked by their offsets, chosen once per ray ([`Slabs::new`]), so a
/// visit makes no choice on the ray's signs.
pub(super) struct Walk<L: Lanes8> {
    ray: Ray,
    boxes: BoxFrame,
    slabs: Slabs<L>,
    /// The triangle tests' part of the frame: for a new walk made at the first
    /// leaf, so that a pick that reaches none (past the mesh, through a gap) never
    /// works it out; a restarted one ([`Walk::restart`]) makes it at once.
    frame: Option<RayFrame>,
    /// The box tests' limit for the collector's bound, made again after each leaf
    /// (the one place the bound changes) rather than at every node.
    limit: Limit<L>,
    /// The child visited next: its node or first leaf block, and its block count
    /// (0 for a node).
    top: (u32, u32),
    /// Pending children on the stack.
    depth: usize,
}

impl<L: Lanes8> Walk<L> {
    /// Whether `ray` has a walk through `wide`: not for an empty tree or an
    /// invalid ray (which has no hits).
    #[inline(always)]
    pub(super) fn walks(wide: &WideBvh, ray: &Ray) -> bool {
        !wide.nodes.is_empty() && is_valid_ray_on::<L>(ray)
    }

    /// The walk of `ray` from the root of `wide`, which it [`walks`](Walk::walks),
    /// for a collector whose bound is `bound`.
    #[inline(always)]
    pub(super) fn new(wide: &WideBvh, ray: &Ray, bound: f32) -> Self {
        let (boxes, slabs) = Slabs::<L>::for_ray(wide, ray);
        Self {
            ray: *ray,
            boxes,
            limit: slabs.limit(bound),
            slabs,
            frame: None,
            top: (0, 0),
            depth: 0,
        }
    }

    /// Makes this the walk of `ray` from the root of `wide` (which it
    /// [`walks`](Walk::walks)) for a collector whose bound is `bound`, field by
    /// field: a new walk moved in whole is copied through memory in pieces of
    /// other sizes than it was written in, and the reads then wait for the writes
    /// to reach the cache. For the lanes of interleaved walks, whose batches of
    /// incoherent rays mostly reach a leaf: the triangle frame is made at once,
    /// which saves the first leaf a branch that no predictor gets right when the
    /// walks take turns.
    #[inline(always)]
    pub(super) fn restart(&mut self, wide: &WideBvh, ray: &Ray, bound: f32) {
        self.ray = *ray;
        (self.boxes, self.slabs) = Slabs::<L>::for_ray(wide, ray);
        self.limit = self.slabs.limit(bound);
        self.frame = Some(RayFrame::with_boxes(ray, &self.boxes));
        self.top = (0, 0);
        self.depth = 0;
    }

    /// The slab test this walk's ray takes.
    #[inline(always)]
    pub(super) fn test(&self) -> SlabTest {
        self.slabs.test()
    }

    /// Visits the next child, offering hits to `collect`, with `stack` (this
    /// walk's alone) holding the pending children, and picks the child it visits
    /// next; `false` once the walk is over (nothing left to visit, or `collect`
    /// said stop). `test` is the ray's slab test ([`Walk::test`]).
    ///
    /// Two ways to order a node's children, the same visits but for the order of
    /// equally near children: `SORTED` ([`Stack::push`]), for walks that step in
    /// turn with others ([`interleave`]), sorts without branches, and the step
    /// ends by asking the memory system for the child it visits next, which
    /// arrives while the others step; otherwise ([`Stack::push_but_nearest`]), for
    /// a lone walk, which waits on every step's result, the few children are
    /// ordered by branches and the nearest is visited next without a trip through
    /// the stack, the others asked of the memory system as they are pushed.
    #[inline(always)]
    pub(super) fn step<const WATERTIGHT: bool, const SORTED: bool>(
        &mut self,
        test: SlabTest,
        wide: &WideBvh,
        cull: Cull,
        collect: &mut impl Collect,
        stack: &mut Stack,
        tally: &mut impl Tally,
    ) -> bool {
        let (child, blocks) = self.top;
        if blocks > 0 {
            tally.leaf_blocks(blocks);
            // The box frame by reference: a copy of it whole reads the fields,
            // written one by one when the walk began, in wider pieces, which wait
            // for the writes to reach the cache.
            let (ray, boxes) = (&self.ray, &self.boxes);
            let frame = self.frame.get_or_insert_with(|| RayFrame::with_boxes(ray, boxes));
            if offer_leaf::<L, WATERTIGHT>(wide, child, blocks, ray, frame, cull, collect) {
                return false;
            }
            self.limit = self.slabs.limit(collect.bound());
        } else {
            let node = &wide.nodes[child as usize];
            let terms = self.slabs.terms();
            let (entered, near) = self.slabs.enter(test, node, &self.limit, &terms);
            tally.wide_node(node.occupied.count_ones(), entered.count_ones());
            if SORTED {
                stack.push::<L>(&mut self.depth, node, entered, near);
            } else if let Some(next) = stack.push_but_nearest::<L>(wide, &mut self.depth, node, entered, near) {
                // No nearer hit can have been found since its box test.
                self.top = next;
                return true;
            }
        }
        let Some(next) = stack.pop(&mut self.depth, collect.bound()) else {
            return false;
        };
        self.top = next;
        if SORTED {
            prefetch_either(wide, next.0, next.1);
        }
        true
    }
}

/// Keeps the branch whose arm calls it a branch: an empty instruction sequence
/// that the compiler may neither drop nor run ahead of the condition, so that it
/// cannot turn the two arms into conditional moves, whose result waits for the
/// condition's operands where a predicted branch does not.
#[inline(always)]
fn keep_branch() {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: an empty sequence of instructions, which reads and writes nothing.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags));
    }
}

/// Asks the memory system for a pending child's node, or its leaf's first block,
/// ahead of its visit: the traversal's loads of nodes and leaves it has not
/// touched yet are where it waits most on large meshes.
#[inline(always)]
pub(super) fn prefetch(wide: &WideBvh, child: u32, blocks: u32) {
    let (node, block) = child_addresses(wide, child);
    if blocks == 0 {
        prefetch_lines::<NODE_LINES>(node);
    } else {
        prefetch_lines::<BLOCK_LINES>(block);
    }
}

/// [`prefetch`] with the address chosen without a branch: the next child of a
/// walk is a leaf or a node with no pattern a branch predictor could learn.
#[inline(always)]
fn prefetch_either(wide: &WideBvh, child: u32, blocks: u32) {
    let (node, block) = child_addresses(wide, child);
    const LINES: usize = if NODE_LINES > BLOCK_LINES { NODE_LINES } else { BLOCK_LINES };
    prefetch_lines::<LINES>(std::hint::select_unpredictable(blocks == 0, node, block));
}

/// Bytes per cache line.
const LINE: usize = 64;

/// Cache lines that `bytes` bytes span from the start of a line.
const fn lines(bytes: usize) -> usize {
    bytes.div_ceil(LINE)
}

/// Cache lines of a node and of a leaf block.
const NODE_LINES: usize = lines(size_of::<ExactNode>());
const BLOCK_LINES: usize = lines(size_of::<LeafBlock>());

/// Where a pending child starts if it is a node (`child` a node index) and if it
/// is a leaf (`child` its first block), for a prefetch (never read through:
/// the one that does not apply may lie outside both arrays).
#[inline(always)]
fn child_addresses(wide: &WideBvh, child: u32) -> (*const i8, *const i8) {
    let node = wide.nodes.as_ptr().wrapping_add(child as usize).cast::<i8>();
    let block = wide.blocks.as_ptr().wrapping_add(child as usize).cast::<i8>();
    (node, block)
}

/// Asks the memory system for the lookup of a leaf's first block as its test
/// begins: it sits apart from the triangles, and the accepted hits that read it
/// would otherwise wait on a load of their own after the test.
#[inline(always)]
fn prefetch_lookup(wide: &WideBvh, first: u32) {
    prefetch_lines::<1>(wide.lookups.as_ptr().wrapping_add(first as usize).cast());
}

/// Asks for the `N` lines from `start`: a fixed count, so the loop unrolls (a count
/// in bytes, stepped through, costs a loop at every push).
#[inline(always)]
pub(super) fn prefetch_lines<const N: usize>(start: *const i8) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..N {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86-64 CPU, and a prefetch reads nothing and
        // never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(LINE * line)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = start;
}

/// Offers the hits in `blocks` leaf blocks from `first` on to `collect`; `true` when
/// it says stop.
#[inline(always)]
pub(super) fn offer_leaf<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    first: u32,
    blocks: u32,
    ray: &Ray,
    frame: &RayFrame,
    cull: Cull,
    collect: &mut impl Collect,
) -> bool {
    prefetch_lookup(wide, first);
    for index in first as usize..(first + blocks) as usize {
        let block = &wide.blocks[index];
        // The lookup is read only for accepted hits, which few blocks have.
        let lookup = &wide.lookups[index];
        let prim = |lane: usize| lookup.ids[lane];
        let test = if WATERTIGHT {
            watertight_block::<L>(block, frame)
        } else {
            moller_trumbore_block::<L>(block, frame)
        };
        let Some(accepted) = test.accepted(block, &lookup.margins, ray, frame, cull) else {
            continue;
        };
        if offer_accepted(&accepted, prim, collect) {
            return true;
        }
    }
    false
}

/// Scratch space of the traversal: a stack per walk that a thread takes at once
/// ([`INTERLEAVED`]; a lone walk takes the first), made once for many rays (and
/// kept by each thread between calls, [`RayStack::take`]), so that a call that
/// traces a few rays (a pick) does not spend its time filling a new one.
pub(crate) struct RayStack([Stack; INTERLEAVED]);

impl Default for RayStack {
    fn default() -> Self {
        Self(std::array::from_fn(|_| Stack::default()))
    }
}

thread_local! {
    /// Each thread's stack between calls.
    static THREAD_STACK: std::cell::Cell<Option<Box<RayStack>>> = const {
        std::cell::Cell::new(None)
    };
}

impl RayStack {
    /// This thread's stack, for one call: the kept one, or a new one the first time
    /// (or when a call runs inside another). A plain value rather than a closure
    /// around the traversal, which would be compiled apart from the caller, without
    /// its vector unit.
    #[inline(always)]
    pub(crate) fn take() -> Box<RayStack> {
        THREAD_STACK.take().unwrap_or_default()
    }

    /// The stack of a lone walk.
    #[inline(always)]
    fn lone(&mut self) -> &mut Stack {
        &mut self.0[0]
    }

    /// Keeps `stack` for this thread's next call.
    #[inline(always)]
    pub(crate) fn keep(self: Box<Self>) {
        THREAD_STACK.set(Some(self));
    }
}

/// Nearest hit of one ray (`Hit::MISS` for an invalid one), with `stack` as
/// scratch. Inlined into the
/// caller, so it runs on the vector unit the caller was compiled for (call it
/// from a [`simd_dispatch`]ed loop).
#[inline(always)]
pub(crate) fn trace_one<L: Lanes8>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    stack: &mut RayStack,
) -> Hit {
    trace_one_tallied::<L>(wide, ray, cull, mode, stack, &mut ())
}

/// [`trace_one`], telling `tally` the work.
#[inline(always)]
fn trace_one_tallied<L: Lanes8>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    stack: &mut RayStack,
    tally: &mut impl Tally,
) -> Hit {
    let mut closest = Closest::default();
    traverse_in::<L>(wide, ray, cull, mode, &mut closest, stack, tally);
    closest.0
}

/// [`traverse`] with the test `mode` picks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn traverse_in<L: Lanes8>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    collect: &mut impl Collect,
    stack: &mut RayStack,
    tally: &mut impl Tally,
) {
    if mode == Mode::Watertight {
        traverse::<L, true>(wide, ray, cull, collect, stack.lone(), tally);
    } else {
        traverse::<L, false>(wide, ray, cull, collect, stack.lone(), tally);
    }
}

/// Whether one ray hits anything (false for an invalid one), stopping at its first
/// accepted hit, with `stack` as scratch; inlined as [`trace_one`] is.
#[inline(always)]
pub(crate) fn occluded_one<L: Lanes8>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    stack: &mut RayStack,
) -> bool {
    let mut any = AnyHit::default();
    traverse_in::<L>(wide, ray, cull, mode, &mut any, stack, &mut ());
    any.0
}

/// How many groups of rays ahead of the one traced a batch asks the memory system
/// for ([`prefetch_group`]): far enough that a group's rays and hit slots are cached
/// when its turn comes, near enough that they still are.
const GROUPS_AHEAD: usize = 4;

/// Asks the memory system for the group of [`PACKET`] rays from `start` on and
/// for their hit slots (nothing where `start` is past the end: a prefetch does not
/// fault). A camera's packet reads its rays and writes its hits once each, so the
/// hardware's own prefetch is what they would otherwise wait on.
#[inline(always)]
fn prefetch_group(rays: &[Ray], hits: &[Hit], start: usize) {
    const RAY_LINES: usize = lines(PACKET * size_of::<Ray>());
    const HIT_LINES: usize = lines(PACKET * size_of::<Hit>());
    prefetch_lines::<RAY_LINES>(rays.as_ptr().wrapping_add(start).cast());
    prefetch_lines::<HIT_LINES>(hits.as_ptr().wrapping_add(start).cast());
}

#[inline(always)]
fn trace_rays_with<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    hits: &mut [Hit],
    cull: Cull,
) {
    let mut stack = RayStack::take();
    let mut packet_stack = PacketStack::default();
    // Packets first; the rays of the groups that are not one are traced after,
    // interleaved.
    let mut lone = Vec::new();
    for (start, group) in (0..).step_by(PACKET).zip(rays.chunks(PACKET)) {
        prefetch_group(rays, hits, start + GROUPS_AHEAD * PACKET);
        if let Ok(group) = <&[Ray; PACKET]>::try_from(group)
            && let Some(slots) = hits[start..].first_chunk_mut::<PACKET>()
        {
            // Traced in place: the slots start as misses and keep the nearest hits
            // (a copy from a packet's own array would wait on its latest stores).
            *slots = [Hit::MISS; PACKET];
            if trace_packet::<L, WATERTIGHT>(wide, group, cull, Closest::wrap_array(slots), &mut packet_stack) {
                continue;
            }
        }
        lone.push(start);
    }
    let walks = lone
        .into_iter()
        .flat_map(|start| start..(start + PACKET).min(rays.len()))
        .map(|slot| (slot, Closest::default()));
    interleave::<L, WATERTIGHT, Closest>(wide, rays, walks, cull, &mut stack.0, |slot, closest| {
        hits[slot] = closest.0;
    });
    stack.keep();
}

#[inline(always)]
fn trace_rays_by<L: Lanes8>(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) {
    if options.mode == Mode::Watertight {
        trace_rays_with::<L, true>(wide, rays, hits, options.cull);
    } else {
        trace_rays_with::<L, false>(wide, rays, hits, options.cull);
    }
}

/// Traces `rays` into `hits` (one slot per ray) on the calling thread, with the
/// widest vector unit the CPU has; `cull` is a `crate::Cull`, `mode` is a
/// `crate::Mode`. Fewer rays than a packet (picks) take a lean function of their
/// own: the packet traversal's state would make every call set up a larger frame.
pub fn trace_rays(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], cull: Cull, mode: Mode) {
    // The options by reference, one argument: the variants' arguments then all
    // travel in registers, and the dispatch passes them on with a jump.
    let options = TraceOptions { cull, mode };
    if rays.len() < PACKET {
        trace_lone(wide, rays, hits, &options);
    } else {
        trace_batch(wide, rays, hits, &options);
    }
}

simd_dispatch! {
    /// [`trace_rays`] of a batch that may hold packets.
    fn trace_batch(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) => trace_rays_by::<Lanes8>
}

#[inline(always)]
fn trace_lone_by<L: Lanes8>(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) {
    let mut stack = RayStack::take();
    for (ray, hit) in rays.iter().zip(hits) {
        *hit = trace_one::<L>(wide, ray, options.cull, options.mode, &mut stack);
    }
    stack.keep();
}

simd_dispatch! {
    /// [`trace_rays`] of rays traced one by one.
    fn trace_lone(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], options: &TraceOptions) => trace_lone_by::<Lanes8>
}

#[inline(always)]
fn occluded_rays_with<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
) {
    let mut stack = RayStack::take();
    let walks = (0..rays.len()).map(|slot| (slot, AnyHit::default()));
    interleave::<L, WATERTIGHT, AnyHit>(wide, rays, walks, cull, &mut stack.0, |slot, any| {
        occluded[slot] = any.0;
    });
    stack.keep();
}

#[inline(always)]
fn occluded_rays_by<L: Lanes8>(
    wide: &WideBvh,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
    mode: Mode,
) {
    if mode == Mode::Watertight {
        occluded_rays_with::<L, true>(wide, rays, occluded, cull);
    } else {
        occluded_rays_with::<L, false>(wide, rays, occluded, cull);
    }
}

simd_dispatch! {
    /// Writes whether each ray hits anything (`occluded.len()` must equal
    /// `rays.len()`); each ray stops at its first accepted hit.
    pub fn occluded_rays(wide: &WideBvh, rays: &[Ray], occluded: &mut [bool], cull: Cull, mode: Mode) => occluded_rays_by::<Lanes8>
}

#[inline(always)]
fn collect_rays_with<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
    cull: Cull,
) {
    let k = (slots.len() / rays.len().max(1)).max(1);
    let mut stack = RayStack::take();
    let walks = slots.chunks_exact_mut(k).map(|slots| HitList::new(slots, 0)).enumerate();
    interleave::<L, WATERTIGHT, HitList>(wide, rays, walks, cull, &mut stack.0, |slot, list| {
        states[slot] = list.state();
    });
    stack.keep();
}

#[inline(always)]
fn collect_rays_by<L: Lanes8>(
    wide: &WideBvh,
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
    cull: Cull,
    mode: Mode,
) {
    if mode == Mode::Watertight {
        collect_rays_with::<L, true>(wide, rays, slots, states, cull);
    } else {
        collect_rays_with::<L, false>(wide, rays, slots, states, cull);
    }
}

simd_dispatch! {
    /// Lists each ray's nearest hits: `slots` holds `k >= 1` MISS-filled slots per ray
    /// (`slots.len() == k * rays.len()`), `states` one list state per ray (see
    /// [`HitList`]).
    pub fn collect_rays(wide: &WideBvh, rays: &[Ray], slots: &mut [Hit], states: &mut [u32], cull: Cull, mode: Mode) => collect_rays_by::<Lanes8>
}

/// The work of the lone-ray traversal, summed over rays ([`count_rays`]).
#[cfg(any(test, feature = "kernels"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCounts {
    /// Rays traced.
    pub rays: u64,
    /// Wide nodes visited.
    pub nodes: u64,
    /// Child boxes tested (the used slots of the nodes visited).
    pub boxes: u64,
    /// Child boxes entered.
    pub entered: u64,
    /// Leaves tested.
    pub leaves: u64,
    /// Leaf blocks tested (of up to eight triangles each).
    pub blocks: u64,
}

#[cfg(any(test, feature = "kernels"))]
impl WalkCounts {
    /// `count` per ray traced (0 without rays).
    pub fn per_ray(&self, count: u64) -> f64 {
        count as f64 / self.rays.max(1) as f64
    }
}

#[cfg(any(test, feature = "kernels"))]
impl std::ops::Add for WalkCounts {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            rays: self.rays + other.rays,
            nodes: self.nodes + other.nodes,
            boxes: self.boxes + other.boxes,
            entered: self.entered + other.entered,
            leaves: self.leaves + other.leaves,
            blocks: self.blocks + other.blocks,
        }
    }
}

#[cfg(any(test, feature = "kernels"))]
impl Tally for WalkCounts {
    fn wide_node(&mut self, tested: u32, entered: u32) {
        self.nodes += 1;
        self.boxes += u64::from(tested);
        self.entered += u64::from(entered);
    }

    fn leaf_blocks(&mut self, blocks: u32) {
        self.leaves += 1;
        self.blocks += u64::from(blocks);
    }
}

/// The nearest hits of `rays` (those of [`trace_rays`]) and the work of finding
/// them, each ray traced alone, in the order given, on the baseline lanes: the
/// tree's own work per ray, which packets (sharing a node's visit among rays) and
/// the vector unit (the same decisions) leave as it is.
#[cfg(any(test, feature = "kernels"))]
pub fn count_rays(wide: &WideBvh, rays: &[Ray], cull: Cull, mode: Mode) -> (Vec<Hit>, WalkCounts) {
    let mut stack = RayStack::take();
    let mut counts = WalkCounts {
        rays: rays.len() as u64,
        ..WalkCounts::default()
    };
    let hits = rays
        .iter()
        .map(|ray| {
            trace_one_tallied::<super::vector::Portable>(
                wide,
                ray,
                cull,
                mode,
                &mut stack,
                &mut counts,
            )
        })
        .collect();
    stack.keep();
    (hits, counts)
}

const _: () = assert!(MISS == u32::MAX);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::Bvh;
    use crate::cpu::intersect::padded_below;
    use crate::cpu::vector::{Portable, push_key};
    use crate::cpu::wide_bvh::ExactBoxes;
    use crate::kit::{self, Rng, fixtures};
    use crate::prepare::is_valid_ray;

    /// The built-in scene with some degenerate triangles, and camera, random and
    /// adversarial rays at it.
    fn scene_and_rays(seed: u64) -> (WideBvh, Vec<Ray>) {
        let mut rng = Rng::new(seed);
        let scene = fixtures::with_degenerates(&fixtures::builtin_scene(20_000), &mut rng, 60);
        let adversarial = fixtures::adversarial_rays(&scene, &mut rng, 3000);
        let mesh = kit::mesh(scene);
        let wide = WideBvh::from_bvh(&Bvh::build(&mesh));
        let bounds = mesh.bounds().expect("a finite mesh");
        let mut rays = kit::rays(fixtures::camera_rays(bounds, 64, 48));
        rays.extend(kit::rays(fixtures::random_rays(3000, &mut rng, bounds)));
        rays.extend(kit::rays(adversarial));
        (wide, rays)
    }

    /// The counted walk answers as the traversal does and counts what it does: a
    /// node and its leaves for a ray at a small sphere, the node alone for a ray
    /// past it, and on a scene every visit but the root's follows an entered box.
    #[test]
    fn counted_walks_answer_alike_and_count_every_visit() {
        let lone = kit::mesh(fixtures::icosphere(0, 1.0, glam::Vec3::ZERO));
        let wide = WideBvh::from_bvh(&Bvh::build(&lone));
        assert_eq!(wide.nodes.len(), 1);
        let at = Ray::new(glam::Vec3::new(0.0, 0.0, -5.0), glam::Vec3::Z);
        let past = Ray::new(glam::Vec3::new(3.0, 0.0, -5.0), glam::Vec3::Z);
        let (hits, counts) = count_rays(&wide, &[at, past], Cull::None, Mode::Watertight);
        assert!(hits[0].is_hit() && !hits[1].is_hit());
        let blocks = u64::from(
            wide.nodes[0]
                .blocks
                .iter()
                .map(|&b| u32::from(b))
                .sum::<u32>(),
        );
        assert_eq!(counts.rays, 2);
        assert_eq!(counts.nodes, 2);
        assert_eq!(
            counts.boxes,
            2 * u64::from(wide.nodes[0].occupied.count_ones())
        );
        assert!(
            counts.leaves >= 1 && counts.leaves <= counts.entered,
            "{counts:?}"
        );
        assert!(counts.blocks <= blocks, "{counts:?}");

        let (wide, rays) = scene_and_rays(6);
        for mode in [Mode::Fast, Mode::Watertight] {
            let (hits, counts) = count_rays(&wide, &rays, Cull::None, mode);
            let mut expected = vec![Hit::MISS; rays.len()];
            trace_rays(&wide, &rays, &mut expected, Cull::None, mode);
            assert_eq!(hits, expected, "mode {mode}");
            let valid = rays.iter().filter(|ray| is_valid_ray(ray)).count() as u64;
            assert_eq!(counts.rays, rays.len() as u64);
            assert!(
                counts.nodes >= valid && counts.boxes >= counts.entered,
                "{counts:?}"
            );
            assert!(
                counts.nodes - valid + counts.leaves <= counts.entered,
                "{counts:?}"
            );
            assert!(
                counts.blocks >= counts.leaves && counts.leaves > valid / 2,
                "{counts:?}"
            );
        }
    }

    /// A lone walk's pushes visit a node's entered children nearest first: the
    /// returned child is the nearest (the lowest lane among equally near ones) and
    /// the stack pops each other entered child once, none nearer than the one
    /// before, for every set of entered lanes (each count, so each way
    /// `push_but_nearest` orders them) and for distances drawn from a few values
    /// (so that many tie), leaf and interior children mixed.
    #[test]
    fn lone_pushes_visit_children_nearest_first() {
        // The boxes are never read: the entry distances are given.
        let node = ExactNode {
            boxes: ExactBoxes::default(),
            child: std::array::from_fn(|lane| 100 + lane as u32),
            blocks: std::array::from_fn(|lane| (lane % 3) as u8),
            occupied: 0xff,
        };
        let wide = WideBvh::default();
        let mut rng = Rng::new(21);
        // Two entries a bit apart, which four or more children order by lane.
        let levels = [0.0, 0.5, 0.5, 1.0, 2.0, -1.0, 1e-30, 3e37, f32::from_bits(0.5f32.to_bits() + 1)];
        let mut stack = Stack::default();
        for entered in 1..=0xffu32 {
            for _ in 0..16 {
                let near: [f32; WIDTH] = std::array::from_fn(|_| levels[rng.below(levels.len())]);
                // The expected order: by padded entry (the stack's own form), then by
                // lane; for four or more, by the sort's key of each distance, where
                // distances that differ only in the key's lane bits count as equal.
                let sorted = entered.count_ones() >= 4;
                let entry = |lane: usize| padded_below(near[lane]);
                let coarse = |lane: usize| push_key(near[lane], 0, true);
                let before = |a: usize, b: usize| {
                    if sorted {
                        coarse(a).cmp(&coarse(b))
                    } else {
                        entry(a).partial_cmp(&entry(b)).expect("no entry is NaN")
                    }
                };
                let mut expected: Vec<usize> = lanes(entered).collect();
                expected.sort_by(|&a, &b| before(a, b).then(a.cmp(&b)));
                let below = 5;
                let mut depth = below;
                let first = stack.push_but_nearest::<Portable>(&wide, &mut depth, &node, entered, Portable::load(&near));
                let lane = |(child, _): (u32, u32)| (child - 100) as usize;
                let mut visited = vec![lane(first.expect("a child is entered"))];
                assert_eq!(depth - below, expected.len() - 1, "entered {entered:#b}");
                while depth > below {
                    let next = stack.pop(&mut depth, f32::INFINITY).expect("a pending child");
                    assert_eq!(next.1, u32::from(node.blocks[lane(next)]));
                    visited.push(lane(next));
                }
                let context = format!("entered {entered:#b}, entries {near:?}, visited {visited:?}");
                assert_eq!(visited[0], expected[0], "{context}");
                assert!(visited.windows(2).all(|w| before(w[0], w[1]).is_le()), "{context}");
                visited.sort_unstable();
                expected.sort_unstable();
                assert_eq!(visited, expected, "{context}");
            }
        }
        let mut depth = 0;
        assert_eq!(stack.push_but_nearest::<Portable>(&wide, &mut depth, &node, 0, Portable::load(&[0.0; WIDTH])), None);
        assert_eq!(depth, 0);
    }

    /// Interleaved walks (batches) answer as lone walks, ray by ray, bit for bit:
    /// nearest hits, occlusion and hit lists, both tests and culls, on camera, random and
    /// adversarial rays (every eighth invalid), in batches that fill the lanes many
    /// times over and in batches that fill only some of them.
    #[test]
    fn interleaved_walks_answer_as_lone_walks() {
        let (wide, rays) = scene_and_rays(9);
        let mut stack = RayStack::default();
        for mode in [Mode::Fast, Mode::Watertight] {
            for cull in [Cull::None, Cull::Back] {
                let lone: Vec<Hit> = rays
                    .iter()
                    .map(|ray| trace_one::<Portable>(&wide, ray, cull, mode, &mut stack))
                    .collect();
                let lone_occluded: Vec<bool> = rays
                    .iter()
                    .map(|ray| occluded_one::<Portable>(&wide, ray, cull, mode, &mut stack))
                    .collect();
                assert!(lone.iter().any(Hit::is_hit) && lone_occluded.contains(&false));
                // Hit lists of three, walked alone with the lone walk's stack.
                let k = 3;
                let mut lone_lists = vec![Hit::MISS; rays.len() * k];
                let mut lone_states = vec![0; rays.len()];
                for ((ray, slots), state) in rays.iter().zip(lone_lists.chunks_exact_mut(k)).zip(&mut lone_states) {
                    let mut list = HitList::new(slots, 0);
                    traverse_in::<Portable>(&wide, ray, cull, mode, &mut list, &mut stack, &mut ());
                    *state = list.state();
                }
                assert!(lone_states.iter().any(|&state| state > 1));
                for size in [rays.len(), PACKET + 3, INTERLEAVED - 3] {
                    for (at, rays) in (0..).step_by(size).zip(rays.chunks(size)) {
                        let mut lists = vec![Hit::MISS; rays.len() * k];
                        let mut states = vec![0; rays.len()];
                        collect_rays_by::<Portable>(&wide, rays, &mut lists, &mut states, cull, mode);
                        assert_eq!(lists, lone_lists[at * k..(at + rays.len()) * k], "cull {cull}, mode {mode}");
                        assert_eq!(states, lone_states[at..at + rays.len()]);
                        let mut hits = vec![Hit::MISS; rays.len()];
                        trace_rays_by::<Portable>(&wide, rays, &mut hits, &TraceOptions { cull, mode });
                        assert_eq!(hits, lone[at..at + rays.len()], "cull {cull}, mode {mode}");
                        let mut occluded = vec![false; rays.len()];
                        occluded_rays_by::<Portable>(&wide, rays, &mut occluded, cull, mode);
                        assert_eq!(occluded, lone_occluded[at..at + rays.len()]);
                    }
                }
            }
        }
    }

    /// The baseline build (portable lanes) answers bit for bit as the build this CPU
    /// dispatches to: nearest hits (packets and lone rays, and batches too small
    /// for a packet), occlusion and hit lists, on camera, random and adversarial
    /// rays.
    #[test]
    fn portable_lanes_answer_as_the_dispatched_unit() {
        let (wide, rays) = scene_and_rays(5);
        let n = rays.len();
        for mode in [Mode::Fast, Mode::Watertight] {
            for cull in [Cull::None, Cull::Back] {
                let mut dispatched = vec![Hit::MISS; n];
                let mut portable = vec![Hit::MISS; n];
                trace_rays(&wide, &rays, &mut dispatched, cull, mode);
                trace_rays_by::<Portable>(&wide, &rays, &mut portable, &TraceOptions { cull, mode });
                assert_eq!(portable, dispatched, "cull {cull}, mode {mode}");
                // Batches smaller than a packet (picks) take their own function.
                for (rays, expected) in rays.chunks(PACKET - 1).zip(dispatched.chunks(PACKET - 1)) {
                    let mut few = vec![Hit::MISS; rays.len()];
                    trace_rays(&wide, rays, &mut few, cull, mode);
                    assert_eq!(few, expected, "cull {cull}, mode {mode}");
                }
                let hits = dispatched.iter().filter(|h| h.is_hit()).count();
                assert!(hits > n / 10, "{hits} hits of {n}");

                let (mut dispatched, mut portable) = (vec![false; n], vec![false; n]);
                occluded_rays(&wide, &rays, &mut dispatched, cull, mode);
                occluded_rays_by::<Portable>(&wide, &rays, &mut portable, cull, mode);
                assert_eq!(portable, dispatched, "cull {cull}, mode {mode}");

                let k = 3;
                let (mut dispatched, mut portable) =
                    (vec![Hit::MISS; n * k], vec![Hit::MISS; n * k]);
                let (mut states, mut portable_states) = (vec![0; n], vec![0; n]);
                collect_rays(&wide, &rays, &mut dispatched, &mut states, cull, mode);
                collect_rays_by::<Portable>(
                    &wide,
                    &rays,
                    &mut portable,
                    &mut portable_states,
                    cull,
                    mode,
                );
                assert_eq!(portable, dispatched, "cull {cull}, mode {mode}");
                assert_eq!(portable_states, states, "cull {cull}, mode {mode}");
            }
        }
    }
}
