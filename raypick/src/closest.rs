//! Closest points: for query points, the nearest point of a mesh's surface, found
//! with a bounding volume hierarchy over the mesh's triangles (CPU).
//!
//! ```
//! use glam::{DVec3, Vec3};
//! use raypick::Mesh;
//! use raypick::closest::ClosestPoints;
//!
//! // A unit square in the z = 0 plane, as two triangles.
//! let positions = vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
//! let mesh = Mesh::new(positions, vec![[0, 1, 2], [0, 2, 3]])?;
//! let closest = ClosestPoints::new(&mesh);
//!
//! let found = closest.query(&[Vec3::new(0.75, 0.25, 2.0), Vec3::new(3.0, 0.5, 0.0)]);
//! let above = found[0].unwrap();
//! assert_eq!((above.prim, above.distance), (0, 2.0));
//! assert_eq!(above.point, DVec3::new(0.75, 0.25, 0.0));
//! // Point = (1-u-v)*v0 + u*v1 + v*v2 of triangle `prim`.
//! assert_eq!((above.u, above.v), (0.5, 0.25));
//! let beside = found[1].unwrap();
//! assert_eq!((beside.point, beside.distance), (DVec3::new(1.0, 0.5, 0.0), 2.0));
//! # Ok::<(), raypick::Error>(())
//! ```
//!
//! ## What the answer is
//!
//! - The distance is the Euclidean distance from the query point to the closest
//!   point of the closed triangles (edges and vertices included), computed in f64
//!   from the mesh's stored f32 vertices (exact in f64) and the query point moved
//!   into the mesh's local frame in f64 ([`Mesh::origin`]); the point is returned in
//!   world coordinates, `origin + local`, in f64.
//! - Triangle `k` is left out when a vertex coordinate is not finite or the f64
//!   cross product of its edges `(v1 - v0) × (v2 - v0)` is zero (no area: repeated or
//!   collinear vertices). Those triangles are never hit by rays either.
//! - **Ties on equal distance go to the lowest triangle id**, so the answer does not
//!   depend on the tree: it is the one a loop over every triangle in id order keeping
//!   the first strictly smaller distance finds (a point on a shared vertex or edge
//!   names the lowest-numbered triangle that contains it).
//! - `u`, `v` are the barycentric weights of `v1` and `v2` of triangle `prim`:
//!   `point = origin + (1-u-v)*v0 + u*v1 + v*v2`, with `u, v >= 0`, `u + v <= 1` up
//!   to rounding (exactly `0` on the edges `v0 v2` and `v0 v1`).
//! - `None` for a non-finite query point, or when the mesh has no triangle left.
//!
//! Per triangle, the query point's projection onto the triangle's plane is taken
//! when its barycentric weights are all non-negative; otherwise the closest point is
//! the nearest of the closest points on the three edges (segments). The tree's
//! boxes prune a subtree only when its box is farther than the best distance found
//! so far with a relative margin of `1e-9`, so rounding cannot prune a triangle that
//! ties or wins.

use glam::{DVec3, Vec3};
use rayon::prelude::*;

use crate::Mesh;

/// Largest number of triangles in a leaf of the tree.
const LEAF_SIZE: usize = 4;

/// Relative margin of the pruning test (see the module docs).
const PRUNE_MARGIN: f64 = 1.0 + 1e-9;

/// Queries per parallel task.
const POINTS_PER_TASK: usize = 256;

/// The closest point of a mesh to one query point (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosestPoint {
    /// The closest point of the mesh, in world coordinates.
    pub point: DVec3,
    /// Euclidean distance from the query point to [`ClosestPoint::point`].
    pub distance: f64,
    /// Id of the triangle the point lies on (the lowest one on a tie).
    pub prim: u32,
    /// Barycentric weight of the triangle's `v1`.
    pub u: f64,
    /// Barycentric weight of the triangle's `v2`.
    pub v: f64,
}

/// One node of the tree: a box and either two children or a run of triangles.
#[derive(Clone, Copy, Debug)]
struct Node {
    lo: Vec3,
    hi: Vec3,
    /// Leaf: index of the first triangle; interior: index of the second child (the
    /// first follows its parent).
    index: u32,
    /// Leaf: number of triangles (at least 1); interior: 0.
    count: u32,
}

/// A mesh prepared for closest-point queries: a box tree over its triangles.
///
/// Built once ([`ClosestPoints::new`], O(n log n)), queried any number of times;
/// queries of many points run in parallel on rayon's current thread pool.
#[derive(Clone, Debug)]
pub struct ClosestPoints {
    origin: DVec3,
    /// Triangle vertices in tree order (local frame).
    triangles: Vec<[Vec3; 3]>,
    /// The mesh's id of each entry of `triangles`.
    ids: Vec<u32>,
    nodes: Vec<Node>,
}

