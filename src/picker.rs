//! The high-level entry point: one [`Picker`] over either backend.

use crate::Mesh;
use crate::all_hits::AllHits;
use crate::cpu::{CpuBackend, CpuMesh};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, GpuMesh};
use crate::options::{Accel, TraceOptions};
use crate::types::{Hit, Ray};

/// Which backend traces rays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The GPU if an adapter can be opened, else the CPU (with a logged notice).
    #[default]
    Auto,
    /// The CPU backend.
    Cpu,
    /// The GPU backend; fails if no adapter can be opened.
    Gpu,
}

/// The backend a [`Picker`] runs on.
#[derive(Debug)]
enum Engine {
    Cpu(CpuBackend),
    Gpu(Box<GpuContext>),
}

/// A mesh prepared for a [`Picker`]'s backend.
#[derive(Debug)]
pub enum PickMesh {
    /// Prepared for the CPU.
    Cpu(CpuMesh),
    /// Uploaded to the GPU.
    Gpu(GpuMesh),
}

impl PickMesh {
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        match self {
            PickMesh::Cpu(m) => m.triangle_count(),
            PickMesh::Gpu(m) => m.triangle_count(),
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
#[derive(Debug)]
pub struct Picker {
    engine: Engine,
    fallback_reason: Option<String>,
}

impl Picker {
    /// A picker on the requested backend. [`Backend::Auto`] falls back to the CPU
    /// when no GPU can be opened, logs why, and keeps the reason
    /// ([`Picker::fallback_reason`]); [`Backend::Gpu`] returns the error instead.
    pub fn new(backend: Backend) -> Result<Self> {
        match backend {
            Backend::Cpu => Ok(Self::from_cpu(CpuBackend::new())),
            Backend::Gpu => Ok(Self::from_gpu(GpuContext::new()?)),
            Backend::Auto => match GpuContext::new() {
                Ok(gpu) => Ok(Self::from_gpu(gpu)),
                Err(e) => {
                    log::warn!("raypick: using the CPU backend: {e}");
                    Ok(Self {
                        engine: Engine::Cpu(CpuBackend::new()),
                        fallback_reason: Some(e.to_string()),
                    })
                }
            },
        }
    }

    /// A picker on a CPU backend (e.g. one with a given thread count).
    pub fn from_cpu(cpu: CpuBackend) -> Self {
        Self {
            engine: Engine::Cpu(cpu),
            fallback_reason: None,
        }
    }

    /// A picker on a GPU context (e.g. one made from a renderer's device and queue).
    pub fn from_gpu(gpu: GpuContext) -> Self {
        Self {
            engine: Engine::Gpu(Box::new(gpu)),
            fallback_reason: None,
        }
    }

    /// The backend in use: [`Backend::Cpu`] or [`Backend::Gpu`], never `Auto`.
    pub fn backend(&self) -> Backend {
        match self.engine {
            Engine::Cpu(_) => Backend::Cpu,
            Engine::Gpu(_) => Backend::Gpu,
        }
    }

    /// Why [`Backend::Auto`] fell back to the CPU, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// A human-readable name of what traces: the GPU adapter, or the CPU and its thread count.
    pub fn device_name(&self) -> String {
        match &self.engine {
            Engine::Cpu(cpu) => format!("CPU ({} threads)", cpu.threads()),
            Engine::Gpu(gpu) => {
                let a = gpu.adapter();
                format!("{} ({}, {})", a.name, a.backend, a.device_type)
            }
        }
    }

    /// The GPU context, when on the GPU.
    pub fn gpu(&self) -> Option<&GpuContext> {
        match &self.engine {
            Engine::Gpu(gpu) => Some(gpu),
            Engine::Cpu(_) => None,
        }
    }

    /// Prepares a mesh for this picker's backend with the default acceleration
    /// structure (a BVH; uploaded on the GPU).
    pub fn upload(&self, mesh: &Mesh) -> Result<PickMesh> {
        self.upload_with(mesh, Accel::default())
    }

    /// Prepares a mesh for this picker's backend with the given acceleration structure.
    pub fn upload_with(&self, mesh: &Mesh, accel: Accel) -> Result<PickMesh> {
        match &self.engine {
            Engine::Cpu(_) => Ok(PickMesh::Cpu(CpuMesh::with_accel(mesh, accel))),
            Engine::Gpu(gpu) => Ok(PickMesh::Gpu(gpu.upload_with(mesh, accel)?)),
        }
    }

    /// Traces `rays` and returns one hit per ray.
    pub fn trace(&self, mesh: &PickMesh, rays: &[Ray], options: &TraceOptions) -> Result<Vec<Hit>> {
        let mut hits = vec![Hit::MISS; rays.len()];
        self.trace_into(mesh, rays, options, &mut hits)?;
        Ok(hits)
    }

    /// Traces `rays` into `hits` (one slot per ray).
    pub fn trace_into(
        &self,
        mesh: &PickMesh,
        rays: &[Ray],
        options: &TraceOptions,
        hits: &mut [Hit],
    ) -> Result<()> {
        if rays.len() != hits.len() {
            return Err(Error::Unsupported(format!(
                "{} rays but {} hit slots",
                rays.len(),
                hits.len()
            )));
        }
        match (&self.engine, mesh) {
            (Engine::Cpu(cpu), PickMesh::Cpu(mesh)) => {
                cpu.trace_into(mesh, rays, options, hits);
                Ok(())
            }
            (Engine::Gpu(gpu), PickMesh::Gpu(mesh)) => gpu.trace_into(mesh, rays, options, hits),
            _ => Err(Error::WrongBackend),
        }
    }

    /// Whether each ray hits anything: `occluded(..)[i] == trace(..)[i].is_hit()`
    /// for every ray, found faster (each ray stops at its first accepted hit) — the
    /// query for shadow and visibility rays. Culling and test as in `options`.
    pub fn occluded(
        &self,
        mesh: &PickMesh,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<bool>> {
        match (&self.engine, mesh) {
            (Engine::Cpu(cpu), PickMesh::Cpu(mesh)) => Ok(cpu.occluded(mesh, rays, options)),
            (Engine::Gpu(gpu), PickMesh::Gpu(mesh)) => gpu.occluded(mesh, rays, options),
            _ => Err(Error::WrongBackend),
        }
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
    pub fn trace_all(
        &self,
        mesh: &PickMesh,
        rays: &[Ray],
        max_hits: usize,
        options: &TraceOptions,
    ) -> Result<AllHits> {
        match (&self.engine, mesh) {
            (Engine::Cpu(cpu), PickMesh::Cpu(mesh)) => cpu.trace_all(mesh, rays, max_hits, options),
            (Engine::Gpu(gpu), PickMesh::Gpu(mesh)) => gpu.trace_all(mesh, rays, max_hits, options),
            _ => Err(Error::WrongBackend),
        }
    }
}
