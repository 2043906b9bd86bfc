//! Closest points (`raypick::closest`) against an independent f64 brute force:
//! Ericson's Voronoi-region method on every triangle, on random points, points far
//! away, points on vertices and edges, points just off the surface, meshes with
//! degenerate triangles and a mesh far from the origin.

use glam::{DVec3, Vec3};
use raypick::Mesh;
use raypick::closest::{ClosestPoint, ClosestPoints};
use raypick_testkit::fixtures::{self, Rng};

/// The closest point of triangle `a b c` to `p` (Ericson, Real-Time Collision
/// Detection, 5.1.5), in f64, as `(point, u, v)` with `u`, `v` the weights of `b`, `c`.
fn ericson(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> (DVec3, f64, f64) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, 0.0, 0.0);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, 1.0, 0.0);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let s = d1 / (d1 - d3);
        return (a + s * ab, s, 0.0);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, 0.0, 1.0);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let s = d2 / (d2 - d6);
        return (a + s * ac, 0.0, s);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + s * (c - b), 1.0 - s, s);
    }
    let denom = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denom, vc * denom);
    (a + ab * v + ac * w, v, w)
}

/// The triangles that take part: finite vertices and a non-zero f64 cross product.
fn takes_part(tri: &[DVec3; 3]) -> bool {
    let n = (tri[1] - tri[0]).cross(tri[2] - tri[0]);
    tri.iter().all(|v| v.is_finite()) && n.length_squared() > 0.0
}

/// World-space f64 vertices of every triangle.
fn world_triangles(mesh: &Mesh) -> Vec<[DVec3; 3]> {
    mesh.triangles()
        .map(|tri| tri.map(|v| mesh.to_world(v)))
        .collect()
}

/// Checks one answer against the brute force: the distance within `tol`, a
/// triangle among those within `tol` of the nearest, the point on that triangle at
/// `(u, v)` and at the reported distance.
fn check(triangles: &[[DVec3; 3]], p: DVec3, got: Option<ClosestPoint>, tol: f64, what: &str) {
    let dists: Vec<Option<f64>> = triangles
        .iter()
        .map(|tri| takes_part(tri).then(|| (ericson(p, tri[0], tri[1], tri[2]).0 - p).length()))
        .collect();
    let best = dists
        .iter()
        .flatten()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let Some(got) = got else {
        assert!(
            best.is_infinite(),
            "{what}: no answer for {p}, reference {best}"
        );
        return;
    };
    assert!(
        (got.distance - best).abs() <= tol,
        "{what}: {p}: distance {} vs reference {best}",
        got.distance
    );
    let k = got.prim as usize;
    assert!(
        dists[k].is_some_and(|d| d <= best + tol),
        "{what}: {p}: triangle {k} at {:?}, nearest at {best}",
        dists[k]
    );
    let [a, b, c] = triangles[k];
    let on = (1.0 - got.u - got.v) * a + got.u * b + got.v * c;
    assert!(
        (on - got.point).length() <= tol,
        "{what}: {p}: (u, v) off the point"
    );
    assert!(got.u >= -1e-12 && got.v >= -1e-12 && got.u + got.v <= 1.0 + 1e-12);
    assert!(((got.point - p).length() - got.distance).abs() <= tol);
}

/// Query points of every kind for a mesh: random in and around the box, far away,
/// on vertices, on edge midpoints, and just off triangles along their normals.
fn query_points(mesh: &Mesh, rng: &mut Rng, n: usize) -> Vec<DVec3> {
    let (lo, hi) = mesh.bounds().unwrap();
    let (lo, hi) = (mesh.to_world(lo), mesh.to_world(hi));
    let size = (hi - lo).length();
    let mut points = Vec::new();
    for _ in 0..n {
        let t = DVec3::new(rng.f64(), rng.f64(), rng.f64());
        points.push(lo - 0.5 * (hi - lo) + t * 2.0 * (hi - lo));
    }
    for _ in 0..n / 10 {
        points.push((lo + hi) / 2.0 + rng.unit_vector().as_dvec3() * size * 1e3);
    }
    let triangles = world_triangles(mesh);
    for _ in 0..n / 4 {
        let tri = triangles[rng.below(triangles.len())];
        if !takes_part(&tri) {
            continue;
        }
        let i = rng.below(3);
        let (a, b) = (tri[i], tri[(i + 1) % 3]);
        let normal = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize();
        points.push(a);
        points.push((a + b) / 2.0);
        points.push((tri[0] + tri[1] + tri[2]) / 3.0 + normal * size * 1e-6);
        points.push((a + b) / 2.0 - normal * size * 1e-3);
    }
    points
}

