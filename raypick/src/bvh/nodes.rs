//! The node array under construction, shared by parallel subtree builds without
//! copying.
//!
//! A subtree of `n` triangles has at most `n - 1` interior nodes. The array is
//! allocated once (zeroed lazily by the system) and every subtree built in
//! parallel gets a window of it for its nodes, which it fills from the front in
//! depth-first order: room for `n - 1` ([`Room::Any`]), or, for trees that keep
//! runs of a few triangles whole and so have far fewer nodes, for half that
//! ([`Room::Half`]). When two subtrees are built in parallel, the left one's
//! unused slots leave a gap before the right one's window; [`compact`] closes the
//! gaps at the end and renumbers the children. Beside each node goes its subtree's
//! triangle range, in an array of the same windows: the CPU's collapse reads the
//! array as it is, gaps and all (no child refers to them), and takes each node's
//! range from there.
//!
//! The gaps cost more than address space: the array is backed by huge pages
//! (module `memory`), and the system zeroes a whole 2 MiB page when any of it is
//! touched, so gaps smaller than a page, most of them, are zeroed with their
//! neighbours. Windows that fit the tree leave less of the array to zero.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::memory;
use crate::types::{BvhChild, BvhNode};

/// How many slots a subtree's window has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Room {
    /// `n - 1` for `n` triangles: as many as any binary tree over them has
    /// interior nodes, so no window runs out.
    Any,
    /// Half as many: for trees that keep runs of a few triangles whole
    /// ([`Bottom::Blocks`](super::build::Bottom::Blocks)), which have about one
    /// interior node per five triangles on real meshes (the Stanford dragon and
    /// assimp's engine: 0.17 to 0.19). A window that runs out all the same marks
    /// the array [overflowed](NodeArray::overflowed), and the build is done
    /// again with [`Room::Any`].
    Half,
}

impl Room {
    /// Slots for the interior nodes of a subtree of `triangles` triangles.
    pub(super) fn slots(self, triangles: usize) -> usize {
        let any = triangles.saturating_sub(1);
        match self {
            Room::Any => any,
            Room::Half => any.div_ceil(2),
        }
    }
}

/// What the windows of one node array share: their room, the gaps they leave,
/// and whether one ran out of room.
pub(super) struct NodeArray {
    room: Room,
    /// Unused runs `(first, count)` left behind by parallel builds.
    gaps: Mutex<Vec<(usize, usize)>>,
    overflowed: AtomicBool,
}

impl NodeArray {
    /// The shared state of an array whose windows have `room`.
    pub(super) fn new(room: Room) -> Self {
        Self {
            room,
            gaps: Mutex::new(Vec::new()),
            overflowed: AtomicBool::new(false),
        }
    }

    /// Whether a window ran out of room: its nodes past the end were never
    /// written, and the tree is not whole.
    pub(super) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// The gaps the windows left.
    pub(super) fn into_gaps(self) -> Vec<(usize, usize)> {
        self.gaps.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// A window of the node array that a subtree fills from the front, and of the
/// array of each node's triangle range beside it.
pub(super) struct NodeWindow<'a> {
    slots: &'a mut [BvhNode],
    ranges: &'a mut [(u32, u32)],
    /// Index of `slots[0]` in the whole array.
    base: usize,
    /// Slots used so far (past the end once the window has run out).
    len: usize,
    array: &'a NodeArray,
}

impl<'a> NodeWindow<'a> {
    /// A window over the whole array.
    pub(super) fn new(slots: &'a mut [BvhNode], ranges: &'a mut [(u32, u32)], array: &'a NodeArray) -> Self {
        Self {
            slots,
            ranges,
            base: 0,
            len: 0,
            array,
        }
    }

    /// Appends a node over the triangles `range` (first, end); returns its index.
    /// Past the window's end nothing is written and the array is marked
    /// [overflowed](NodeArray::overflowed); the index is still a new one.
    pub(super) fn push(&mut self, node: BvhNode, range: (u32, u32)) -> usize {
        match (self.slots.get_mut(self.len), self.ranges.get_mut(self.len)) {
            (Some(slot), Some(slot_range)) => {
                *slot = node;
                *slot_range = range;
            }
            _ => self.array.overflowed.store(true, Ordering::Relaxed),
        }
        self.len += 1;
        self.base + self.len - 1
    }

    /// Replaces the node at `index` (an index returned by `push`; nothing when it
    /// was past the window's end).
    pub(super) fn set(&mut self, index: usize, node: BvhNode) {
        if let Some(slot) = self.slots.get_mut(index - self.base) {
            *slot = node;
        }
    }

