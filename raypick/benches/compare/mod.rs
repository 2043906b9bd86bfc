//! Adapters that run other Rust BVH libraries on raypick's meshes and rays, so that
//! raypick's BVH can be benchmarked against them on the very same input and checked
//! against the same answers (docs/contracts.md §1).
//!
//! * [`Parry`]: `parry3d`'s `TriMesh` (a binary BVH built with binned SAH when the
//!   mesh is constructed) and its composite-shape ray cast.
//! * [`Obvhs`]: `obvhs`'s compressed wide BVH8 (CWBVH), built with PLOC + reinsertion,
//!   traversed with its SIMD closest-hit traversal.
//!
//! Both take a [`raypick::Mesh`] and a slice of [`raypick::Ray`]s and return one
//! [`raypick::Hit`] per ray in raypick's convention: `t` in units of the ray
//! direction, `u`, `v` the barycentric weights of `v1`, `v2`, `prim` the input
//! triangle id, [`Hit::MISS`] for a miss. Rays are traced in parallel on rayon's
//! global pool.
//!
//! What both adapters do the same way, outside the libraries:
//! * **Degenerate triangles** (a non-finite coordinate or edge, or edges whose cross
//!   product is exactly zero — the test raypick packs triangles with) are left out
//!   before the library sees the mesh, so NaN bounds never reach a BVH builder; a map
//!   takes the library's triangle index back to the input id. A mesh with no proper
//!   triangle gives an adapter that misses every ray.
//! * **Invalid rays** (non-finite origin or direction, zero direction, a NaN bound,
//!   `tmin > tmax`) miss without reaching the library.
//!
//! How each library honours the interval `[tmin, tmax]`, back faces and ties is
//! documented on [`Parry`] and [`Obvhs`].

// Each bench binary that declares `mod compare;` uses only part of this module.
#![allow(dead_code)]

pub mod agreement;
pub mod embree;

use std::time::Duration;

use glam::Vec3;
use rayon::prelude::*;
use raypick::{Hit, Mesh, Ray};

/// Rays handed to one rayon task (the same grain as raypick's CPU backend).
const RAYS_PER_TASK: usize = 64;

/// Whether raypick could ever hit this triangle: finite vertices and edges, and an
/// edge cross product that is not exactly zero (evaluated in f64, where products of
/// two f32 values are exact — the same test as `raypick::prepare::pack_triangle`).
fn is_proper([v0, v1, v2]: [Vec3; 3]) -> bool {
    let e1 = v1 - v0;
    let e2 = v2 - v0;
    v0.is_finite()
        && e1.is_finite()
        && e2.is_finite()
        && e1.as_dvec3().cross(e2.as_dvec3()) != glam::DVec3::ZERO
}

/// Whether a ray can hit anything at all (docs/contracts.md §1): finite origin and
/// direction, non-zero direction, no NaN bound, `tmin <= tmax`.
fn is_valid(ray: &Ray) -> bool {
    ray.origin.is_finite() && ray.dir.is_finite() && ray.dir != Vec3::ZERO && ray.tmin <= ray.tmax
}

/// The proper triangles of `mesh` as an indexed mesh with only the vertices they use
/// (in order of first use), and for each of them its input triangle id.
fn proper_subset(mesh: &Mesh) -> (Vec<Vec3>, Vec<[u32; 3]>, Vec<u32>) {
    let mut remap = vec![u32::MAX; mesh.positions().len()];
    let mut positions = Vec::new();
    let mut indices = Vec::with_capacity(mesh.triangle_count());
    let mut ids = Vec::with_capacity(mesh.triangle_count());
    for (id, tri) in mesh.indices().iter().enumerate() {
        if !is_proper(mesh.triangle(id)) {
            continue;
        }
        indices.push(tri.map(|i| {
            let slot = &mut remap[i as usize];
            if *slot == u32::MAX {
                *slot = positions.len() as u32;
                positions.push(mesh.positions()[i as usize]);
            }
            *slot
        }));
        ids.push(id as u32);
    }
    (positions, indices, ids)
}

