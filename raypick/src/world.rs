//! World coordinates in f64, and the mesh-local f32 frame the kernels trace in.
//!
//! Geometry far from the origin (map tiles, CAD parts, planets: 1e5 to 1e7 units
//! away) loses most of its f32 precision if traced in absolute coordinates: at 1e7
//! the spacing of f32 values is 1 unit. raypick therefore keeps an f64 **origin** per
//! [`Mesh`](crate::Mesh) and stores the vertices in f32 *relative* to it
//! ([`Mesh::from_f64`](crate::Mesh::from_f64)). Rays are moved into the same frame by
//! subtracting the origin in f64 before anything is rounded to f32
//! ([`TraceRay::to_local`]); [`Picker`](crate::Picker) does this for [`Ray`] and
//! [`Ray64`] alike. `t` is in units of the direction, so it is unchanged by the move.
//!
//! ```
//! use glam::DVec3;
//! use raypick::{Backend, Mesh, Picker, Ray64, TraceOptions};
//!
//! // A triangle 10 million units from the origin, where f32 steps are 1 unit wide.
//! let c = DVec3::new(1e7, -1e7, 1e7);
//! let positions = [c, c + DVec3::new(0.001, 0.0, 0.0), c + DVec3::new(0.0, 0.001, 0.0)];
//! let mesh = Mesh::from_f64(&positions, vec![[0, 1, 2]])?;
//! assert_eq!(mesh.origin(), c);
//!
//! let picker = Picker::new(Backend::Cpu)?;
//! let uploaded = picker.upload(&mesh)?;
//! let ray = Ray64::new(c + DVec3::new(0.00025, 0.0005, 2.0), DVec3::NEG_Z);
//! let hits = picker.trace(&uploaded, &[ray], &TraceOptions::default())?;
//! assert_eq!(hits[0].prim, 0);
//! assert!((hits[0].t - 2.0).abs() < 1e-6);
//! let point = mesh.hit_point(&hits[0]).unwrap();
//! assert!((point - ray.at(2.0)).length() < 1e-6);
//! # Ok::<(), raypick::Error>(())
//! ```
//!
//! ## Which origin
//!
//! [`local_origin`] snaps the centre of a mesh's f64 bounds, per axis, to a grid whose
//! step `g` is the smallest power of two at least the extent of the bounds on that
//! axis (`g = 1` for a zero extent); ties round to an even grid index. Consequences:
//!
//! - Vertices end up within `extent/2 + g/2` of the origin on each axis (less than
//!   `1.5·extent`; at most 0.5 on a flat axis), so the f32 coordinates keep 24 bits
//!   relative to the mesh's *size*, not its distance.
//! - A mesh whose bounds contain the origin on an axis keeps origin 0 on that axis:
//!   such meshes are traced exactly as [`Mesh::new`](crate::Mesh::new) would.
//! - **Translation guarantee.** Shift a mesh and its rays together by `S`, where on
//!   every axis `S` is an integer multiple of that axis's grid step `g` and every
//!   shifted f64 coordinate (vertices and ray origins) is exactly the sum (no f64
//!   rounding, e.g. integers or dyadic values below 2^53 units). Then the origin moves
//!   by exactly `S`, the local f32 vertices and ray origins are bit for bit the same,
//!   and so are the hits (`t`, `u`, `v`, triangle id) on every backend. For example a
//!   mesh at most 32 units wide on each axis (`g <= 32`) traced with rays shifted by
//!   1e5, 1e6 or 1e7 (all multiples of 32) gives the same hits as unshifted. Shifts
//!   that are not multiples of `g` still give hits accurate to f32 *local* precision,
//!   but not necessarily bit-identical ones.

use std::borrow::Cow;

use glam::{DVec3, Vec3};

use crate::types::{Hit, Ray};

/// A ray in f64 world coordinates: `origin + t*dir` for `t` in `[tmin, tmax]`.
///
/// Traced with [`Picker::trace`](crate::Picker::trace): the origin is moved into
/// the mesh's local frame in f64 ([`TraceRay::to_local`]) before it is rounded to f32,
/// so rays far from the world origin keep their precision. A ray that becomes invalid
/// in f32 (a NaN or infinite value, a direction that rounds to zero) misses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray64 {
    /// Ray origin.
    pub origin: DVec3,
    /// Ray direction (need not be normalised).
    pub dir: DVec3,
    /// Smallest accepted `t` (inclusive).
    pub tmin: f64,
    /// Largest accepted `t` (inclusive); may be `+inf`.
    pub tmax: f64,
}

