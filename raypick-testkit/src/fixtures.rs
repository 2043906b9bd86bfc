//! Generated fixtures shared by tests, benches and the CLI's built-in bench scene:
//! a fixed-seed random number generator, meshes (icosphere, grid, cube, triangle
//! soup, the built-in scene, degenerate triangles) and ray sets (camera, incoherent,
//! random and adversarial rays).
//!
//! Everything here is deterministic: the same arguments (and the same [`Rng`]
//! state) give bit-identical output on every platform. Boxes are given as
//! `(lo, hi)` corner pairs, the form [`Mesh::bounds`] returns.
//!
//! ```
//! use raypick_testkit::fixtures::{self, Rng};
//!
//! let mesh = fixtures::builtin_scene(10_000);
//! let bounds = mesh.bounds().unwrap();
//! let primary = fixtures::camera_rays(bounds, 64, 48);
//! let mut rng = Rng::new(7);
//! let tricky = fixtures::adversarial_rays(&mesh, &mut rng, 256);
//! assert_eq!((primary.len(), tricky.len()), (64 * 48, 256));
//! ```

use std::collections::HashMap;

use glam::{DVec3, Mat4, Vec3, Vec4};

use crate::reference::intersect_f64;
use raypick::camera::{self, Camera};
use raypick::{Mesh, Ray};

// ---------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------

/// A small, fast, fixed-seed pseudo-random number generator (`SplitMix64`).
///
/// Not cryptographic. The sequence for a seed is fixed forever, so fixtures built
/// from it are reproducible across runs, machines and backends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`. Every seed, including 0, is fine.
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A uniform `f32` in `[0, 1)` (24 random bits).
    pub fn f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }

    /// A uniform `f64` in `[0, 1)` (53 random bits).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// A uniform `f32` in `[lo, hi)` (or exactly `lo` when `lo == hi`).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        let x = lo + (hi - lo) * self.f32();
        if hi > lo && x >= hi {
            hi.next_down().max(lo)
        } else {
            x
        }
    }

    /// A log-uniform `f32` in `[lo, hi]` (`0 < lo <= hi`): every factor of ten
    /// is equally likely.
    pub fn log_range(&mut self, lo: f32, hi: f32) -> f32 {
        let x = (lo as f64) * ((hi as f64) / (lo as f64)).powf(self.f64());
        (x as f32).clamp(lo, hi)
    }

    /// A uniform index in `0..n`.
    ///
    /// # Panics
    /// If `n == 0`.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f32) -> bool {
        self.f32() < p
    }

    /// A random direction, uniform on the unit sphere.
    pub fn unit_vector(&mut self) -> Vec3 {
        let z = self.range(-1.0, 1.0);
        let phi = std::f32::consts::TAU * self.f32();
        let r = (1.0 - z * z).max(0.0).sqrt();
        Vec3::new(r * phi.cos(), r * phi.sin(), z).normalize()
    }

    /// A uniform point in the box `[lo, hi)` (per axis as [`Rng::range`]).
    pub fn point_in_box(&mut self, lo: Vec3, hi: Vec3) -> Vec3 {
        let x = self.range(lo.x, hi.x);
        let y = self.range(lo.y, hi.y);
        let z = self.range(lo.z, hi.z);
        Vec3::new(x, y, z)
    }
}

// ---------------------------------------------------------------------------
// Meshes
// ---------------------------------------------------------------------------

/// Base icosahedron faces, counter-clockwise seen from outside.
const ICOSAHEDRON_FACES: [[u32; 3]; 20] = [
    [0, 11, 5],
    [0, 5, 1],
    [0, 1, 7],
    [0, 7, 10],
    [0, 10, 11],
    [1, 5, 9],
    [5, 11, 4],
    [11, 10, 2],
    [10, 7, 6],
    [7, 1, 8],
    [3, 9, 4],
    [3, 4, 2],
    [3, 2, 6],
    [3, 6, 8],
    [3, 8, 9],
    [4, 9, 5],
    [2, 4, 11],
    [6, 2, 10],
    [8, 6, 7],
    [9, 8, 1],
];

/// A geodesic sphere: an icosahedron whose faces are split `subdivisions` times
/// into four, with vertices pushed onto the sphere of `radius` around `center`.
///
/// The mesh is closed (every edge is shared by exactly two triangles, in opposite
/// directions), shares vertices (`10*4^s + 2` of them) and is wound
/// counter-clockwise seen from outside, so `cross(v1 - v0, v2 - v0)` points
/// outward. It has `20 * 4^subdivisions` triangles (20, 80, 320, 1280, 5120,
/// 20480, 81920, ...). Vertex positions are computed in f64 and rounded once.
pub fn icosphere(subdivisions: u32, radius: f32, center: Vec3) -> Mesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut verts: Vec<DVec3> = [
        (-1.0, t, 0.0),
        (1.0, t, 0.0),
        (-1.0, -t, 0.0),
        (1.0, -t, 0.0),
        (0.0, -1.0, t),
        (0.0, 1.0, t),
        (0.0, -1.0, -t),
        (0.0, 1.0, -t),
        (t, 0.0, -1.0),
        (t, 0.0, 1.0),
        (-t, 0.0, -1.0),
        (-t, 0.0, 1.0),
    ]
    .iter()
    .map(|&(x, y, z)| DVec3::new(x, y, z).normalize())
    .collect();
    let mut faces = ICOSAHEDRON_FACES.to_vec();
    for _ in 0..subdivisions {
        let mut cache: HashMap<(u32, u32), u32> = HashMap::with_capacity(faces.len() * 2);
        let mut midpoint = |a: u32, b: u32, verts: &mut Vec<DVec3>| -> u32 {
            *cache.entry((a.min(b), a.max(b))).or_insert_with(|| {
                let m = (verts[a as usize] + verts[b as usize]).normalize();
                verts.push(m);
                (verts.len() - 1) as u32
            })
        };
        let mut next = Vec::with_capacity(faces.len() * 4);
        for [a, b, c] in faces {
            let ab = midpoint(a, b, &mut verts);
            let bc = midpoint(b, c, &mut verts);
            let ca = midpoint(c, a, &mut verts);
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        faces = next;
    }
    let (c, r) = (center.as_dvec3(), radius as f64);
    let positions = verts.iter().map(|&v| (c + r * v).as_vec3()).collect();
    Mesh::new(positions, faces).expect("icosphere indices are valid")
}

