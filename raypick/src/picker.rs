//! The high-level entry point: one [`Picker`] over either backend.

use std::borrow::Cow;
use std::sync::OnceLock;

use glam::DVec3;

use crate::Mesh;
use crate::all_hits::AllHits;
use crate::bvh::Refitted;
use crate::cpu::{CpuBackend, CpuMesh};
use crate::error::{Error, Result};
use crate::gpu::{AdapterKinds, GpuContext, GpuMesh, GpuOptions, MeshBuffers};
use crate::options::{Accel, TraceOptions};
use crate::types::{Hit, Ray};
use crate::world::{PARALLEL_MOVE, TraceRay};

mod instances;

pub use instances::PickInstances;

/// Which backend traces rays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The GPU if a hardware adapter can be opened, else the CPU (with a logged notice).
    /// Software adapters (llvmpipe, lavapipe, SwiftShader, WARP) are left out, being
    /// slower than the CPU backend ([`AdapterKinds`]). A GPU
    /// that is lost or runs out of memory later is replaced by the CPU as well.
    #[default]
    Auto,
    /// The CPU backend.
    Cpu,
    /// The GPU backend on the best adapter there is, a software one included; fails
    /// if no adapter can be opened, and returns GPU errors
    /// (such as [`Error::DeviceLost`] and [`Error::OutOfMemory`]) as they come.
    Gpu,
}

crate::options::named_values!(Backend, "backend", { Auto => "auto", Cpu => "cpu", Gpu => "gpu" });

/// Options for [`Picker::with_options`].
#[derive(Clone, Debug, Default)]
pub struct PickerOptions {
    /// How the GPU context is created (also what makes the fallback paths testable:
    /// `backends: Some(wgpu::Backends::empty())` finds no adapter, a small
    /// `max_mesh_bytes` makes uploads run out of memory).
    pub gpu: GpuOptions,
    /// CPU threads (`None`: rayon's global pool, all cores).
    pub threads: Option<usize>,
}

/// The backend a [`Picker`] runs on.
#[derive(Debug)]
enum Engine {
    Cpu(CpuBackend),
    Gpu(Box<GpuContext>),
}

/// What a [`PickMesh`] holds.
#[derive(Debug)]
enum Content {
    Cpu(CpuMesh),
    Gpu(GpuMesh),
}

/// A mesh prepared for a [`Picker`]'s backend, with the mesh's f64 origin.
#[derive(Debug)]
pub struct PickMesh {
    content: Content,
    origin: DVec3,
    /// The CPU copy of a GPU mesh, made when the picker falls back to the CPU.
    on_cpu: OnceLock<CpuMesh>,
}

impl PickMesh {
    /// A mesh prepared for the CPU; `origin` is the [`Mesh::origin`] it was made from.
    pub(crate) fn from_cpu(mesh: CpuMesh, origin: DVec3) -> Self {
        Self::with(Content::Cpu(mesh), origin)
    }

    /// A mesh uploaded to the GPU; `origin` is the [`Mesh::origin`] it was made from.
    pub fn from_gpu(mesh: GpuMesh, origin: DVec3) -> Self {
        Self::with(Content::Gpu(mesh), origin)
    }

    fn with(content: Content, origin: DVec3) -> Self {
        Self {
            content,
            origin,
            on_cpu: OnceLock::new(),
        }
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        match &self.content {
            Content::Cpu(m) => m.triangle_count(),
            Content::Gpu(m) => m.triangle_count(),
        }
    }

    /// The acceleration structure.
    pub fn accel(&self) -> Accel {
        match &self.content {
            Content::Cpu(m) => m.accel(),
            Content::Gpu(m) => m.accel(),
        }
    }

    /// The f64 origin of the mesh's local frame (see [`Ray64`](crate::Ray64)).
    pub fn origin(&self) -> DVec3 {
        self.origin
    }

    /// Where the mesh was prepared: [`Backend::Cpu`] or [`Backend::Gpu`] (a GPU mesh
    /// keeps saying `Gpu` after its picker fell back to the CPU, which traces a CPU
    /// copy of it).
    pub fn backend(&self) -> Backend {
        match self.content {
            Content::Cpu(_) => Backend::Cpu,
            Content::Gpu(_) => Backend::Gpu,
        }
    }

