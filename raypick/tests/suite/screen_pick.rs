//! `raypick::screen`: a screen pick is the traced hit of the pixel's ray plus the
//! hit point on the triangle, on every backend.

use glam::Vec3;
use raypick::camera::{Camera, aspect};
use raypick::types::MISS;
use raypick::{Backend, Hit, Picker, TraceOptions, screen};
use raypick_testkit::fixtures;

#[test]
fn picks_are_the_traced_hits_with_their_points() {
    let mesh = fixtures::concat(&[
        fixtures::grid(10, 10, 8.0),
        fixtures::icosphere(3, 1.5, Vec3::new(0.5, 0.0, 1.0)),
    ]);
    let (w, h) = (48, 32);
    let (lo, hi) = mesh.bounds().expect("bounds");
    let camera = Camera::framing(
        lo,
        hi,
        Vec3::new(0.3, -1.0, 0.8),
        45f32.to_radians(),
        aspect(w, h),
    );
    let rays = camera.primary_rays(w, h);
    let mut pickers = vec![Picker::new(Backend::Cpu).expect("CPU")];
    if crate::support::gpu().is_some() {
        pickers.push(Picker::new(Backend::Gpu).expect("GPU"));
    }
    let options = TraceOptions::default();
    for picker in &pickers {
        let prepared = picker.upload(&mesh).expect("prepare");
        let hits = picker.trace(&prepared, &rays, &options).expect("trace");
        let picks = screen::pick(picker, &prepared, &mesh, &rays, &options).expect("pick");
        assert_eq!(picks.len(), rays.len());
        let mut hit_count = 0;
        for ((pick, ray), hit) in picks.iter().zip(&rays).zip(&hits) {
            assert_eq!(pick.ray, *ray);
            assert_eq!(pick.hit, *hit, "{}", picker.device_name());
            match pick.point {
                None => assert!(!hit.is_hit()),
                Some(p) => {
                    hit_count += 1;
                    let on_ray = ray.at(hit.t).as_dvec3();
                    assert!(p.distance(on_ray) < 1e-4, "{p} vs {on_ray}");
                }
            }
        }
        assert!(
            hit_count > rays.len() / 5 && hit_count < rays.len(),
            "{hit_count} of {} rays hit",
            rays.len()
        );
    }
}

#[test]
fn hit_point_is_none_for_misses_and_unknown_triangles() {
    let mesh = fixtures::cube();
    assert_eq!(screen::hit_point(&mesh, &Hit::MISS), None);
    let unknown = Hit {
        t: 1.0,
        u: 0.25,
        v: 0.25,
        prim: 12,
    };
    assert_eq!(screen::hit_point(&mesh, &unknown), None);
    let [v0, v1, v2] = mesh.triangle(3).map(|v| v.as_dvec3());
    let hit = Hit { prim: 3, ..unknown };
    let p = screen::hit_point(&mesh, &hit).expect("a point");
    assert_eq!(p, 0.5 * v0 + 0.25 * v1 + 0.25 * v2);
    assert_ne!(hit.prim, MISS);
}