    /// Forgets the nodes from `index` on.
    pub(super) fn truncate(&mut self, index: usize) {
        self.len = index - self.base;
    }

    /// Slots used so far.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether some window of the array has run out of room: the build can stop,
    /// as it will be done again.
    pub(super) fn overflowed(&self) -> bool {
        self.array.overflowed()
    }

    /// Runs `left`, over `left_triangles` triangles, and `right` in parallel, each
    /// on its own window: `left` on the next free slots, as many as its
    /// [`Room`] gives it (or as are left), `right` on the rest. The slots `left`
    /// leaves unused become a gap; afterwards this window ends where `right`'s
    /// nodes end.
    pub(super) fn join<A: Send, B: Send>(
        &mut self,
        left_triangles: usize,
        left: impl FnOnce(&mut NodeWindow) -> A + Send,
        right: impl FnOnce(&mut NodeWindow) -> B + Send,
    ) -> (A, B) {
        let used = self.len.min(self.slots.len());
        let left_slots = self.array.room.slots(left_triangles).min(self.slots.len() - used);
        let (left_free, right_free) = self.slots[used..].split_at_mut(left_slots);
        let (left_ranges, right_ranges) = self.ranges[used..].split_at_mut(left_slots);
        let mut lw = NodeWindow {
            slots: left_free,
            ranges: left_ranges,
            base: self.base + used,
            len: 0,
            array: self.array,
        };
        let mut rw = NodeWindow {
            slots: right_free,
            ranges: right_ranges,
            base: self.base + used + left_slots,
            len: 0,
            array: self.array,
        };
        let (a, b) = rayon::join(|| left(&mut lw), || right(&mut rw));
        let (left_used, right_used) = (lw.len, rw.len);
        if left_used < left_slots {
            let first = self.base + used + left_used;
            let gap = (first, left_slots - left_used);
            self.array
                .gaps
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(gap);
        }
        self.len = used + left_slots + right_used;
        (a, b)
    }
}

/// Removes the `gaps` from `nodes[..end]` and renumbers the interior children: every
/// kept node is copied, renumbered, to its place in a new array, in parallel chunks
/// of consecutive output positions.
pub(super) fn compact(
    mut nodes: Vec<BvhNode>,
    end: usize,
    mut gaps: Vec<(usize, usize)>,
) -> Vec<BvhNode> {
    nodes.truncate(end);
    gaps.retain(|&(_, count)| count > 0);
    if gaps.is_empty() {
        // Kept as it is: without the room the build gave it.
        nodes.shrink_to_fit();
        return nodes;
    }
    gaps.sort_unstable();
    let runs = Runs::new(&gaps, end);
    let mut compacted: Vec<BvhNode> = memory::zeroed(end - runs.removed());
    compacted
        .par_chunks_mut(COMPACT_CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let first = chunk * COMPACT_CHUNK;
            let mut run = runs.holding_new(first);
            for (new, slot) in (first..).zip(out) {
                run = runs.advance_new(run, new);
                let mut node = nodes[new + runs.shift(run)];
                for child in node.children.iter_mut().filter(|c| is_interior(c)) {
                    child.index = runs.renumber(child.index as usize) as u32;
                }
                *slot = node;
            }
        });
    compacted
}

/// Output positions per parallel task of [`compact`].
const COMPACT_CHUNK: usize = 4096;

/// The kept runs of a node array with gaps, and where each moves.
struct Runs {
    /// `(first, shift)` per kept run, in order: its first index, and the size of the
    /// gaps before it (its nodes move down by that much).
    runs: Vec<(usize, usize)>,
    /// For every [`PAGE`] indices of the old array, the last run starting at or
    /// before the page's first index: a lookup leaves only a few runs to step over.
    pages: Vec<usize>,
}

/// Old indices per entry of [`Runs::pages`].
const PAGE: usize = 4096;

impl Runs {
    /// The runs between sorted, non-empty `gaps` of an array of `end` nodes.
    fn new(gaps: &[(usize, usize)], end: usize) -> Self {
        let mut runs = Vec::with_capacity(gaps.len() + 1);
        let (mut start, mut shift) = (0, 0);
        for &(first, count) in gaps {
            runs.push((start, shift));
            start = first + count;
            shift += count;
        }
        runs.push((start, shift));
        let pages = (0..end.div_ceil(PAGE))
            .map(|page| runs.partition_point(|&(first, _)| first <= page * PAGE) - 1)
            .collect();
        Self { runs, pages }
    }

    /// Nodes removed in all.
    fn removed(&self) -> usize {
        self.runs.last().map_or(0, |&(_, shift)| shift)
    }

    /// How far the nodes of `run` move down.
    fn shift(&self, run: usize) -> usize {
        self.runs[run].1
    }

