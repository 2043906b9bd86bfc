//! Traversal of the CPU's wide BVH ([`WideBvh`]): eight decoded boxes per vector test,
//! the nearest entered child visited next and the others pushed farthest first,
//! leaves tested eight triangles at a time with the brute-force arithmetic.
//!
//! Same answers as [`super::bvh_traverse`] (the mirror of the WGSL traversal) and as
//! brute force: the boxes hold the binary BVH's (padded), the box margin is the same
//! ([`BOX_MARGIN`](super::intersect::BOX_MARGIN)), and a hit replaces the best one
//! when nearer or equally near with a lower triangle id.
//!
//! Generic over what is kept ([`Collect`]), like [`super::bvh_traverse`]: the
//! nearest hit ([`trace_rays`]), any hit ([`occluded_rays`]) or the sorted list of
//! the nearest hits ([`collect_rays`]). [`trace_rays`] sends groups of rays that
//! share an origin through the packet traversal (module `packet_traverse`), which
//! shares each node's fetch and decode among them and gives the same answers.

use super::brute_force::offer_block;
use super::bvh_walk::pop_pending;
use super::hit_list::HitList;
use super::intersect::{RayFrame, lanes, overlaps};
use super::packet_traverse::{PACKET, PacketStack, coherent, trace_packet};
use super::query::{AnyHit, Closest, Collect};
use super::simd::simd_dispatch;
use super::wide_bvh::{EMPTY, ExactBoxes, WIDTH, WideBvh};
use crate::options::{Cull, Mode};
use crate::bvh::MAX_DEPTH;
use crate::prepare::is_valid_ray;
use crate::types::{Hit, MISS, Ray};

/// Pending children: at most `WIDTH - 1` per level of a tree at most `MAX_DEPTH` deep,
/// plus the root.
const STACK: usize = MAX_DEPTH * (WIDTH - 1) + 1;