fn check_mesh(mesh: &Mesh, rng: &mut Rng, n: usize, what: &str) {
    let closest = ClosestPoints::new(mesh);
    let triangles = world_triangles(mesh);
    let points = query_points(mesh, rng, n);
    let got = closest.query_f64(&points);
    let (lo, hi) = mesh.bounds().unwrap();
    let size = (hi - lo).length() as f64;
    for (p, got) in points.iter().zip(got) {
        let far = (*p - mesh.to_world(lo)).length();
        check(&triangles, *p, got, 1e-9 * (size + far), what);
    }
}

#[test]
fn random_soup_with_degenerate_triangles() {
    let mut rng = Rng::new(3);
    let soup = fixtures::soup(400, &mut rng, (Vec3::splat(-1.0), Vec3::splat(1.0)));
    let mesh = fixtures::with_degenerates(&soup, &mut rng, 60);
    check_mesh(&mesh, &mut rng, 800, "soup");
}

#[test]
fn closed_and_flat_meshes() {
    let mut rng = Rng::new(4);
    let spheres = fixtures::concat(&[
        fixtures::icosphere(3, 1.0, Vec3::ZERO),
        fixtures::icosphere(1, 0.3, Vec3::new(0.2, 0.1, -0.1)),
    ]);
    check_mesh(&spheres, &mut rng, 600, "spheres");
    check_mesh(&fixtures::grid(12, 9, 3.0), &mut rng, 600, "grid");
    check_mesh(&fixtures::cube(), &mut rng, 400, "cube");
}

#[test]
fn far_from_the_origin() {
    let mut rng = Rng::new(5);
    let sphere = fixtures::icosphere(2, 1.0, Vec3::ZERO);
    let shift = DVec3::new(1e7, -3e6, 5e5);
    let positions: Vec<DVec3> = sphere
        .positions()
        .iter()
        .map(|p| p.as_dvec3() + shift)
        .collect();
    let mesh = Mesh::from_f64(&positions, sphere.indices().to_vec()).unwrap();
    assert_ne!(mesh.origin(), DVec3::ZERO);
    check_mesh(&mesh, &mut rng, 400, "far");
    // The same query near the origin on the unshifted sphere gives the same distance.
    let near = ClosestPoints::new(&sphere).closest(DVec3::new(0.3, 2.0, 0.1));
    let far = ClosestPoints::new(&mesh).closest(DVec3::new(0.3, 2.0, 0.1) + shift);
    let (near, far) = (near.unwrap(), far.unwrap());
    assert_eq!(near.prim, far.prim);
    assert!((near.distance - far.distance).abs() < 1e-9);
}

#[test]
fn vertices_name_the_lowest_triangle_that_contains_them() {
    let mesh = fixtures::icosphere(2, 1.0, Vec3::ZERO);
    let closest = ClosestPoints::new(&mesh);
    for (i, p) in mesh.positions().iter().enumerate() {
        let lowest = mesh
            .indices()
            .iter()
            .position(|tri| tri.contains(&(i as u32)))
            .unwrap();
        let got = closest.closest(p.as_dvec3()).unwrap();
        assert_eq!(
            (got.prim as usize, got.distance),
            (lowest, 0.0),
            "vertex {i}"
        );
        assert_eq!(got.point, p.as_dvec3());
    }
}

#[test]
fn f32_and_f64_queries_agree() {
    let mut rng = Rng::new(6);
    let mesh = fixtures::soup(200, &mut rng, (Vec3::splat(-2.0), Vec3::splat(2.0)));
    let closest = ClosestPoints::new(&mesh);
    let points: Vec<Vec3> = (0..500)
        .map(|_| rng.point_in_box(Vec3::splat(-3.0), Vec3::splat(3.0)))
        .collect();
    let wide: Vec<DVec3> = points.iter().map(|p| p.as_dvec3()).collect();
    assert_eq!(closest.query(&points), closest.query_f64(&wide));
}

#[test]
fn empty_degenerate_and_non_finite() {
    assert_eq!(
        ClosestPoints::new(&Mesh::default()).query(&[Vec3::ZERO]),
        [None]
    );
    let mut rng = Rng::new(8);
    let only_degenerate = fixtures::with_degenerates(&Mesh::default(), &mut rng, 12);
    let closest = ClosestPoints::new(&only_degenerate);
    assert_eq!(closest.triangle_count(), 0);
    assert_eq!(closest.closest(DVec3::ONE), None);
    let cube = ClosestPoints::new(&fixtures::cube());
    assert_eq!(cube.triangle_count(), 12);
    for bad in [DVec3::NAN, DVec3::new(0.0, f64::INFINITY, 0.0)] {
        assert_eq!(cube.closest(bad), None);
    }
}
