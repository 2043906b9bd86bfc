//! The node array under construction, shared by parallel subtree builds without
//! copying.
//!
//! A subtree of `n` triangles has at most `n - 1` interior nodes, so the array is
//! allocated once with `n - 1` slots (zeroed lazily by the system) and every
//! subtree gets a window of that size for its nodes, which it fills from the front
//! in depth-first order. When two subtrees are built in parallel, the left one's
//! unused slots leave a gap before the right one's window; [`compact`] closes the
//! gaps at the end, in place, and renumbers the children.

use std::sync::Mutex;

use rayon::prelude::*;

use crate::types::{BvhChild, BvhNode};

/// A window of the node array that a subtree fills from the front.
pub(super) struct NodeWindow<'a> {
    slots: &'a mut [BvhNode],
    /// Index of `slots[0]` in the whole array.
    base: usize,
    /// Slots used so far.
    len: usize,
    /// Unused runs `(first, count)` left behind by parallel builds.
    gaps: &'a Mutex<Vec<(usize, usize)>>,
}

impl<'a> NodeWindow<'a> {
    /// A window over the whole array.
    pub(super) fn new(slots: &'a mut [BvhNode], gaps: &'a Mutex<Vec<(usize, usize)>>) -> Self {
        Self {
            slots,
            base: 0,
            len: 0,
            gaps,
        }
    }

    /// Appends a node; returns its index.
    pub(super) fn push(&mut self, node: BvhNode) -> usize {
        self.slots[self.len] = node;
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
        let free = &mut self.slots[self.len..];
        let (left_free, right_free) = free.split_at_mut(left_slots);
        let mut lw = NodeWindow {
            slots: left_free,
            base: self.base + self.len,
            len: 0,
            gaps: self.gaps,
        };
        let mut rw = NodeWindow {
            slots: right_free,
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

/// Removes the `gaps` from `nodes[..end]` and renumbers the interior children, in
/// place: each kept run moves down over the gaps before it (one sequential copy;
/// a run's new place lies in those gaps and its own old place, which no later run
/// still needs), then the children are renumbered in parallel.
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
    // Kept runs: (first, end, shift).
    let mut runs = Vec::with_capacity(gaps.len() + 1);
    let (mut start, mut shift) = (0, 0);
    for &(first, count) in &gaps {
        runs.push((start, first, shift));
        start = first + count;
        shift += count;
    }
    runs.push((start, end, shift));
    for &(first, end, shift) in &runs {
        nodes.copy_within(first..end, first - shift);
    }
    nodes.truncate(end - shift);
    // Large allocations shrink in place (no copy).
    nodes.shrink_to_fit();
    let renumber = |index: u32| {
        let index = index as usize;
        let run = runs.partition_point(|&(first, _, _)| first <= index) - 1;
        (index - runs[run].2) as u32
    };
    nodes.par_chunks_mut(4096).for_each(|chunk| {
        for child in chunk.iter_mut().flat_map(|node| &mut node.children) {
            if is_interior(child) {
                child.index = renumber(child.index);
            }
        }
    });
    nodes
}

/// Whether a child slot refers to a node.
pub(super) fn is_interior(child: &BvhChild) -> bool {
    !child.is_leaf() && !child.is_empty()
}
