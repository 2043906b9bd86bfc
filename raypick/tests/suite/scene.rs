//! Shared fixtures: meshes are closed / outward-wound / the right size, the
//! built-in scene fits its box and looks like a scene, generators are
//! deterministic, and the adversarial sets contain every kind they promise.

use std::collections::{HashMap, HashSet};

use glam::{DVec3, Vec3};
use raypick::{Mesh, Ray};
use raypick_testkit::fixtures::{
    self, AdversarialKind, BUILTIN_SCENE_BOUNDS, DEFAULT_SCENE_TRIANGLES, DegenerateKind, Rng,
};

fn ray_bits(rays: &[Ray]) -> Vec<u32> {
    bytemuck::cast_slice::<Ray, u32>(rays).to_vec()
}

fn mesh_bits(mesh: &Mesh) -> (Vec<u32>, Vec<[u32; 3]>) {
    let p = mesh
        .positions()
        .iter()
        .flat_map(|v| v.to_array().map(f32::to_bits))
        .collect();
    (p, mesh.indices().to_vec())
}

/// Every edge used by exactly two triangles, once in each direction.
fn assert_closed(mesh: &Mesh) {
    let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
    for &[a, b, c] in mesh.indices() {
        for e in [(a, b), (b, c), (c, a)] {
            *directed.entry(e).or_default() += 1;
        }
    }
    for (&(a, b), &n) in &directed {
        assert_eq!(n, 1, "directed edge {a}->{b} used {n} times");
        assert_eq!(
            directed.get(&(b, a)),
            Some(&1),
            "edge {a}->{b} has no opposite"
        );
    }
}

fn normal(t: [Vec3; 3]) -> Vec3 {
    (t[1] - t[0]).cross(t[2] - t[0])
}

fn centroid(t: [Vec3; 3]) -> Vec3 {
    (t[0] + t[1] + t[2]) / 3.0
}

/// Degenerate in the sense of docs/contracts.md §1 (as the kernels see it: f32 edges).
fn is_degenerate(t: [Vec3; 3]) -> bool {
    !t.iter().all(|v| v.is_finite()) || normal(t) == Vec3::ZERO
}

/// f64 hit `t` of the line `o + t*d` (any sign) against a triangle, or None.
fn intersect(o: DVec3, d: DVec3, t: [Vec3; 3]) -> Option<f64> {
    let ray = Ray::new(o.as_vec3(), d.as_vec3());
    raypick_testkit::reference::intersect_f64(&ray, t, 0.0).map(|h| h.t)
}

fn in_box(p: Vec3, (lo, hi): (Vec3, Vec3)) -> bool {
    p.cmpge(lo).all() && p.cmple(hi).all()
}

#[test]
fn rng_is_deterministic_and_in_range() {
    let mut a = Rng::new(42);
    let mut b = Rng::new(42);
    let mut c = Rng::new(43);
    let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
    let ys: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
    let zs: Vec<u64> = (0..100).map(|_| c.next_u64()).collect();
    assert_eq!(xs, ys);
    assert_ne!(xs, zs);
    // The sequence is fixed forever (SplitMix64 reference value for seed 0).
    assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);

    let mut rng = Rng::new(9);
    let (lo, hi) = (Vec3::new(-1.0, 2.0, -30.0), Vec3::new(1.0, 2.5, 30.0));
    for _ in 0..10_000 {
        let f = rng.f32();
        assert!((0.0..1.0).contains(&f));
        let r = rng.range(-3.0, 5.0);
        assert!((-3.0..5.0).contains(&r));
        assert!((rng.unit_vector().length() - 1.0).abs() < 1e-6);
        let p = rng.point_in_box(lo, hi);
        assert!(p.cmpge(lo).all() && p.cmplt(hi).all());
        assert!(rng.below(7) < 7);
        let l = rng.log_range(1e-3, 10.0);
        assert!((1e-3..=10.0).contains(&l));
        let _ = rng.next_u32();
    }
    assert_eq!(rng.range(2.0, 2.0), 2.0);
    // Mean of unit vectors is near zero (uniform on the sphere).
    let mean: Vec3 = (0..20_000).map(|_| rng.unit_vector()).sum::<Vec3>() / 20_000.0;
    assert!(mean.length() < 0.03, "{mean:?}");
}

