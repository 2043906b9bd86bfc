//! The scene behind `raypick.RaycastingScene`, without Python: meshes and their
//! placements, prepared for the picker on first use, and the queries on it.

use std::sync::{Arc, Mutex, OnceLock};

use glam::{DVec3, Mat4, Vec3};
use raypick::closest::ClosestPoints;
use raypick::instances::{Instance, InstanceError, InstanceScene, PickInstances};
use raypick::{
    Backend, Cull, Hit, Mesh, Mode, PickMesh, Picker, PickerOptions, Ray, Ray64, TraceOptions,
    TraceRay,
};

use crate::hits::{self, HitLists};
use crate::parity;

/// The id Open3D reports for "no geometry" and "no triangle" (`RTC_INVALID_GEOMETRY_ID`).
pub const INVALID_ID: u32 = u32::MAX;

/// What went wrong in a query, by the Python exception it becomes.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: `ValueError`.
    Value(String),
    /// A query the scene cannot answer in its current form: `NotImplementedError`.
    Unsupported(String),
    /// An error of the library (GPU trouble, …); the binding chooses the exception.
    Library(raypick::Error),
}

impl From<raypick::Error> for Failure {
    fn from(e: raypick::Error) -> Self {
        Failure::Library(e)
    }
}

/// `Result` with a [`Failure`].
pub type Outcome<T> = Result<T, Failure>;

/// Vertex positions as the caller gave them.
#[derive(Clone, Debug)]
pub enum Positions {
    /// float32 vertices: traced as given.
    F32(Vec<Vec3>),
    /// float64 vertices: kept exact in the scene's f64 frame.
    F64(Vec<DVec3>),
}

impl Positions {
    fn len(&self) -> usize {
        match self {
            Positions::F32(p) => p.len(),
            Positions::F64(p) => p.len(),
        }
    }
}

/// One mesh as added: positions and triangles (indices already checked).
#[derive(Clone, Debug)]
pub struct Source {
    /// Vertex positions.
    pub positions: Positions,
    /// Triangle indices.
    pub triangles: Vec<[u32; 3]>,
}

/// One geometry of the scene: a mesh, placed as given or by a transform.
#[derive(Clone, Debug)]
pub struct Placement {
    /// Index of the mesh in the scene's mesh list.
    pub mesh: usize,
    /// Object-to-world transform (row-major), or `None` for the mesh as given.
    pub transform: Option<[[f64; 4]; 4]>,
}

/// Rays of either precision.
pub enum Rays<'a> {
    /// float32 rays (borrowed when the caller's memory has raypick's layout).
    F32(std::borrow::Cow<'a, [Ray]>),
    /// float64 rays.
    F64(Vec<Ray64>),
}

impl Rays<'_> {
    /// Number of rays.
    pub fn len(&self) -> usize {
        match self {
            Rays::F32(r) => r.len(),
            Rays::F64(r) => r.len(),
        }
    }

    /// Restricts every ray's interval to `[tnear, tfar]`.
    pub fn clip(self, tnear: f64, tfar: f64) -> Self {
        match self {
            Rays::F32(rays) => Rays::F32(
                rays.iter()
                    .map(|r| Ray {
                        tmin: r.tmin.max(tnear as f32),
                        tmax: r.tmax.min(tfar as f32),
                        ..*r
                    })
                    .collect(),
            ),
            Rays::F64(rays) => Rays::F64(
                rays.into_iter()
                    .map(|r| Ray64 {
                        tmin: r.tmin.max(tnear),
                        tmax: r.tmax.min(tfar),
                        ..r
                    })
                    .collect(),
            ),
        }
    }
}

/// Query points of either precision (world coordinates).
pub enum Points<'a> {
    /// float32 points.
    F32(&'a [Vec3]),
    /// float64 points.
    F64(Vec<DVec3>),
}

/// The closest hit of every ray, in Open3D's layout.
#[derive(Default)]
pub struct Cast {
    /// `t` (inf on a miss).
    pub t: Vec<f32>,
    /// Geometry id ([`INVALID_ID`] on a miss).
    pub geometry: Vec<u32>,
    /// Triangle id in its geometry ([`INVALID_ID`] on a miss).
    pub primitive: Vec<u32>,
    /// `u, v` per ray.
    pub uv: Vec<f32>,
    /// Unit normal per ray (zero on a miss).
    pub normal: Vec<f32>,
}