/// How a library that only looks forward from the ray origin (`t >= 0`) sees a
/// raypick ray: the origin moved to `o + shift*d`, interval `[0, len]`; a hit at `t'`
/// there is at `t = shift + t'` on the input ray.
///
/// `shift = tmin` when `tmin` is finite (so hits before `tmin` — also at negative
/// `t` — are excluded or included exactly as the interval says, up to the rounding
/// of the moved origin); `tmin = -inf` is treated as `0` (hits behind the origin
/// are lost). `None` when the interval holds no finite `t` (`tmin = +inf`).
fn forward_interval(ray: &Ray) -> Option<(Vec3, f32, f32)> {
    if ray.tmin == f32::INFINITY {
        return None;
    }
    let shift = if ray.tmin.is_finite() { ray.tmin } else { 0.0 };
    let origin = if shift == 0.0 {
        ray.origin
    } else {
        ray.at(shift)
    };
    origin
        .is_finite()
        .then_some((origin, shift, ray.tmax - shift))
}

/// A valid ray as a library that looks forward from `t >= 0` takes it:
/// `(origin, shift, tmin, tmax)`, as given when `tmin >= 0`, else moved by
/// [`forward_interval`]; a hit at `t'` is at `shift + t'` on the input ray. `None`
/// for an invalid ray or one whose interval holds no finite `t`.
fn forward_segment(ray: &Ray) -> Option<(Vec3, f32, f32, f32)> {
    if !is_valid(ray) {
        return None;
    }
    if ray.tmin >= 0.0 {
        return Some((ray.origin, 0.0, ray.tmin, ray.tmax));
    }
    let (origin, shift, len) = forward_interval(ray)?;
    Some((origin, shift, 0.0, len))
}

// ---------------------------------------------------------------------------
// parry3d
// ---------------------------------------------------------------------------

/// `parry3d`'s triangle mesh (`parry3d::shape::TriMesh`) as a picking backend.
///
/// * **Build**: `TriMesh::with_flags(vertices, indices, TriMeshFlags::empty())` on
///   the proper triangles (see the module docs). Empty flags: no vertex merging, no
///   removal of degenerate/duplicate triangles and no topology checks, so parry keeps
///   the triangles in the order given (parry triangle `i` is input triangle
///   `ids[i]`) and construction cannot fail on topology; its BVH is built by the
///   constructor (`BvhBuildStrategy::Binned`, single-threaded). Deterministic.
/// * **Trace**: `CompositeShapeRef(&trimesh).cast_local_ray(ray, max_toi, false)` —
///   what `TriMesh`'s `RayCast::cast_local_ray` calls, but returning the triangle
///   index with the time of impact (no normal is computed). `solid` makes no
///   difference for a `TriMesh` in 3D (parry's triangle ray cast ignores it); `false`
///   (hollow) states the intent: the nearest surface crossing along the ray, also for
///   rays that start inside a closed mesh. Then `u`, `v` come from parry's
///   `local_ray_intersection_with_triangle` on the hit triangle (its barycentric
///   weights of `b = v1` and `c = v2`); `t` is parry's time of impact, in units of
///   the (unnormalised) direction, like raypick's.
/// * **Interval**: parry only looks forward from the origin (`t >= 0`, `t = 0`
///   included) and accepts times strictly below `max_toi`. A finite `tmin != 0` is
///   honoured by moving the origin to `o + tmin*d` and adding `tmin` back to `t`
///   (exact up to the rounding of the moved origin); `tmin = -inf` is treated as 0.
///   `tmax` is honoured with `max_toi = next_up(tmax - tmin)` so a hit at exactly
///   `tmax` counts; `tmax = +inf` gives `max_toi = f32::MAX`, parry's "unbounded".
/// * **Back faces**: hit (parry's triangle test is double-sided; it reports a back
///   face as `FeatureId::Face(1)`, which is not needed here since the triangle id
///   comes from the composite cast). No culling modes.
/// * **Ties** on equal `t`: whichever triangle parry's best-first traversal meets
///   first (not necessarily the lowest id).
pub struct Parry {
    /// `None` when the mesh has no proper triangle (parry rejects empty meshes).
    trimesh: Option<parry3d::shape::TriMesh>,
    /// Parry triangle index → input triangle id.
    ids: Vec<u32>,
}

impl Parry {
    /// Builds parry's `TriMesh` (and with it its BVH) from the proper triangles of
    /// `mesh`. Never panics; a mesh without proper triangles gives an adapter that
    /// misses every ray.
    pub fn build(mesh: &Mesh) -> Self {
        use parry3d::math::Vector;
        use parry3d::shape::{TriMesh, TriMeshFlags};

        let (positions, indices, ids) = proper_subset(mesh);
        let vertices = positions
            .iter()
            .map(|p| Vector::new(p.x, p.y, p.z))
            .collect();
        let trimesh = if indices.is_empty() {
            None
        } else {
            TriMesh::with_flags(vertices, indices, TriMeshFlags::empty()).ok()
        };
        Self { trimesh, ids }
    }