#[test]
fn icosphere_is_closed_outward_and_the_right_size() {
    let center = Vec3::new(1.0, -2.0, 3.0);
    for s in 0..=5 {
        let m = fixtures::icosphere(s, 2.5, center);
        assert_eq!(m.triangle_count(), 20 * 4usize.pow(s));
        assert_eq!(m.positions().len(), 10 * 4usize.pow(s) + 2);
        assert_closed(&m);
        for t in m.triangles() {
            let n = normal(t);
            assert!(n != Vec3::ZERO);
            assert!(
                n.dot(centroid(t) - center) > 0.0,
                "triangle not wound counter-clockwise from outside"
            );
        }
        for p in m.positions() {
            assert!(((*p - center).length() - 2.5).abs() < 1e-5);
        }
    }
}

#[test]
fn cube_is_closed_and_outward() {
    let m = fixtures::cube();
    assert_eq!((m.triangle_count(), m.positions().len()), (12, 8));
    assert_closed(&m);
    assert_eq!(m.bounds(), Some((Vec3::splat(-1.0), Vec3::splat(1.0))));
    let mut faces = HashSet::new();
    for t in m.triangles() {
        let n = normal(t).normalize();
        let c = centroid(t);
        assert!(n.dot(c) > 0.0);
        // Each normal is an axis direction.
        assert_eq!(n.abs().max_element(), 1.0);
        faces.insert(n.to_array().map(|x| x as i32));
    }
    assert_eq!(faces.len(), 6);
}

#[test]
fn grid_counts_plane_and_winding() {
    for (nx, ny) in [(1, 1), (3, 5), (10, 2), (64, 64)] {
        let m = fixtures::grid(nx, ny, 8.0);
        assert_eq!(m.triangle_count(), 2 * (nx * ny) as usize);
        assert_eq!(m.positions().len(), ((nx + 1) * (ny + 1)) as usize);
        assert_eq!(
            m.bounds(),
            Some((Vec3::new(-4.0, -4.0, 0.0), Vec3::new(4.0, 4.0, 0.0)))
        );
        let unique: HashSet<[u32; 3]> = m
            .positions()
            .iter()
            .map(|p| p.to_array().map(f32::to_bits))
            .collect();
        assert_eq!(unique.len(), m.positions().len(), "vertices are shared");
        let mut area = 0.0;
        for t in m.triangles() {
            let n = normal(t);
            assert!(n.z > 0.0 && n.x == 0.0 && n.y == 0.0);
            area += 0.5 * n.z as f64;
        }
        assert!((area - 64.0).abs() < 1e-3);
    }
    assert!(fixtures::grid(0, 4, 1.0).is_empty());
}

#[test]
fn soup_fits_the_box_and_varies_in_size() {
    let bounds = (Vec3::new(-5.0, 0.0, 10.0), Vec3::new(5.0, 3.0, 30.0));
    let diag = (bounds.1 - bounds.0).length();
    let m = fixtures::soup(5000, &mut Rng::new(3), bounds);
    assert_eq!(m.triangle_count(), 5000);
    let mut sizes: Vec<f32> = m
        .triangles()
        .map(|t| {
            assert!(t.iter().all(|&v| in_box(v, bounds)));
            t[0].distance(t[1])
                .max(t[1].distance(t[2]))
                .max(t[2].distance(t[0]))
                / diag
        })
        .collect();
    sizes.sort_by(f32::total_cmp);
    assert!(sizes[100] < 1e-3, "some tiny triangles: {}", sizes[100]);
    assert!(sizes[4900] > 0.1, "some large triangles: {}", sizes[4900]);
    let degenerate = m.triangles().filter(|&t| is_degenerate(t)).count();
    assert!(degenerate <= 5, "{degenerate} degenerate soup triangles");
}

