//! The hit contract of docs/contracts.md §1 on hand-made cases, on every backend.

use crate::support::{assert_contract, engines, trace};
use glam::Vec3;
use raypick::types::MISS;
use raypick::{Cull, Hit, Mesh, Ray};

/// Unit square in z = 0 made of two counter-clockwise triangles (seen from +z).
fn square() -> Mesh {
    let positions = vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
    Mesh::new(positions, vec![[0, 1, 2], [0, 2, 3]]).unwrap()
}

fn down(x: f32, y: f32) -> Ray {
    Ray::new(Vec3::new(x, y, 2.0), Vec3::new(0.0, 0.0, -2.0))
}

#[test]
fn hit_reports_t_in_units_of_dir_and_barycentrics_of_v1_v2() {
    let mesh = square();
    for engine in engines() {
        let hits = trace(
            engine,
            &mesh,
            &[down(0.75, 0.25), down(0.25, 0.75)],
            Cull::None,
        );
        // Triangle 0 = (0,0,0) (1,0,0) (1,1,0): p = (1-u-v) v0 + u v1 + v v2 → u = 0.5, v = 0.25.
        assert_eq!(
            hits[0],
            Hit {
                t: 1.0,
                u: 0.5,
                v: 0.25,
                prim: 0
            },
            "{engine:?}"
        );
        // Triangle 1 = (0,0,0) (1,1,0) (0,1,0): u = 0.25, v = 0.5.
        assert_eq!(
            hits[1],
            Hit {
                t: 1.0,
                u: 0.25,
                v: 0.5,
                prim: 1
            },
            "{engine:?}"
        );
    }
}

#[test]
fn misses_carry_the_marker() {
    let mesh = square();
    let rays = [down(2.0, 2.0), Ray::new(Vec3::new(0.5, 0.5, 2.0), Vec3::Z)];
    for engine in engines() {
        for hit in trace(engine, &mesh, &rays, Cull::None) {
            assert_eq!(hit, Hit::MISS, "{engine:?}");
            assert_eq!(hit.prim, MISS);
            assert_eq!(hit.t, f32::INFINITY);
        }
    }
}

#[test]
fn nearest_hit_wins_and_ties_go_to_the_lowest_id() {
    let near = [
        Vec3::new(0.0, 0.0, 1.0),
        Vec3::new(1.0, 0.0, 1.0),
        Vec3::new(0.0, 1.0, 1.0),
    ];
    let far = near.map(|p| p - Vec3::Z);
    // far, near, near again (a duplicate), far again.
    let mesh = Mesh::from_triangles(&[far, near, near, far]);
    for engine in engines() {
        let hit = trace(engine, &mesh, &[down(0.25, 0.25)], Cull::None)[0];
        assert_eq!(hit.prim, 1, "{engine:?}");
        assert_eq!(hit.t, 0.5);
        // With the near ones out of the interval, the lowest far one wins.
        let ray = Ray::with_interval(Vec3::new(0.25, 0.25, 2.0), Vec3::NEG_Z, 1.5, 10.0);
        assert_eq!(
            trace(engine, &mesh, &[ray], Cull::None)[0].prim,
            0,
            "{engine:?}"
        );
    }
}

#[test]
fn interval_bounds_are_inclusive() {
    let mesh = square();
    let at = |tmin, tmax| Ray::with_interval(Vec3::new(0.75, 0.25, 2.0), Vec3::NEG_Z, tmin, tmax);
    let rays = [
        at(2.0, 2.0),
        at(0.0, 2.0),
        at(2.0, 5.0),
        at(0.0, 1.999),
        at(2.001, 5.0),
        at(-5.0, -1.0),
    ];
    for engine in engines() {
        let prims: Vec<u32> = trace(engine, &mesh, &rays, Cull::None)
            .iter()
            .map(|h| h.prim)
            .collect();
        assert_eq!(prims, [0, 0, 0, MISS, MISS, MISS], "{engine:?}");
    }
    // A negative interval reaches behind the origin.
    let behind = Ray::with_interval(Vec3::new(0.75, 0.25, -2.0), Vec3::NEG_Z, -5.0, 0.0);
    for engine in engines() {
        assert_eq!(
            trace(engine, &mesh, &[behind], Cull::None)[0].t,
            -2.0,
            "{engine:?}"
        );
    }
}

