//! Several rays' walks through the wide BVH taken a step each in turn on one
//! thread ([`interleave`]).
//!
//! A lone incoherent ray spends most of its time waiting on the memory system:
//! each step's node or leaf is known only at the end of the step before, and
//! the next one cannot start before it arrives. Interleaved, a walk asks for its
//! next node or leaf at the end of its step (a prefetch) and the other walks take
//! their steps while it comes. Mixed up this way, the order of a node's children
//! defeats the branch predictor, so interleaved walks order them without branches
//! ([`Walk::step`]'s `SORTED`). Each walk runs on a stack of its own; its visits
//! can differ from a lone walk's only in the order of children entered at nearly
//! the same distance, and the nearest hit with its tie rule (and any hit, and the
//! sorted list) does not depend on the order: each ray gets the same answer as
//! alone, bit for bit.

use super::query::Collect;
use super::vector::Lanes8;
use super::wide_bvh::WideBvh;
use super::wide_traverse::{Stack, Walk};
use crate::options::Cull;
use crate::types::Ray;

/// Walks in progress at once on one thread: enough that the loads of one walk's
/// next node arrive while the others step, few enough that the walks' state and
/// the tops of their stacks stay in the first-level cache.
pub(crate) const INTERLEAVED: usize = 8;

/// A lane of walks: the walk, and while it is on, the slot its answer goes to and
/// what it has collected (`None` once the walk is over and the lane free).
struct Lane<L: Lanes8, C> {
    walk: Walk<L>,
    on: Option<(usize, C)>,
}

/// Collects the hits of the rays `walks` names, each with the collector it comes
/// with (the ray `rays[slot]` of each `(slot, collector)`), up to [`INTERLEAVED`]
/// walks at a time, each on its own stack of `stacks`, and hands each collector to
/// `answer` with its slot once its walk is over (in the order the walks end). An
/// invalid ray's collector is handed back at once, with nothing collected.
#[inline(always)]
pub(super) fn interleave<L: Lanes8, const WATERTIGHT: bool, C: Collect>(
    wide: &WideBvh,
    rays: &[Ray],
    walks: impl Iterator<Item = (usize, C)>,
    cull: Cull,
    stacks: &mut [Stack; INTERLEAVED],
    mut answer: impl FnMut(usize, C),
) {
    // The steps go through a function, not a closure: a closure may be compiled
    // apart from the dispatched caller, without its vector unit.
    let mut lanes: [Option<Lane<L, C>>; INTERLEAVED] = [const { None }; INTERLEAVED];
    let mut next = 0;
    for (slot, collect) in walks {
        let ray = &rays[slot];
        if !Walk::<L>::walks(wide, ray) {
            answer(slot, collect);
            continue;
        }
        loop {
            let i = next;
            next = (next + 1) % INTERLEAVED;
            if step::<L, WATERTIGHT, C>(wide, cull, &mut lanes[i], &mut stacks[i], &mut answer) {
                // A lane that has walked keeps its place, taken again in place.
                match &mut lanes[i] {
                    Some(lane) => {
                        lane.walk.restart(wide, ray, collect.bound());
                        lane.on = Some((slot, collect));
                    }
                    None => {
                        let walk = Walk::<L>::new(wide, ray, collect.bound());
                        lanes[i] = Some(Lane { walk, on: Some((slot, collect)) });
                    }
                }
                break;
            }
        }
    }
    while lanes.iter().flatten().any(|lane| lane.on.is_some()) {
        for (lane, stack) in lanes.iter_mut().zip(stacks.iter_mut()) {
            step::<L, WATERTIGHT, C>(wide, cull, lane, stack, &mut answer);
        }
    }
}

/// Steps the walk in `lane`, whose stack is `stack`; when it is over, hands its
/// collector to `answer` and frees the lane. `true` when the lane is (now) free.
#[inline(always)]
fn step<L: Lanes8, const WATERTIGHT: bool, C: Collect>(
    wide: &WideBvh,
    cull: Cull,
    lane: &mut Option<Lane<L, C>>,
    stack: &mut Stack,
    answer: &mut impl FnMut(usize, C),
) -> bool {
    let Some(Lane { walk, on }) = lane else {
        return true;
    };
    let Some((_, collect)) = on else {
        return true;
    };
    if walk.step::<WATERTIGHT, true>(walk.test(), wide, cull, collect, stack, &mut ()) {
        return false;
    }
    if let Some((slot, collect)) = on.take() {
        answer(slot, collect);
    }
    true
}