    /// Number of triangles parry holds (the proper triangles of the input mesh).
    pub fn triangle_count(&self) -> usize {
        self.trimesh.as_ref().map_or(0, |m| m.num_triangles())
    }

    /// Traces `rays` in parallel and returns one hit per ray (see [`Parry`] for how
    /// intervals, back faces and ties are handled).
    pub fn trace(&self, rays: &[Ray]) -> Vec<Hit> {
        let Some(trimesh) = &self.trimesh else {
            return vec![Hit::MISS; rays.len()];
        };
        rays.par_iter()
            .with_min_len(RAYS_PER_TASK)
            .map(|ray| self.trace_one(trimesh, ray))
            .collect()
    }

    fn trace_one(&self, trimesh: &parry3d::shape::TriMesh, ray: &Ray) -> Hit {
        use parry3d::math::Vector;
        use parry3d::query::Ray as ParryRay;
        use parry3d::query::details::local_ray_intersection_with_triangle;
        use parry3d::shape::CompositeShapeRef;

        if !is_valid(ray) {
            return Hit::MISS;
        }
        let Some((origin, shift, len)) = forward_interval(ray) else {
            return Hit::MISS;
        };
        let max_toi = if len.is_finite() {
            len.next_up()
        } else {
            f32::MAX
        };
        let parry_ray = ParryRay::new(
            Vector::new(origin.x, origin.y, origin.z),
            Vector::new(ray.dir.x, ray.dir.y, ray.dir.z),
        );
        let Some((tri, toi)) =
            CompositeShapeRef(trimesh).cast_local_ray(&parry_ray, max_toi, false)
        else {
            return Hit::MISS;
        };
        let triangle = trimesh.triangle(tri);
        let (u, v) =
            local_ray_intersection_with_triangle(triangle.a, triangle.b, triangle.c, &parry_ray)
                .map_or((0.0, 0.0), |(_, bary)| (bary.y, bary.z));
        Hit {
            t: shift + toi,
            u,
            v,
            prim: self.ids[tri as usize],
        }
    }
}

// ---------------------------------------------------------------------------
// obvhs
// ---------------------------------------------------------------------------

/// `obvhs`'s compressed wide BVH8 (CWBVH) as a picking backend.
///
/// * **Build**: `obvhs::cwbvh::builder::build_cwbvh_from_tris` on the proper
///   triangles (see the module docs) with `BvhBuildParams::medium_build()` by default
///   (PLOC with a medium search distance, reinsertion optimisation, up to 3
///   primitives per CWBVH leaf — obvhs's example preset, "around the same build time
///   as embree but with faster traversal"); [`Obvhs::build_with`] takes any preset.
///   With the `parallel` feature (enabled in Cargo.toml) the build runs on rayon.
///   Triangles are then stored as obvhs `RtTriangle`s in BVH leaf order
///   (`bvh.primitive_indices`, as obvhs's cornell-box example does), with a map from
///   that order back to input ids — also right for presets with spatial pre-splits,
///   where a triangle may appear more than once.
/// * **Trace**: `CwBvh::ray_traverse` (the SIMD closest-hit traversal) with
///   `RtTriangle::intersect` (obvhs's CPU-optimised Möller–Trumbore) as the
///   intersection closure; `u`, `v` from `RtTriangle::compute_barycentric` on the hit
///   triangle (weights of `v1`, `v2`); `t` in units of the unnormalised direction.
/// * **Interval**: obvhs's `Ray` carries `tmin`/`tmax` and `RtTriangle::intersect`
///   accepts `tmin <= t <= tmax` (inclusive), so `tmin >= 0` and `tmax` are honoured
///   exactly. obvhs's node test clips at `t >= EPSILON`, so a negative finite `tmin`
///   is handled by moving the origin to `o + tmin*d` (interval `[0, tmax - tmin]`)
///   and adding `tmin` back; `tmin = -inf` is treated as 0.
/// * **Back faces**: hit (`RtTriangle::intersect` is double-sided). Its edge test
///   rejects `-0.0` barycentrics, so a ray exactly through an edge may miss both
///   triangles on one side (obvhs notes it is not watertight).
/// * **Ties** on equal `t`: the lowest input triangle id, as in raypick — the closure
///   keeps its own best `(t, id)` (obvhs's traversal itself keeps the first of equal
///   hits).
pub struct Obvhs {
    /// `None` when the mesh has no proper triangle.
    bvh: Option<obvhs::cwbvh::CwBvh>,
    /// Triangles in BVH primitive order (`bvh.primitive_indices`).
    triangles: Vec<obvhs::rt_triangle::RtTriangle>,
    /// BVH primitive slot → input triangle id.
    ids: Vec<u32>,
}