/// A flat grid in the `z = 0` plane: `nx × ny` square-split cells, `2*nx*ny`
/// triangles, `(nx+1)*(ny+1)` shared vertices.
///
/// The grid spans `[-size/2, size/2]` in both `x` and `y` (cells are
/// `size/nx × size/ny`), with the end coordinates exact. Triangles are wound
/// counter-clockwise seen from `+z` (normal `+z`), two per cell, cells in
/// row-major order (`x` fastest). A zero `nx` or `ny` gives an empty mesh.
pub fn grid(nx: u32, ny: u32, size: f32) -> Mesh {
    if nx == 0 || ny == 0 {
        return Mesh::default();
    }
    let coord = |i: u32, n: u32| (-0.5 * size as f64 + size as f64 * i as f64 / n as f64) as f32;
    let mut positions = Vec::with_capacity((nx as usize + 1) * (ny as usize + 1));
    for j in 0..=ny {
        for i in 0..=nx {
            positions.push(Vec3::new(coord(i, nx), coord(j, ny), 0.0));
        }
    }
    let mut indices = Vec::with_capacity(2 * nx as usize * ny as usize);
    let row = nx + 1;
    for j in 0..ny {
        for i in 0..nx {
            let v00 = j * row + i;
            let (v10, v01, v11) = (v00 + 1, v00 + row, v00 + row + 1);
            indices.push([v00, v10, v11]);
            indices.push([v00, v11, v01]);
        }
    }
    Mesh::new(positions, indices).expect("grid indices are valid")
}

/// The cube `[-1, 1]³`: 8 shared vertices, 12 triangles, closed, wound
/// counter-clockwise seen from outside (outward normals). Vertex `i` has
/// coordinate `x = +1` when bit 0 of `i` is set (else `-1`), `y` from bit 1 and
/// `z` from bit 2. Faces come in the order `+x, -x, +y, -y, +z, -z`, two
/// triangles each.
pub fn cube() -> Mesh {
    let positions = (0..8u32)
        .map(|i| {
            let s = |bit: u32| if i & (1 << bit) != 0 { 1.0 } else { -1.0 };
            Vec3::new(s(0), s(1), s(2))
        })
        .collect();
    let mut indices = Vec::with_capacity(12);
    for axis in 0..3u32 {
        for sign in [1u32, 0] {
            let (b, c) = ((axis + 1) % 3, (axis + 2) % 3);
            let corner = |ub: u32, uc: u32| (sign << axis) | (ub << b) | (uc << c);
            // (b, c, axis) is a cyclic (right-handed) order, so this quad's normal is +axis.
            let mut q = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)];
            if sign == 0 {
                q.reverse();
            }
            indices.push([q[0], q[1], q[2]]);
            indices.push([q[0], q[2], q[3]]);
        }
    }
    Mesh::new(positions, indices).expect("cube indices are valid")
}

/// `n` random triangles of varied size inside the box `(lo, hi)`, no shared
/// vertices (triangle `k` uses vertices `3k, 3k+1, 3k+2`).
///
/// Sizes, relative to the box diagonal: about 10% tiny (`1e-5 .. 1e-3`), 5% large
/// (`0.1 .. 0.4`), the rest log-uniform in `1e-3 .. 0.05`. Vertices are clamped to
/// the box, so the mesh always fits in it.
pub fn soup(n: usize, rng: &mut Rng, bounds: (Vec3, Vec3)) -> Mesh {
    let (lo, hi) = bounds;
    let diag = (hi - lo).length();
    let mut triangles = Vec::with_capacity(n);
    for _ in 0..n {
        let class = rng.f32();
        let size = diag
            * if class < 0.10 {
                rng.log_range(1e-5, 1e-3)
            } else if class < 0.15 {
                rng.range(0.1, 0.4)
            } else {
                rng.log_range(1e-3, 0.05)
            };
        let c = rng.point_in_box(lo, hi);
        let mut tri = [Vec3::ZERO; 3];
        for v in &mut tri {
            *v = (c + rng.unit_vector() * (size * rng.range(0.3, 1.0))).clamp(lo, hi);
        }
        triangles.push(tri);
    }
    Mesh::from_triangles(&triangles)
}