/// Every hit of every ray, in Open3D's layout.
#[derive(Default)]
pub struct Listed {
    /// `splits[i]..splits[i + 1]` are ray `i`'s hits.
    pub splits: Vec<u32>,
    /// Ray of each hit.
    pub ray: Vec<u32>,
    /// Geometry id of each hit.
    pub geometry: Vec<u32>,
    /// Triangle id of each hit in its geometry.
    pub primitive: Vec<u32>,
    /// `u, v` of each hit.
    pub uv: Vec<f32>,
    /// `t` of each hit.
    pub t: Vec<f32>,
}

/// The closest point of the scene to every query point.
#[derive(Default)]
pub struct Nearest {
    /// The points (world, f64), 3 per query.
    pub point: Vec<f64>,
    /// Distances (f64).
    pub distance: Vec<f64>,
    /// Geometry ids.
    pub geometry: Vec<u32>,
    /// Triangle ids in their geometry.
    pub primitive: Vec<u32>,
    /// `u, v` per point.
    pub uv: Vec<f32>,
    /// Unit normal of the triangle per point.
    pub normal: Vec<f32>,
}

/// A scene prepared for its picker.
enum Prepared {
    /// Every geometry placed as given: one mesh of all their triangles, in geometry
    /// order (ties on equal `t` then go to the lowest geometry id, then triangle id).
    Flat(Box<Flat>),
    /// Some geometry placed by a transform: an instance scene (one instance per
    /// geometry, user id = geometry id).
    Instanced(PickInstances),
}

struct Flat {
    mesh: Mesh,
    uploaded: PickMesh,
    /// Unit normal of every triangle (zero for those without area).
    normals: Vec<[f32; 3]>,
    /// First triangle of each geometry, and the total at the end.
    offsets: Vec<u32>,
    closest: OnceLock<ClosestPoints>,
}

impl Flat {
    /// `(geometry, triangle in it)` of a triangle of the flat mesh.
    fn locate(&self, prim: u32) -> (u32, u32) {
        let g = self.offsets.partition_point(|&o| o <= prim) - 1;
        (g as u32, prim - self.offsets[g])
    }
}

/// Meshes, their placements and the prepared form (built on first use).
pub struct Scene {
    picker: Picker,
    pool: Option<rayon::ThreadPool>,
    meshes: Vec<Arc<Source>>,
    placements: Vec<Placement>,
    prepared: Mutex<Option<Arc<Prepared>>>,
}