impl Ray64 {
    /// A ray over `[0, +inf]`.
    pub fn new(origin: DVec3, dir: DVec3) -> Self {
        Self::with_interval(origin, dir, 0.0, f64::INFINITY)
    }

    /// A ray over `[tmin, tmax]`.
    pub fn with_interval(origin: DVec3, dir: DVec3, tmin: f64, tmax: f64) -> Self {
        Self {
            origin,
            dir,
            tmin,
            tmax,
        }
    }

    /// A ray from the 8 numbers of a ray file row: `ox oy oz tmin dx dy dz tmax`.
    pub fn from_row([ox, oy, oz, tmin, dx, dy, dz, tmax]: [f64; 8]) -> Self {
        Self::with_interval(DVec3::new(ox, oy, oz), DVec3::new(dx, dy, dz), tmin, tmax)
    }

    /// The point `origin + t * dir`, in f64.
    pub fn at(&self, t: f64) -> DVec3 {
        self.origin + t * self.dir
    }
}

impl From<Ray> for Ray64 {
    /// The same ray, widened exactly.
    fn from(ray: Ray) -> Self {
        Self::with_interval(
            ray.origin.as_dvec3(),
            ray.dir.as_dvec3(),
            ray.tmin.into(),
            ray.tmax.into(),
        )
    }
}

/// A ray the [`Picker`](crate::Picker) can trace: [`Ray`] (f32) or [`Ray64`] (f64).
pub trait TraceRay: Sync {
    /// The f32 ray in the local frame of a mesh whose origin is `origin`: the origin
    /// is subtracted in f64, then everything is rounded to the nearest f32. `t` means
    /// the same in both frames.
    fn to_local(&self, origin: DVec3) -> Ray;

    /// [`TraceRay::to_local`] of every ray; borrows the rays when nothing changes.
    fn all_to_local(rays: &[Self], origin: DVec3) -> Cow<'_, [Ray]>
    where
        Self: Sized,
    {
        Cow::Owned(moved(rays, origin))
    }
}

/// Batches this long or longer are moved into a mesh's frame on every thread.
pub(crate) const PARALLEL_MOVE: usize = 1 << 14;

/// [`TraceRay::to_local`] of every ray: on the calling thread for short batches
/// (single picks pay no task overhead), on every thread for long ones.
fn moved<R: TraceRay>(rays: &[R], origin: DVec3) -> Vec<Ray> {
    if rays.len() < PARALLEL_MOVE {
        rays.iter().map(|r| r.to_local(origin)).collect()
    } else {
        use rayon::prelude::*;
        rays.par_iter()
            .with_min_len(PARALLEL_MOVE / 4)
            .map(|r| r.to_local(origin))
            .collect()
    }
}

impl TraceRay for Ray {
    /// The ray itself when `origin` is zero; else its origin moved in f64.
    fn to_local(&self, origin: DVec3) -> Ray {
        if origin == DVec3::ZERO {
            return *self;
        }
        Ray {
            origin: (self.origin.as_dvec3() - origin).as_vec3(),
            ..*self
        }
    }

    fn all_to_local(rays: &[Self], origin: DVec3) -> Cow<'_, [Ray]> {
        if origin == DVec3::ZERO {
            Cow::Borrowed(rays)
        } else {
            Cow::Owned(moved(rays, origin))
        }
    }
}

impl TraceRay for Ray64 {
    fn to_local(&self, origin: DVec3) -> Ray {
        Ray::with_interval(
            (self.origin - origin).as_vec3(),
            self.dir.as_vec3(),
            self.tmin as f32,
            self.tmax as f32,
        )
    }
}

/// The origin of a mesh's local frame for f64 bounds `lo..hi` (see the
/// [module docs](self) for the rule and the translation guarantee). Zero on an axis
/// whose bounds are not finite.
pub fn local_origin(lo: DVec3, hi: DVec3) -> DVec3 {
    DVec3::new(
        snapped_centre(lo.x, hi.x),
        snapped_centre(lo.y, hi.y),
        snapped_centre(lo.z, hi.z),
    )
}

