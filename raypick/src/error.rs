//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in raypick. Misses are not errors: they come back as
/// [`crate::Hit::MISS`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No GPU adapter could be found (no driver, or none that supports compute).
    #[error("no GPU adapter found: {0}")]
    NoAdapter(String),
    /// The adapter refused to create a device with the limits raypick needs.
    #[error("could not create a GPU device: {0}")]
    Device(String),
    /// The GPU reported an error other than device loss or lack of memory (for
    /// example a validation error).
    #[error("GPU error: {0}")]
    Gpu(String),
    /// The GPU device was lost (driver reset, device destroyed, GPU removed); the
    /// context cannot be used any more. [`crate::Backend::Auto`] continues on the CPU.
    #[error("GPU device lost: {0}")]
    DeviceLost(String),
    /// The GPU has not enough memory for a mesh or ray batch (or the mesh is larger
    /// than [`crate::gpu::GpuOptions::max_mesh_bytes`]). [`crate::Backend::Auto`]
    /// continues on the CPU.
    #[error("GPU out of memory: {0}")]
    OutOfMemory(String),
    /// Reading results back from the GPU failed.
    #[error("GPU readback failed: {0}")]
    Readback(String),
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
    #[error("{path}: {source}")]
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
    #[error("refit failed: {0}")]
    Refit(#[from] crate::bvh::RefitError),
    /// A request that raypick does not support (for example an unknown file extension).
    #[error("{0}")]
    Unsupported(String),
    /// An instance scene or transform is invalid (see [`crate::instances`]).
    #[error(transparent)]
    Instance(#[from] crate::instances::InstanceError),
}

/// Shorthand for `Result<T, raypick::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::OutputLength`] unless an output of `slots` entries has one per ray.
pub(crate) fn check_output_length(rays: usize, slots: usize) -> Result<()> {
    if rays == slots {
        Ok(())
    } else {
        Err(Error::OutputLength { rays, hits: slots })
    }
}