impl ClosestPoints {
    /// Builds the tree over `mesh`'s triangles (leaving out those without area or
    /// with a non-finite vertex).
    pub fn new(mesh: &Mesh) -> Self {
        let mut entries: Vec<(u32, [Vec3; 3])> = mesh
            .triangles()
            .enumerate()
            .filter(|(_, tri)| has_area(tri))
            .map(|(k, tri)| (k as u32, tri))
            .collect();
        let mut nodes = Vec::with_capacity(2 * entries.len() / LEAF_SIZE + 1);
        if !entries.is_empty() {
            build(&mut entries, 0, &mut nodes);
        }
        let (ids, triangles) = entries.into_iter().unzip();
        Self {
            origin: mesh.origin(),
            triangles,
            ids,
            nodes,
        }
    }

    /// Number of triangles that take part (the mesh's, less those left out).
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// The closest point of the mesh to `point` (world coordinates, f64), or `None`
    /// when `point` is not finite or no triangle takes part.
    pub fn closest(&self, point: DVec3) -> Option<ClosestPoint> {
        if !point.is_finite() || self.nodes.is_empty() {
            return None;
        }
        let q = point - self.origin;
        let mut best = Candidate::NONE;
        let mut stack: Vec<(u32, f64)> = Vec::with_capacity(64);
        stack.push((0, box_distance2(&self.nodes[0], q)));
        while let Some((index, d2)) = stack.pop() {
            if d2 > best.d2 * PRUNE_MARGIN {
                continue;
            }
            let node = &self.nodes[index as usize];
            if node.count > 0 {
                let first = node.index as usize;
                for slot in first..first + node.count as usize {
                    let found = closest_on_triangle(q, &self.triangles[slot]);
                    let id = self.ids[slot];
                    if found.d2 < best.d2 || (found.d2 == best.d2 && id < best.id) {
                        best = Candidate { id, ..found };
                    }
                }
                continue;
            }
            let (a, b) = (index + 1, node.index);
            let da = box_distance2(&self.nodes[a as usize], q);
            let db = box_distance2(&self.nodes[b as usize], q);
            // The nearer child is popped first.
            if da <= db {
                stack.push((b, db));
                stack.push((a, da));
            } else {
                stack.push((a, da));
                stack.push((b, db));
            }
        }
        (best.id != Candidate::NONE.id).then(|| ClosestPoint {
            point: self.origin + best.point,
            distance: best.d2.sqrt(),
            prim: best.id,
            u: best.u,
            v: best.v,
        })
    }

    /// [`ClosestPoints::closest`] of each f32 point (world coordinates), in
    /// parallel.
    pub fn query(&self, points: &[Vec3]) -> Vec<Option<ClosestPoint>> {
        points
            .par_iter()
            .with_min_len(POINTS_PER_TASK)
            .map(|p| self.closest(p.as_dvec3()))
            .collect()
    }

    /// [`ClosestPoints::closest`] of each f64 point (world coordinates), in
    /// parallel.
    pub fn query_f64(&self, points: &[DVec3]) -> Vec<Option<ClosestPoint>> {
        points
            .par_iter()
            .with_min_len(POINTS_PER_TASK)
            .map(|p| self.closest(*p))
            .collect()
    }
}

/// Whether a triangle takes part: finite vertices and a non-zero f64 cross product.
fn has_area(tri: &[Vec3; 3]) -> bool {
    if !tri.iter().all(|v| v.is_finite()) {
        return false;
    }
    let [a, b, c] = tri.map(Vec3::as_dvec3);
    let n = (b - a).cross(c - a);
    let nn = n.length_squared();
    nn > 0.0 && nn.is_finite()
}