impl Scene {
    /// An empty scene traced on `backend` with `threads` CPU threads (0: all cores).
    pub fn new(backend: Backend, threads: usize) -> Outcome<Self> {
        let threads = (threads > 0).then_some(threads);
        let options = PickerOptions {
            threads,
            ..PickerOptions::default()
        };
        let picker = Picker::with_options(backend, options)?;
        let pool = match threads {
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| Failure::Value(format!("cannot start {n} threads: {e}")))?,
            ),
            None => None,
        };
        Ok(Self {
            picker,
            pool,
            meshes: Vec::new(),
            placements: Vec::new(),
            prepared: Mutex::new(None),
        })
    }

    /// The picker (backend, device, fallback reason).
    pub fn picker(&self) -> &Picker {
        &self.picker
    }

    /// The meshes as added.
    pub fn meshes(&self) -> &[Arc<Source>] {
        &self.meshes
    }

    /// The geometries, in id order.
    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }

    /// Adds a mesh placed as given; returns its geometry id.
    pub fn add_mesh(&mut self, source: Source) -> Outcome<u32> {
        if source.triangles.is_empty() {
            return Err(Failure::Value("the mesh has no triangles".into()));
        }
        let vertices = source.positions.len();
        if let Some((k, index)) = source.triangles.iter().enumerate().find_map(|(k, tri)| {
            tri.iter()
                .find(|&&i| i as usize >= vertices)
                .map(|&i| (k, i))
        }) {
            return Err(Failure::Value(format!(
                "triangles[{k}] uses vertex {index}, but there are {vertices} vertices"
            )));
        }
        let vertex_total: usize =
            self.meshes.iter().map(|m| m.positions.len()).sum::<usize>() + vertices;
        if u32::try_from(vertex_total).is_err() {
            return Err(Failure::Value(format!(
                "{vertex_total} vertices in the scene; at most {} are supported",
                u32::MAX
            )));
        }
        let total: usize = self.flat_triangle_count() + source.triangles.len();
        if total >= INVALID_ID as usize {
            return Err(Failure::Value(format!(
                "{total} triangles in the scene; at most {} are supported",
                INVALID_ID - 1
            )));
        }
        let id = self.next_id()?;
        self.meshes.push(Arc::new(source));
        self.placements.push(Placement {
            mesh: self.meshes.len() - 1,
            transform: None,
        });
        *self.prepared.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(id)
    }

    /// Adds another placement of geometry `of`'s mesh, by `transform`; returns its id.
    pub fn add_instance(&mut self, of: u32, transform: [[f64; 4]; 4]) -> Outcome<u32> {
        let mesh = self.placement(of)?.mesh;
        check_transform(&transform)?;
        let id = self.next_id()?;
        self.placements.push(Placement {
            mesh,
            transform: Some(transform),
        });
        *self.prepared.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(id)
    }

    /// Places geometry `id` by `transform` (object to world). A scene already prepared
    /// with instances moves the instance in place (a refit of the top-level tree).
    pub fn set_transform(&mut self, id: u32, transform: [[f64; 4]; 4]) -> Outcome<()> {
        self.placement(id)?;
        check_transform(&transform)?;
        self.placements[id as usize].transform = Some(transform);
        let slot = self.prepared.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(prepared) = slot.as_mut().and_then(Arc::get_mut)
            && let Prepared::Instanced(scene) = prepared
        {
            self.picker
                .set_instance_transform(scene, id as usize, to_mat4(&transform))?;
            return Ok(());
        }
        *slot = None;
        Ok(())
    }

    fn placement(&self, id: u32) -> Outcome<&Placement> {
        self.placements.get(id as usize).ok_or_else(|| {
            Failure::Value(format!(
                "no geometry {id}: the scene has {}",
                self.placements.len()
            ))
        })
    }

    fn next_id(&self) -> Outcome<u32> {
        u32::try_from(self.placements.len())
            .ok()
            .filter(|&n| n < INVALID_ID)
            .ok_or_else(|| Failure::Value("too many geometries".into()))
    }

    fn flat_triangle_count(&self) -> usize {
        self.placements
            .iter()
            .map(|p| self.meshes[p.mesh].triangles.len())
            .sum()
    }

    /// Runs `f` on the scene's thread pool (rayon's global pool without one).
    pub fn on_pool<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// The prepared scene, built now if anything changed since the last query.
    fn prepared(&self) -> Outcome<Arc<Prepared>> {
        let mut slot = self.prepared.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(prepared) = slot.as_ref() {
            return Ok(prepared.clone());
        }
        if self.placements.is_empty() {
            return Err(Failure::Value(
                "the scene is empty: add_triangles first".into(),
            ));
        }
        let prepared = Arc::new(if self.placements.iter().all(|p| p.transform.is_none()) {
            Prepared::Flat(Box::new(self.on_pool(|| self.prepare_flat())?))
        } else {
            Prepared::Instanced(self.prepare_instanced()?)
        });
        *slot = Some(prepared.clone());
        Ok(prepared)
    }

    /// One mesh of every geometry's triangles: f64 (exact, with a local origin) when
    /// any mesh was given in f64, else f32 as given.
    fn prepare_flat(&self) -> Outcome<Flat> {
        let sources: Vec<&Source> = self
            .placements
            .iter()
            .map(|p| &*self.meshes[p.mesh])
            .collect();
        let mut offsets = vec![0u32];
        let mut triangles = Vec::new();
        let mut base = 0u32;
        for source in &sources {
            triangles.extend(source.triangles.iter().map(|t| t.map(|i| i + base)));
            base += source.positions.len() as u32;
            offsets.push(triangles.len() as u32);
        }
        let any_f64 = sources
            .iter()
            .any(|s| matches!(s.positions, Positions::F64(_)));
        let mesh = if any_f64 {
            let positions: Vec<DVec3> = sources
                .iter()
                .flat_map(|s| match &s.positions {
                    Positions::F32(p) => p.iter().map(|v| v.as_dvec3()).collect::<Vec<_>>(),
                    Positions::F64(p) => p.clone(),
                })
                .collect();
            Mesh::from_f64(&positions, triangles)?
        } else {
            let positions: Vec<Vec3> = sources
                .iter()
                .flat_map(|s| match &s.positions {
                    Positions::F32(p) => p.clone(),
                    Positions::F64(_) => unreachable!("no f64 mesh in an f32 scene"),
                })
                .collect();
            Mesh::new(positions, triangles)?
        };
        let uploaded = self.picker.upload(&mesh)?;
        let normals = mesh.triangles().map(unit_normal).collect();
        Ok(Flat {
            mesh,
            uploaded,
            normals,
            offsets,
            closest: OnceLock::new(),
        })
    }

    /// An instance scene: every mesh once (f32 vertices: f64 ones are rounded), one
    /// instance per geometry with its transform (identity for those placed as given).
    fn prepare_instanced(&self) -> Outcome<PickInstances> {
        let meshes = self
            .meshes
            .iter()
            .map(|s| {
                let positions = match &s.positions {
                    Positions::F32(p) => p.clone(),
                    Positions::F64(p) => p.iter().map(|v| v.as_vec3()).collect(),
                };
                Mesh::new(positions, s.triangles.clone())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let instances = self
            .placements
            .iter()
            .enumerate()
            .map(|(id, p)| {
                let transform = p.transform.as_ref().map_or(Mat4::IDENTITY, to_mat4);
                Instance::new(p.mesh, transform, id as u32)
            })
            .collect();
        let scene = self
            .on_pool(|| InstanceScene::from_meshes(&meshes, instances))
            .map_err(raypick::Error::from)?;
        Ok(self.picker.upload_instances(scene)?)
    }

    /// The flat form, or `NotImplementedError` for a scene with instances.
    fn flat(&self, query: &str) -> Outcome<Arc<Prepared>> {
        let prepared = self.prepared()?;
        match &*prepared {
            Prepared::Flat(_) => Ok(prepared),
            Prepared::Instanced(_) => Err(Failure::Unsupported(format!(
                "{query} is not available for scenes with instances (add_instance or \
                 set_transform was used): only cast_rays and test_occlusions are"
            ))),
        }
    }

    /// The closest hit of every ray.
    pub fn cast_rays(&self, rays: &Rays) -> Outcome<Cast> {
        let prepared = self.prepared()?;
        let options = TraceOptions::default();
        let n = rays.len();
        let mut out = Cast {
            t: Vec::with_capacity(n),
            geometry: Vec::with_capacity(n),
            primitive: Vec::with_capacity(n),
            uv: Vec::with_capacity(2 * n),
            normal: Vec::with_capacity(3 * n),
        };
        match &*prepared {
            Prepared::Flat(flat) => {
                let hits = match rays {
                    Rays::F32(r) => self.picker.trace(&flat.uploaded, r, &options)?,
                    Rays::F64(r) => self.picker.trace(&flat.uploaded, r, &options)?,
                };
                for hit in &hits {
                    if hit.prim == INVALID_ID {
                        out.push_miss();
                        continue;
                    }
                    let (g, k) = flat.locate(hit.prim);
                    out.t.push(hit.t);
                    out.geometry.push(g);
                    out.primitive.push(k);
                    out.uv.extend([hit.u, hit.v]);
                    out.normal.extend(flat.normals[hit.prim as usize]);
                }
            }
            Prepared::Instanced(scene) => {
                let hits = match rays {
                    Rays::F32(r) => self.picker.trace_instances(scene, r, &options)?,
                    Rays::F64(r) => self.picker.trace_instances(scene, r, &options)?,
                };
                for hit in &hits {
                    if !hit.is_hit() {
                        out.push_miss();
                        continue;
                    }
                    out.t.push(hit.t);
                    out.geometry.push(hit.id);
                    out.primitive.push(hit.prim);
                    out.uv.extend([hit.u, hit.v]);
                    out.normal.extend(hit.normal.to_array());
                }
            }
        }
        Ok(out)
    }

    /// Whether each ray hits anything.
    pub fn occluded(&self, rays: &Rays) -> Outcome<Vec<bool>> {
        let prepared = self.prepared()?;
        let options = TraceOptions::default();
        Ok(match &*prepared {
            Prepared::Flat(flat) => match rays {
                Rays::F32(r) => self.picker.occluded(&flat.uploaded, r, &options)?,
                Rays::F64(r) => self.picker.occluded(&flat.uploaded, r, &options)?,
            },
            Prepared::Instanced(scene) => match rays {
                Rays::F32(r) => self.picker.occluded_instances(scene, r, &options)?,
                Rays::F64(r) => self.picker.occluded_instances(scene, r, &options)?,
            },
        })
    }

    /// Every hit of every ray, nearest first.
    fn hit_lists(&self, rays: &Rays, query: &str) -> Outcome<(Arc<Prepared>, HitLists)> {
        let prepared = self.flat(query)?;
        let Prepared::Flat(flat) = &*prepared else {
            unreachable!("flat() gives a flat scene")
        };
        let options = TraceOptions::default();
        let lists = match rays {
            Rays::F32(r) => hits::all_hits(&self.picker, &flat.uploaded, r, &options)?,
            Rays::F64(r) => hits::all_hits(&self.picker, &flat.uploaded, r, &options)?,
        };
        Ok((prepared, lists))
    }

    /// The number of triangles each ray hits.
    pub fn count_intersections(&self, rays: &Rays) -> Outcome<Vec<i32>> {
        let (_, lists) = self.hit_lists(rays, "count_intersections")?;
        Ok(lists
            .offsets
            .windows(2)
            .map(|w| i32::try_from(w[1] - w[0]).unwrap_or(i32::MAX))
            .collect())
    }

    /// Every hit of every ray, nearest first.
    pub fn list_intersections(&self, rays: &Rays) -> Outcome<Listed> {
        let (prepared, lists) = self.hit_lists(rays, "list_intersections")?;
        let Prepared::Flat(flat) = &*prepared else {
            unreachable!("hit_lists() gives a flat scene")
        };
        let total = lists.hits.len();
        if u32::try_from(total).is_err() {
            return Err(Failure::Value(format!(
                "{total} intersections do not fit the uint32 ray_splits"
            )));
        }
        let mut out = Listed {
            splits: lists.offsets.iter().map(|&o| o as u32).collect(),
            ray: Vec::with_capacity(total),
            geometry: Vec::with_capacity(total),
            primitive: Vec::with_capacity(total),
            uv: Vec::with_capacity(2 * total),
            t: Vec::with_capacity(total),
        };
        for (i, w) in lists.offsets.windows(2).enumerate() {
            for hit in &lists.hits[w[0]..w[1]] {
                let (g, k) = flat.locate(hit.prim);
                out.ray.push(i as u32);
                out.geometry.push(g);
                out.primitive.push(k);
                out.uv.extend([hit.u, hit.v]);
                out.t.push(hit.t);
            }
        }
        Ok(out)
    }

    /// The closest point of the scene's surface to every point.
    pub fn closest_points(&self, points: &Points) -> Outcome<Nearest> {
        let prepared = self.flat("compute_closest_points")?;
        let Prepared::Flat(flat) = &*prepared else {
            unreachable!("flat() gives a flat scene")
        };
        let found = self.on_pool(|| {
            let closest = flat.closest.get_or_init(|| ClosestPoints::new(&flat.mesh));
            match points {
                Points::F32(p) => closest.query(p),
                Points::F64(p) => closest.query_f64(p),
            }
        });
        let n = found.len();
        let mut out = Nearest {
            point: Vec::with_capacity(3 * n),
            distance: Vec::with_capacity(n),
            geometry: Vec::with_capacity(n),
            primitive: Vec::with_capacity(n),
            uv: Vec::with_capacity(2 * n),
            normal: Vec::with_capacity(3 * n),
        };
        for (i, c) in found.into_iter().enumerate() {
            let Some(c) = c else {
                return Err(Failure::Value(format!(
                    "no closest point for point {i}: the scene has no triangle with an area"
                )));
            };
            let (g, k) = flat.locate(c.prim);
            out.point.extend(c.point.to_array());
            out.distance.push(c.distance);
            out.geometry.push(g);
            out.primitive.push(k);
            out.uv.extend([c.u as f32, c.v as f32]);
            out.normal.extend(flat.normals[c.prim as usize]);
        }
        Ok(out)
    }

    /// Inside (`true`) or outside of every point, by the parity of crossings (see
    /// [`parity`]), and how many ray directions each point needed.
    pub fn occupancy(&self, points: &Points, nsamples: usize) -> Outcome<(Vec<bool>, Vec<u8>)> {
        let prepared = self.flat("compute_occupancy")?;
        let Prepared::Flat(flat) = &*prepared else {
            unreachable!("flat() gives a flat scene")
        };
        let options = TraceOptions::default()
            .with_cull(Cull::None)
            .with_mode(Mode::Watertight);
        let classified = match points {
            Points::F32(p) => parity::classify(p, nsamples, |rays: &[Ray]| {
                hits::all_hits(&self.picker, &flat.uploaded, rays, &options)
            })?,
            Points::F64(p) => parity::classify(p, nsamples, |rays: &[Ray64]| {
                hits::all_hits(&self.picker, &flat.uploaded, rays, &options)
            })?,
        };
        Ok(classified)
    }
}

impl Cast {
    fn push_miss(&mut self) {
        self.t.push(f32::INFINITY);
        self.geometry.push(INVALID_ID);
        self.primitive.push(INVALID_ID);
        self.uv.extend([0.0; 2]);
        self.normal.extend([0.0; 3]);
    }
}

/// The unit normal `cross(v1 - v0, v2 - v0)` (computed in f64), zero without area.
fn unit_normal([a, b, c]: [Vec3; 3]) -> [f32; 3] {
    let n = (b.as_dvec3() - a.as_dvec3()).cross(c.as_dvec3() - a.as_dvec3());
    let len = n.length();
    if len > 0.0 && len.is_finite() {
        (n / len).as_vec3().to_array()
    } else {
        [0.0; 3]
    }
}

/// A row-major 4x4 matrix as glam's (column-major) `Mat4`, rounded to f32.
fn to_mat4(m: &[[f64; 4]; 4]) -> Mat4 {
    Mat4::from_cols_array_2d(&[0, 1, 2, 3].map(|c| [0, 1, 2, 3].map(|r| m[r][c] as f32)))
}

/// Checks a transform the way an instance scene does (finite, affine, invertible).
fn check_transform(m: &[[f64; 4]; 4]) -> Outcome<()> {
    if m.iter().flatten().any(|x| !x.is_finite()) {
        return Err(Failure::Value(
            "the transform has a NaN or infinite entry".into(),
        ));
    }
    let probe = Instance::new(0, to_mat4(m), 0);
    InstanceScene::from_meshes(&[Mesh::default()], vec![probe])
        .map(|_| ())
        .map_err(|e| {
            Failure::Value(match e {
                InstanceError::NonFinite { .. } => {
                    "the transform's inverse is not finite in float32".into()
                }
                InstanceError::NotAffine { .. } => {
                    "the transform is not affine (its last row must be 0 0 0 1)".into()
                }
                InstanceError::Singular { .. } => {
                    "the transform is singular (it cannot be inverted)".into()
                }
                other => format!("bad transform: {other}"),
            })
        })
}

/// The rays that parity classification traces from `point` along `dir`: `[0, inf]`.
pub trait PointRay: Copy + Send + Sync {
    /// The ray type traced.
    type Ray: TraceRay + Copy + Send + Sync;
    /// The ray from this point along `dir`.
    fn ray(self, dir: Vec3) -> Self::Ray;
}

impl PointRay for Vec3 {
    type Ray = Ray;
    fn ray(self, dir: Vec3) -> Ray {
        Ray::new(self, dir)
    }
}

impl PointRay for DVec3 {
    type Ray = Ray64;
    fn ray(self, dir: Vec3) -> Ray64 {
        Ray64::new(self, dir.as_dvec3())
    }
}

/// A hit list's hits, for code that only needs the [`Hit`]s.
pub fn hits_of(lists: &HitLists, i: usize) -> &[Hit] {
    &lists.hits[lists.offsets[i]..lists.offsets[i + 1]]
}
