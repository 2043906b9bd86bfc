//! The steps of a mesh BVH walk that the BVH and instance traversals share, mirroring
//! `shaders/bvh_walk.wgsl`: the box test of a child ([`RayBoxes`]), popping the stack
//! to the nearest entry that can still change the answer ([`pop_pending`]), and the
//! order of hits ([`nearer`]).

use super::intersect::{RayFrame, beyond, overlaps};
use crate::types::{BvhChild, Hit, Ray};

/// Per-ray values the box test needs.
///
/// Like the triangle tests, box tests run on the direction scaled by a power of two
/// ([`RayFrame::dir`]): their distances are in its units (the interval is scaled
/// into them, the entry distance back out), so that huge and tiny directions neither
/// overflow `1 / dir` nor make [`BIG`](super::intersect::BIG) a distance real hits reach.
#[derive(Clone, Copy, Debug)]
pub struct RayBoxes {
    origin: glam::Vec3,
    inv_dir: glam::Vec3,
    tmin: f32,
    to_frame: f32,
    t_scale: f32,
}

impl RayBoxes {
    /// Takes `1 / dir` of the scaled direction from the frame
    /// ([`RayFrame::inv_dir`]).
    #[inline(always)]
    pub fn new(ray: &Ray, frame: &RayFrame) -> Self {
        let to_frame = frame.inv_t_scale();
        Self {
            origin: ray.origin,
            inv_dir: frame.inv_dir.into(),
            tmin: ray.tmin * to_frame,
            to_frame,
            t_scale: frame.t_scale,
        }
    }

    /// Entry distance into `child`'s box if the ray overlaps it within
    /// `[tmin, limit]` (conservatively), else `None` (also for an empty slot).
    #[inline(always)]
    pub fn enter(&self, child: &BvhChild, limit: f32) -> Option<f32> {
        if child.is_empty() {
            return None;
        }
        let t0 = (child.lo - self.origin) * self.inv_dir;
        let t1 = (child.hi - self.origin) * self.inv_dir;
        let near = t0.min(t1).max_element().max(self.tmin);
        let far = t0.max(t1).min_element().min(limit * self.to_frame);
        overlaps(near, far).then_some(near * self.t_scale)
    }
}

/// Pops pending entries of `stack[..*depth]` until one whose box is not
/// [`beyond`] `bound` (`entry` gives an entry's distance); `None` once the stack is
/// empty. The traversals' way to the nearest pending subtree that can still change
/// the answer.
#[inline(always)]
pub fn pop_pending<T: Copy>(
    stack: &[T],
    depth: &mut usize,
    bound: f32,
    entry: impl Fn(&T) -> f32,
) -> Option<T> {
    pop_until(stack, depth, |top| !beyond(entry(top), bound))
}

/// Pops entries of `stack[..*depth]` until one that is `worth` visiting, which it
/// returns (`depth` left at it); `None` once the stack is empty. [`pop_pending`]'s
/// loop, for stacks that keep their entries' distances in their own form.
#[inline(always)]
pub fn pop_until<T: Copy>(stack: &[T], depth: &mut usize, worth: impl Fn(&T) -> bool) -> Option<T> {
    while *depth > 0 {
        *depth -= 1;
        let top = stack[*depth];
        if worth(&top) {
            return Some(top);
        }
    }
    None
}

/// Whether `candidate` (t, id) beats `best`: nearer, or as near with a lower id.
#[inline(always)]
pub fn nearer(t: f32, id: u32, best: &Hit) -> bool {
    t < best.t || (t == best.t && id < best.prim)
}