/// The mesh with every position mapped through `transform`
/// (`Mat4::transform_point3`); indices unchanged. A mirroring transform (negative
/// determinant) reverses the apparent winding.
pub fn transformed(mesh: &Mesh, transform: Mat4) -> Mesh {
    let positions = mesh
        .positions()
        .iter()
        .map(|&p| transform.transform_point3(p))
        .collect();
    Mesh::new(positions, mesh.indices().to_vec()).expect("indices unchanged")
}

/// All meshes in one, in order: triangle ids of `meshes[1]` follow those of
/// `meshes[0]`, and so on.
///
/// # Panics
/// If the total has more triangles or vertices than a `u32` can index.
pub fn concat(meshes: &[Mesh]) -> Mesh {
    let vertex_count: usize = meshes.iter().map(|m| m.positions().len()).sum();
    let triangle_count: usize = meshes.iter().map(Mesh::triangle_count).sum();
    assert!(
        vertex_count <= u32::MAX as usize,
        "concat: too many vertices"
    );
    let mut positions = Vec::with_capacity(vertex_count);
    let mut indices = Vec::with_capacity(triangle_count);
    for m in meshes {
        let base = positions.len() as u32;
        positions.extend_from_slice(m.positions());
        indices.extend(m.indices().iter().map(|t| t.map(|i| i + base)));
    }
    Mesh::new(positions, indices).expect("concat: too many triangles")
}

/// The box every [`builtin_scene`] fits in: `x, z` in `[-50, 50]`, `y` (up) in
/// `[-10, 30]`. The ground is the square `y = 0`, `|x|, |z| <= 50`.
pub const BUILTIN_SCENE_BOUNDS: (Vec3, Vec3) =
    (Vec3::new(-50.0, -10.0, -50.0), Vec3::new(50.0, 30.0, 50.0));

/// The triangle count the CLI's `raypick bench` uses for its built-in scene.
pub const DEFAULT_SCENE_TRIANGLES: usize = 100_000;

/// Seed of the random placement in [`builtin_scene`].
const SCENE_SEED: u64 = 0x5CE4_E5EE_D000_0001;

/// The generated bench scene with about `target_triangles` triangles (exactly that
/// many for targets of 2 or more).
///
/// Layout (`y` up), all inside [`BUILTIN_SCENE_BOUNDS`]:
/// * a ground grid at `y = 0` spanning `[-50, 50]²` in `x, z`, facing `+y`
///   (about 20% of the triangles; triangle ids first);
/// * up to 24 icospheres of different tessellations (about 60% of the
///   triangles; 1280 to 5120 each at 100k, 320 to 1280 at 20k), radius 2.5..9.5, centres at
///   `|x|, |z| <= 40`, partly sunk into the ground or floating, sometimes
///   overlapping — so primary rays see several layers (depth complexity);
/// * the rest as random triangle soup in eight "debris" clusters of about
///   `12 × 8 × 12`.
///
/// Deterministic: the same target always gives the same mesh.
pub fn builtin_scene(target_triangles: usize) -> Mesh {
    let mut rng = Rng::new(SCENE_SEED);
    let target = target_triangles;

    // Ground: y = 0, normal +y. (x, y, 0) -> (x, 0, -y) is a rotation (det +1).
    let n = ((target as f64 * 0.1).sqrt().round() as u32).max(1);
    let rotate = Mat4::from_cols(Vec4::X, Vec4::NEG_Z, Vec4::Y, Vec4::W);
    let ground = transformed(&grid(n, n, 100.0), rotate);
    let mut remaining = target.saturating_sub(ground.triangle_count());
    let mut parts = vec![ground];

    // Spheres: up to 24, each taking at most its fair share of what is left of
    // their budget (the last ones pick up what earlier ones left).
    let sphere_budget = ((target as f64 * 0.6) as usize).min(remaining);
    let spheres = (sphere_budget / 400).clamp(1, 24);
    let mut left = sphere_budget;
    for i in 0..spheres {
        let share = left / (spheres - i);
        if share < 20 {
            continue;
        }
        let mut s = 0u32;
        while s < 8 && 20usize << (2 * (s + 1)) <= share {
            s += 1;
        }
        let count = 20usize << (2 * s);
        let radius = rng.range(2.5, 9.5);
        let x = rng.range(-40.0, 40.0);
        let z = rng.range(-40.0, 40.0);
        let y = rng.range(0.0, (2.0 * radius).min(28.0 - radius));
        parts.push(icosphere(s, radius, Vec3::new(x, y, z)));
        left -= count;
        remaining -= count;
    }

    // Soup in clusters, the remainder split evenly.
    let clusters = 8;
    for c in 0..clusters {
        let count = remaining / (clusters - c);
        remaining -= count;
        let center = Vec3::new(rng.range(-40.0, 40.0), 0.0, rng.range(-40.0, 40.0));
        let lo = center - Vec3::new(6.0, 0.0, 6.0);
        let hi = center + Vec3::new(6.0, 8.0, 6.0);
        parts.push(soup(count, &mut rng, (lo, hi)));
    }
    concat(&parts)
}