#[test]
fn builtin_scene_has_the_requested_size_and_fits_its_box() {
    let m = fixtures::builtin_scene(DEFAULT_SCENE_TRIANGLES);
    let n = m.triangle_count() as f64;
    assert!(
        (n - 100_000.0).abs() <= 10_000.0,
        "{n} triangles for a 100k target"
    );
    let (lo, hi) = m.bounds().unwrap();
    assert!(in_box(lo, BUILTIN_SCENE_BOUNDS) && in_box(hi, BUILTIN_SCENE_BOUNDS));
    assert!(m.positions().iter().all(|p| p.is_finite()));
    let degenerate = m.triangles().filter(|&t| is_degenerate(t)).count();
    assert!(degenerate < 10, "{degenerate} degenerate triangles");
    // The scene spans most of its box.
    assert!(
        (hi - lo).cmpge(Vec3::new(90.0, 20.0, 90.0)).all(),
        "{lo} {hi}"
    );

    for target in [0, 1, 2, 10, 100, 1000, 12_345, 250_000] {
        let m = fixtures::builtin_scene(target);
        let n = m.triangle_count();
        if target >= 2 {
            assert_eq!(n, target);
        } else {
            assert!(n <= 2);
        }
    }
    assert_eq!(
        mesh_bits(&fixtures::builtin_scene(5000)),
        mesh_bits(&fixtures::builtin_scene(5000))
    );
}

#[test]
fn builtin_scene_looks_like_a_scene() {
    // Trace the bench camera's rays against a 20k-triangle scene by brute force.
    let m = fixtures::builtin_scene(20_000);
    let tris: Vec<[Vec3; 3]> = m.triangles().collect();
    let rays = fixtures::camera_rays(m.bounds().unwrap(), 40, 30);
    let mut hits = 0;
    let mut layered = 0;
    for r in &rays {
        let (o, d) = (r.origin.as_dvec3(), r.dir.as_dvec3());
        let crossings = tris
            .iter()
            .filter(|&&t| intersect(o, d, t).is_some_and(|t| t > 0.0))
            .count();
        hits += (crossings > 0) as usize;
        layered += (crossings >= 3) as usize;
    }
    // The camera frames the whole box, so the corners of the image see nothing.
    assert!(
        hits * 3 > rays.len(),
        "{hits} of {} camera rays hit",
        rays.len()
    );
    assert!(
        layered * 20 > rays.len(),
        "only {layered} rays cross 3+ surfaces"
    );
}