impl Obvhs {
    /// Builds a CWBVH over the proper triangles of `mesh` with
    /// `BvhBuildParams::medium_build()`. Never panics; a mesh without proper
    /// triangles gives an adapter that misses every ray.
    pub fn build(mesh: &Mesh) -> Self {
        Self::build_with(mesh, obvhs::BvhBuildParams::medium_build())
    }

    /// Builds a CWBVH over the proper triangles of `mesh` with the given obvhs build
    /// preset (e.g. `BvhBuildParams::fast_build()` or `slow_build()`).
    pub fn build_with(mesh: &Mesh, params: obvhs::BvhBuildParams) -> Self {
        use obvhs::rt_triangle::RtTriangle;
        use obvhs::triangle::Triangle;

        let (positions, indices, proper_ids) = proper_subset(mesh);
        if indices.is_empty() {
            return Self {
                bvh: None,
                triangles: Vec::new(),
                ids: Vec::new(),
            };
        }
        // `.into()` from arrays keeps this independent of the glam version obvhs uses.
        let tris: Vec<Triangle> = indices
            .iter()
            .map(|t| {
                let [v0, v1, v2] = t.map(|i| positions[i as usize].to_array().into());
                Triangle { v0, v1, v2 }
            })
            .collect();
        let mut core_build_time = Duration::ZERO;
        let bvh = obvhs::cwbvh::builder::build_cwbvh_from_tris(&tris, params, &mut core_build_time);
        let triangles = bvh
            .primitive_indices
            .iter()
            .map(|&i| RtTriangle::from(&tris[i as usize]))
            .collect();
        let ids = bvh
            .primitive_indices
            .iter()
            .map(|&i| proper_ids[i as usize])
            .collect();
        Self {
            bvh: Some(bvh),
            triangles,
            ids,
        }
    }

    /// Number of CWBVH nodes (0 for an empty mesh).
    pub fn node_count(&self) -> usize {
        self.bvh.as_ref().map_or(0, |b| b.nodes.len())
    }

    /// Traces `rays` in parallel and returns one hit per ray (see [`Obvhs`] for how
    /// intervals, back faces and ties are handled).
    pub fn trace(&self, rays: &[Ray]) -> Vec<Hit> {
        let Some(bvh) = &self.bvh else {
            return vec![Hit::MISS; rays.len()];
        };
        rays.par_iter()
            .with_min_len(RAYS_PER_TASK)
            .map(|ray| self.trace_one(bvh, ray))
            .collect()
    }

    fn trace_one(&self, bvh: &obvhs::cwbvh::CwBvh, ray: &Ray) -> Hit {
        use obvhs::ray::{Ray as ObvhsRay, RayHit};

        let Some((origin, shift, tmin, tmax)) = forward_segment(ray) else {
            return Hit::MISS;
        };
        let obvhs_ray = ObvhsRay::new(
            origin.to_array().into(),
            ray.dir.to_array().into(),
            tmin,
            tmax,
        );
        // Best (t, BVH slot) so far, ties to the lowest input id.
        let mut best_t = f32::INFINITY;
        let mut best = usize::MAX;
        let mut obvhs_hit = RayHit::none();
        bvh.ray_traverse(obvhs_ray, &mut obvhs_hit, |r, slot| {
            // `r.tmax` is the nearest hit so far; `intersect` accepts t == r.tmax.
            let t = self.triangles[slot].intersect(r);
            if t < best_t || (t == best_t && t.is_finite() && self.ids[slot] < self.ids[best]) {
                best_t = t;
                best = slot;
            }
            t
        });
        if best == usize::MAX {
            return Hit::MISS;
        }
        let uv = self.triangles[best].compute_barycentric(&obvhs_ray);
        Hit {
            t: shift + best_t,
            u: uv.x,
            v: uv.y,
            prim: self.ids[best],
        }
    }
}