/// Grid step used for exactly collinear degenerate triangles: a power of two about
/// `diag / 64`, but coarse enough that coordinates of magnitude up to `4 * max`
/// stay exact multiples of it in f32.
fn exact_step(lo: Vec3, hi: Vec3) -> f32 {
    let diag = (hi - lo).length().max(1e-3);
    let max = lo.abs().max(hi.abs()).max_element() + diag;
    let by_size = (diag / 64.0).log2().floor() as i32;
    let by_magnitude = (4.0 * max).log2().ceil() as i32 - 23;
    2f32.powi(by_size.max(by_magnitude))
}

/// The kinds of degenerate triangles [`with_degenerates`] appends, in the order
/// it cycles through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DegenerateKind {
    /// Two of the three indices are equal (e.g. `[a, a, b]`, using the input
    /// mesh's own vertices when it has any).
    RepeatedIndex,
    /// Three distinct indices, two of which have the same position.
    RepeatedPosition,
    /// Three distinct, exactly collinear points (integer multiples of a power of
    /// two on one line, so every edge cross product is exactly zero in f32).
    Collinear,
    /// All three vertices identical (`[a, a, a]`, or three copies of one point).
    SinglePoint,
    /// A copy of a real triangle with one vertex given a NaN coordinate (or all
    /// three coordinates NaN).
    NanVertex,
    /// A copy of a real triangle with one vertex given a `±inf` coordinate.
    InfiniteVertex,
}

impl DegenerateKind {
    /// Every kind, in the order [`with_degenerates`] cycles through them.
    pub const ALL: [DegenerateKind; 6] = [
        DegenerateKind::RepeatedIndex,
        DegenerateKind::RepeatedPosition,
        DegenerateKind::Collinear,
        DegenerateKind::SinglePoint,
        DegenerateKind::NanVertex,
        DegenerateKind::InfiniteVertex,
    ];
}

/// `mesh` followed by `count` degenerate triangles that must never be hit
/// (docs/contracts.md §1): zero area (repeated vertex, collinear, single point) or
/// non-finite coordinates (NaN, ±inf).
///
/// The original triangles keep their ids `0..mesh.triangle_count()`; degenerate
/// triangle `mesh.triangle_count() + i` is of kind
/// `DegenerateKind::ALL[i % 6]`. They are placed on or near the input mesh
/// (reusing its vertices where possible), so rays aimed at the mesh pass through
/// them. Only the collinear triangles add new finite positions: they lie within
/// about 15% of the mesh's bounding-box diagonal of that box (the box `[-1, 1]³`
/// for an empty mesh), so [`Mesh::bounds`] may grow by that much.
pub fn with_degenerates(mesh: &Mesh, rng: &mut Rng, count: usize) -> Mesh {
    let mut positions = mesh.positions().to_vec();
    let mut indices = mesh.indices().to_vec();
    let (lo, hi) = mesh
        .bounds()
        .unwrap_or((Vec3::splat(-1.0), Vec3::splat(1.0)));
    let step = exact_step(lo, hi);
    let snap = |p: Vec3| (p / step).round() * step;
    let source_tris = mesh.triangle_count();

    for i in 0..count {
        // A real triangle's indices to borrow vertices from (or fresh points).
        let base: [u32; 3] = if source_tris > 0 {
            mesh.indices()[rng.below(source_tris)]
        } else {
            let first = positions.len() as u32;
            for _ in 0..3 {
                positions.push(rng.point_in_box(lo, hi));
            }
            [first, first + 1, first + 2]
        };
        let [a, b, _] = base;
        let [pa, pb, pc] = base.map(|k| positions[k as usize]);
        let mut push = |p: Vec3| {
            positions.push(p);
            (positions.len() - 1) as u32
        };
        let tri = match DegenerateKind::ALL[i % DegenerateKind::ALL.len()] {
            DegenerateKind::RepeatedIndex => match rng.below(3) {
                0 => [a, a, b],
                1 => [a, b, b],
                _ => [b, a, b],
            },
            DegenerateKind::RepeatedPosition => {
                let (x, y, z) = (push(pa), push(pa), push(pb));
                match rng.below(3) {
                    0 => [x, y, z],
                    1 => [x, z, y],
                    _ => [z, x, y],
                }
            }
            DegenerateKind::Collinear => {
                let grow = 0.05 * (hi - lo);
                let p = snap(rng.point_in_box(lo - grow, hi + grow));
                let mut d = Vec3::ZERO;
                while d == Vec3::ZERO {
                    d = Vec3::new(
                        rng.below(7) as f32 - 3.0,
                        rng.below(7) as f32 - 3.0,
                        rng.below(7) as f32 - 3.0,
                    );
                }
                let d = d * step;
                let pts = [p, p + d, p + 2.0 * d];
                let order = [[0, 1, 2], [0, 2, 1], [1, 0, 2]][rng.below(3)];
                order.map(|k| push(pts[k]))
            }
            DegenerateKind::SinglePoint => {
                if rng.chance(0.5) {
                    [a, a, a]
                } else {
                    [push(pa), push(pa), push(pa)]
                }
            }
            kind @ (DegenerateKind::NanVertex | DegenerateKind::InfiniteVertex) => {
                let mut p = pc;
                let bad = if kind == DegenerateKind::NanVertex {
                    f32::NAN
                } else if rng.chance(0.5) {
                    f32::INFINITY
                } else {
                    f32::NEG_INFINITY
                };
                if kind == DegenerateKind::NanVertex && rng.chance(0.25) {
                    p = Vec3::splat(bad);
                } else {
                    p[rng.below(3)] = bad;
                }
                let x = push(p);
                match rng.below(3) {
                    0 => [a, b, x],
                    1 => [a, x, b],
                    _ => [x, a, b],
                }
            }
        };
        indices.push(tri);
    }
    Mesh::new(positions, indices).expect("degenerate indices are valid")
}