#[test]
fn degenerates_are_appended_and_of_every_kind() {
    let base = fixtures::icosphere(2, 1.0, Vec3::new(0.5, 0.0, 0.0));
    let n0 = base.triangle_count();
    let m = fixtures::with_degenerates(&base, &mut Rng::new(5), 600);
    assert_eq!(m.triangle_count(), n0 + 600);
    assert_eq!(&m.indices()[..n0], base.indices());
    for k in 0..n0 {
        assert_eq!(m.triangle(k), base.triangle(k));
    }
    let mut seen = HashSet::new();
    for i in 0..600 {
        let idx = m.indices()[n0 + i];
        let t = m.triangle(n0 + i);
        assert!(
            is_degenerate(t),
            "appended triangle {i} is not degenerate: {t:?}"
        );
        let kind = DegenerateKind::ALL[i % DegenerateKind::ALL.len()];
        let finite = t.iter().all(|v| v.is_finite());
        let distinct_idx = idx[0] != idx[1] && idx[1] != idx[2] && idx[0] != idx[2];
        match kind {
            DegenerateKind::RepeatedIndex => assert!(!distinct_idx && finite),
            DegenerateKind::RepeatedPosition => {
                assert!(distinct_idx && finite);
                assert!(t[0] == t[1] || t[1] == t[2] || t[0] == t[2]);
                assert!(!(t[0] == t[1] && t[1] == t[2]));
            }
            DegenerateKind::Collinear => {
                assert!(finite && t[0] != t[1] && t[1] != t[2] && t[0] != t[2]);
                assert_eq!(normal(t), Vec3::ZERO);
                assert_eq!((t[2] - t[1]).cross(t[0] - t[1]), Vec3::ZERO);
            }
            DegenerateKind::SinglePoint => assert!(finite && t[0] == t[1] && t[1] == t[2]),
            DegenerateKind::NanVertex => assert!(t.iter().any(|v| v.is_nan())),
            DegenerateKind::InfiniteVertex => {
                assert!(!t.iter().any(|v| v.is_nan()));
                assert!(t.iter().any(|v| !v.is_finite()));
            }
        }
        seen.insert(kind);
    }
    assert_eq!(seen.len(), DegenerateKind::ALL.len());
    // Deterministic, and works on an empty mesh too.
    assert_eq!(
        mesh_bits(&m),
        mesh_bits(&fixtures::with_degenerates(&base, &mut Rng::new(5), 600))
    );
    let only = fixtures::with_degenerates(&Mesh::default(), &mut Rng::new(1), 12);
    assert_eq!(only.triangle_count(), 12);
    assert!(only.triangles().all(is_degenerate));
}

#[test]
fn camera_rays_see_the_box() {
    let bounds = BUILTIN_SCENE_BOUNDS;
    let (w, h) = (33, 21);
    let rays = fixtures::camera_rays(bounds, w, h);
    assert_eq!(rays.len(), (w * h) as usize);
    let eye = rays[0].origin;
    assert!(!in_box(eye, bounds));
    for r in &rays {
        assert_eq!(r.origin, eye);
        assert_eq!((r.tmin, r.tmax), (0.0, f32::INFINITY));
        assert!((r.dir.length() - 1.0).abs() < 1e-6);
    }
    // The box is in front of the camera; the camera is the documented one.
    let centre = rays[(h / 2 * w + w / 2) as usize];
    let to_center = (0.5 * (bounds.0 + bounds.1) - eye).normalize();
    assert!(centre.dir.dot(to_center) > 0.9);
    assert_eq!(
        fixtures::bench_camera(bounds, w, h).primary_rays(w, h),
        rays
    );
}

#[test]
fn incoherent_rays_come_from_around_and_go_through_the_box() {
    let bounds = (Vec3::new(-2.0, -1.0, 0.0), Vec3::new(2.0, 1.0, 0.0)); // flat box
    let rays = fixtures::incoherent_rays(2000, &mut Rng::new(8), bounds);
    assert_eq!(rays.len(), 2000);
    let center = Vec3::ZERO;
    let diag = (bounds.1 - bounds.0).length();
    let mut octants = HashSet::new();
    for r in &rays {
        assert!((r.origin.distance(center) - diag).abs() < 1e-4);
        assert!((r.dir.length() - 1.0).abs() < 1e-6);
        assert_eq!((r.tmin, r.tmax), (0.0, f32::INFINITY));
        // Aimed into the box: the closest approach to the plane z = 0 is inside it.
        let t = -r.origin.z / r.dir.z;
        let p = r.at(t);
        assert!(p.x.abs() <= 2.0 + 1e-4 && p.y.abs() <= 1.0 + 1e-4, "{p:?}");
        octants.insert(r.origin.to_array().map(|x| x > 0.0));
    }
    assert_eq!(octants.len(), 8);
    assert_eq!(
        ray_bits(&rays),
        ray_bits(&fixtures::incoherent_rays(2000, &mut Rng::new(8), bounds))
    );
}

