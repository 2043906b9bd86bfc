//! The sorted hit list of the all-hits query, mirroring `shaders/hit_list.wgsl`.
//!
//! A ray's list is `k` slots holding its nearest hits so far in increasing `(t, id)`
//! order, and a state: the number of hits held, plus [`LIST_TRUNCATED`] once a hit
//! was left out or pushed out of a full list. Every triangle is offered at most once
//! per ray, so the final list is the `k` smallest `(t, id)` pairs whatever the
//! offering order — the same on every engine.

use super::query::Collect;
use crate::types::{Hit, LIST_TRUNCATED};

/// Whether `a` comes before `b`: nearer, or as near with a lower triangle id.
#[inline(always)]
pub fn hit_before(a: &Hit, b: &Hit) -> bool {
    a.t < b.t || (a.t == b.t && a.prim < b.prim)
}

/// One ray's list: its slots (their number is `k`) and its state.
#[derive(Debug)]
pub struct HitList<'a> {
    slots: &'a mut [Hit],
    state: u32,
}

impl<'a> HitList<'a> {
    /// A list over `slots` continuing from `state` (0 for an empty list).
    pub fn new(slots: &'a mut [Hit], state: u32) -> Self {
        Self { slots, state }
    }

    /// The state: number of listed hits, plus [`LIST_TRUNCATED`] when more exist.
    pub fn state(&self) -> u32 {
        self.state
    }

    /// Inserts `hit` in order; returns the number of hits moved one slot down.
    #[inline]
    pub fn insert(&mut self, hit: Hit) -> u32 {
        let k = self.slots.len() as u32;
        let mut count = self.state & !LIST_TRUNCATED;
        if count == k {
            self.state |= LIST_TRUNCATED;
            if !hit_before(&hit, &self.slots[k as usize - 1]) {
                return 0;
            }
            count = k - 1; // the last hit drops out
        }
        let mut slot = count as usize;
        let mut moved = 0;
        while slot > 0 {
            let previous = self.slots[slot - 1];
            if !hit_before(&hit, &previous) {
                break;
            }
            self.slots[slot] = previous;
            slot -= 1;
            moved += 1;
        }
        self.slots[slot] = hit;
        self.state = (self.state & LIST_TRUNCATED) | (count + 1);
        moved
    }

    /// Whether `hit` (the same triangle) is listed already.
    #[inline]
    #[cfg_attr(not(any(test, feature = "kernels")), allow(dead_code))]
    pub fn holds(&self, hit: &Hit) -> bool {
        let count = (self.state & !LIST_TRUNCATED) as usize;
        self.slots[..count].iter().any(|listed| listed.prim == hit.prim)
    }

    /// The largest `t` at which a hit can still enter the list: the last listed
    /// hit's once the list is full and more hits are known to exist, else `+inf`.
    #[inline(always)]
    pub fn bound(&self) -> f32 {
        if self.state & LIST_TRUNCATED != 0 {
            self.slots[self.slots.len() - 1].t
        } else {
            f32::INFINITY
        }
    }
}

impl Collect for HitList<'_> {
    #[inline(always)]
    fn bound(&self) -> f32 {
        HitList::bound(self)
    }

    #[inline(always)]
    fn offer(&mut self, hit: Hit) -> bool {
        self.insert(hit);
        false
    }

    /// Leaves out a triangle listed already (one that dropped out of a full list
    /// does not come back: `k` nearer hits keep it out).
    #[inline]
    fn offer_repeated(&mut self, hit: Hit) -> bool {
        if !self.holds(&hit) {
            self.insert(hit);
        }
        false
    }
}
