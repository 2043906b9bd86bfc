//! Packets of coherent rays through the CPU's wide BVH: for nearest hits,
//! [`PACKET`] rays that share an origin and a direction octant (a camera's
//! neighbouring pixels) visit the tree together.
//!
//! A node's planes are fetched once for the whole packet; then each
//! child box is tested against every ray at once, the rays across the vector lanes,
//! each ray with its own bound and with the operations [`super::wide_traverse`]
//! uses for a lone ray ([`PacketSlabs`]), so it enters the same boxes at the same
//! distances. Rays whose tests cannot be shared (a direction component that scaling
//! made -0.0 in some of them, distances too large for the folded test) are traced
//! alone. A child is visited by the rays that entered it (a mask of rays), and
//! every ray tests a leaf with the same arithmetic as a lone ray. The nearest hit
//! (ties to the lowest triangle id) does not depend on the order in which leaves
//! are tested, so the answers are bit for bit those of the lone-ray traversal; only
//! the work is shared.

use super::intersect::{RayFrame, beyond_lanes, lanes};
use super::query::{Closest, Collect};
use super::vector::Lanes8;
use super::wide_boxes::{PACKET_RAYS, PacketSlabs, load_rows};
use super::wide_bvh::{WIDTH, WideBvh};
use super::wide_traverse::{offer_leaf, prefetch};
use crate::options::Cull;
use crate::types::Ray;

/// Rays per packet: sixteen neighbouring rays of a camera share most of their path.
pub const PACKET: usize = PACKET_RAYS;

/// A child pending for some rays of the packet: wide node index or first leaf
/// block, leaf block count (0 for a node), the rays that entered it (bit `r` for
/// ray `r`) and each ray's entry distance.
#[derive(Clone, Copy)]
struct Pending {
    child: u32,
    blocks: u32,
    rays: u32,
    entry: [f32; PACKET],
}

impl Pending {
    const ROOT: Pending = Pending {
        child: 0,
        blocks: 0,
        rays: u32::MAX >> (32 - PACKET),
        entry: [f32::NEG_INFINITY; PACKET],
    };
}

/// The pending children of one packet; one per batch of rays, so that its memory
/// is reused by every packet of the batch (and none is allocated without packets).
#[derive(Default)]
pub(super) struct PacketStack(Vec<Pending>);

/// The nearest hits of a packet of rays, written to `closest`; `false` (and nothing
/// written) when the rays are not one packet or cannot share their box tests
/// ([`PacketSlabs::for_rays`]: some ray invalid or from another origin, a
/// direction component of different signs, or some ray outside the folded test's
/// range), to be traced alone instead.
#[inline(always)]
pub(super) fn trace_packet<L: Lanes8, const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray; PACKET],
    cull: Cull,
    closest: &mut [Closest; PACKET],
    stack: &mut PacketStack,
) -> bool {
    if wide.nodes.is_empty() {
        return true;
    }
    let stack = &mut stack.0;
    stack.clear();
    let Some(packet) = PacketSlabs::<L>::for_rays(wide, rays) else {
        return false;
    };
    // Each ray's whole frame, made at its first leaf from the box frame the
    // packet's setup worked out on the lanes: many rays of a camera reach no
    // leaf, and the triangle test's part of the frame is most of its cost.
    let mut frames: [Option<RayFrame>; PACKET] = [None; PACKET];
    // Each ray's bound, kept beside `closest` for the box tests.
    let mut bounds = [0.0f32; PACKET];
    for (bound, closest) in bounds.iter_mut().zip(closest.iter()) {
        *bound = closest.bound();
    }
    // The box tests' limits for `bounds`, made again at the first node after a
    // leaf that moved a bound.
    let mut limits = packet.limits(&bounds);
    let mut bounds_moved = false;
    // Per child of the node visited, each ray's entry (written for the children
    // entered, read only for the rays that entered them).
    let mut entry = [[0.0f32; PACKET]; WIDTH];
    // As for a lone ray: the nearest entered child of the last node is visited next
    // without a trip through the stack.
    let mut next = Some(Pending::ROOT);
    loop {
        let top = match next.take() {
            Some(top) => top,
            None => match pop::<L>(stack, &bounds) {
                Some(top) => top,
                None => return true,
            },
        };
        if top.blocks > 0 {
            for r in lanes(top.rays) {
                let ray = &rays[r];
                let frame = match &mut frames[r] {
                    Some(frame) => frame,
                    none => none.insert(RayFrame::with_boxes(ray, &packet.box_frame(r))),
                };
                offer_leaf::<L, WATERTIGHT>(
                    wide,
                    top.child,
                    top.blocks,
                    ray,
                    frame,
                    cull,
                    &mut closest[r],
                );
                let bound = closest[r].bound();
                bounds_moved |= bound != bounds[r];
                bounds[r] = bound;
            }
            continue;
        }
        if bounds_moved {
            limits = packet.limits(&bounds);
            bounds_moved = false;
        }
        let node = &wide.nodes[top.child as usize];
        let planes = packet.planes(node);
        // Per child, the rays that entered it and the nearest of their entries.
        let mut entered_by = [0u32; WIDTH];
        let mut nearest = [f32::INFINITY; WIDTH];
        // Children entered by any ray.
        let mut entered = 0;
        for lane in lanes(node.occupied as u32 & packet.maybe_entered(&planes, &limits)) {
            let (by_ray, near, nearest_entry) = packet.enter_child(&planes, lane, &limits, top.rays);
            if by_ray == 0 {
                continue;
            }
            entered |= 1 << lane;
            entered_by[lane] = by_ray;
            entry[lane] = near;
            nearest[lane] = nearest_entry;
        }
        if entered == 0 {
            continue;
        }
        let mut order = [0usize; WIDTH];
        let count = nearest_first(entered, &nearest, &mut order);
        let pending = |lane: usize| Pending {
            child: node.child[lane],
            blocks: node.blocks[lane] as u32,
            rays: entered_by[lane],
            entry: entry[lane],
        };
        for &lane in order[1..count].iter().rev() {
            prefetch(wide, node.child[lane], node.blocks[lane] as u32);
            stack.push(pending(lane));
        }
        next = Some(pending(order[0]));
    }
}