// ---------------------------------------------------------------------------
// Rays
// ---------------------------------------------------------------------------

/// The camera [`camera_rays`] uses: [`Camera::framing`] of the box, looking from
/// the direction `(0.2, 1.0, 1.0)` (45° above, in front, slightly to the right),
/// up `+Y`, vertical field of view 50°, aspect `width / height`. On
/// [`builtin_scene`] about 40% of its rays hit something (the image corners
/// see past the ground) and about 10% cross three or more surfaces.
pub fn bench_camera(bounds: (Vec3, Vec3), width: u32, height: u32) -> Camera {
    Camera::framing(
        bounds.0,
        bounds.1,
        Vec3::new(0.2, 1.0, 1.0),
        50f32.to_radians(),
        camera::aspect(width, height),
    )
}

/// Primary rays (row-major, top row first) of a `width × height` image from
/// [`bench_camera`], which sees the whole box. Unit directions, `[0, +inf]`.
pub fn camera_rays(bounds: (Vec3, Vec3), width: u32, height: u32) -> Vec<Ray> {
    bench_camera(bounds, width, height).primary_rays(width, height)
}

/// Centre, diagonal length (at least `1e-3`) of a box.
fn box_metrics(bounds: (Vec3, Vec3)) -> (Vec3, f32) {
    let (lo, hi) = bounds;
    (0.5 * (lo + hi), (hi - lo).length().max(1e-3))
}

/// `n` incoherent rays: origins uniform on a sphere around the box (radius = the
/// box diagonal, centred on the box), each aimed at an independent uniform point
/// inside the box. Unit directions, `[0, +inf]`.
pub fn incoherent_rays(n: usize, rng: &mut Rng, bounds: (Vec3, Vec3)) -> Vec<Ray> {
    let (center, diag) = box_metrics(bounds);
    (0..n)
        .map(|_| {
            let origin = center + diag * rng.unit_vector();
            let target = rng.point_in_box(bounds.0, bounds.1);
            Ray::new(origin, (target - origin).normalize())
        })
        .collect()
}

/// `n` random rays: origins uniform in the box enlarged by half its size on each
/// side (every axis at least 10% of the diagonal wide, so flat boxes work), uniform
/// random directions, about 30% of them not unit length (length `0.01 .. 100`),
/// and random finite intervals: about 40% `[0, +inf]`, 20% `[tmin, +inf]`, 40%
/// `[tmin, tmax]` with `tmin` zero half the time. All values are finite and every
/// interval has `tmin <= tmax`.
pub fn random_rays(n: usize, rng: &mut Rng, bounds: (Vec3, Vec3)) -> Vec<Ray> {
    let (lo, hi) = bounds;
    let (_, diag) = box_metrics(bounds);
    let ext = (hi - lo).max(Vec3::splat(0.1 * diag));
    let (elo, ehi) = (lo - 0.5 * ext, hi + 0.5 * ext);
    (0..n)
        .map(|_| {
            let origin = rng.point_in_box(elo, ehi);
            let len = if rng.chance(0.7) {
                1.0
            } else {
                rng.log_range(0.01, 100.0)
            };
            let dir = rng.unit_vector() * len;
            let cross = 2.0 * diag / len; // t to cross the enlarged box
            let class = rng.f32();
            let (tmin, tmax) = if class < 0.4 {
                (0.0, f32::INFINITY)
            } else if class < 0.6 {
                (rng.range(0.0, cross), f32::INFINITY)
            } else {
                let tmin = if rng.chance(0.5) {
                    0.0
                } else {
                    rng.range(0.0, cross)
                };
                (tmin, tmin + cross * rng.log_range(0.01, 2.0))
            };
            Ray::with_interval(origin, dir, tmin, tmax)
        })
        .collect()
}

/// What an adversarial ray from [`adversarial_rays_labeled`] tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdversarialKind {
    /// Aimed at a triangle vertex (shared by several triangles in a closed mesh)
    /// from a random direction. The ray's line passes exactly through the vertex
    /// whenever f32 can express that (checked in f64; nearly always), otherwise
    /// within rounding. Some are axis-aligned, which is always exact.
    Vertex,
    /// Aimed at the midpoint of a triangle edge (the midpoint rounded to f32, so
    /// exactly on the edge when representable), like [`AdversarialKind::Vertex`].
    EdgeMidpoint,
    /// Direction = a triangle edge (±, scaled by a power of two), origin in the
    /// triangle's plane (up to rounding), inside or outside the triangle.
    ParallelToTriangle,
    /// Origin on a triangle (a barycentric point rounded to f32, sometimes on an
    /// edge), direction random or along ± the normal, interval `[0, +inf]`.
    OriginOnTriangle,
    /// Aimed at a triangle's interior with `tmax` = the hit `t` (computed in f64
    /// from the f32 ray and vertices, then rounded) and `tmin = 0`.
    TmaxAtHit,
    /// As [`AdversarialKind::TmaxAtHit`] with `tmin` = the hit `t`, `tmax = +inf`.
    TminAtHit,
    /// As [`AdversarialKind::TmaxAtHit`] with `tmin = tmax` = the hit `t`.
    PointIntervalAtHit,
    /// Invalid: zero direction (`+0.0` or `-0.0` components). Must miss.
    ZeroDirection,
    /// Invalid: NaN in the origin. Must miss.
    NanOrigin,
    /// Invalid: `±inf` in the origin. Must miss.
    InfiniteOrigin,
    /// Invalid: NaN in the direction. Must miss.
    NanDirection,
    /// Invalid: `±inf` in the direction. Must miss.
    InfiniteDirection,
    /// Invalid: `tmin` is NaN. Must miss.
    NanTmin,
    /// Invalid: `tmax` is NaN. Must miss.
    NanTmax,
    /// Invalid: `tmin > tmax` (an empty interval around the hit). Must miss.
    EmptyInterval,
}