    /// The GPU mesh, when uploaded to the GPU.
    pub fn gpu(&self) -> Option<&GpuMesh> {
        match &self.content {
            Content::Gpu(m) => Some(m),
            Content::Cpu(_) => None,
        }
    }

    /// The mesh as the CPU traces it: itself, or the CPU copy of a GPU mesh.
    fn for_cpu(&self) -> &CpuMesh {
        match &self.content {
            Content::Cpu(m) => m,
            Content::Gpu(m) => self.on_cpu.get_or_init(|| m.to_cpu_mesh()),
        }
    }
}

/// Traces rays against meshes on the CPU or the GPU, with the same answers on both.
///
/// ```
/// use raypick::{Backend, Mesh, Picker, Ray, TraceOptions};
/// use glam::Vec3;
///
/// let mesh = Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]);
/// let picker = Picker::new(Backend::Cpu)?;
/// let uploaded = picker.upload(&mesh)?;
/// let ray = Ray::new(Vec3::new(0.25, 0.25, 1.0), Vec3::NEG_Z);
/// let hits = picker.trace(&uploaded, &[ray], &TraceOptions::default())?;
/// assert_eq!(hits[0].prim, 0);
/// assert_eq!(hits[0].t, 1.0);
/// # Ok::<(), raypick::Error>(())
/// ```
///
/// Far from the origin, give the mesh in f64 ([`Mesh::from_f64`]) and the rays as
/// [`Ray64`](crate::Ray64); f32 [`Ray`]s are moved into the mesh's frame in f64 too. Every query
/// takes rays of either precision.
///
/// With [`Backend::Auto`], GPU trouble is not an error: no adapter at creation, and
/// [`Error::DeviceLost`] or [`Error::OutOfMemory`] during an upload or a trace, switch
/// the picker to the CPU for good (logged once with `log::warn!`; the reason stays in
/// [`Picker::fallback_reason`]). Meshes already on the GPU are then traced from their
/// host copies.
#[derive(Debug)]
pub struct Picker {
    engine: Engine,
    /// Whether GPU trouble switches to the CPU ([`Backend::Auto`]).
    auto: bool,
    /// The CPU backend used after a fallback from the GPU.
    fallback_cpu: OnceLock<CpuBackend>,
    fallback_reason: OnceLock<String>,
    threads: Option<usize>,
}

impl Picker {
    /// A picker on the requested backend. [`Backend::Auto`] falls back to the CPU
    /// when no GPU can be opened, logs why, and keeps the reason
    /// ([`Picker::fallback_reason`]); [`Backend::Gpu`] returns the error instead.
    pub fn new(backend: Backend) -> Result<Self> {
        Self::with_options(backend, PickerOptions::default())
    }

    /// A picker on the requested backend with options (see [`Picker::new`]).
    pub fn with_options(backend: Backend, options: PickerOptions) -> Result<Self> {
        let cpu = || match options.threads {
            Some(n) => CpuBackend::with_threads(n),
            None => Ok(CpuBackend::new()),
        };
        match backend {
            Backend::Cpu => Ok(Self::on(Engine::Cpu(cpu()?))),
            Backend::Gpu => Ok(Self::from_gpu(GpuContext::with_options(options.gpu)?)),
            Backend::Auto => {
                let gpu = GpuOptions {
                    adapters: Some(options.gpu.adapters.unwrap_or(AdapterKinds::Hardware)),
                    ..options.gpu
                };
                let mut picker = match GpuContext::with_options(gpu) {
                    Ok(gpu) => Self::from_gpu(gpu),
                    Err(e) => {
                        let picker = Self::on(Engine::Cpu(cpu()?));
                        picker.fall_back(&e);
                        picker
                    }
                };
                picker.auto = true;
                picker.threads = options.threads;
                Ok(picker)
            }
        }
    }

