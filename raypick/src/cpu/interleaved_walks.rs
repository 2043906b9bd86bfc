//! Several rays' walks through the wide BVH taken a step each in turn on one
//! thread ([`interleave`]).
//!
//! A lone incoherent ray spends most of its time waiting on the memory system:
//! each step's node or leaf is known only at the end of the step before, and
//! the next one cannot start before it arrives. Interleaved, a walk asks for its
//! next node or leaf at the end of its step (a prefetch) and the other walks take
//! their steps while it comes. Each walk takes the steps it would take alone, on a
//! stack of its own, so each ray gets the same answer as alone, bit for bit.

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

/// A lane of walks: the walk, what it has collected, and the slot its answer goes
/// to (`None` once the walk is over and the lane free).
struct Lane<L: Lanes8, C> {
    walk: Walk<L>,
    collect: C,
    slot: Option<usize>,
}

/// Collects the hits of each ray of `rays` named by `slots` (each once), up to
/// [`INTERLEAVED`] walks at a time, each on its own stack of `stacks`, and hands
/// what each collected to `answer` with its slot once its walk is over (in the
/// order the walks end). An invalid ray is answered at once with nothing
/// collected.
#[inline(always)]
pub(super) fn interleave<L: Lanes8, const WATERTIGHT: bool, C: Collect + Default>(
    wide: &WideBvh,
    rays: &[Ray],
    slots: impl Iterator<Item = usize>,
    cull: Cull,
    stacks: &mut [Stack; INTERLEAVED],
    mut answer: impl FnMut(usize, C),
) {
    // The steps go through a function, not a closure: a closure may be compiled
    // apart from the dispatched caller, without its vector unit.
    let mut lanes: [Option<Lane<L, C>>; INTERLEAVED] = [const { None }; INTERLEAVED];
    let mut next = 0;
    for slot in slots {
        let ray = &rays[slot];
        if !Walk::<L>::walks(wide, ray) {
            answer(slot, C::default());
            continue;
        }
        loop {
            let i = next;
            next = (next + 1) % INTERLEAVED;
            if step::<L, WATERTIGHT, C>(wide, cull, &mut lanes[i], &mut stacks[i], &mut answer) {
                // A lane that has walked keeps its place, taken again in place.
                match &mut lanes[i] {
                    Some(lane) => {
                        lane.walk.restart(wide, ray);
                        lane.slot = Some(slot);
                    }
                    None => {
                        let walk = Walk::<L>::new(wide, ray);
                        lanes[i] = Some(Lane { walk, collect: C::default(), slot: Some(slot) });
                    }
                }
                break;
            }
        }
    }
    while lanes.iter().flatten().any(|lane| lane.slot.is_some()) {
        for (lane, stack) in lanes.iter_mut().zip(stacks.iter_mut()) {
            step::<L, WATERTIGHT, C>(wide, cull, lane, stack, &mut answer);
        }
    }
}

/// Steps the walk in `lane`, whose stack is `stack`; when it is over, hands its
/// answer to `answer` and empties the lane. `true` when the lane is (now) empty.
#[inline(always)]
fn step<L: Lanes8, const WATERTIGHT: bool, C: Collect + Default>(
    wide: &WideBvh,
    cull: Cull,
    lane: &mut Option<Lane<L, C>>,
    stack: &mut Stack,
    answer: &mut impl FnMut(usize, C),
) -> bool {
    let Some(Lane { walk, collect, slot }) = lane else {
        return true;
    };
    let Some(ray) = *slot else {
        return true;
    };
    if walk.step::<WATERTIGHT, true>(wide, cull, collect, stack, &mut ()) {
        return false;
    }
    answer(ray, std::mem::take(collect));
    *slot = None;
    true
}