/// The grid step of an axis with the given extent: the smallest power of two at
/// least `extent` (at most 2^1023), 1 for a zero or NaN extent.
pub fn grid_step(extent: f64) -> f64 {
    const MAX_STEP: f64 = 8.988_465_674_311_58e307; // 2^1023
    if extent.is_nan() || extent <= 0.0 {
        return 1.0;
    }
    if extent >= MAX_STEP {
        return MAX_STEP;
    }
    // log2 may be off by a rounding step near powers of two: correct it once.
    let mut g = extent.log2().ceil().exp2();
    if g < extent {
        g *= 2.0;
    }
    if g / 2.0 >= extent {
        g /= 2.0;
    }
    g
}

/// The centre of `lo..hi` rounded to a multiple of [`grid_step`]`(hi - lo)`, computed
/// so that moving `lo` and `hi` by an exact multiple of the step moves the result by
/// exactly that much: `lo / g` and its fractional part are exact, and only the
/// fractional part (the same for every such move) is rounded.
fn snapped_centre(lo: f64, hi: f64) -> f64 {
    if !lo.is_finite() || !hi.is_finite() || lo > hi {
        return 0.0;
    }
    let extent = hi - lo;
    let g = grid_step(extent);
    let scaled = lo / g;
    let whole = scaled.floor();
    let frac = scaled - whole;
    let index = whole + (frac + 0.5 * (extent / g)).round_ties_even();
    let origin = index * g;
    if origin.is_finite() { origin } else { 0.0 }
}

/// The world-space point of `hit` on a mesh with local origin `origin` and local
/// triangle vertices `tri`: `origin + (1-u-v)*v0 + u*v1 + v*v2`, in f64. `None` for a
/// miss.
pub fn world_point(origin: DVec3, [v0, v1, v2]: [Vec3; 3], hit: &Hit) -> Option<DVec3> {
    if !hit.is_hit() {
        return None;
    }
    let (u, v) = (f64::from(hit.u), f64::from(hit.v));
    let local = (1.0 - u - v) * v0.as_dvec3() + u * v1.as_dvec3() + v * v2.as_dvec3();
    Some(origin + local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_steps_are_the_next_power_of_two() {
        assert_eq!(grid_step(0.0), 1.0);
        assert_eq!(grid_step(1.0), 1.0);
        assert_eq!(grid_step(1.5), 2.0);
        assert_eq!(grid_step(32.0), 32.0);
        assert_eq!(grid_step(0.3), 0.5);
        assert_eq!(grid_step(f64::NAN), 1.0);
        assert_eq!(grid_step(f64::MIN_POSITIVE), f64::MIN_POSITIVE);
        assert_eq!(grid_step(3e307), 2f64.powi(1022));
        assert_eq!(grid_step(f64::MAX), 2f64.powi(1023));
        assert_eq!(grid_step(f64::INFINITY), 2f64.powi(1023));
    }

    #[test]
    fn extreme_bounds_give_a_finite_origin() {
        for (lo, hi) in [(-f64::MAX, f64::MAX), (1e300, 1e300), (-1e-300, 5e-324)] {
            let o = local_origin(DVec3::splat(lo), DVec3::splat(hi));
            assert!(o.is_finite(), "{lo} {hi}: {o}");
        }
    }

    #[test]
    fn bounds_around_zero_keep_origin_zero() {
        let o = local_origin(DVec3::new(-1.0, 0.0, 0.0), DVec3::new(1.0, 1.0, 2.0));
        assert_eq!(o, DVec3::ZERO);
    }

    #[test]
    fn shifts_by_grid_multiples_move_the_origin_exactly() {
        let (lo, hi) = (DVec3::new(0.25, -2.75, 5.0), DVec3::new(9.125, 3.375, 5.0));
        let o = local_origin(lo, hi);
        for s in [1e5, 1e6, 1e7, -3.2e6] {
            let shift = DVec3::splat(s);
            assert_eq!(local_origin(lo + shift, hi + shift), o + shift, "shift {s}");
        }
    }
}
