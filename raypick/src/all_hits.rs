//! The result of the all-hits query: per ray, the nearest hits sorted by `(t, id)`.

use crate::error::{Error, Result};
use crate::types::{Hit, LIST_TRUNCATED};

/// Up to `max_hits` hits per ray, as [`Picker::trace_all`](crate::Picker::trace_all)
/// returns them.
///
/// For each ray: the `max_hits` smallest `(t, triangle id)` pairs among all accepted
/// hits in `[tmin, tmax]` (culling and test as in [`crate::TraceOptions`]), in
/// increasing `t`, ties on equal `t` in increasing id. The list is the same on every
/// backend and acceleration structure, and its first hit is the ray's closest hit.
/// [`AllHits::count`] is the number listed (at most `max_hits`);
/// [`AllHits::is_truncated`] says whether the ray has more hits than were listed.
/// The total number of hits of a truncated ray is not computed: the BVH skips
/// subtrees that cannot hold one of the `max_hits` nearest.
#[derive(Clone, Debug, PartialEq)]
pub struct AllHits {
    max_hits: usize,
    slots: Vec<Hit>,
    states: Vec<u32>,
}

impl AllHits {
    /// Room for `rays` rays of `max_hits` slots each, all [`Hit::MISS`] with nothing
    /// listed. Fails when `max_hits` is 0 or the slots would not fit in memory's
    /// address range.
    pub(crate) fn new(rays: usize, max_hits: usize) -> Result<Self> {
        if max_hits == 0 {
            return Err(Error::InvalidArgument("max_hits must be at least 1".into()));
        }
        if max_hits > (LIST_TRUNCATED - 1) as usize {
            return Err(Error::InvalidArgument(format!(
                "max_hits {max_hits} is more than {} slots per ray",
                LIST_TRUNCATED - 1
            )));
        }
        let slots = rays
            .checked_mul(max_hits)
            .filter(|n| n.checked_mul(std::mem::size_of::<Hit>()).is_some())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{rays} rays × {max_hits} hits do not fit in memory"
                ))
            })?;
        Ok(Self {
            max_hits,
            slots: vec![Hit::MISS; slots],
            states: vec![0; rays],
        })
    }

    /// Slots per ray.
    pub fn max_hits(&self) -> usize {
        self.max_hits
    }

    /// Number of rays.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether there are no rays.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The hits of ray `ray`, nearest first (empty for a miss).
    ///
    /// # Panics
    /// If `ray >= self.len()`.
    pub fn hits_of(&self, ray: usize) -> &[Hit] {
        let first = ray * self.max_hits;
        &self.slots[first..first + self.count(ray)]
    }

    /// Number of hits listed for ray `ray` (at most [`AllHits::max_hits`]).
    pub fn count(&self, ray: usize) -> usize {
        (self.states[ray] & !LIST_TRUNCATED) as usize
    }

    /// Whether ray `ray` has more hits than [`AllHits::max_hits`] (those beyond the
    /// list were left out).
    pub fn is_truncated(&self, ray: usize) -> bool {
        self.states[ray] & LIST_TRUNCATED != 0
    }

    /// Every slot: `max_hits` per ray in ray order, the unused ones [`Hit::MISS`].
    pub fn slots(&self) -> &[Hit] {
        &self.slots
    }

    /// Slots and list states, for the kernels that fill them.
    pub(crate) fn parts_mut(&mut self) -> (&mut [Hit], &mut [u32]) {
        (&mut self.slots, &mut self.states)
    }
}