#[test]
fn random_rays_are_finite_with_varied_intervals() {
    let bounds = (Vec3::splat(-1.0), Vec3::splat(1.0));
    let rays = fixtures::random_rays(5000, &mut Rng::new(10), bounds);
    assert_eq!(rays.len(), 5000);
    let (mut unbounded, mut bounded, mut shifted, mut unnormalised) = (0, 0, 0, 0);
    for r in &rays {
        assert!(r.origin.is_finite() && r.dir.is_finite() && r.dir != Vec3::ZERO);
        assert!(r.origin.cmpge(Vec3::splat(-2.0)).all() && r.origin.cmple(Vec3::splat(2.0)).all());
        assert!(r.tmin.is_finite() && r.tmin >= 0.0 && r.tmin <= r.tmax && !r.tmax.is_nan());
        unbounded += (r.tmin == 0.0 && r.tmax == f32::INFINITY) as usize;
        bounded += r.tmax.is_finite() as usize;
        shifted += (r.tmin > 0.0) as usize;
        unnormalised += ((r.dir.length() - 1.0).abs() > 1e-3) as usize;
    }
    for (what, n) in [
        ("[0, inf]", unbounded),
        ("finite tmax", bounded),
        ("tmin > 0", shifted),
        ("non-unit dir", unnormalised),
    ] {
        assert!(n > 500, "only {n} rays with {what}");
    }
    assert_eq!(
        ray_bits(&rays),
        ray_bits(&fixtures::random_rays(5000, &mut Rng::new(10), bounds))
    );
    assert_ne!(
        ray_bits(&rays),
        ray_bits(&fixtures::random_rays(5000, &mut Rng::new(11), bounds))
    );
}

/// The smallest f64 hit `t` of `ray`'s line against the mesh (any t), for checks.
fn hit_ts(mesh: &Mesh, r: &Ray) -> Vec<f64> {
    let (o, d) = (r.origin.as_dvec3(), r.dir.as_dvec3());
    mesh.triangles()
        .filter_map(|t| intersect(o, d, t))
        .collect()
}