#[inline(always)]
fn fmax(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[inline(always)]
fn fmin(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// The pending children of one ray; one per batch of rays, so that it is not
/// initialised again for every ray (its entries are written before they are read).
type Stack = [Pending; STACK];

/// A pending child: wide node index or first leaf block, leaf block count (0 for a
/// node), entry distance.
#[derive(Clone, Copy, Default)]
struct Pending {
    child: u32,
    blocks: u32,
    entry: f32,
}

/// Offers the hits of one valid ray ([`is_valid_ray`]) to `collect`
/// until it says stop; `stack` is scratch space.
#[inline(always)]
fn traverse<const WATERTIGHT: bool>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    collect: &mut impl Collect,
    stack: &mut Stack,
) {
    if wide.nodes.is_empty() {
        return;
    }
    let o = ray.origin;
    // Box distances in units of the scaled direction, as in `bvh_traverse`.
    let frame = RayFrame::new(ray);
    let dir = glam::Vec3::from(frame.dir);
    let inv = glam::Vec3::from(frame.inv_dir);
    let (to_frame, t_scale) = (1.0 / frame.t_scale, frame.t_scale);
    let tmin = ray.tmin * to_frame;
    // From the scaled direction, whose tiny components may have become -0.0 (whose
    // `1 / dir` is the positive BIG).
    let negative = [dir.x < 0.0, dir.y < 0.0, dir.z < 0.0];
    let mut depth = 0;
    // The child to visit next: the nearest entered child of the last node, taken
    // without a trip through the stack (no nearer hit can have been found since its
    // box test), or else the nearest pending one that can still change the answer.
    let mut next = Some(Pending {
        child: 0,
        blocks: 0,
        entry: ray.tmin,
    });
    loop {
        let top = match next.take() {
            Some(top) => top,
            None => match pop_pending(stack, &mut depth, collect.bound(), |p| p.entry) {
                Some(top) => top,
                None => return,
            },
        };
        if top.blocks > 0 {
            if offer_leaf::<WATERTIGHT>(wide, top.child, top.blocks, ray, &frame, cull, collect) {
                return;
            }
            continue;
        }
        let node = &wide.nodes[top.child as usize];
        let boxes = wide.boxes(node);
        let limit = fmin(collect.bound(), ray.tmax) * to_frame;
        let mut near = [0.0f32; WIDTH];
        let mut entered = 0u32;
        let planes = |axis: usize| {
            if negative[axis] {
                (&boxes.hi[axis], &boxes.lo[axis])
            } else {
                (&boxes.lo[axis], &boxes.hi[axis])
            }
        };
        let ((nx, fx), (ny, fy), (nz, fz)) = (planes(0), planes(1), planes(2));
        for lane in 0..WIDTH {
            let tn = fmax(
                fmax((nx[lane] - o.x) * inv.x, (ny[lane] - o.y) * inv.y),
                fmax((nz[lane] - o.z) * inv.z, tmin),
            );
            let tf = fmin(
                fmin((fx[lane] - o.x) * inv.x, (fy[lane] - o.y) * inv.y),
                fmin((fz[lane] - o.z) * inv.z, limit),
            );
            near[lane] = tn * t_scale;
            let enter = overlaps(tn, tf) & (node.child[lane] != EMPTY);
            entered |= (enter as u32) << lane;
        }
        let pending = |lane: usize| Pending {
            child: node.child[lane],
            blocks: node.blocks[lane] as u32,
            entry: near[lane],
        };
        if entered == 0 {
            continue;
        }
        // Order the entered children nearest first, push all but the nearest farthest
        // first, and visit the nearest next.
        let mut order = [0usize; WIDTH];
        let count = nearest_first(entered, &near, &mut order);
        for &lane in order[1..count].iter().rev() {
            stack[depth] = pending(lane);
            depth += 1;
        }
        next = Some(pending(order[0]));
    }
}

/// One ray's slab tests against the eight child boxes of a node, for the packets.
/// [`traverse`] writes the same test out in place (with the same arithmetic): called
/// from there, this form measured some 10% slower on incoherent rays.
pub(super) struct Slabs {
    /// `1 / dir` of the scaled direction.
    inv: [f32; 3],
    /// Which direction components are negative: those axes enter at the box maximum.
    negative: [bool; 3],
    /// `tmin` in units of the scaled direction.
    tmin: f32,
    /// Frame units to the caller's (`t_scale`) and back.
    t_scale: f32,
    to_frame: f32,
    tmax: f32,
}

impl Slabs {
    #[inline(always)]
    pub(super) fn new(ray: &Ray, frame: &RayFrame) -> Self {
        // Box distances in units of the scaled direction, as in `bvh_traverse`. The
        // signs come from the scaled direction, whose tiny components may have become
        // -0.0 (whose `1 / dir` is the positive BIG).
        let to_frame = 1.0 / frame.t_scale;
        Self {
            inv: frame.inv_dir,
            negative: frame.dir.map(|d| d < 0.0),
            tmin: ray.tmin * to_frame,
            t_scale: frame.t_scale,
            to_frame,
            tmax: ray.tmax,
        }
    }

    /// The children whose `boxes` (taken relative to `origin`) the ray enters before
    /// `bound` (in the caller's units) as a lane mask, and every lane's entry
    /// distance (in the caller's units).
    #[inline(always)]
    pub(super) fn enter(
        &self,
        boxes: &ExactBoxes,
        origin: glam::Vec3,
        bound: f32,
        child: &[u32; WIDTH],
    ) -> (u32, [f32; WIDTH]) {
        let limit = fmin(bound, self.tmax) * self.to_frame;
        let planes = |axis: usize| {
            if self.negative[axis] {
                (&boxes.hi[axis], &boxes.lo[axis])
            } else {
                (&boxes.lo[axis], &boxes.hi[axis])
            }
        };
        let ((nx, fx), (ny, fy), (nz, fz)) = (planes(0), planes(1), planes(2));
        let [ix, iy, iz] = self.inv;
        let o = origin;
        let mut near = [0.0f32; WIDTH];
        let mut entered = 0u32;
        for lane in 0..WIDTH {
            let tn = fmax(
                fmax((nx[lane] - o.x) * ix, (ny[lane] - o.y) * iy),
                fmax((nz[lane] - o.z) * iz, self.tmin),
            );
            let tf = fmin(
                fmin((fx[lane] - o.x) * ix, (fy[lane] - o.y) * iy),
                fmin((fz[lane] - o.z) * iz, limit),
            );
            near[lane] = tn * self.t_scale;
            let enter = overlaps(tn, tf) & (child[lane] != EMPTY);
            entered |= (enter as u32) << lane;
        }
        (entered, near)
    }
}

/// Writes the lanes of `entered` to `order`, nearest first by `near` (insertion into
/// a list that is usually one to three long); returns how many there are.
#[inline(always)]
pub(super) fn nearest_first(
    entered: u32,
    near: &[f32; WIDTH],
    order: &mut [usize; WIDTH],
) -> usize {
    let mut count = 0;
    for lane in lanes(entered) {
        let mut i = count;
        while i > 0 && near[order[i - 1]] > near[lane] {
            order[i] = order[i - 1];
            i -= 1;
        }
        order[i] = lane;
        count += 1;
    }
    count
}

/// Offers the hits in `blocks` leaf blocks from `first` on to `collect`; `true` when
/// it says stop.
#[inline(always)]
pub(super) fn offer_leaf<const WATERTIGHT: bool>(
    wide: &WideBvh,
    first: u32,
    blocks: u32,
    ray: &Ray,
    frame: &RayFrame,
    cull: Cull,
    collect: &mut impl Collect,
) -> bool {
    let first = first as usize;
    for block in &wide.blocks[first..first + blocks as usize] {
        let prim = |lane: usize| block.id[lane];
        if offer_block::<WIDTH, WATERTIGHT>(&block.triangles, ray, frame, cull, prim, collect) {
            return true;
        }
    }
    false
}

/// Nearest hit of one valid ray.
#[inline(always)]
fn trace_ray<const WATERTIGHT: bool>(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    stack: &mut Stack,
) -> Hit {
    let mut closest = Closest::default();
    traverse::<WATERTIGHT>(wide, ray, cull, &mut closest, stack);
    closest.0
}

thread_local! {
    /// Each thread's pending-children stack, made once: a call that traces a few
    /// rays (a pick) would otherwise spend a good part of its time filling a new one.
    static THREAD_STACK: std::cell::RefCell<Stack> = const {
        std::cell::RefCell::new([Pending { child: 0, blocks: 0, entry: 0.0 }; STACK])
    };
}

/// Runs `f` with this thread's stack (a new one if `f` somehow runs inside another
/// call's).
#[inline(always)]
fn with_stack<R>(f: impl FnOnce(&mut Stack) -> R) -> R {
    THREAD_STACK.with(|cell| match cell.try_borrow_mut() {
        Ok(mut stack) => f(&mut stack),
        Err(_) => f(&mut [Pending::default(); STACK]),
    })
}

/// Scratch space of the lone-ray traversal for callers that trace one ray at a time
/// ([`trace_one`]): made once for many rays, like the stack of [`trace_rays`].
pub(crate) struct RayStack(Stack);

impl Default for RayStack {
    fn default() -> Self {
        Self([Pending::default(); STACK])
    }
}

/// Nearest hit of one ray (`Hit::MISS` for an invalid one), with `stack` as scratch.
/// Inlined into the caller, so it runs on the vector unit the caller was compiled
/// for (call it from a [`simd_dispatch`]ed loop).
#[inline(always)]
pub(crate) fn trace_one(
    wide: &WideBvh,
    ray: &Ray,
    cull: Cull,
    mode: Mode,
    stack: &mut RayStack,
) -> Hit {
    if !is_valid_ray(ray) {
        Hit::MISS
    } else if mode == Mode::Watertight {
        trace_ray::<true>(wide, ray, cull, &mut stack.0)
    } else {
        trace_ray::<false>(wide, ray, cull, &mut stack.0)
    }
}

#[inline(always)]
fn trace_rays_with<const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    hits: &mut [Hit],
    cull: Cull,
) {
    with_stack(|stack| trace_rays_on::<WATERTIGHT>(wide, rays, hits, cull, stack));
}

