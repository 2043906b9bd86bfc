//! Watertightness: rays through the vertices and edge midpoints of closed meshes,
//! from many directions, must hit. The watertight test has zero leaks on every
//! engine; the fast test's leak count is reported. Plus the exact edge function that
//! the watertight test falls back on, checked against f64.

use std::collections::BTreeMap;

use crate::support::{engines, trace_with};
use glam::{DVec3, Mat4, Vec3};
use raypick::cpu::watertight::{edge_function, product_error};
use raypick::{Cull, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

/// A torus (genus 1, not convex) with shared vertices.
fn torus(major: f32, minor: f32, rings: u32, sides: u32) -> Mesh {
    let mut positions = Vec::new();
    for i in 0..rings {
        let a = i as f32 / rings as f32 * std::f32::consts::TAU;
        for j in 0..sides {
            let b = j as f32 / sides as f32 * std::f32::consts::TAU;
            let r = major + minor * b.cos();
            positions.push(Vec3::new(r * a.cos(), r * a.sin(), minor * b.sin()));
        }
    }
    let index = |i: u32, j: u32| (i % rings) * sides + (j % sides);
    let mut indices = Vec::new();
    for i in 0..rings {
        for j in 0..sides {
            let (a, b, c, d) = (
                index(i, j),
                index(i + 1, j),
                index(i + 1, j + 1),
                index(i, j + 1),
            );
            indices.push([a, b, c]);
            indices.push([a, c, d]);
        }
    }
    Mesh::new(positions, indices).expect("valid torus")
}

/// The surface of the cube [-1, 1]^3 as an `n` x `n` grid of quads per face, each
/// split in two along alternating diagonals, wound outward. With `n` a power of two
/// every coordinate is a multiple of 2 / n, so points along edges at fractions k / 64
/// are exactly on the edges in f32: rays through them test the shared-edge rule
/// itself.
fn subdivided_cube(n: i32) -> Mesh {
    let mut index_of: BTreeMap<[i32; 3], u32> = BTreeMap::new();
    let mut positions = Vec::new();
    let mut vertex = |p: [i32; 3]| {
        *index_of.entry(p).or_insert_with(|| {
            positions.push(Vec3::from(p.map(|c| c as f32 * 2.0 / n as f32 - 1.0)));
            (positions.len() - 1) as u32
        })
    };
    let mut indices = Vec::new();
    for axis in 0..3 {
        for side in [0, n] {
            for i in 0..n {
                for j in 0..n {
                    let at = |di: i32, dj: i32| {
                        let mut p = [0; 3];
                        p[axis] = side;
                        p[(axis + 1) % 3] = i + di;
                        p[(axis + 2) % 3] = j + dj;
                        p
                    };
                    let q = [at(0, 0), at(1, 0), at(1, 1), at(0, 1)].map(&mut vertex);
                    let mut tris = if (i + j) % 2 == 0 {
                        [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
                    } else {
                        [[q[0], q[1], q[3]], [q[1], q[2], q[3]]]
                    };
                    // (axis+1, axis+2) is counter-clockwise seen from +axis.
                    if side == 0 {
                        for t in &mut tris {
                            t.swap(1, 2);
                        }
                    }
                    indices.extend(tris);
                }
            }
        }
    }
    Mesh::new(positions, indices).expect("valid cube")
}

/// An icosphere with every vertex moved radially at random: closed, irregular.
fn bumpy_sphere(rng: &mut Rng) -> Mesh {
    let sphere = fixtures::icosphere(3, 1.0, Vec3::ZERO);
    let positions = sphere
        .positions()
        .iter()
        .map(|p| *p * rng.range(0.8, 1.2))
        .collect();
    Mesh::new(positions, sphere.indices().to_vec()).expect("valid")
}

fn closed_meshes() -> Vec<(&'static str, Mesh)> {
    let mut rng = Rng::new(5);
    let far = Mat4::from_translation(Vec3::new(1000.3, -77.7, 12_345.6));
    vec![
        (
            "icosphere",
            fixtures::icosphere(3, 1.5, Vec3::new(0.1, -0.2, 0.3)),
        ),
        ("bumpy sphere", bumpy_sphere(&mut rng)),
        ("torus", torus(2.0, 0.7, 40, 24)),
        ("cube", fixtures::cube()),
        ("subdivided cube", subdivided_cube(16)),
        (
            "small far subdivided cube",
            fixtures::transformed(
                &subdivided_cube(8),
                Mat4::from_translation(Vec3::new(1000.3, -2000.7, 513.1))
                    * Mat4::from_scale(Vec3::splat(0.1)),
            ),
        ),
        (
            "off-centre icosphere",
            fixtures::transformed(&fixtures::icosphere(2, 3.0, Vec3::ZERO), far),
        ),
    ]
}

/// A point on the surface (in f64: points along edges are exactly on the edge) and
/// the unit normals of the faces around it.
struct SurfacePoint {
    at: DVec3,
    normals: Vec<Vec3>,
}

/// Every vertex, and points along every edge (fractions 1/4, 1/2 and 19/64).
fn surface_points(mesh: &Mesh) -> Vec<SurfacePoint> {
    let positions = mesh.positions();
    let mut around_vertex = vec![Vec::new(); positions.len()];
    let mut around_edge: BTreeMap<(u32, u32), Vec<Vec3>> = BTreeMap::new();
    for tri in mesh.indices() {
        let [a, b, c] = tri.map(|i| positions[i as usize]);
        let n = (b - a).cross(c - a).normalize();
        for k in 0..3 {
            around_vertex[tri[k] as usize].push(n);
            let (i, j) = (tri[k], tri[(k + 1) % 3]);
            around_edge.entry((i.min(j), i.max(j))).or_default().push(n);
        }
    }
    let mut points: Vec<_> = positions
        .iter()
        .zip(around_vertex)
        .map(|(p, normals)| SurfacePoint {
            at: p.as_dvec3(),
            normals,
        })
        .collect();
    for ((i, j), normals) in around_edge {
        let (a, b) = (
            positions[i as usize].as_dvec3(),
            positions[j as usize].as_dvec3(),
        );
        for f in [0.25, 0.5, 19.0 / 64.0] {
            points.push(SurfacePoint {
                at: a + (b - a) * f,
                normals: normals.clone(),
            });
        }
    }
    points
}

/// Rays that cross the surface at a surface point transversally: behind every face
/// around the point just after it, in front of every one just before (at least 3
/// degrees from each face's plane). Most start outside, with the direction rounded
/// from the exact (f64) vector to the point, so they pass within rounding error of
/// the edge or vertex; every fourth starts exactly at an f32 point (a vertex, or the
/// rounded edge point) with a negative `tmin`.
fn aimed_rays(mesh: &Mesh, per_point: usize, rng: &mut Rng) -> Vec<Ray> {
    let size = {
        let (lo, hi) = mesh.bounds().expect("bounds");
        (hi - lo).max_element() as f64
    };
    let mut rays = Vec::new();
    for point in surface_points(mesh) {
        let inward = -point.normals.iter().sum::<Vec3>().normalize();
        let mut made = 0;
        for _ in 0..per_point * 20 {
            if made == per_point {
                break;
            }
            let d = (inward + rng.unit_vector() * rng.range(0.0, 1.2)).normalize();
            if point.normals.iter().any(|n| d.dot(*n) > -0.05) {
                continue;
            }
            let back = size * rng.log_range(0.1, 1000.0) as f64;
            let scale = rng.log_range(0.01, 100.0);
            rays.push(if made % 4 == 0 {
                let dir = d * scale;
                Ray::with_interval(
                    point.at.as_vec3(),
                    dir,
                    -(back as f32) / scale,
                    f32::INFINITY,
                )
            } else {
                let origin = (point.at - d.as_dvec3() * back).as_vec3();
                let dir = ((point.at - origin.as_dvec3()) * scale as f64).as_vec3();
                Ray::new(origin, dir)
            });
            made += 1;
        }
    }
    rays
}

#[test]
fn watertight_mode_never_leaks_and_fast_mode_is_counted() {
    let mut rng = Rng::new(42);
    let mut fast_leaks_total = 0;
    let mut rays_total = 0;
    for (name, mesh) in closed_meshes() {
        let rays = aimed_rays(&mesh, 6, &mut rng);
        rays_total += rays.len();
        for engine in engines() {
            for mode in [Mode::Watertight, Mode::Fast] {
                let options = TraceOptions::default().with_mode(mode);
                let hits = trace_with(engine, &mesh, &rays, &options);
                let leaks: Vec<&Ray> = rays
                    .iter()
                    .zip(&hits)
                    .filter(|(_, h)| !h.is_hit())
                    .map(|(r, _)| r)
                    .collect();
                eprintln!(
                    "{name}: {engine:?} {mode:?}: {} leaks in {} rays",
                    leaks.len(),
                    rays.len()
                );
                match mode {
                    Mode::Watertight => assert!(
                        leaks.is_empty(),
                        "{name} {engine:?}: {} rays slipped through, first {:?}",
                        leaks.len(),
                        &leaks[..leaks.len().min(3)]
                    ),
                    Mode::Fast => fast_leaks_total += leaks.len(),
                }
            }
        }
    }
    eprintln!("fast mode: {fast_leaks_total} leaks over all engines, {rays_total} rays per engine");
}

/// Back-face culling on closed, outward-wound meshes: every ray that crosses the
/// surface inward still hits (a front face), never a back face, never nearer than
/// the double-sided hit.
#[test]
fn watertight_culling_keeps_every_entry() {
    let mut rng = Rng::new(7);
    for (name, mesh) in closed_meshes() {
        let rays = aimed_rays(&mesh, 8, &mut rng);
        for engine in engines() {
            let options = TraceOptions::default().with_cull(Cull::Back);
            let culled = trace_with(engine, &mesh, &rays, &options);
            let open = trace_with(engine, &mesh, &rays, &TraceOptions::default());
            for ((ray, c), o) in rays.iter().zip(&culled).zip(&open) {
                assert!(c.is_hit(), "{name} {engine:?}: {ray:?} slipped through");
                let [a, b, d] = mesh.triangle(c.prim as usize);
                assert!(
                    ray.dir.dot((b - a).cross(d - a)) < 0.0,
                    "{name} {engine:?}: back face {c:?} kept"
                );
                assert!(c.t >= o.t, "{name} {engine:?}: culling found a nearer hit");
            }
        }
    }
}

/// Exact a * b - c * d in f64 (each product of two f32 is exact in f64).
fn exact(a: f32, b: f32, c: f32, d: f32) -> f64 {
    a as f64 * b as f64 - c as f64 * d as f64
}

#[test]
fn product_error_is_exact() {
    let mut rng = Rng::new(3);
    for _ in 0..200_000 {
        let a = rng.range(-1.0, 1.0) * rng.log_range(1e-8, 1e8);
        let b = rng.range(-1.0, 1.0) * rng.log_range(1e-8, 1e8);
        let p = a * b;
        let e = product_error(a, b, p);
        assert_eq!(a as f64 * b as f64, p as f64 + e as f64, "{a} * {b}");
        assert_eq!(e, product_error(b, a, p), "symmetric for {a} * {b}");
    }
}

#[test]
fn edge_function_has_the_exact_sign() {
    let mut rng = Rng::new(9);
    let mut zeros_resolved = 0;
    for case in 0..300_000 {
        let a = rng.range(-1.0, 1.0) * rng.log_range(1e-6, 1e6);
        let b = rng.range(-1.0, 1.0) * rng.log_range(1e-6, 1e6);
        // Pairs whose products are equal, or round equal, or nearly so.
        let (c, d) = match case % 4 {
            0 => (a * 2.0, b * 0.5),
            1 => (b, a),
            2 => (
                a * (1.0 + f32::EPSILON * rng.range(-4.0, 4.0).round()),
                b * (1.0 + f32::EPSILON * rng.range(-4.0, 4.0).round()),
            ),
            _ => (
                f32::from_bits(a.to_bits().wrapping_add(rng.below(3) as u32)),
                f32::from_bits(b.to_bits().wrapping_sub(rng.below(3) as u32)),
            ),
        };
        let got = edge_function(a, b, c, d);
        let want = exact(a, b, c, d);
        assert_eq!(
            got.partial_cmp(&0.0),
            want.partial_cmp(&0.0),
            "sign of {a}*{b} - {c}*{d}: got {got}, exact {want}"
        );
        if a * b - c * d == 0.0 && want != 0.0 {
            zeros_resolved += 1;
            assert_eq!(got, want as f32, "correctly rounded for {a}*{b} - {c}*{d}");
        }
        // Swapping the products negates exactly: a shared edge seen from both sides.
        assert_eq!(edge_function(c, d, a, b), -got);
    }
    assert!(
        zeros_resolved > 1_000,
        "only {zeros_resolved} rounded zeros resolved"
    );
}

/// Pairs of coplanar triangles sharing an edge, small and far from the origin (up to
/// 1e3 units away, edges down to 0.01), each crossed by one ray through an exact
/// (f64) point of the shared edge, from up to 100 units away: the union is a flat
/// quadrilateral the ray passes through, so it must hit one of the two. This is where
/// the fast test leaks: each triangle rounds the shared edge differently.
#[test]
fn coplanar_shared_edges_never_leak_in_watertight_mode() {
    let mut rng = Rng::new(1);
    let mut triangles = Vec::new();
    let mut rays = Vec::new();
    for _ in 0..5_000 {
        let a = rng.point_in_box(Vec3::splat(-1.0), Vec3::splat(1.0)) * rng.log_range(0.01, 1000.0);
        let b = a + rng.unit_vector() * rng.log_range(0.01, 10.0);
        let c = a + rng.unit_vector() * rng.log_range(0.01, 10.0);
        // The fourth vertex, in the plane of a, b, c, across the edge a b.
        let d = a + (b - a) * 0.3 - (c - a) * 0.7;
        triangles.extend([[a, b, c], [a, d, b]]);
        let normal = (b - a).cross(c - a).normalize().as_dvec3();
        let on_edge = a.as_dvec3() + (b - a).as_dvec3() * rng.range(0.05, 0.95) as f64;
        let away = (rng.unit_vector().as_dvec3() + normal * 2.0) * rng.log_range(0.1, 100.0) as f64;
        let origin = (on_edge + away).as_vec3();
        let dir = (on_edge - origin.as_dvec3()).as_vec3();
        // Only the neighbourhood of the edge point (t = 1) can be hit.
        rays.push(Ray::with_interval(origin, dir, 0.9, 1.1));
    }
    let mesh = Mesh::from_triangles(&triangles);
    for engine in engines() {
        for mode in [Mode::Watertight, Mode::Fast] {
            let options = TraceOptions::default().with_mode(mode);
            let hits = trace_with(engine, &mesh, &rays, &options);
            let leaks = hits.iter().filter(|h| !h.is_hit()).count();
            eprintln!(
                "coplanar pairs: {engine:?} {mode:?}: {leaks} leaks in {} rays",
                rays.len()
            );
            if mode == Mode::Watertight {
                assert_eq!(
                    leaks, 0,
                    "{engine:?}: rays slipped between coplanar triangles"
                );
            }
        }
    }
}