#[test]
fn adversarial_sets_contain_every_kind() {
    let mesh = fixtures::icosphere(2, 3.0, Vec3::new(1.0, 2.0, -1.0));
    let labeled = fixtures::adversarial_rays_labeled(&mesh, &mut Rng::new(12), 1000);
    assert_eq!(labeled.len(), 1000);
    let plain = fixtures::adversarial_rays(&mesh, &mut Rng::new(12), 1000);
    let rays: Vec<Ray> = labeled.iter().map(|&(_, r)| r).collect();
    assert_eq!(
        ray_bits(&rays),
        ray_bits(&plain),
        "labels do not change the rays"
    );
    assert_eq!(
        ray_bits(&plain),
        ray_bits(&fixtures::adversarial_rays(&mesh, &mut Rng::new(12), 1000))
    );

    let vertices: Vec<DVec3> = mesh.positions().iter().map(|p| p.as_dvec3()).collect();
    let mut count: HashMap<AdversarialKind, usize> = HashMap::new();
    let mut exact_vertex = 0;
    for &(kind, r) in &labeled {
        *count.entry(kind).or_default() += 1;
        let finite = r.origin.is_finite() && r.dir.is_finite() && r.dir != Vec3::ZERO;
        let valid_interval = !r.tmin.is_nan() && !r.tmax.is_nan() && r.tmin <= r.tmax;
        assert_eq!(
            kind.is_invalid(),
            !(finite && valid_interval),
            "{kind:?}: {r:?}"
        );
        match kind {
            AdversarialKind::Vertex => {
                // The line passes exactly through a mesh vertex (exact f64 predicate).
                let (o, d) = (r.origin.as_dvec3(), r.dir.as_dvec3());
                if vertices.iter().any(|&v| (v - o).cross(d) == DVec3::ZERO) {
                    exact_vertex += 1;
                }
            }
            AdversarialKind::ParallelToTriangle => {
                // Direction parallel to some triangle, origin in that triangle's plane.
                let found = mesh.triangles().any(|t| {
                    let n = normal(t).normalize();
                    n.dot(r.dir.normalize()).abs() < 1e-5 && n.dot(r.origin - t[0]).abs() < 1e-5
                });
                assert!(found, "{r:?}");
            }
            AdversarialKind::OriginOnTriangle => {
                assert_eq!((r.tmin, r.tmax), (0.0, f32::INFINITY));
                let ts = hit_ts(&mesh, &r);
                assert!(ts.iter().any(|t| t.abs() < 1e-5), "origin not on the mesh");
            }
            AdversarialKind::TmaxAtHit
            | AdversarialKind::TminAtHit
            | AdversarialKind::PointIntervalAtHit => {
                let at = if kind == AdversarialKind::TmaxAtHit {
                    assert_eq!(r.tmin, 0.0);
                    r.tmax
                } else {
                    r.tmin
                };
                match kind {
                    AdversarialKind::TminAtHit => assert_eq!(r.tmax, f32::INFINITY),
                    AdversarialKind::PointIntervalAtHit => assert_eq!(r.tmin, r.tmax),
                    _ => {}
                }
                assert!(at > 0.0 && at.is_finite());
                // `at` is the f64 hit t rounded to f32: within half an ulp of it.
                let ts = hit_ts(&mesh, &r);
                let half_ulp = (at.next_up() - at) as f64;
                assert!(
                    ts.iter().any(|&t| (t - at as f64).abs() <= half_ulp),
                    "{kind:?}: {at} not a hit t in {ts:?}"
                );
            }
            AdversarialKind::ZeroDirection => assert!(r.dir == Vec3::ZERO),
            AdversarialKind::NanOrigin => assert!(r.origin.is_nan()),
            AdversarialKind::InfiniteOrigin => {
                assert!(!r.origin.is_nan() && !r.origin.is_finite())
            }
            AdversarialKind::NanDirection => assert!(r.dir.is_nan()),
            AdversarialKind::InfiniteDirection => assert!(!r.dir.is_nan() && !r.dir.is_finite()),
            AdversarialKind::NanTmin => assert!(r.tmin.is_nan()),
            AdversarialKind::NanTmax => assert!(r.tmax.is_nan()),
            AdversarialKind::EmptyInterval => assert!(r.tmin > r.tmax),
            AdversarialKind::EdgeMidpoint => {}
        }
    }
    for kind in AdversarialKind::ALL {
        assert!(
            count.get(&kind).copied().unwrap_or(0) > 0,
            "no {kind:?} rays"
        );
    }
    let vertex_rays = count[&AdversarialKind::Vertex];
    assert!(
        exact_vertex * 10 >= vertex_rays * 9,
        "only {exact_vertex} of {vertex_rays} vertex rays pass exactly through a vertex"
    );
    // Every valid kind is well represented.
    for kind in AdversarialKind::ALL.into_iter().filter(|k| !k.is_invalid()) {
        assert!(count[&kind] >= 100, "{kind:?}: {}", count[&kind]);
    }
}

#[test]
fn adversarial_rays_on_scenes_without_valid_triangles_are_all_invalid() {
    let mesh = fixtures::with_degenerates(&Mesh::default(), &mut Rng::new(2), 30);
    let labeled = fixtures::adversarial_rays_labeled(&mesh, &mut Rng::new(3), 64);
    assert_eq!(labeled.len(), 64);
    assert!(labeled.iter().all(|(k, _)| k.is_invalid()));
    let kinds: HashSet<_> = labeled.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds.len(), 8);
    assert_eq!(
        fixtures::adversarial_rays_labeled(&Mesh::default(), &mut Rng::new(3), 16).len(),
        16
    );
}

#[test]
fn adversarial_rays_work_on_the_builtin_scene_with_degenerates() {
    let mesh = fixtures::with_degenerates(&fixtures::builtin_scene(3000), &mut Rng::new(4), 100);
    let rays = fixtures::adversarial_rays(&mesh, &mut Rng::new(4), 3000);
    assert_eq!(rays.len(), 3000);
}