#[test]
fn culling_follows_the_facing_rule() {
    // Counter-clockwise seen from +z: rays going down (-z) see its front.
    let mesh = square();
    let from_above = down(0.75, 0.25);
    let from_below = Ray::new(Vec3::new(0.75, 0.25, -2.0), Vec3::Z);
    for engine in engines() {
        let prims = |cull| -> Vec<u32> {
            trace(engine, &mesh, &[from_above, from_below], cull)
                .iter()
                .map(|h| h.prim)
                .collect()
        };
        assert_eq!(prims(Cull::None), [0, 0], "{engine:?}");
        assert_eq!(prims(Cull::Back), [0, MISS], "{engine:?}");
        assert_eq!(prims(Cull::Front), [MISS, 0], "{engine:?}");
    }
}

#[test]
fn invalid_rays_miss_without_nan() {
    let mesh = square();
    let o = Vec3::new(0.5, 0.25, 1.0);
    let rays = [
        Ray::new(o, Vec3::ZERO),
        Ray::new(o, Vec3::new(f32::NAN, 0.0, -1.0)),
        Ray::new(o, Vec3::new(0.0, 0.0, f32::NEG_INFINITY)),
        Ray::new(Vec3::new(f32::INFINITY, 0.0, 1.0), Vec3::NEG_Z),
        Ray::new(Vec3::new(0.5, f32::NAN, 1.0), Vec3::NEG_Z),
        Ray::with_interval(o, Vec3::NEG_Z, f32::NAN, 10.0),
        Ray::with_interval(o, Vec3::NEG_Z, 0.0, f32::NAN),
        Ray::with_interval(o, Vec3::NEG_Z, 5.0, 1.0),
        Ray::new(o, Vec3::new(1.0, 0.0, 0.0)), // parallel to the plane, in front of it
        Ray::new(Vec3::new(-1.0, 0.25, 0.0), Vec3::X), // in the plane itself
    ];
    for engine in engines() {
        let hits = trace(engine, &mesh, &rays, Cull::None);
        for (ray, hit) in rays.iter().zip(&hits) {
            assert_eq!(*hit, Hit::MISS, "{engine:?} {ray:?}");
        }
    }
}

#[test]
fn degenerate_triangles_never_hit() {
    let p = |x, y, z| Vec3::new(x, y, z);
    let mesh = Mesh::from_triangles(&[
        [p(0.0, 0.0, 0.0), p(1.0, 0.0, 0.0), p(0.5, 0.0, 0.0)], // collinear
        [p(0.0, 0.0, 0.0), p(1.0, 1.0, 0.0), p(2.0, 2.0, 0.0)], // collinear, e2 = 2 e1
        [p(0.3, 0.3, 0.0), p(0.3, 0.3, 0.0), p(0.3, 0.3, 0.0)], // a point
        [p(0.0, 0.0, 0.0), p(f32::NAN, 0.0, 0.0), p(0.0, 1.0, 0.0)],
        [
            p(0.0, 0.0, 0.0),
            p(f32::INFINITY, 0.0, 0.0),
            p(0.0, 1.0, 0.0),
        ],
        [p(-1e38, 0.0, 0.0), p(3e38, 0.0, 0.0), p(0.0, 1.0, 0.0)], // edge overflows to inf
        [p(0.0, 0.0, -1.0), p(1.0, 0.0, -1.0), p(0.0, 1.0, -1.0)], // the only real one
    ]);
    let rays: Vec<Ray> = [(0.3, 0.3), (0.5, 0.0), (0.1, 0.1), (1.0, 1.0), (0.25, 0.0)]
        .iter()
        .map(|&(x, y)| down(x, y))
        .collect();
    for engine in engines() {
        let hits = trace(engine, &mesh, &rays, Cull::None);
        for (ray, hit) in rays.iter().zip(&hits) {
            assert!(
                hit.prim == 6 || *hit == Hit::MISS,
                "{engine:?} {ray:?} {hit:?}"
            );
            assert_contract(&mesh, ray, hit);
        }
        assert_eq!(hits[0].prim, 6);
    }
}

#[test]
fn empty_mesh_and_empty_batch() {
    let empty = Mesh::default();
    let square = square();
    for engine in engines() {
        assert_eq!(
            trace(engine, &empty, &[down(0.5, 0.5)], Cull::None),
            [Hit::MISS]
        );
        assert!(trace(engine, &square, &[], Cull::None).is_empty());
    }
}

#[test]
fn bad_index_buffers_are_errors() {
    let err = Mesh::new(vec![Vec3::ZERO; 3], vec![[0, 1, 3]]).unwrap_err();
    assert!(err.to_string().contains("vertex 3"), "{err}");
}