impl AdversarialKind {
    /// Every kind.
    pub const ALL: [AdversarialKind; 15] = [
        AdversarialKind::Vertex,
        AdversarialKind::EdgeMidpoint,
        AdversarialKind::ParallelToTriangle,
        AdversarialKind::OriginOnTriangle,
        AdversarialKind::TmaxAtHit,
        AdversarialKind::TminAtHit,
        AdversarialKind::PointIntervalAtHit,
        AdversarialKind::ZeroDirection,
        AdversarialKind::NanOrigin,
        AdversarialKind::InfiniteOrigin,
        AdversarialKind::NanDirection,
        AdversarialKind::InfiniteDirection,
        AdversarialKind::NanTmin,
        AdversarialKind::NanTmax,
        AdversarialKind::EmptyInterval,
    ];

    /// Whether rays of this kind are invalid (docs/contracts.md §1) and so must miss on
    /// every mesh.
    pub fn is_invalid(self) -> bool {
        matches!(
            self,
            AdversarialKind::ZeroDirection
                | AdversarialKind::NanOrigin
                | AdversarialKind::InfiniteOrigin
                | AdversarialKind::NanDirection
                | AdversarialKind::InfiniteDirection
                | AdversarialKind::NanTmin
                | AdversarialKind::NanTmax
                | AdversarialKind::EmptyInterval
        )
    }
}

/// `n` adversarial rays for `mesh`; [`adversarial_rays_labeled`] without the labels
/// (same rays, same `rng` use).
pub fn adversarial_rays(mesh: &Mesh, rng: &mut Rng, n: usize) -> Vec<Ray> {
    adversarial_rays_labeled(mesh, rng, n)
        .into_iter()
        .map(|(_, ray)| ray)
        .collect()
}

/// `n` adversarial rays for `mesh`, each with its [`AdversarialKind`].
///
/// Ray `i` is of kind `AdversarialKind::ALL[i % 8]` for `i % 8 < 7` (the seven
/// valid kinds); every eighth ray is invalid, cycling through the eight invalid
/// kinds, so every kind is present once `n >= 64`. Invalid rays are corrupted
/// copies of rays that would hit a triangle's interior. Triangles are drawn at
/// random among the non-degenerate ones (finite, non-zero f32 area); if the mesh
/// has none, every ray is an invalid one (aimed at the box centre).
pub fn adversarial_rays_labeled(
    mesh: &Mesh,
    rng: &mut Rng,
    n: usize,
) -> Vec<(AdversarialKind, Ray)> {
    let valid: Vec<usize> = (0..mesh.triangle_count())
        .filter(|&k| is_proper(mesh.triangle(k)))
        .collect();
    let bounds = mesh
        .bounds()
        .unwrap_or((Vec3::splat(-1.0), Vec3::splat(1.0)));
    let (center, diag) = box_metrics(bounds);
    let invalid: Vec<AdversarialKind> = AdversarialKind::ALL
        .into_iter()
        .filter(|k| k.is_invalid())
        .collect();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let kind = if valid.is_empty() {
            invalid[i % invalid.len()]
        } else if i % 8 < 7 {
            AdversarialKind::ALL[i % 8]
        } else {
            invalid[(i / 8) % invalid.len()]
        };
        let tri = (!valid.is_empty()).then(|| mesh.triangle(valid[rng.below(valid.len())]));
        let dist = diag * rng.log_range(0.01, 2.0);
        let ray = match (kind, tri) {
            (AdversarialKind::Vertex, Some(t)) => {
                let target = t[rng.below(3)];
                aimed_ray(rng, target, dist, 0.25)
            }
            (AdversarialKind::EdgeMidpoint, Some(t)) => {
                let j = rng.below(3);
                let (a, b) = (t[j].as_dvec3(), t[(j + 1) % 3].as_dvec3());
                aimed_ray(rng, (0.5 * (a + b)).as_vec3(), dist, 0.25)
            }
            (AdversarialKind::ParallelToTriangle, Some(t)) => {
                let [v0, v1, v2] = t.map(|v| v.as_dvec3());
                let s = rng.range(-0.5, 1.5) as f64;
                let r = rng.range(-0.5, 1.5) as f64;
                let origin = (v0 + s * (v1 - v0) + r * (v2 - v0)).as_vec3();
                let edge = [t[1] - t[0], t[2] - t[0], t[2] - t[1]][rng.below(3)];
                let sign = if rng.chance(0.5) { 1.0 } else { -1.0 };
                let scale = 2f32.powi(rng.below(7) as i32 - 3);
                Ray::new(origin, sign * scale * edge)
            }
            (AdversarialKind::OriginOnTriangle, Some(t)) => {
                let (u, v) = barycentric(rng, 0.2);
                let origin = point_on(t, u, v).as_vec3();
                let normal = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
                let dir = match rng.below(3) {
                    0 => normal,
                    1 => -normal,
                    _ => rng.unit_vector(),
                };
                Ray::new(origin, dir)
            }
            (
                AdversarialKind::TmaxAtHit
                | AdversarialKind::TminAtHit
                | AdversarialKind::PointIntervalAtHit,
                Some(t),
            ) => {
                let (ray, t_hit) = ray_into(rng, t, dist);
                match kind {
                    AdversarialKind::TmaxAtHit => Ray { tmax: t_hit, ..ray },
                    AdversarialKind::TminAtHit => Ray { tmin: t_hit, ..ray },
                    _ => Ray {
                        tmin: t_hit,
                        tmax: t_hit,
                        ..ray
                    },
                }
            }
            (_, tri) => {
                let (base, t_hit) = match tri {
                    Some(t) => ray_into(rng, t, dist),
                    None => {
                        let origin = center + dist.max(diag) * rng.unit_vector();
                        (Ray::new(origin, center - origin), 1.0)
                    }
                };
                corrupt(rng, kind, base, t_hit)
            }
        };
        out.push((kind, ray));
    }
    out
}