/// [`trace_rays_with`] on a given stack.
#[inline(always)]
fn trace_rays_on<const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    hits: &mut [Hit],
    cull: Cull,
    stack: &mut Stack,
) {
    let mut packet_stack = PacketStack::default();
    for (rays, hits) in rays.chunks(PACKET).zip(hits.chunks_mut(PACKET)) {
        if let (Ok(group), Ok(out)) = (
            <&[Ray; PACKET]>::try_from(rays),
            <&mut [Hit; PACKET]>::try_from(&mut *hits),
        ) && coherent(group)
        {
            let mut closest = std::array::from_fn(|_| Closest::default());
            trace_packet::<WATERTIGHT>(wide, group, cull, &mut closest, &mut packet_stack);
            *out = closest.map(|c| c.0);
            continue;
        }
        for (ray, hit) in rays.iter().zip(hits) {
            *hit = if is_valid_ray(ray) {
                trace_ray::<WATERTIGHT>(wide, ray, cull, stack)
            } else {
                Hit::MISS
            };
        }
    }
}

#[inline(always)]
fn trace_rays_portable(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], cull: Cull, mode: Mode) {
    if mode == Mode::Watertight {
        trace_rays_with::<true>(wide, rays, hits, cull);
    } else {
        trace_rays_with::<false>(wide, rays, hits, cull);
    }
}

