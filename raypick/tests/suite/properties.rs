//! Properties of the hit contract on random input (proptest, modest case counts):
//! - a ray aimed at the point `(u, v)` of a random non-degenerate triangle hits it
//!   and recovers `u`, `v` within a derived tolerance, in both modes;
//! - the GPU gives the CPU's hits bit for bit on random triangles and rays;
//! - hits never contain NaN, whatever the rays and triangles (any f32 values);
//! - ties go to the lowest triangle id;
//! - the kernels' `t` is never before the entry into a box that holds the triangle
//!   (what exact BVH culling relies on), and clamping it there only removes rounding
//!   error, at every scale and distance.

use crate::support::{CPU_BRUTE, CPU_BVH, Engine, GPU_BRUTE, GPU_BVH, engines, gpu, trace_with};
use glam::{DVec3, Vec3};
use proptest::prelude::*;
use raypick::{Cull, Hit, Mesh, Mode, Ray, TraceOptions};
use raypick_testkit::reference::kernel_tolerance;

/// `f32` unit roundoff.
const EPS: f64 = f32::EPSILON as f64 / 2.0;

fn options(mode: Mode, cull: Cull) -> TraceOptions {
    TraceOptions {
        mode,
        ..TraceOptions::default().with_cull(cull)
    }
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Fast), Just(Mode::Watertight)]
}

fn cull() -> impl Strategy<Value = Cull> {
    prop_oneof![Just(Cull::None), Just(Cull::Back), Just(Cull::Front)]
}

/// A coordinate of moderate size.
fn coordinate() -> impl Strategy<Value = f32> {
    -10.0f32..10.0
}

fn point() -> impl Strategy<Value = Vec3> {
    (coordinate(), coordinate(), coordinate()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn triangle() -> impl Strategy<Value = [Vec3; 3]> {
    [point(), point(), point()]
}

/// Any f32 at all: NaN, infinities, subnormals, huge and tiny values.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        proptest::num::f32::ANY,
        coordinate(),
        Just(0.0f32),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(f32::NAN),
        Just(f32::MIN_POSITIVE),
        Just(1e-40f32),
        Just(1e33f32),
        Just(-1e33f32),
    ]
}

