//! The node array under construction, shared by parallel subtree builds without
//! copying.
//!
//! A subtree of `n` triangles has at most `n - 1` interior nodes, so the array is
//! allocated once with `n - 1` slots (zeroed lazily by the system) and every
//! subtree gets a window of that size for its nodes, which it fills from the front
//! in depth-first order. When two subtrees are built in parallel, the left one's
//! unused slots leave a gap before the right one's window; [`compact`] closes the
//! gaps at the end and renumbers the children. Beside each node goes its subtree's
//! triangle range, in an array of the same windows: the CPU's collapse reads the
//! array as it is, gaps and all (no child refers to them), and takes each node's
//! range from there.

use std::sync::Mutex;

use rayon::prelude::*;

use super::memory;
use crate::types::{BvhChild, BvhNode};

/// A window of the node array that a subtree fills from the front, and of the
/// array of each node's triangle range beside it.
pub(super) struct NodeWindow<'a> {
    slots: &'a mut [BvhNode],
    ranges: &'a mut [(u32, u32)],
    /// Index of `slots[0]` in the whole array.
    base: usize,
    /// Slots used so far.
    len: usize,
    /// Unused runs `(first, count)` left behind by parallel builds.
    gaps: &'a Mutex<Vec<(usize, usize)>>,
}

impl<'a> NodeWindow<'a> {
    /// A window over the whole array.
    pub(super) fn new(
        slots: &'a mut [BvhNode],
        ranges: &'a mut [(u32, u32)],
        gaps: &'a Mutex<Vec<(usize, usize)>>,
    ) -> Self {
        Self {
            slots,
            ranges,
            base: 0,
            len: 0,
            gaps,
        }
    }

    /// Appends a node over the triangles `range` (first, end); returns its index.
    pub(super) fn push(&mut self, node: BvhNode, range: (u32, u32)) -> usize {
        self.slots[self.len] = node;
        self.ranges[self.len] = range;
        self.len += 1;
        self.base + self.len - 1
    }

    /// Replaces the node at `index` (an index returned by `push`).
    pub(super) fn set(&mut self, index: usize, node: BvhNode) {
        self.slots[index - self.base] = node;
    }

    /// Forgets the nodes from `index` on.
    pub(super) fn truncate(&mut self, index: usize) {
        self.len = index - self.base;
    }

    /// Slots used so far.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Runs `left` and `right` in parallel, each on its own window: `left` on the
    /// next `left_slots` free slots, `right` on the rest. The slots `left` leaves
    /// unused become a gap; afterwards this window ends where `right`'s nodes end.
    pub(super) fn join<A: Send, B: Send>(
        &mut self,
        left_slots: usize,
        left: impl FnOnce(&mut NodeWindow) -> A + Send,
        right: impl FnOnce(&mut NodeWindow) -> B + Send,
    ) -> (A, B) {
        let (left_free, right_free) = self.slots[self.len..].split_at_mut(left_slots);
        let (left_ranges, right_ranges) = self.ranges[self.len..].split_at_mut(left_slots);
        let mut lw = NodeWindow {
            slots: left_free,
            ranges: left_ranges,
            base: self.base + self.len,
            len: 0,
            gaps: self.gaps,
        };
        let mut rw = NodeWindow {
            slots: right_free,
            ranges: right_ranges,
            base: self.base + self.len + left_slots,
            len: 0,
            gaps: self.gaps,
        };
        let (a, b) = rayon::join(|| left(&mut lw), || right(&mut rw));
        let (left_used, right_used) = (lw.len, rw.len);
        if left_used < left_slots {
            let first = self.base + self.len + left_used;
            let gap = (first, left_slots - left_used);
            self.gaps
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(gap);
        }
        self.len += left_slots + right_used;
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
