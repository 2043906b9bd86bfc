//! The test kit's fixtures for the unit tests. The kit links this library as a
//! separate copy, so its meshes and rays are of that copy's types and come into this
//! crate's own through these conversions (same fields, same layout).

use raypick_testkit::raypick as kit;

pub use raypick_testkit::fixtures::{self, Rng};

/// A kit mesh as this crate's [`crate::Mesh`] (same positions, indices and origin).
pub fn mesh(mesh: kit::Mesh) -> crate::Mesh {
    crate::Mesh::with_origin(
        mesh.positions().to_vec(),
        mesh.indices().to_vec(),
        mesh.origin(),
    )
    .expect("a kit mesh is valid")
}

/// Kit rays as this crate's [`crate::Ray`]s.
pub fn rays(rays: Vec<kit::Ray>) -> Vec<crate::Ray> {
    rays.iter()
        .map(|r| crate::Ray::with_interval(r.origin, r.dir, r.tmin, r.tmax))
        .collect()
}
