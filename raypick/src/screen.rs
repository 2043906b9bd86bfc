//! Screen picks: the triangle under a pixel or a cursor, with its world point.
//!
//! A screen pick is one ray from a camera ([`Camera::ray`](crate::camera::Camera::ray)
//! for a pixel centre, [`Camera::ray_at`](crate::camera::Camera::ray_at) or
//! [`Unprojector::ray_at`](crate::camera::Unprojector::ray_at) for a cursor) traced
//! through a [`Picker`]; [`pick`] traces a batch of them and adds the hit point
//! `(1-u-v)*v0 + u*v1 + v*v2` of each hit, computed in f64 from the mesh.
//!
//! ```
//! use glam::Vec3;
//! use raypick::camera::{Camera, aspect};
//! use raypick::{Backend, Picker, TraceOptions, screen};
//! use raypick_testkit::fixtures;
//!
//! let mesh = fixtures::icosphere(2, 1.0, Vec3::ZERO);
//! let (w, h) = (64, 48);
//! let (lo, hi) = mesh.bounds().unwrap();
//! let camera = Camera::framing(lo, hi, Vec3::Z, 50f32.to_radians(), aspect(w, h));
//! let picker = Picker::new(Backend::Cpu)?;
//! let prepared = picker.upload(&mesh)?;
//! let rays = [camera.ray(w / 2, h / 2, w, h), camera.ray(0, 0, w, h)];
//! let picks = screen::pick(&picker, &prepared, &mesh, &rays, &TraceOptions::default())?;
//! let centre = picks[0].point.unwrap(); // the front of the sphere, facing the camera
//! assert!((centre.length() - 1.0).abs() < 0.05 && centre.z > 0.9);
//! assert!(picks[1].point.is_none()); // the corner sees past the sphere
//! # Ok::<(), raypick::Error>(())
//! ```

use glam::DVec3;

use crate::Mesh;
use crate::error::Result;
use crate::options::TraceOptions;
use crate::picker::{PickMesh, Picker};
use crate::types::{Hit, Ray};

/// One screen pick: the ray, what it hit, and where.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScreenPick {
    /// The ray traced.
    pub ray: Ray,
    /// The nearest hit ([`Hit::MISS`] when nothing was hit).
    pub hit: Hit,
    /// The hit point `(1-u-v)*v0 + u*v1 + v*v2` on the hit triangle (see
    /// [`hit_point`]); `None` on a miss.
    pub point: Option<DVec3>,
}

impl ScreenPick {
    /// The pick of `ray` with its `hit` on `mesh`.
    pub fn new(mesh: &Mesh, ray: Ray, hit: Hit) -> Self {
        Self {
            ray,
            hit,
            point: hit_point(mesh, &hit),
        }
    }
}

/// The world point of `hit` on `mesh`: `(1-u-v)*v0 + u*v1 + v*v2` of the hit
/// triangle, in f64 world coordinates (see [`Mesh::hit_point`]). `None` for a miss
/// or a triangle id that `mesh` does not have.
pub fn hit_point(mesh: &Mesh, hit: &Hit) -> Option<DVec3> {
    mesh.hit_point(hit)
}

/// Traces `rays` on `picker` against `prepared` (which must have been prepared
/// from `mesh` by the same picker) and returns one [`ScreenPick`] per ray.
pub fn pick(
    picker: &Picker,
    prepared: &PickMesh,
    mesh: &Mesh,
    rays: &[Ray],
    options: &TraceOptions,
) -> Result<Vec<ScreenPick>> {
    let hits = picker.trace(prepared, rays, options)?;
    Ok(rays
        .iter()
        .zip(hits)
        .map(|(&ray, hit)| ScreenPick::new(mesh, ray, hit))
        .collect())
}
