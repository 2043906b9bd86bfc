//! Traversal of the CPU's wide BVH ([`WideBvh`]): eight boxes per vector test, hit
//! children pushed nearest-last so the nearest is visited first, leaves tested eight
//! triangles at a time with the brute-force arithmetic.
//!
//! Same answers as [`super::bvh_traverse`] (the mirror of the WGSL traversal) and as
//! brute force: the boxes are the binary BVH's (padded), the box margin is the same
//! [`BOX_MARGIN`], and a hit replaces the best one when nearer or equally near with
//! a lower triangle id.

use super::bvh_traverse::{BIG, BOX_MARGIN};
use super::intersect::{MODE_WATERTIGHT, RayFrame, accept};
use super::simd::simd_dispatch;
use super::wide_bvh::{LeafBlock, WIDTH, WideBvh};
use crate::bvh::MAX_DEPTH;
use crate::prepare::sanitize_ray;
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

/// A pending child: wide node index or first leaf block, leaf block count (0 for a
/// node), entry distance.
#[derive(Clone, Copy, Default)]
struct Pending {
    child: u32,
    blocks: u32,
    entry: f32,
}

/// Tests one leaf block; updates `best` with the nearest accepted triangle (ties to
/// the lowest id).
#[inline(always)]
fn test_block<const WATERTIGHT: bool>(
    block: &LeafBlock,
    ray: &Ray,
    frame: &RayFrame,
    cull: u32,
    best: &mut Hit,
) {
    let lanes = block.triangles.test::<WATERTIGHT>(frame);
    let mut t = [0.0f32; WIDTH];
    let mut u = [0.0f32; WIDTH];
    let mut v = [0.0f32; WIDTH];
    let mut ok = [false; WIDTH];
    for lane in 0..WIDTH {
        let (tl, ul, vl, accepted) = accept(lanes.get(lane), ray, frame, cull, f32::INFINITY);
        t[lane] = tl;
        u[lane] = ul;
        v[lane] = vl;
        ok[lane] = accepted;
    }
    if !ok.iter().any(|&b| b) {
        return;
    }
    for lane in 0..WIDTH {
        let id = block.id[lane];
        if ok[lane] && (t[lane] < best.t || (t[lane] == best.t && id < best.prim)) {
            *best = Hit {
                t: t[lane],
                u: u[lane],
                v: v[lane],
                prim: id,
            };
        }
    }
}

/// Nearest hit of one valid (sanitised, non-zero direction) ray.
#[inline(always)]
fn trace_ray<const WATERTIGHT: bool>(wide: &WideBvh, ray: &Ray, cull: u32) -> Hit {
    let mut best = Hit::MISS;
    if wide.nodes.is_empty() {
        return best;
    }
    let o = ray.origin;
    // Box distances in units of the scaled direction, as in `bvh_traverse`.
    let frame = RayFrame::new(ray);
    let dir = glam::Vec3::from(frame.dir);
    let inv = glam::Vec3::select(
        dir.cmpeq(glam::Vec3::ZERO),
        glam::Vec3::splat(BIG),
        1.0 / dir,
    );
    let (to_frame, t_scale) = (1.0 / frame.t_scale, frame.t_scale);
    let tmin = ray.tmin * to_frame;
    // From the scaled direction, whose tiny components may have become -0.0 (whose
    // `1 / dir` is the positive BIG).
    let negative = [dir.x < 0.0, dir.y < 0.0, dir.z < 0.0];
    let mut stack = [Pending::default(); STACK];
    stack[0] = Pending {
        child: 0,
        blocks: 0,
        entry: ray.tmin,
    };
    let mut depth = 1;
    while depth > 0 {
        depth -= 1;
        let top = stack[depth];
        if top.entry - top.entry.abs() * BOX_MARGIN > best.t {
            continue; // a nearer hit is known
        }
        if top.blocks > 0 {
            let first = top.child as usize;
            for block in &wide.blocks[first..first + top.blocks as usize] {
                test_block::<WATERTIGHT>(block, ray, &frame, cull, &mut best);
            }
            continue;
        }
        let node = &wide.nodes[top.child as usize];
        let limit = fmin(best.t, ray.tmax) * to_frame;
        let mut near = [0.0f32; WIDTH];
        let mut enter = [false; WIDTH];
        let planes = |axis: usize| {
            if negative[axis] {
                (&node.hi[axis], &node.lo[axis])
            } else {
                (&node.lo[axis], &node.hi[axis])
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
            enter[lane] = tn - tn.abs() * BOX_MARGIN <= tf + tf.abs() * BOX_MARGIN;
        }
        // Push the entered children, farthest first, so the nearest is popped next.
        let mut order = [0usize; WIDTH];
        let mut count = 0;
        for lane in 0..WIDTH {
            if enter[lane] {
                let mut i = count;
                while i > 0 && near[order[i - 1]] < near[lane] {
                    order[i] = order[i - 1];
                    i -= 1;
                }
                order[i] = lane;
                count += 1;
            }
        }
        for &lane in &order[..count] {
            stack[depth] = Pending {
                child: node.child[lane],
                blocks: node.blocks[lane],
                entry: near[lane],
            };
            depth += 1;
        }
    }
    best
}

#[inline(always)]
fn trace_rays_with<const WATERTIGHT: bool>(
    wide: &WideBvh,
    rays: &[Ray],
    hits: &mut [Hit],
    cull: u32,
) {
    for (ray, hit) in rays.iter().zip(hits) {
        let ray = sanitize_ray(ray);
        *hit = if ray.dir == glam::Vec3::ZERO {
            Hit::MISS // an invalid ray
        } else {
            trace_ray::<WATERTIGHT>(wide, &ray, cull)
        };
    }
}

#[inline(always)]
fn trace_rays_portable(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], cull: u32, mode: u32) {
    if mode == MODE_WATERTIGHT {
        trace_rays_with::<true>(wide, rays, hits, cull);
    } else {
        trace_rays_with::<false>(wide, rays, hits, cull);
    }
}

simd_dispatch! {
    /// Traces `rays` into `hits` (one slot per ray) on the calling thread, with the
    /// widest vector unit the CPU has; `cull` is `crate::Cull::to_u32`, `mode` is
    /// `crate::Mode::to_u32`.
    pub fn trace_rays(wide: &WideBvh, rays: &[Ray], hits: &mut [Hit], cull: u32, mode: u32) => trace_rays_portable
}

const _: () = assert!(MISS == u32::MAX);
