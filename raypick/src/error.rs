//! The crate's error type.

use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in raypick. Misses are not errors: they come back as
/// [`crate::Hit::MISS`].
///
/// The message of a variant that wraps another error (wgpu's, the operating
/// system's) does not repeat it: the wrapped error is the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No GPU adapter could be found (no driver, or none that supports compute).
    #[error("no GPU adapter found")]
    NoAdapter(#[source] wgpu::RequestAdapterError),
    /// Every adapter found is a software rasteriser (device type `Cpu`: llvmpipe,
    /// lavapipe, SwiftShader, WARP), which [`AdapterKinds::Hardware`](crate::gpu::AdapterKinds::Hardware)
    /// leaves out: on the same cores the CPU backend is faster.
    #[error(
        "only software GPU adapters found ({}): the CPU backend is faster than them (the GPU backend opens one when asked for by name)",
        adapters.join(", ")
    )]
    OnlySoftwareAdapters {
        /// `name (API)` of each adapter found.
        adapters: Vec<String>,
    },
    /// The adapter refused to create a device with the limits raypick needs.
    #[error("could not create a GPU device")]
    Device(#[source] wgpu::RequestDeviceError),
    /// The GPU reported an error other than device loss or lack of memory (for
    /// example a validation error). Shared: a device keeps reporting the first
    /// error it recorded.
    #[error("GPU error")]
    Gpu(#[source] Arc<wgpu::Error>),
    /// Waiting for the GPU to finish its work failed.
    #[error("waiting for the GPU failed")]
    Poll(#[source] wgpu::PollError),
    /// The GPU device was lost (driver reset, device destroyed, GPU removed); the
    /// context cannot be used any more. [`crate::Backend::Auto`] continues on the CPU.
    #[error("GPU device lost: {0}")]
    DeviceLost(String),
    /// The GPU has not enough memory for a mesh or ray batch (`source`: wgpu's
    /// error), or the mesh is larger than
    /// [`crate::gpu::GpuOptions::max_mesh_bytes`] (no source).
    /// [`crate::Backend::Auto`] continues on the CPU.
    #[error("GPU out of memory: {message}")]
    OutOfMemory {
        /// What did not fit.
        message: String,
        /// The driver's report, when the driver ran out.
        #[source]
        source: Option<Arc<wgpu::Error>>,
    },
    /// Reading results back from the GPU failed: wgpu's
    /// [`BufferAsyncError`](wgpu::BufferAsyncError) (mapping) or
    /// [`MapRangeError`](wgpu::MapRangeError) (viewing the mapped range).
    #[error("GPU readback failed")]
    Readback(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// One of raypick's compute stages did not build on this device (a driver that
    /// rejects its WGSL or its pipeline constants).
    #[error("building the GPU stage {stage} failed")]
    Pipeline {
        /// The stage (shader and, for pipelines, query and test).
        stage: String,
        /// wgpu's validation error.
        #[source]
        source: wgpu::Error,
    },
    /// A request is larger than a limit of the GPU (a storage binding, one
    /// dispatch); split it, or use the CPU.
    #[error("{0}")]
    GpuLimit(String),
    /// A mesh index refers to a vertex that does not exist.
    #[error("triangle {triangle} uses vertex {index}, but the mesh has {vertices} vertices")]
    IndexOutOfRange {
        /// Triangle whose index is bad.
        triangle: usize,
        /// The bad index.
        index: u32,
        /// Number of vertices in the mesh.
        vertices: usize,
    },
    /// A flat index buffer whose length is not a multiple of 3.
    #[error("an index buffer of {0} indices is not a whole number of triangles (3 indices each)")]
    IndexCount(usize),
    /// A mesh has more triangles than a 32-bit triangle id can name.
    #[error("mesh has {0} triangles; at most 4294967294 are supported")]
    TooManyTriangles(usize),
    /// A hit slice does not have one slot per ray.
    #[error("{rays} rays but {hits} hit slots: the hit slice must have one slot per ray")]
    OutputLength {
        /// Number of rays.
        rays: usize,
        /// Length of the hit slice.
        hits: usize,
    },
    /// A mesh was used with a context or backend it was not created for.
    #[error("mesh belongs to a different backend or GPU context")]
    WrongBackend,
    /// A file could not be read or written.
    #[error("{path}")]
    File {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A file was read but its content is not valid for its format.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A renderer's buffer lacks `wgpu::BufferUsages::STORAGE`, which raypick's
    /// compute shaders need to read it (add it where the buffer is created).
    #[error(
        "the {0} buffer needs wgpu::BufferUsages::STORAGE to be read by raypick's compute shaders"
    )]
    MissingStorageUsage(&'static str),
    /// A mesh could not follow its vertices' motion; rebuild it instead.
    #[error("refit failed")]
    Refit(#[from] crate::bvh::RefitError),
    /// An argument outside what the call accepts (a non-finite origin, zero hits per
    /// ray, a buffer layout that does not fit its buffers, an image size).
    #[error("{0}")]
    InvalidArgument(String),
    /// A camera that cannot form a view (see [`crate::camera::Camera::check`]).
    #[error("invalid camera")]
    Camera(#[from] crate::camera::CameraError),
    /// A name that is not one of a selector's values (`FromStr` of [`crate::Cull`],
    /// [`crate::Mode`], [`crate::Accel`], [`crate::Backend`]).
    #[error("unknown {what} {name:?} (expected one of: {expected})")]
    UnknownName {
        /// What was being named, e.g. "culling mode".
        what: &'static str,
        /// The name given.
        name: String,
        /// The names accepted, comma-separated.
        expected: String,
    },
    /// A file whose extension names no format raypick reads or writes there.
    #[error("{path}: {message}")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// The extension found and the ones supported.
        message: String,
    },
    /// The CPU backend's thread pool could not start.
    #[error("cannot start {threads} CPU threads")]
    ThreadPool {
        /// Threads asked for.
        threads: usize,
        /// What rayon said.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// [`Accel::RayQuery`](crate::Accel::RayQuery) was asked of something that cannot
    /// run hardware ray queries: the CPU backend (also a
    /// [`Backend::Auto`](crate::Backend::Auto) picker on the CPU), or a GPU context
    /// whose adapter does not offer `wgpu::Features::EXPERIMENTAL_RAY_QUERY`.
    /// [`Accel::Bvh`](crate::Accel::Bvh) gives the same answers everywhere.
    #[error(
        "hardware ray queries are not available on {0} (Accel::RayQuery needs a GPU whose adapter offers wgpu's EXPERIMENTAL_RAY_QUERY; Accel::Bvh gives the same answers)"
    )]
    NoRayQueries(String),
    /// An operation that does not apply to this mesh (for example refitting a mesh
    /// gathered from GPU buffers with `refit` instead of `refit_gathered`).
    #[error("{0}")]
    Unsupported(String),
    /// An instance scene or transform is invalid (see [`crate::instances`]).
    #[error(transparent)]
    Instance(#[from] crate::instances::InstanceError),
}

/// Shorthand for `Result<T, raypick::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The message followed by each of its sources, `: `-separated: the whole
    /// story on one line, where a report has room for only one string.
    pub fn with_sources(&self) -> String {
        let mut line = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(error) = source {
            let text = error.to_string();
            // A wrapper that repeats its source's words adds nothing.
            if !line.ends_with(&text) {
                line = format!("{line}: {text}");
            }
            source = error.source();
        }
        line
    }
}

/// [`Error::OutputLength`] unless an output of `slots` entries has one per ray.
pub(crate) fn check_output_length(rays: usize, slots: usize) -> Result<()> {
    if rays == slots {
        Ok(())
    } else {
        Err(Error::OutputLength { rays, hits: slots })
    }
}