/// Finite, with a non-zero f32 edge cross product (what the kernels test).
fn is_proper(t: [Vec3; 3]) -> bool {
    let n = (t[1] - t[0]).cross(t[2] - t[0]);
    t.iter().all(|v| v.is_finite()) && n.is_finite() && n != Vec3::ZERO
}

/// Barycentric `(u, v)`: strictly inside, or (with probability `edge`) on one of
/// the three edges.
fn barycentric(rng: &mut Rng, edge: f32) -> (f64, f64) {
    let on_edge = rng.chance(edge);
    let mut u = rng.range(0.05, 0.9) as f64;
    let mut v = rng.range(0.05, 0.9) as f64;
    if u + v > 0.95 {
        // Reflect into the triangle; both stay >= 0.05.
        (u, v) = (0.95 - v, 0.95 - u);
    }
    if on_edge {
        match rng.below(3) {
            0 => u = 0.0,
            1 => v = 0.0,
            _ => v = 1.0 - u,
        }
    }
    (u, v)
}

/// `(1-u-v)*v0 + u*v1 + v*v2` in f64.
fn point_on(t: [Vec3; 3], u: f64, v: f64) -> DVec3 {
    let [v0, v1, v2] = t.map(|p| p.as_dvec3());
    (1.0 - u - v) * v0 + u * v1 + v * v2
}

/// A ray whose line goes through `target` (exactly, when f32 allows): origin at
/// about `dist` from it, `dir = target - origin` scaled by a power of two, so the
/// hit is at `t = 2^-k`. With probability `axis` the ray is axis-aligned (always
/// exact).
fn aimed_ray(rng: &mut Rng, target: Vec3, dist: f32, axis: f32) -> Ray {
    let scale = 2f32.powi(rng.below(5) as i32 - 2);
    if rng.chance(axis) {
        let mut d = Vec3::ZERO;
        d[rng.below(3)] = if rng.chance(0.5) { dist } else { -dist };
        return Ray::new(target - d, d * scale);
    }
    // The line through f32 `origin` with f32 `dir` passes exactly through `target`
    // when `target - origin` is representable; that needs each component of the
    // offset to be not much larger than the target's own component, so after a few
    // tries at `dist` the offset is halved.
    let mut first = None;
    let mut dist = dist;
    for attempt in 0..40 {
        if attempt >= 8 {
            dist *= 0.5;
        }
        let origin = target - dist * rng.unit_vector();
        let dir = target - origin;
        if dir == Vec3::ZERO || !origin.is_finite() {
            continue;
        }
        let ray = Ray::new(origin, dir * scale);
        if origin.as_dvec3() + dir.as_dvec3() == target.as_dvec3() {
            return ray;
        }
        first.get_or_insert(ray);
    }
    first.unwrap_or_else(|| Ray::new(target - Vec3::new(0.0, 0.0, dist), Vec3::Z * dist))
}

/// A `[0, +inf]` ray aimed at an interior point of `tri` from about `dist` away,
/// not grazing, and its hit `t` computed in f64 then rounded to f32.
fn ray_into(rng: &mut Rng, tri: [Vec3; 3], dist: f32) -> (Ray, f32) {
    let normal = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize();
    let mut fallback = None;
    for _ in 0..16 {
        let (u, v) = barycentric(rng, 0.0);
        let target = point_on(tri, u, v).as_vec3();
        let ray = aimed_ray(rng, target, dist, 0.0);
        let grazing = ray.dir.normalize().dot(normal).abs() < 0.05;
        if let Some(t) = intersect_f64(&ray, tri, 0.0)
            .map(|h| h.t)
            .filter(|&t| t >= 0.0)
        {
            if !grazing && t > 0.0 {
                return (ray, t as f32);
            }
            fallback.get_or_insert((ray, t as f32));
        }
    }
    fallback.unwrap_or_else(|| {
        let target = point_on(tri, 1.0 / 3.0, 1.0 / 3.0).as_vec3();
        (Ray::new(target + dist * normal, -dist * normal), 1.0)
    })
}