/// Builds the subtree over `entries` (triangles `first..first + entries.len()` of the
/// final order) into `nodes`, depth first; returns its node index.
fn build(entries: &mut [(u32, [Vec3; 3])], first: usize, nodes: &mut Vec<Node>) -> u32 {
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    let (mut clo, mut chi) = (lo, hi);
    for (_, tri) in entries.iter() {
        for v in tri {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
        let c = centroid(tri);
        clo = clo.min(c);
        chi = chi.max(c);
    }
    let index = nodes.len() as u32;
    nodes.push(Node {
        lo,
        hi,
        index: first as u32,
        count: entries.len() as u32,
    });
    if entries.len() <= LEAF_SIZE {
        return index;
    }
    // Split at the median centroid along the widest axis of the centroids.
    let extent = chi - clo;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let mid = entries.len() / 2;
    entries.select_nth_unstable_by(mid, |a, b| {
        centroid(&a.1)[axis].total_cmp(&centroid(&b.1)[axis])
    });
    let (left, right) = entries.split_at_mut(mid);
    build(left, first, nodes);
    let second = build(right, first + mid, nodes);
    nodes[index as usize].index = second;
    nodes[index as usize].count = 0;
    index
}

/// The centroid's coordinates (summed in f64, so that it is finite for finite
/// vertices), as f32.
fn centroid(tri: &[Vec3; 3]) -> Vec3 {
    ((tri[0].as_dvec3() + tri[1].as_dvec3() + tri[2].as_dvec3()) / 3.0).as_vec3()
}

/// Squared distance from `q` to the node's box (0 inside).
fn box_distance2(node: &Node, q: DVec3) -> f64 {
    let lo = node.lo.as_dvec3();
    let hi = node.hi.as_dvec3();
    let d = (lo - q).max(q - hi).max(DVec3::ZERO);
    d.length_squared()
}

/// The best point found so far (local frame).
#[derive(Clone, Copy, Debug)]
struct Candidate {
    d2: f64,
    id: u32,
    point: DVec3,
    u: f64,
    v: f64,
}

impl Candidate {
    const NONE: Candidate = Candidate {
        d2: f64::INFINITY,
        id: u32::MAX,
        point: DVec3::ZERO,
        u: 0.0,
        v: 0.0,
    };
}

/// The closest point of triangle `tri` (local f32 vertices, with area) to `q`, in
/// f64; `id` is left for the caller.
fn closest_on_triangle(q: DVec3, tri: &[Vec3; 3]) -> Candidate {
    let [a, b, c] = tri.map(Vec3::as_dvec3);
    let e1 = b - a;
    let e2 = c - a;
    let n = e1.cross(e2);
    let nn = n.dot(n);
    let w = q - a;
    // Barycentric weights of q's projection onto the plane.
    let u = n.dot(w.cross(e2)) / nn;
    let v = n.dot(e1.cross(w)) / nn;
    let (u, v) = if u >= 0.0 && v >= 0.0 && u + v <= 1.0 {
        (u, v)
    } else {
        // Outside: the nearest of the three edges' closest points.
        let on_ab = segment(q, a, e1);
        let on_ac = segment(q, a, e2);
        let on_bc = segment(q, b, c - b);
        let mut best = (on_ab.0, on_ab.1, 0.0);
        if on_ac.0 < best.0 {
            best = (on_ac.0, 0.0, on_ac.1);
        }
        if on_bc.0 < best.0 {
            best = (on_bc.0, 1.0 - on_bc.1, on_bc.1);
        }
        (best.1, best.2)
    };
    let point = a + u * e1 + v * e2;
    Candidate {
        d2: (q - point).length_squared(),
        id: 0,
        point,
        u,
        v,
    }
}

/// Squared distance from `q` to the segment `start + s*dir`, `s` in `[0, 1]`, and
/// the `s` of its closest point.
fn segment(q: DVec3, start: DVec3, dir: DVec3) -> (f64, f64) {
    let len2 = dir.length_squared();
    let s = if len2 > 0.0 {
        ((q - start).dot(dir) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    ((q - (start + s * dir)).length_squared(), s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every triangle in id order, keeping the first strictly smaller distance.
    fn brute(mesh: &Mesh, p: DVec3) -> Option<(u32, f64)> {
        let q = p - mesh.origin();
        let mut best: Option<(u32, f64)> = None;
        for (k, tri) in mesh.triangles().enumerate() {
            if !has_area(&tri) {
                continue;
            }
            let d2 = closest_on_triangle(q, &tri).d2;
            if best.is_none_or(|(_, b)| d2 < b) {
                best = Some((k as u32, d2));
            }
        }
        best
    }

    fn lcg(state: &mut u64) -> f32 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*state >> 40) as f32) / (1u64 << 24) as f32
    }

    #[test]
    fn the_tree_finds_what_a_loop_over_every_triangle_finds() {
        let mut s = 7u64;
        let mut positions = Vec::new();
        for _ in 0..600 {
            positions.push(Vec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 4.0 - 2.0);
        }
        // Shared vertices (ties at vertices and edges) and a few duplicates.
        let mut indices: Vec<[u32; 3]> = (0..300)
            .map(|_| [0, 1, 2].map(|_| (lcg(&mut s) * 600.0) as u32 % 600))
            .collect();
        indices.extend_from_slice(&indices.clone()[..20]);
        let mesh = Mesh::new(positions.clone(), indices).unwrap();
        let closest = ClosestPoints::new(&mesh);
        let mut queries: Vec<DVec3> = (0..2000)
            .map(|_| (Vec3::new(lcg(&mut s), lcg(&mut s), lcg(&mut s)) * 8.0 - 4.0).as_dvec3())
            .collect();
        queries.extend(positions.iter().map(|p| p.as_dvec3()));
        for q in queries {
            let got = closest.closest(q).map(|c| c.prim);
            let want = brute(&mesh, q).map(|(k, _)| k);
            assert_eq!(got, want, "{q}");
        }
    }

    #[test]
    fn nothing_to_find() {
        let empty = ClosestPoints::new(&Mesh::default());
        assert_eq!(empty.closest(DVec3::ZERO), None);
        let flat = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::X * 2.0]]);
        let flat = ClosestPoints::new(&flat);
        assert_eq!(flat.triangle_count(), 0);
        assert_eq!(flat.closest(DVec3::ONE), None);
        let one = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]);
        assert_eq!(ClosestPoints::new(&one).closest(DVec3::NAN), None);
    }
}