simd_dispatch! {
    /// Traces `rays` into `hits` (one slot per ray) on the calling thread, with the
    /// widest vector unit the CPU has; `cull` is a `crate::Cull`, `mode` is
    /// a `crate::Mode`.
    pub fn trace_rays(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], cull: Cull, mode: Mode) => trace_rays_portable
}

#[inline(always)]
fn occluded_rays_with<const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
) {
    with_stack(|stack| {
        for (ray, out) in rays.iter().zip(occluded) {
            let mut any = AnyHit::default();
            if is_valid_ray(ray) {
                traverse::<WATERTIGHT>(wide, ray, cull, &mut any, stack);
            }
            *out = any.0;
        }
    });
}

#[inline(always)]
fn occluded_rays_portable(
    wide: &WideBvh,
    rays: &[Ray],
    occluded: &mut [bool],
    cull: Cull,
    mode: Mode,
) {
    if mode == Mode::Watertight {
        occluded_rays_with::<true>(wide, rays, occluded, cull);
    } else {
        occluded_rays_with::<false>(wide, rays, occluded, cull);
    }
}

simd_dispatch! {
    /// Writes whether each ray hits anything (`occluded.len()` must equal
    /// `rays.len()`); each ray stops at its first accepted hit.
    pub fn occluded_rays(wide: &WideBvh, rays: &[Ray], occluded: &mut [bool], cull: Cull, mode: Mode) => occluded_rays_portable
}

#[inline(always)]
fn collect_rays_with<const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
    cull: Cull,
) {
    let k = (slots.len() / rays.len().max(1)).max(1);
    with_stack(|stack| {
        for ((ray, slots), state) in rays.iter().zip(slots.chunks_exact_mut(k)).zip(states) {
            let mut list = HitList::new(slots, 0);
            if is_valid_ray(ray) {
                traverse::<WATERTIGHT>(wide, ray, cull, &mut list, stack);
            }
            *state = list.state();
        }
    });
}

#[inline(always)]
fn collect_rays_portable(
    wide: &WideBvh,
    rays: &[Ray],
    slots: &mut [Hit],
    states: &mut [u32],
    cull: Cull,
    mode: Mode,
) {
    if mode == Mode::Watertight {
        collect_rays_with::<true>(wide, rays, slots, states, cull);
    } else {
        collect_rays_with::<false>(wide, rays, slots, states, cull);
    }
}

simd_dispatch! {
    /// Lists each ray's nearest hits: `slots` holds `k >= 1` MISS-filled slots per ray
    /// (`slots.len() == k * rays.len()`), `states` one list state per ray (see
    /// [`HitList`]).
    pub fn collect_rays(wide: &WideBvh, rays: &[Ray], slots: &mut [Hit], states: &mut [u32], cull: Cull, mode: Mode) => collect_rays_portable
}

const _: () = assert!(MISS == u32::MAX);