/// Makes the valid `base` ray (hit at `t_hit`) invalid in the way `kind` says.
fn corrupt(rng: &mut Rng, kind: AdversarialKind, base: Ray, t_hit: f32) -> Ray {
    let mut ray = base;
    let axis = rng.below(3);
    let inf = if rng.chance(0.5) {
        f32::INFINITY
    } else {
        f32::NEG_INFINITY
    };
    match kind {
        AdversarialKind::ZeroDirection => {
            ray.dir = if rng.chance(0.5) {
                Vec3::ZERO
            } else {
                Vec3::new(-0.0, 0.0, -0.0)
            }
        }
        AdversarialKind::NanOrigin => ray.origin[axis] = f32::NAN,
        AdversarialKind::InfiniteOrigin => ray.origin[axis] = inf,
        AdversarialKind::NanDirection => ray.dir[axis] = f32::NAN,
        AdversarialKind::InfiniteDirection => ray.dir[axis] = inf,
        AdversarialKind::NanTmin => ray.tmin = f32::NAN,
        AdversarialKind::NanTmax => ray.tmax = f32::NAN,
        _ => {
            // Empty interval straddling the hit: [1.5 t, 0.5 t].
            ray.tmin = (1.5 * t_hit).max(f32::MIN_POSITIVE);
            ray.tmax = 0.5 * t_hit;
        }
    }
    ray
}

/// `mesh` with every vertex displaced by a smooth wave (same triangles): a
/// deforming mesh for refit tests and benches. The displacement is at most 5% of
/// the bounding-box diagonal along each axis and depends on the position and
/// `phase` only, so shared vertices stay shared.
pub fn waved(mesh: &Mesh, phase: f32) -> Mesh {
    let Some(bounds) = mesh.bounds() else {
        return mesh.clone();
    };
    let (_, diag) = box_metrics(bounds);
    let k = std::f32::consts::TAU / diag.max(f32::MIN_POSITIVE);
    let positions = mesh
        .positions()
        .iter()
        .map(|&p| {
            let w = Vec3::new(
                (k * p.y + phase).sin(),
                (k * p.z + 2.0 * phase).sin(),
                (k * p.x - phase).sin(),
            );
            p + 0.05 * diag * w
        })
        .collect();
    Mesh::new(positions, mesh.indices().to_vec()).expect("same indices as a valid mesh")
}

// ---------------------------------------------------------------------------
// Ray sets of the benchmarks

/// Seed of the [`RaySet::Random`] rays: the same count always gives the same rays.
pub const RANDOM_RAYS_SEED: u64 = 0x0BEA_C4ED_5EED;

/// A generated set of rays for benchmarking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RaySet {
    /// Primary rays of a camera that sees the whole mesh
    /// ([`camera_rays`]): coherent, neighbouring rays hit neighbouring triangles.
    Primary,
    /// Incoherent rays ([`incoherent_rays`], seed [`RANDOM_RAYS_SEED`]): from
    /// a sphere around the mesh to random points inside its box.
    Random,
}

impl RaySet {
    /// Every ray set, in report order.
    pub const ALL: [RaySet; 2] = [RaySet::Primary, RaySet::Random];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            RaySet::Primary => "primary",
            RaySet::Random => "random",
        }
    }

    /// `count` rays of this set for a mesh with box `bounds`. Deterministic.
    ///
    /// Primary rays come from a `w × h` image, `w = ceil(sqrt(count))`,
    /// `h = ceil(count / w)`, row-major from the top, cut to `count` rays (a square
    /// count gives the whole square image).
    pub fn generate(self, bounds: (Vec3, Vec3), count: usize) -> Vec<Ray> {
        match self {
            RaySet::Primary => {
                let (w, h) = camera_size(count);
                let mut rays = camera_rays(bounds, w, h);
                rays.truncate(count);
                rays
            }
            RaySet::Random => incoherent_rays(count, &mut Rng::new(RANDOM_RAYS_SEED), bounds),
        }
    }
}

impl std::fmt::Display for RaySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The image size [`RaySet::Primary`] uses for `count` rays (see [`RaySet::generate`]).
pub fn camera_size(count: usize) -> (u32, u32) {
    if count == 0 {
        return (0, 0);
    }
    let mut w = (count as f64).sqrt() as usize;
    while w * w < count {
        w += 1;
    }
    let h = count.div_ceil(w);
    (w as u32, h as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camera_sizes() {
        assert_eq!(camera_size(0), (0, 0));
        assert_eq!(camera_size(1), (1, 1));
        assert_eq!(camera_size(16_384), (128, 128));
        assert_eq!(camera_size(512), (23, 23));
        assert_eq!(camera_size(10), (4, 3));
    }

    #[test]
    fn ray_sets_have_the_asked_count() {
        let bounds = (Vec3::ZERO, Vec3::ONE);
        for set in RaySet::ALL {
            for n in [0, 1, 10, 512] {
                assert_eq!(set.generate(bounds, n).len(), n);
            }
        }
    }
}
