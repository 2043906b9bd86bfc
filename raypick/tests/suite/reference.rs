//! Each backend against an exact f64 reference on random rays aimed at the mesh:
//! the same triangle and t within 1e-5 relative (wider only for grazing rays, see
//! [`t_tolerance`]). A different triangle is accepted only where the test can show it
//! is a tie or an edge case, and at most 1 in 10,000 rays.

use crate::support::{engines, explain, reference_hit, rel_close, trace};
use glam::Vec3;
use raypick::{Cull, Hit, Mesh, Ray};
use raypick_testkit::fixtures::Rng;

/// 1e-5 relative, except for grazing rays: t's condition number grows as 1 / |cos|
/// of the angle between the ray and the normal, so no f32 method can do better than
/// about 1e-7 / |cos|. The bound used is `max(1e-5, 1e-6 / |cos|)`.
fn t_tolerance(mesh: &Mesh, ray: &Ray, hit: &Hit) -> f64 {
    if !hit.is_hit() {
        return 0.0;
    }
    let [v0, v1, v2] = mesh.triangle(hit.prim as usize);
    let normal = (v1 - v0).cross(v2 - v0).as_dvec3().normalize();
    let cos = normal.dot(ray.dir.as_dvec3().normalize()).abs();
    (1e-6 / cos).max(1e-5)
}

#[test]
fn backends_match_an_f64_reference() {
    let mut rng = Rng::new(5);
    // One random triangle in each cell of a 13 x 13 x 13 grid (sizes 0.05 .. 0.22 in
    // cells of 0.46): triangles never touch or cross, so the nearest one is well
    // defined and any disagreement is a real error, not a tie.
    let cell = 6.0 / 13.0;
    let mut triangles = Vec::new();
    for i in 0..13 * 13 * 13 {
        let centre = Vec3::new((i % 13) as f32, (i / 13 % 13) as f32, (i / 169) as f32) * cell
            - Vec3::splat(3.0 - cell / 2.0);
        let size = rng.log_range(0.05, 0.22);
        // Well shaped (no slivers, whose f32 edges cannot pin their plane down):
        // a randomly oriented, slightly irregular equilateral triangle.
        let normal = rng.unit_vector();
        let a = normal.any_orthonormal_vector();
        let b = normal.cross(a);
        let phase = rng.range(0.0, std::f32::consts::TAU);
        triangles.push([0.0f32, 1.0, 2.0].map(|k| {
            let angle = phase + k * std::f32::consts::TAU / 3.0 + rng.range(-0.3, 0.3);
            centre + size * (a * angle.cos() + b * angle.sin())
        }));
    }
    let mesh = Mesh::from_triangles(&triangles);
    // Rays from a sphere around the grid, each aimed at a random barycentric point
    // (some outside their triangle) of a random triangle; some with a short interval.
    let rays: Vec<Ray> = (0..30_000)
        .map(|i| {
            let [v0, v1, v2] = triangles[rng.below(triangles.len())];
            let (u, v) = (rng.range(-0.1, 0.8), rng.range(-0.1, 0.8));
            let target = v0 + u * (v1 - v0) + v * (v2 - v0);
            let origin = rng.unit_vector() * 4.0;
            let dir = (target - origin) * rng.range(0.1, 3.0);
            match i % 4 {
                0 => Ray::with_interval(origin, dir, rng.range(0.0, 0.5), rng.range(0.5, 2.0)),
                _ => Ray::new(origin, dir),
            }
        })
        .collect();
    let reference: Vec<Hit> = rays
        .iter()
        .map(|ray| match reference_hit(&mesh, ray) {
            Some((prim, t, u, v)) => Hit {
                t: t as f32,
                u: u as f32,
                v: v as f32,
                prim,
            },
            None => Hit::MISS,
        })
        .collect();
    let hits = reference.iter().filter(|h| h.is_hit()).count();
    assert!(hits > 10_000, "only {hits} reference hits");
    for engine in engines() {
        let got = trace(engine, &mesh, &rays, Cull::None);
        let mut explained = 0;
        for (i, (want, got)) in reference.iter().zip(&got).enumerate() {
            let agree = want.prim == got.prim
                && rel_close(
                    want.t as f64,
                    got.t as f64,
                    t_tolerance(&mesh, &rays[i], want),
                );
            if agree {
                continue;
            }
            let reason = explain(&mesh, &rays[i], want, got);
            assert!(
                reason.is_some(),
                "{engine:?} ray {i}: f64 says {want:?}, got {got:?}"
            );
            explained += 1;
        }
        eprintln!(
            "{engine:?}: {explained} explained edge cases in {} rays",
            rays.len()
        );
        assert!(
            explained * 10_000 <= rays.len(),
            "{engine:?}: {explained} edge cases"
        );
    }
}