    /// A picker on a renderer's own device and queue (see [`GpuContext::from_device`]):
    /// meshes, pipelines and ray batches then live on the renderer's device, so
    /// meshes can be made straight from its vertex and index buffers
    /// ([`GpuContext::upload_buffers`]). `adapter` is used for reporting only.
    pub fn from_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter: &wgpu::AdapterInfo,
    ) -> Result<Self> {
        Ok(Self::from_gpu(GpuContext::from_device(
            device, queue, adapter,
        )?))
    }

    /// A picker on a GPU context (e.g. one made from a renderer's device and queue).
    /// GPU errors are returned as they come, as with [`Backend::Gpu`].
    pub fn from_gpu(gpu: GpuContext) -> Self {
        Self::on(Engine::Gpu(Box::new(gpu)))
    }

    fn on(engine: Engine) -> Self {
        Self {
            engine,
            auto: false,
            fallback_cpu: OnceLock::new(),
            fallback_reason: OnceLock::new(),
            threads: None,
        }
    }

    /// Records a fallback to the CPU (logged once).
    fn fall_back(&self, error: &Error) {
        let mut first = false;
        self.fallback_reason.get_or_init(|| {
            first = true;
            error.with_sources()
        });
        if first {
            log::warn!("raypick: using the CPU backend: {}", error.with_sources());
        }
    }

    /// The backend in use: [`Backend::Cpu`] or [`Backend::Gpu`], never `Auto`. A
    /// picker that fell back to the CPU during use says [`Backend::Cpu`].
    pub fn backend(&self) -> Backend {
        match self.live_gpu() {
            Some(_) => Backend::Gpu,
            None => Backend::Cpu,
        }
    }

    /// Why [`Backend::Auto`] fell back to the CPU, if it did (at creation or later).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.get().map(String::as_str)
    }

    /// A human-readable name of what traces: the GPU adapter, or the CPU and its thread count.
    pub fn device_name(&self) -> String {
        match (&self.engine, self.live_gpu()) {
            (_, Some(gpu)) => {
                let a = gpu.adapter();
                format!("{} ({}, {})", a.name, a.backend, a.device_type)
            }
            (Engine::Cpu(cpu), None) => format!("CPU ({} threads)", cpu.threads()),
            (Engine::Gpu(_), None) => format!("CPU ({} threads)", self.cpu_backend().threads()),
        }
    }

    /// The GPU context, when on the GPU (`None` after a fallback to the CPU).
    pub fn gpu(&self) -> Option<&GpuContext> {
        self.live_gpu()
    }

    /// The GPU context when it is still what traces.
    fn live_gpu(&self) -> Option<&GpuContext> {
        match &self.engine {
            Engine::Gpu(gpu) if !(self.auto && self.fallback_reason.get().is_some()) => Some(gpu),
            _ => None,
        }
    }

    /// `rays` in the local frame of a mesh whose origin is `origin`
    /// ([`TraceRay::all_to_local`]); a long batch is moved on the threads this
    /// picker's CPU work uses (the CPU backend's pool, `PickerOptions::threads`, or
    /// rayon's global pool beside a GPU), a short one on the calling thread.
    fn local_rays<'a, R: TraceRay>(&self, rays: &'a [R], origin: DVec3) -> Cow<'a, [Ray]> {
        match &self.engine {
            Engine::Cpu(cpu) if rays.len() >= PARALLEL_MOVE => {
                cpu.install(|| R::all_to_local(rays, origin))
            }
            _ => R::all_to_local(rays, origin),
        }
    }

    /// The CPU backend: the engine, or the one used after a fallback.
    fn cpu_backend(&self) -> &CpuBackend {
        match &self.engine {
            Engine::Cpu(cpu) => cpu,
            Engine::Gpu(_) => self.fallback_cpu.get_or_init(|| {
                self.threads
                    .and_then(|n| CpuBackend::with_threads(n).ok())
                    .unwrap_or_default()
            }),
        }
    }

    /// Whether `error` switches this picker to the CPU.
    fn falls_back_on(&self, error: &Error) -> bool {
        self.auto && matches!(error, Error::DeviceLost(_) | Error::OutOfMemory { .. })
    }

    /// Prepares a mesh for this picker's backend with its default acceleration
    /// structure ([`Picker::default_accel`]).
    pub fn upload(&self, mesh: &Mesh) -> Result<PickMesh> {
        self.upload_with(mesh, self.default_accel())
    }

    /// The acceleration structure [`Picker::upload`] gives a mesh: on the GPU the
    /// device's choice ([`GpuContext::default_accel`]: hardware ray queries on a
    /// hardware GPU that has them, else the BVH), on the CPU the BVH.
    pub fn default_accel(&self) -> Accel {
        self.live_gpu()
            .map_or(Accel::Bvh, GpuContext::default_accel)
    }

    /// Prepares a mesh for this picker's backend with the given acceleration structure.
    ///
    /// [`Accel::RayQuery`] needs the GPU's hardware ray queries
    /// ([`GpuContext::has_ray_queries`]): on the CPU (including a [`Backend::Auto`]
    /// picker that has no GPU or fell back to the CPU) and on a GPU without them it
    /// fails with [`Error::NoRayQueries`]; [`Accel::Bvh`] gives the same answers
    /// everywhere. A mesh already uploaded with ray queries keeps being traced after
    /// a fallback, from its host copy.
    pub fn upload_with(&self, mesh: &Mesh, accel: Accel) -> Result<PickMesh> {
        let origin = mesh.origin();
        if let Some(gpu) = self.live_gpu() {
            match gpu.upload_with(mesh, accel) {
                Ok(uploaded) => return Ok(PickMesh::from_gpu(uploaded, origin)),
                Err(e) if self.falls_back_on(&e) => self.fall_back(&e),
                Err(e) => return Err(e),
            }
        }
        if accel == Accel::RayQuery {
            return Err(Error::NoRayQueries("the CPU backend".into()));
        }
        Ok(PickMesh::from_cpu(CpuMesh::with_accel(mesh, accel), origin))
    }

    /// Prepares a mesh whose vertices will move: like [`Picker::upload`], and on the
    /// CPU the binary tree is kept so that [`Picker::refit`] can follow the motion
    /// (the GPU keeps a CPU copy of every BVH anyway).
    pub fn upload_refittable(&self, mesh: &Mesh) -> Result<PickMesh> {
        let origin = mesh.origin();
        match self.live_gpu() {
            Some(gpu) => Ok(PickMesh::from_gpu(gpu.upload(mesh)?, origin)),
            None => Ok(PickMesh::from_cpu(CpuMesh::refittable(mesh), origin)),
        }
    }

    /// Moves a prepared mesh to `mesh`'s vertex positions: `mesh` has the
    /// triangles (indices) and origin the prepared mesh was made from, with any
    /// positions. A BVH is refitted (same tree, boxes recomputed),
    /// not rebuilt, and answers exactly like a fresh build;
    /// it is built again only when a triangle left out as degenerate can now be hit
    /// (the answer says which). Fails with [`Error::Refit`] for another mesh's
    /// triangle count or a CPU mesh made without [`Picker::upload_refittable`].
    pub fn refit(&self, prepared: &mut PickMesh, mesh: &Mesh) -> Result<Refitted> {
        if mesh.origin() != prepared.origin {
            return Err(Error::InvalidArgument(format!(
                "refit to a mesh with origin {} (prepared with origin {})",
                mesh.origin(),
                prepared.origin
            )));
        }
        prepared.on_cpu = OnceLock::new();
        match (&mut prepared.content, self.live_gpu()) {
            (Content::Cpu(cpu), _) => Ok(cpu.refit(mesh)?),
            (Content::Gpu(uploaded), Some(gpu)) => gpu.refit(uploaded, mesh),
            (Content::Gpu(_), None) => Err(Error::WrongBackend),
        }
    }

    /// A mesh read from a renderer's own vertex and index buffers, on the GPU (see
    /// [`MeshBuffers`] for the buffers' requirements); a CPU picker answers
    /// [`Error::WrongBackend`] (read the bytes and use
    /// [`crate::gather::mesh_from_slices`] there). Its origin is zero.
    pub fn upload_buffers(&self, buffers: &MeshBuffers, accel: Accel) -> Result<PickMesh> {
        match self.live_gpu() {
            Some(gpu) => Ok(PickMesh::from_gpu(
                gpu.upload_buffers(buffers, accel)?,
                DVec3::ZERO,
            )),
            None => Err(Error::WrongBackend),
        }
    }

    /// Follows the vertices of a mesh made by [`Picker::upload_buffers`] after the
    /// renderer wrote new positions to its vertex buffer: gathered again and refitted
    /// on the GPU, with no readback ([`GpuContext::refit_gathered`]).
    pub fn refit_buffers(&self, prepared: &mut PickMesh) -> Result<()> {
        match (&mut prepared.content, self.live_gpu()) {
            (Content::Gpu(uploaded), Some(gpu)) => gpu.refit_gathered(uploaded),
            _ => Err(Error::WrongBackend),
        }
    }

    /// Traces `rays` of either precision ([`Ray`] or [`Ray64`](crate::Ray64)) and returns one hit
    /// per ray. Rays are moved into the mesh's local frame in f64 when its origin is
    /// not zero ([`TraceRay::to_local`]) and then rounded to f32, so rays far from the
    /// world origin keep their precision; `t` is in units of the direction, as always.
    pub fn trace<R: TraceRay>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        options: &TraceOptions,
    ) -> Result<Vec<Hit>> {
        let mut hits = vec![Hit::MISS; rays.len()];
        self.trace_into(mesh, rays, options, &mut hits)?;
        Ok(hits)
    }

    /// [`Picker::trace`] into `hits` (one slot per ray; [`Error::OutputLength`]
    /// otherwise). Never leaves NaN in `hits`: on an error every slot is a miss.
    pub fn trace_into<R: TraceRay>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        options: &TraceOptions,
        hits: &mut [Hit],
    ) -> Result<()> {
        self.fill_slots(
            mesh,
            rays,
            hits,
            Hit::MISS,
            |gpu, uploaded, rays, hits| gpu.trace_into(uploaded, rays, options, hits),
            |cpu, prepared, rays, hits| cpu.trace_into(prepared, rays, options, hits),
        )
    }

    /// Runs a query that writes one slot per ray into `out`: checks the slot count,
    /// moves the rays into the mesh's frame and runs on the engine
    /// ([`Picker::run_on_engine`]); on an error every slot is `empty`.
    fn fill_slots<R: TraceRay, T: Copy>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        out: &mut [T],
        empty: T,
        on_gpu: impl FnOnce(&GpuContext, &GpuMesh, &[Ray], &mut [T]) -> Result<()>,
        on_cpu: impl FnOnce(&CpuBackend, &CpuMesh, &[Ray], &mut [T]),
    ) -> Result<()> {
        crate::error::check_output_length(rays.len(), out.len())?;
        let local = self.local_rays(rays, mesh.origin);
        let result = self.run_on_engine(
            mesh,
            out,
            |gpu, uploaded, out| on_gpu(gpu, uploaded, &local, out),
            |cpu, prepared, out| {
                on_cpu(cpu, prepared, &local, out);
                Ok(())
            },
        );
        if result.is_err() {
            out.fill(empty);
        }
        result
    }

    /// Runs a query on the GPU when it traces `mesh` (falling back to the CPU when
    /// `Backend::Auto` loses the GPU), else on the CPU after checking that `mesh` may
    /// be traced there. `out` is lent to whichever runs.
    fn run_on_engine<O: ?Sized, T>(
        &self,
        mesh: &PickMesh,
        out: &mut O,
        on_gpu: impl FnOnce(&GpuContext, &GpuMesh, &mut O) -> Result<T>,
        on_cpu: impl FnOnce(&CpuBackend, &CpuMesh, &mut O) -> Result<T>,
    ) -> Result<T> {
        if let (Some(gpu), Content::Gpu(uploaded)) = (self.live_gpu(), &mesh.content) {
            match on_gpu(gpu, uploaded, out) {
                Err(e) if self.falls_back_on(&e) => self.fall_back(&e),
                other => return other,
            }
        }
        self.check_cpu_mesh(mesh)?;
        on_cpu(self.cpu_backend(), mesh.for_cpu(), out)
    }

    /// Whether `mesh` may be traced on this picker's CPU path (see
    /// [`Picker::check_cpu_path`]).
    fn check_cpu_mesh(&self, mesh: &PickMesh) -> Result<()> {
        self.check_cpu_path(match &mesh.content {
            Content::Cpu(_) => None,
            Content::Gpu(m) => Some(m.context_id),
        })
    }

    /// Whether something prepared for the CPU (`None`) or on the GPU context with id
    /// `Some(context)` may be traced on this picker's CPU path: CPU content on a CPU
    /// picker, or content of this picker after `Backend::Auto` fell back.
    fn check_cpu_path(&self, gpu_context: Option<u64>) -> Result<()> {
        match (&self.engine, gpu_context) {
            (Engine::Gpu(_), None) if !self.auto => Err(Error::WrongBackend),
            (Engine::Cpu(_), Some(_)) => Err(Error::WrongBackend),
            (Engine::Gpu(gpu), Some(id)) if id != gpu.id => Err(Error::WrongBackend),
            (Engine::Gpu(_), None) if self.live_gpu().is_some() => Err(Error::WrongBackend),
            _ => Ok(()),
        }
    }

    /// Whether each ray hits anything: `occluded(..)[i] == trace(..)[i].is_hit()`
    /// for every ray, found faster (each ray stops at its first accepted hit) — the
    /// query for shadow and visibility rays. Culling and test as in `options`.
    pub fn occluded<R: TraceRay>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        options: &TraceOptions,
    ) -> Result<Vec<bool>> {
        let mut occluded = vec![false; rays.len()];
        self.occluded_into(mesh, rays, options, &mut occluded)?;
        Ok(occluded)
    }

    /// [`Picker::occluded`] into `occluded` (one slot per ray; [`Error::OutputLength`]
    /// otherwise). On an error every slot is `false`.
    pub fn occluded_into<R: TraceRay>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        options: &TraceOptions,
        occluded: &mut [bool],
    ) -> Result<()> {
        self.fill_slots(
            mesh,
            rays,
            occluded,
            false,
            |gpu, uploaded, rays, out| gpu.occluded_into(uploaded, rays, options, out),
            |cpu, prepared, rays, out| cpu.occluded_into(prepared, rays, options, out),
        )
    }

    /// The `max_hits` nearest hits of each ray, sorted by `(t, id)`, and whether
    /// there were more (see [`AllHits`]); the first is the ray's closest hit. Fails
    /// when `max_hits` is 0 or (GPU) `max_hits` hits of one ray do not fit one
    /// storage binding.
    ///
    /// ```
    /// use raypick::{Backend, Mesh, Picker, Ray, TraceOptions};
    /// use glam::Vec3;
    ///
    /// // Three parallel triangles at z = 0, 1, 2, crossed by one ray from above.
    /// let tri = |z: f32| [Vec3::new(0.0, 0.0, z), Vec3::new(1.0, 0.0, z), Vec3::new(0.0, 1.0, z)];
    /// let mesh = Mesh::from_triangles(&[tri(0.0), tri(1.0), tri(2.0)]);
    /// let picker = Picker::new(Backend::Cpu)?;
    /// let uploaded = picker.upload(&mesh)?;
    /// let ray = Ray::new(Vec3::new(0.25, 0.25, 5.0), Vec3::NEG_Z);
    /// let all = picker.trace_all(&uploaded, &[ray], 2, &TraceOptions::default())?;
    /// let prims: Vec<u32> = all.hits_of(0).iter().map(|h| h.prim).collect();
    /// assert_eq!(prims, [2, 1]); // the nearest two
    /// assert!(all.is_truncated(0)); // triangle 0 was left out
    /// # Ok::<(), raypick::Error>(())
    /// ```
    pub fn trace_all<R: TraceRay>(
        &self,
        mesh: &PickMesh,
        rays: &[R],
        max_hits: usize,
        options: &TraceOptions,
    ) -> Result<AllHits> {
        let local = self.local_rays(rays, mesh.origin);
        self.run_on_engine(
            mesh,
            &mut (),
            |gpu, uploaded, _| gpu.trace_all(uploaded, &local, max_hits, options),
            |cpu, prepared, _| cpu.trace_all(prepared, &local, max_hits, options),
        )
    }
}