/// Pops pending children until one is still wanted by some ray (its entry not
/// beyond that ray's nearest hit so far, `bounds`), keeping only the rays that want
/// it; `None` when the stack is empty.
#[inline(always)]
fn pop<L: Lanes8>(stack: &mut Vec<Pending>, bounds: &[f32; PACKET]) -> Option<Pending> {
    let bounds = load_rows::<L>(bounds);
    while let Some(mut top) = stack.pop() {
        let entry = load_rows::<L>(&top.entry);
        for (h, (entry, bound)) in entry.into_iter().zip(bounds).enumerate() {
            top.rays &= !(beyond_lanes::<L>(entry, bound) << (WIDTH * h));
        }
        if top.rays != 0 {
            return Some(top);
        }
    }
    None
}

/// Writes the lanes of `entered` to `order`, nearest first by `near` (insertion into
/// a list that is usually one to three long); returns how many there are.
#[inline(always)]
fn nearest_first(
    entered: u32,
    near: &[f32; WIDTH],
    order: &mut [usize; WIDTH],
) -> usize {
    if entered.is_power_of_two() {
        // One lane, the most common case: nothing to order.
        order[0] = entered.trailing_zeros() as usize;
        return 1;
    }
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

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;
    use crate::bvh::Bvh;
    use crate::cpu::vector::Portable;
    use crate::cpu::wide_traverse::trace_rays;
    use crate::kit::{self, Rng, fixtures};
    use crate::types::Hit;
    use crate::{Cull, Mode};

    /// Camera rays in groups of [`PACKET`]: most groups travel as packets, and every
    /// ray's hit is the one it gets when traced alone, in every mode and culling.
    #[test]
    fn packets_answer_as_lone_rays() {
        let mut rng = Rng::new(41);
        let mesh = kit::mesh(fixtures::with_degenerates(
            &fixtures::builtin_scene(20_000),
            &mut rng,
            60,
        ));
        let wide = WideBvh::from_bvh(&Bvh::build(&mesh));
        let bounds = mesh.bounds().expect("a finite mesh");
        let mut rays = kit::rays(fixtures::camera_rays(bounds, 96, 64));
        // Bounds around each ray's first hit: stopping just short of it, starting
        // exactly at it, starting just past it.
        let mut first = vec![Hit::MISS; rays.len()];
        trace_rays(&wide, &rays, &mut first, Cull::None, Mode::Watertight);
        for (i, (ray, hit)) in rays.iter_mut().zip(&first).enumerate() {
            match (i % 5, hit.is_hit()) {
                (1, true) => ray.tmax = hit.t * 0.999,
                (2, true) => ray.tmin = hit.t,
                (3, true) => ray.tmin = hit.t * 1.001,
                _ => {}
            }
        }
        let groups: Vec<[Ray; PACKET]> = rays
            .chunks_exact(PACKET)
            .map(|g| <[Ray; PACKET]>::try_from(g).expect("a full group"))
            .collect();
        let packets = groups.iter().filter(|g| PacketSlabs::<Portable>::for_rays(&wide, g).is_some()).count();
        assert!(
            packets * 4 >= groups.len() * 3,
            "{packets} of {} groups travel as packets",
            groups.len()
        );
        for mode in [Mode::Fast, Mode::Watertight] {
            for cull in [Cull::None, Cull::Back, Cull::Front] {
                let (cull, mode) = (cull, mode);
                let mut together = vec![Hit::MISS; rays.len()];
                trace_rays(&wide, &rays, &mut together, cull, mode);
                let mut alone = [Hit::MISS];
                for (ray, hit) in rays.iter().zip(&together) {
                    trace_rays(&wide, std::slice::from_ref(ray), &mut alone, cull, mode);
                    assert_eq!(*hit, alone[0], "{ray:?}, cull {cull}, mode {mode}");
                }
                let hits = together.iter().filter(|h| h.is_hit()).count();
                assert!(
                    hits > rays.len() / 20,
                    "{hits} hits, cull {cull}, mode {mode}"
                );
            }
        }
    }

    /// A group of valid rays from one origin that cannot share their box tests (a
    /// direction component that scaling makes -0.0 in half of them) is traced ray
    /// by ray, with each ray's own answer.
    #[test]
    fn groups_that_cannot_share_box_tests_are_traced_alone() {
        let floor = [Vec3::new(-10.0, 0.0, -10.0), Vec3::new(10.0, 0.0, -10.0), Vec3::new(0.0, 0.0, 10.0)];
        let wide = WideBvh::from_bvh(&Bvh::build(&crate::Mesh::from_triangles(&[floor])));
        let origin = Vec3::new(0.0, 1.0, 0.0);
        // Both point down: the first at the floor, the second nearly level, with a
        // y component of -1e-30 that the frame's scaling (by about 1e-30) makes -0.0.
        let dirs = [Vec3::new(0.1, -1.0, 0.1), Vec3::new(1e30, -1e-30, 1e30)];
        let group: [Ray; PACKET] = std::array::from_fn(|r| Ray::new(origin, dirs[r % 2]));
        assert!(group.iter().all(crate::prepare::is_valid_ray));
        let mut closest = std::array::from_fn(|_| Closest::default());
        let shared = trace_packet::<Portable, true>(
            &wide,
            &group,
            Cull::None,
            &mut closest,
            &mut PacketStack::default(),
        );
        assert!(!shared);
        let mut together = vec![Hit::MISS; PACKET];
        trace_rays(&wide, &group, &mut together, Cull::None, Mode::Watertight);
        for (ray, hit) in group.iter().zip(&together) {
            let mut alone = [Hit::MISS];
            trace_rays(&wide, std::slice::from_ref(ray), &mut alone, Cull::None, Mode::Watertight);
            assert_eq!(*hit, alone[0], "{ray:?}");
        }
        assert!(together.iter().any(|h| h.is_hit()), "{together:?}");
    }

    /// Groups of rays from different origins, of different octants or with an
    /// invalid ray are not packets; `-0.0` and `0.0` are one origin.
    #[test]
    fn mixed_groups_are_not_packets() {
        let wide = WideBvh::from_bvh(&Bvh::build(&kit::mesh(fixtures::builtin_scene(500))));
        let packet = |group: &[Ray; PACKET]| PacketSlabs::<Portable>::for_rays(&wide, group).is_some();
        let ray = |dir: Vec3| Ray::new(Vec3::new(0.5, 1.0, -3.0), dir);
        let group = [ray(Vec3::new(0.1, 0.2, 1.0)); PACKET];
        assert!(packet(&group));
        let mut other_origin = group;
        other_origin[7].origin.x += 1e-3;
        let mut other_octant = group;
        other_octant[3].dir.x = -0.1;
        let mut invalid = group;
        invalid[PACKET - 1].dir = Vec3::ZERO;
        let mut reversed = group;
        reversed[5].tmax = -1.0;
        let mut nan_origin = group;
        nan_origin[0].origin.y = f32::NAN;
        let mut infinite_dir = group;
        infinite_dir[9].dir.z = f32::INFINITY;
        let mut nan_tmin = group;
        nan_tmin[12].tmin = f32::NAN;
        for group in [other_origin, other_octant, invalid, reversed, nan_origin, infinite_dir, nan_tmin] {
            assert!(!packet(&group), "{group:?}");
        }
        let mut signed_zeros = [Ray::new(Vec3::new(0.0, 1.0, -3.0), Vec3::new(0.1, 0.2, 1.0)); PACKET];
        signed_zeros[4].origin.x = -0.0;
        assert!(packet(&signed_zeros));
    }
}
