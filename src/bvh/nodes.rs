//! The node array under construction, shared by parallel subtree builds without
//! copying.
//!
//! A subtree of `n` triangles has at most `n - 1` interior nodes, so the array is
//! allocated once with `n - 1` slots (zeroed lazily by the system) and every
//! subtree gets a window of that size for its nodes, which it fills from the front
//! in depth-first order. When two subtrees are built in parallel, the left one's
//! unused slots leave a gap before the right one's window; [`compact`] closes the
//! gaps at the end and renumbers the children.

use std::sync::Mutex;

use rayon::prelude::*;

use super::memory;
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

/// Removes the `gaps` from `nodes[..end]` and renumbers the interior children: every
/// kept node is copied, renumbered, to its place in a new array, in parallel (each
/// output position finds its kept run by a binary search).
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
    // Kept runs: (first, shift), the shift being the size of the gaps before them.
    let mut runs = Vec::with_capacity(gaps.len() + 1);
    let (mut start, mut shift) = (0, 0);
    for &(first, count) in &gaps {
        runs.push((start, shift));
        start = first + count;
        shift += count;
    }
    runs.push((start, shift));
    let renumber = |index: u32| {
        let index = index as usize;
        let run = runs.partition_point(|&(first, _)| first <= index) - 1;
        (index - runs[run].1) as u32
    };
    let mut compacted = memory::with_capacity(end - shift);
    (0..end - shift)
        .into_par_iter()
        .with_min_len(4096)
        .map(|new| {
            let run = runs.partition_point(|&(first, shift)| first - shift <= new) - 1;
            let mut node = nodes[new + runs[run].1];
            for child in node.children.iter_mut().filter(|c| is_interior(c)) {
                child.index = renumber(child.index);
            }
            node
        })
        .collect_into_vec(&mut compacted);
    compacted
}

/// Whether a child slot refers to a node.
pub(super) fn is_interior(child: &BvhChild) -> bool {
    !child.is_leaf() && !child.is_empty()
}
