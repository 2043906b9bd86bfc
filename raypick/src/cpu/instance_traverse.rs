//! Two-level traversal on the CPU, mirroring `shaders/instance_traverse.wgsl`.
//!
//! Per ray: the TLAS is walked like a mesh BVH ([`crate::cpu::bvh_traverse`]): both
//! child boxes of a node tested together, the nearer child taken next, the farther
//! pushed with its entry distance on a fixed stack of [`MAX_DEPTH`] entries and
//! skipped on pop once a nearer hit is known. A TLAS leaf is one instance: the ray
//! is taken into its object space ([`crate::instances::object_ray`]) and its mesh
//! BVH is traversed, limited to the best `t` so far, in the GPU's eight-wide layout,
//! as the eight-wide BVH stage walks it ([`crate::cpu::wide_bvh_traverse`], with the
//! same box tests and triangle test); a ray whose mesh walk would overflow that
//! stage's stack takes the binary traversal there ([`crate::cpu::bvh_traverse`], the
//! walk of the stage's binary meshes), with the same answers. A hit replaces the
//! best one when it is nearer, or equally near with a lower instance index, or the
//! same instance and a lower triangle id: the answer of a naive loop over every
//! instance and triangle, bit for bit, whatever the visiting order.
//!
//! [`trace_ray`] is the oracle and finishes the rays the GPU reports unfinished;
//! the CPU backend runs [`traverse`] with the 8-wide mesh BVH below it.

use crate::options::{Cull, Mode};
use crate::bvh::MAX_DEPTH;
use crate::cpu::bvh_traverse;
use crate::cpu::wide_bvh_traverse::{self, STACK_ENTRIES};
use crate::cpu::bvh_walk::{RayBoxes, pop_pending};
use crate::cpu::intersect::RayFrame;
use crate::instances::InstanceScene;
use crate::types::{BvhChild, BvhNode, Hit, InstanceHitRecord, Ray};

/// Marks a TLAS stack entry that is a leaf (an instance index), not a node.
pub const LEAF_BIT: u32 = 1 << 31;

/// Whether a hit `(t, instance, prim)` beats `best`: nearer, or as near with a
/// lower instance index, or the same instance and a lower triangle id.
#[inline(always)]
pub fn nearer(t: f32, instance: u32, prim: u32, best: &InstanceHitRecord) -> bool {
    t < best.t
        || (t == best.t
            && (instance < best.instance || (instance == best.instance && prim < best.prim)))
}

/// What the top-level walk ([`traverse`]) does at each instance leaf it reaches.
///
/// Closures are visitors too. The CPU backend's vector code uses a type of its own
/// with an `#[inline(always)]` method instead: a closure's body is compiled apart
/// from the function that builds it, without that function's target features, so
/// vector intrinsics in it would become calls.
pub trait InstanceVisit {
    /// Visits instance `index`, updating `best` with any nearer hit it holds.
    fn visit(&mut self, index: u32, best: &mut InstanceHitRecord);
}

impl<F: FnMut(u32, &mut InstanceHitRecord)> InstanceVisit for F {
    #[inline(always)]
    fn visit(&mut self, index: u32, best: &mut InstanceHitRecord) {
        self(index, best)
    }
}

/// Walks the TLAS `nodes` for a (sanitised, live) world ray, calling
/// `visitor.visit(instance, best)` for each instance leaf the ray reaches, nearest
/// first, skipping those that cannot hold a hit nearer than `best`.
#[inline(always)]
pub fn traverse(
    nodes: &[BvhNode],
    ray: &Ray,
    best: &mut InstanceHitRecord,
    mut visitor: impl InstanceVisit,
) {
    if nodes.is_empty() {
        return;
    }
    let boxes = RayBoxes::new(ray, &RayFrame::new(ray));
    let mut stack = [(0u32, 0.0f32); MAX_DEPTH];
    let mut depth = 0;
    let mut next = Some(0u32);
    loop {
        let item = match next.take() {
            Some(item) => item,
            None => match pop_pending(&stack, &mut depth, best.t, |&(_, t)| t) {
                Some((item, _)) => item,
                None => return,
            },
        };
        if item & LEAF_BIT != 0 {
            visitor.visit(item & !LEAF_BIT, best);
            continue;
        }
        let limit = best.t.min(ray.tmax);
        let [a, b] = &nodes[item as usize].children;
        let (ea, eb) = (boxes.enter(a, limit), boxes.enter(b, limit));
        let order = match (ea, eb) {
            (Some(ta), Some(tb)) if tb < ta => [(b, eb), (a, ea)],
            _ => [(a, ea), (b, eb)],
        };
        for (child, entry) in order {
            let Some(entry) = entry else { continue };
            let item = tlas_item(child);
            if next.is_none() {
                next = Some(item);
            } else {
                stack[depth] = (item, entry);
                depth += 1;
            }
        }
    }
}

/// A TLAS child as a stack entry: its node index, or its instance with [`LEAF_BIT`].
#[inline(always)]
fn tlas_item(child: &BvhChild) -> u32 {
    if child.is_leaf() {
        child.index | LEAF_BIT
    } else {
        child.index
    }
}

/// The ray of instance `index` in object space, limited to `best.t`, if it can hit
/// anything.
#[inline(always)]
pub(crate) fn instance_ray(
    scene: &InstanceScene,
    index: u32,
    ray: &Ray,
    best: &InstanceHitRecord,
) -> Option<Ray> {
    let limited = Ray {
        tmax: ray.tmax.min(best.t),
        ..*ray
    };
    scene.object_ray(index as usize, &limited)
}

/// Keeps `hit` (of instance `index`) if it beats `best`.
#[inline(always)]
pub(crate) fn merge(index: u32, hit: &Hit, best: &mut InstanceHitRecord) {
    if hit.is_hit() && nearer(hit.t, index, hit.prim, best) {
        *best = InstanceHitRecord {
            t: hit.t,
            u: hit.u,
            v: hit.v,
            prim: hit.prim,
            instance: index,
            ..InstanceHitRecord::MISS
        };
    }
}

/// Nearest hit of one world ray (already sanitised: [`crate::prepare::sanitize_ray`]);
/// `cull` is a `crate::Cull`, `mode` is a `crate::Mode`.
pub fn trace_ray(scene: &InstanceScene, ray: &Ray, cull: Cull, mode: Mode) -> InstanceHitRecord {
    let mut best = InstanceHitRecord::MISS;
    if ray.dir == glam::Vec3::ZERO {
        return best; // an invalid ray
    }
    traverse(scene.tlas_nodes(), ray, &mut best, |index: u32, best: &mut InstanceHitRecord| {
        if let Some(local) = instance_ray(scene, index, ray, best) {
            let blas = scene.blas_of(index as usize);
            let (bvh, test) = (blas.bvh(), (cull, mode));
            let hit = wide_bvh_traverse::trace_ray(
                blas.gpu_wide(),
                bvh.triangles(),
                &local,
                test,
                STACK_ENTRIES,
            )
            .unwrap_or_else(|| bvh_traverse::trace_ray(bvh, &local, cull, mode));
            merge(index, &hit, best);
        }
    });
    best
}