fn any_point() -> impl Strategy<Value = Vec3> {
    (any_f32(), any_f32(), any_f32()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// The point of `triangle` with barycentric weights `u` (of v1) and `v` (of v2),
/// in f64.
fn point_at([v0, v1, v2]: [Vec3; 3], u: f64, v: f64) -> DVec3 {
    let (v0, v1, v2) = (v0.as_dvec3(), v1.as_dvec3(), v2.as_dvec3());
    v0 + u * (v1 - v0) + v * (v2 - v0)
}

/// How far (in barycentric units) the hit of a ray aimed at `aim` from `origin` may
/// be from the aimed point `(u, v)`, or `None` for a ray too grazing to bound.
///
/// Two sources: rounding the aimed point and the direction to f32 moves the ray by
/// at most `2ε (|aim|∞ + |aim - o|∞)` per coordinate (`√3` times that in length);
/// across the triangle's plane that is `1 / |cos|` times more, and a point error of
/// `δ` in the plane changes `u` and `v` by at most `δ (|e1| + |e2|) / |e1 × e2|`.
/// Then the kernels' own error ([`kernel_tolerance`]).
fn aim_tolerance(triangle: [Vec3; 3], origin: Vec3, aim: DVec3, ray: &Ray) -> Option<f64> {
    let [v0, v1, v2] = triangle.map(Vec3::as_dvec3);
    let (e1, e2) = (v1 - v0, v2 - v0);
    let normal = e1.cross(e2);
    let cos = normal.normalize().dot(ray.dir.as_dvec3().normalize()).abs();
    if cos < 0.05 {
        return None;
    }
    let moved = 2.0
        * EPS
        * 3f64.sqrt()
        * (aim.abs().max_element() + (aim - origin.as_dvec3()).abs().max_element());
    let aim_error = moved / cos * (e1.length() + e2.length()) / normal.length();
    Some(aim_error + kernel_tolerance(ray, triangle).bary)
}

/// Whether the triangle is far from degenerate: its smallest height is at least
/// 1% of its longest edge.
fn well_shaped([v0, v1, v2]: [Vec3; 3]) -> bool {
    let (e1, e2, e3) = (v1 - v0, v2 - v0, v2 - v1);
    let longest = e1.length().max(e2.length()).max(e3.length());
    e1.cross(e2).length() / longest >= 0.01 * longest
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn aimed_ray_hits_and_recovers_u_v(
        triangle in triangle(),
        (u, v) in (0.0f64..1.0, 0.0f64..1.0),
        origin in point(),
        mode in mode(),
    ) {
        prop_assume!(well_shaped(triangle));
        let (u, v) = if u + v > 1.0 { (1.0 - u, 1.0 - v) } else { (u, v) };
        let aim = point_at(triangle, u, v);
        let ray = Ray::new(origin, aim.as_vec3() - origin);
        let tolerance = aim_tolerance(triangle, origin, aim, &ray);
        prop_assume!(tolerance.is_some_and(|tol| u.min(v).min(1.0 - u - v) > tol));
        let tolerance = tolerance.unwrap_or_default();
        let mesh = Mesh::from_triangles(&[triangle]);
        for engine in [CPU_BRUTE, CPU_BVH] {
            let hit = trace_with(engine, &mesh, &[ray], &options(mode, Cull::None))[0];
            prop_assert_eq!(hit.prim, 0, "{:?} {:?} missed", engine, mode);
            prop_assert!((hit.u as f64 - u).abs() <= tolerance, "u {} vs {}, tol {}", hit.u, u, tolerance);
            prop_assert!((hit.v as f64 - v).abs() <= tolerance, "v {} vs {}, tol {}", hit.v, v, tolerance);
            // The direction reaches the aimed point at t = 1.
            prop_assert!((hit.t as f64 - 1.0).abs() <= 1e-3, "t {}", hit.t);
        }
    }

    #[test]
    fn hits_never_contain_nan(
        triangles in proptest::collection::vec([any_point(), any_point(), any_point()], 1..6),
        rays in proptest::collection::vec(
            (any_point(), any_point(), any_f32(), any_f32()),
            1..16,
        ),
        mode in mode(),
        cull in cull(),
    ) {
        let mesh = Mesh::from_triangles(&triangles);
        let rays: Vec<Ray> = rays
            .into_iter()
            .map(|(o, d, tmin, tmax)| Ray::with_interval(o, d, tmin, tmax))
            .collect();
        for engine in [CPU_BRUTE, CPU_BVH] {
            let hits = trace_with(engine, &mesh, &rays, &options(mode, cull));
            for (ray, hit) in rays.iter().zip(&hits) {
                prop_assert!(
                    *hit == Hit::MISS
                        || (hit.t.is_finite() && hit.u.is_finite() && hit.v.is_finite()
                            && hit.t >= ray.tmin && hit.t <= ray.tmax),
                    "{:?} {:?}: {:?} for {:?}", engine, mode, hit, ray
                );
            }
        }
    }

    #[test]
    fn ties_go_to_the_lowest_id(
        shared in triangle(),
        others in proptest::collection::vec(triangle(), 0..8),
        copies in proptest::collection::vec(0usize..16, 2..4),
        (u, v) in (0.1f64..0.8, 0.1f64..0.8),
        mode in mode(),
    ) {
        prop_assume!(well_shaped(shared));
        let (u, v) = if u + v > 0.9 { (0.9 - u, 0.9 - v) } else { (u, v) };
        prop_assume!(u > 0.05 && v > 0.05);
        // The others lie behind the shared triangle's copies as the ray sees them.
        let mut triangles: Vec<[Vec3; 3]> = others
            .iter()
            .map(|t| t.map(|p| p - Vec3::new(0.0, 0.0, 100.0)))
            .collect();
        for at in copies {
            triangles.insert(at.min(triangles.len()), shared);
        }
        let ids: Vec<usize> = (0..triangles.len()).filter(|&k| triangles[k] == shared).collect();
        let aim = point_at(shared, u, v).as_vec3();
        let origin = aim + Vec3::new(0.01, -0.02, 50.0);
        let ray = Ray::new(origin, aim - origin);
        let mesh = Mesh::from_triangles(&triangles);
        for engine in engines() {
            let hit = trace_with(engine, &mesh, &[ray], &options(mode, Cull::None))[0];
            prop_assert_eq!(hit.prim as usize, ids[0], "{:?} {:?}: copies at {:?}", engine, mode, ids);
        }
    }
}

/// A random scene for the CPU/GPU comparison: triangles and rays, some aimed at
/// triangles, some not, some with extreme values.
fn scene() -> impl Strategy<Value = (Vec<[Vec3; 3]>, Vec<Ray>)> {
    let triangles = proptest::collection::vec(triangle(), 1..48);
    triangles.prop_flat_map(|triangles| {
        let n = triangles.len();
        let aimed = (0..n, 0.0f64..1.0, 0.0f64..1.0, point());
        let ray = prop_oneof![
            3 => aimed.prop_map({
                let triangles = triangles.clone();
                move |(k, u, v, o)| {
                    let (u, v) = if u + v > 1.0 { (1.0 - u, 1.0 - v) } else { (u, v) };
                    Ray::new(o, point_at(triangles[k], u, v).as_vec3() - o)
                }
            }),
            1 => (point(), point()).prop_map(|(o, d)| Ray::new(o, d)),
            1 => (any_point(), any_point(), any_f32(), any_f32())
                .prop_map(|(o, d, a, b)| Ray::with_interval(o, d, a, b)),
        ];
        (Just(triangles), proptest::collection::vec(ray, 1..128))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn gpu_equals_cpu_bit_for_bit(
        (triangles, rays) in scene(),
        mode in mode(),
        cull in cull(),
    ) {
        if gpu().is_none() {
            return Ok(()); // no adapter, and not required
        }
        let mesh = Mesh::from_triangles(&triangles);
        let options = options(mode, cull);
        let pairs: [(Engine, Engine); 2] = [(CPU_BRUTE, GPU_BRUTE), (CPU_BVH, GPU_BVH)];
        for (cpu, gpu) in pairs {
            let expected = trace_with(cpu, &mesh, &rays, &options);
            let got = trace_with(gpu, &mesh, &rays, &options);
            for (k, ray) in rays.iter().enumerate() {
                prop_assert!(
                    bytemuck::bytes_of(&got[k]) == bytemuck::bytes_of(&expected[k]),
                    "{:?} {:?} {:?}: GPU {:?} != CPU {:?} for {:?}",
                    mode, cull, gpu.accel, got[k], expected[k], ray
                );
            }
        }
    }
}

/// A triangle around `center` at `scale`, a point on it (barycentric `u`, `v`), and
/// a ray from `distance · scale` away at that point, in any direction.
fn placed_ray() -> impl Strategy<Value = ([Vec3; 3], Ray)> {
    let center = prop_oneof![
        point(),
        (point(), -1e7f32..1e7).prop_map(|(p, c)| p + Vec3::splat(c))
    ];
    let unit =
        || (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0).prop_map(|(x, y, z)| Vec3::new(x, y, z));
    (
        center,
        -3.0f32..3.0,
        [unit(), unit(), unit()],
        (0.0f32..1.0, 0.0f32..1.0),
        unit(),
        -2.0f32..4.0,
        -3.0f32..3.0,
    )
        .prop_map(|(center, scale, shape, (u, v), dir, distance, length)| {
            let scale = 10f32.powf(scale);
            let triangle = shape.map(|p| center + p * scale);
            let (u, v) = if u + v > 1.0 {
                (1.0 - u, 1.0 - v)
            } else {
                (u, v)
            };
            let aim = point_at(triangle, u as f64, v as f64).as_vec3();
            let dir = dir * 10f32.powf(length);
            let origin = aim - dir.normalize_or_zero() * scale * 10f32.powf(distance);
            (triangle, Ray::new(origin, dir))
        })
}

/// The exact `t` of `ray`'s line through the plane of `triangle` in f64 (edges in
/// f64), and whether that point lies inside the triangle.
fn exact_t(ray: &Ray, [v0, v1, v2]: [Vec3; 3]) -> Option<(f64, bool)> {
    let (o, d) = (ray.origin.as_dvec3(), ray.dir.as_dvec3());
    let (v0, v1, v2) = (v0.as_dvec3(), v1.as_dvec3(), v2.as_dvec3());
    let (e1, e2) = (v1 - v0, v2 - v0);
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 {
        return None;
    }
    let s = o - v0;
    let q = s.cross(e1);
    let (u, v) = (s.dot(p) / det, d.dot(q) / det);
    Some((e2.dot(q) / det, u >= 0.0 && v >= 0.0 && u + v <= 1.0))
}

proptest! {
    // About a quarter of the rays graze or miss: rejected.
    #![proptest_config(ProptestConfig { cases: 4096, max_global_rejects: 8192, ..ProptestConfig::default() })]

    #[test]
    fn t_is_never_before_a_box_that_holds_the_triangle(
        (triangle, ray) in placed_ray(),
        mode in mode(),
        pad in [0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0],
    ) {
        use raypick::cpu::bvh_walk::RayBoxes;
        use raypick::cpu::intersect::{RayFrame, box_interval, candidate, intersect, test};
        let tri = raypick::prepare::pack_triangle(triangle, 0);
        let frame = RayFrame::new(&ray);
        let hit = intersect(&ray, &frame, &tri, Cull::None, f32::INFINITY, mode);
        prop_assume!(hit.accepted);
        // Within the ray's interval through the triangle's padded box (its entry when
        // rounding left that empty).
        let vertices = triangle.map(|v| v.to_array());
        let (entry, exit) = box_interval(&frame, vertices);
        let (entry, exit) = (entry * frame.t_scale, exit * frame.t_scale);
        prop_assert!(hit.t >= entry, "t {} before the entry {}", hit.t, entry);
        prop_assert!(hit.t <= exit || hit.t == entry, "t {} after the exit {}", hit.t, exit);
        // Any box that holds the triangle's padded box (the builder's), grown by up to
        // its size, is entered at or before t by the traversals' own box test.
        let (lo, hi) = raypick::bvh::build::triangle_box(&tri);
        let size = (hi - lo).max_element();
        let child = raypick::types::BvhChild {
            lo: lo - Vec3::from_slice(&pad[..3]) * size,
            index: 0,
            hi: hi + Vec3::from_slice(&pad[3..]) * size,
            count: 1,
        };
        let entered = RayBoxes::new(&ray, &frame).enter(&child, f32::INFINITY);
        prop_assert!(entered.is_some_and(|e| e <= hit.t), "box entered at {:?}, t {}", entered, hit.t);
        // Clamping only removes rounding error: never farther from the exact t than the
        // kernel's own t, beyond the rounding of the box's slab distances, wherever the
        // exact ray hits the triangle (so the exact t lies in its box's interval). A
        // grazing ray that exact arithmetic takes past the triangle can be accepted by
        // the fast test; its plane point then lies outside the box, and the clamp
        // keeps t in the box, away from it.
        let (raw, ..) = candidate(test(&frame, vertices, tri.edge_norm, mode), &frame, Cull::None);
        let raw = (raw * frame.t_scale) as f64;
        let (exact, inside) = exact_t(&ray, triangle).expect("an accepted hit has a plane");
        let slab_rounding = 4.0 * EPS * (hit.t as f64).abs();
        prop_assert!(
            !inside || (hit.t as f64 - exact).abs() <= (raw - exact).abs() + slab_rounding,
            "t {} raw {} exact {}", hit.t, raw, exact
        );
    }
}