    /// The new index of the kept node at old index `old`.
    fn renumber(&self, old: usize) -> usize {
        let run = self.step(self.pages[old / PAGE], old, |&(first, _)| first);
        old - self.runs[run].1
    }

    /// The run that fills output position `new`.
    fn holding_new(&self, new: usize) -> usize {
        self.runs.partition_point(|run| new_first(run) <= new) - 1
    }

    /// The run that fills output position `new`, stepping on from `run` (which
    /// fills a position before it).
    fn advance_new(&self, run: usize, new: usize) -> usize {
        self.step(run, new, new_first)
    }

    /// The last run from `run` on whose first index, old or new as `first` reads
    /// it, is at or before `at`.
    #[inline(always)]
    fn step(&self, mut run: usize, at: usize, first: impl Fn(&(usize, usize)) -> usize) -> usize {
        while self.runs.get(run + 1).is_some_and(|r| first(r) <= at) {
            run += 1;
        }
        run
    }
}

/// A run's first index in the compacted array.
fn new_first(&(first, shift): &(usize, usize)) -> usize {
    first - shift
}

/// Whether a child slot refers to a node.
pub(super) fn is_interior(child: &BvhChild) -> bool {
    !child.is_leaf() && !child.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytemuck::Zeroable;

    use crate::kit::Rng;

    /// A node whose children are a leaf and, where `child` is given, an interior
    /// node at that index; the leaf's index tags the node.
    fn node(tag: u32, child: Option<usize>) -> BvhNode {
        let leaf = BvhChild {
            index: tag,
            count: 1,
            ..BvhChild::EMPTY
        };
        let interior = child.map_or(BvhChild::EMPTY, |c| BvhChild {
            index: c as u32,
            count: 0,
            ..BvhChild::EMPTY
        });
        BvhNode {
            children: [interior, leaf],
        }
    }

    /// Room for any tree is exactly what a node and its two subtrees can use, so
    /// no window of it runs out, whatever the split; half the room is about half.
    #[test]
    fn room_for_any_tree_splits_exactly() {
        for total in 1..300 {
            assert_eq!(Room::Any.slots(total), total - 1);
            assert!(Room::Half.slots(total) * 2 >= total - 1);
            assert!(Room::Half.slots(total) * 2 <= total);
            for left in 1..total {
                let room = |triangles| Room::Any.slots(triangles);
                assert_eq!(1 + room(left) + room(total - left), room(total), "{left} of {total}");
            }
        }
    }

    /// Gaps of every size, at page boundaries and across them, many per page and
    /// none for long stretches, some right after others: the compacted array is the kept nodes in order,
    /// each child renumbered to where its node went.
    #[test]
    fn compaction_keeps_nodes_in_order_and_renumbers_children() {
        let mut rng = Rng::new(11);
        for round in 0..20 {
            let end = 1 + rng.below(6 * PAGE);
            let mut gaps = Vec::new();
            let mut at = 1; // the root is kept
            while at < end {
                at += rng.below(if round % 2 == 0 { 50 } else { 3000 });
                let count = match rng.below(4) {
                    0 => 0,
                    1 => PAGE - at % PAGE, // up to a page boundary
                    _ => 1 + rng.below(700),
                };
                let count = count.min(end.saturating_sub(at));
                gaps.push((at, count));
                // Now and then the next gap follows at once.
                at += count + usize::from(rng.below(3) > 0);
            }
            let in_gap = |i: usize| gaps.iter().any(|&(f, c)| (f..f + c).contains(&i));
            let kept: Vec<usize> = (0..end).filter(|&i| !in_gap(i)).collect();
            let mut new_index = vec![usize::MAX; end];
            for (new, &old) in kept.iter().enumerate() {
                new_index[old] = new;
            }
            // Each kept node refers to a random kept node after it, if any.
            let mut nodes = vec![BvhNode::zeroed(); end + 5];
            let mut children = Vec::with_capacity(kept.len());
            for (k, &old) in kept.iter().enumerate() {
                let later = kept.len() - k - 1;
                let child = (later > 0).then(|| kept[k + 1 + rng.below(later)]);
                nodes[old] = node(old as u32, child);
                children.push(child);
            }
            // Gaps arrive in any order.
            gaps.reverse();
            let compacted = compact(nodes, end, gaps);
            assert_eq!(compacted.len(), kept.len(), "round {round}");
            for (new, ((&old, child), got)) in
                kept.iter().zip(&children).zip(&compacted).enumerate()
            {
                let expected = node(old as u32, child.map(|c| new_index[c]));
                assert_eq!(got, &expected, "round {round}: node {new}, old {old}");
            }
        }
    }
}
