//! A mesh and rays in f64 world coordinates that can be moved far from the origin
//! exactly, for the tests of f64 geometry (the library's and the command line's).

use glam::{DVec3, Vec3};
use raypick::{Accel, Hit, Mesh, Picker, Ray, Ray64, TraceOptions};

use crate::fixtures::{self, Rng};

/// The shifts the far-from-origin tests use. Each is a multiple of 32, the grid step
/// of the test scene (at most 32 units wide), and every shifted coordinate of the
/// scene (a multiple of 2^-18 below 64 in magnitude) stays exact in f64.
pub const SHIFTS: [f64; 3] = [1e5, 1e6, 1e7];

/// Coordinates are multiples of this, so shifts up to 2^30 stay exact in f64 and
/// the unshifted coordinates are exact in f32.
pub const QUANTUM: f64 = 1.0 / (1 << 18) as f64;

pub fn quantize(p: DVec3) -> DVec3 {
    (p / QUANTUM).round() * QUANTUM
}

/// A shift vector of magnitude `s` on every axis, with mixed signs.
pub fn shift_vector(s: f64) -> DVec3 {
    DVec3::new(s, -s, s)
}

/// A mesh and rays in f64 world coordinates: positions and triangles (a sphere and a triangle soup in
/// `[-10, 10]^3`, coordinates quantized), and rays around and through it.
pub struct WorldFixture {
    /// Vertex positions (multiples of [`QUANTUM`]).
    pub positions: Vec<DVec3>,
    /// Triangles.
    pub indices: Vec<[u32; 3]>,
    /// Rays (origins multiples of [`QUANTUM`]).
    pub rays: Vec<Ray64>,
}

impl WorldFixture {
    /// `soup` random triangles and a sphere of `sphere_subdivisions`, `rays` rays
    /// (half incoherent, half random), from `seed`.
    pub fn new(seed: u64, soup: usize, sphere_subdivisions: u32, rays: usize) -> Self {
        let mut rng = Rng::new(seed);
        let bounds = (Vec3::splat(-10.0), Vec3::splat(10.0));
        let mesh = fixtures::concat(&[
            fixtures::icosphere(sphere_subdivisions, 4.0, Vec3::new(1.0, -0.5, 0.25)),
            fixtures::soup(soup, &mut rng, bounds),
        ]);
        let positions = mesh
            .positions()
            .iter()
            .map(|p| quantize(p.as_dvec3()))
            .collect();
        let mut f32_rays = fixtures::incoherent_rays(rays / 2, &mut rng, bounds);
        f32_rays.extend(fixtures::random_rays(rays - rays / 2, &mut rng, bounds));
        let rays = f32_rays
            .iter()
            .map(|r| {
                let mut ray = Ray64::from(*r);
                ray.origin = quantize(ray.origin);
                ray
            })
            .collect();
        Self {
            positions,
            indices: mesh.indices().to_vec(),
            rays,
        }
    }

    /// The same scene moved by `shift` (exactly: every sum is representable).
    pub fn shifted(&self, shift: DVec3) -> Self {
        let positions: Vec<DVec3> = self.positions.iter().map(|&p| p + shift).collect();
        for (p, q) in self.positions.iter().zip(&positions) {
            assert_eq!(*q - shift, *p, "the shift must be exact");
        }
        Self {
            positions,
            indices: self.indices.clone(),
            rays: self
                .rays
                .iter()
                .map(|r| Ray64 {
                    origin: r.origin + shift,
                    ..*r
                })
                .collect(),
        }
    }

    /// The mesh in f64, stored relative to a mesh-local origin.
    pub fn rebased_mesh(&self) -> Mesh {
        Mesh::from_f64(&self.positions, self.indices.clone()).expect("valid mesh")
    }

    /// The mesh in absolute f32 coordinates (no rebasing).
    pub fn absolute_mesh(&self) -> Mesh {
        let positions = self.positions.iter().map(|p| p.as_vec3()).collect();
        Mesh::new(positions, self.indices.clone()).expect("valid mesh")
    }

    /// The rays in absolute f32 coordinates.
    pub fn absolute_rays(&self) -> Vec<Ray> {
        self.rays
            .iter()
            .map(|r| {
                Ray::with_interval(
                    r.origin.as_vec3(),
                    r.dir.as_vec3(),
                    r.tmin as f32,
                    r.tmax as f32,
                )
            })
            .collect()
    }
}

/// `rays` traced against `mesh` (uploaded with `accel`) with default options.
pub fn trace64(picker: &Picker, mesh: &Mesh, accel: Accel, rays: &[Ray64]) -> Vec<Hit> {
    let uploaded = picker.upload_with(mesh, accel).expect("upload");
    picker
        .trace(&uploaded, rays, &TraceOptions::default())
        .expect("trace")
}
