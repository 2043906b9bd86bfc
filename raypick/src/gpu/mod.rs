//! The GPU backend (wgpu compute shaders).
//!
//! [`GpuContext`] owns (or borrows from a renderer) a device and queue and builds the
//! pipelines once; [`GpuMesh`] is a mesh uploaded once and traced many times;
//! [`list_adapters`] and [`backend_choice`] say what the machine offers and what
//! [`Backend::Auto`](crate::Backend::Auto) picks.

mod adapters;
mod arithmetic;
mod choose;
mod context;
mod gather;
mod instances;
mod mesh;
mod pipelines;
mod ray_query;
pub(crate) mod readback;
mod refit;
mod timing;
mod trace;

pub use adapters::{
    AdapterFeatures, AdapterReport, BackendChoice, ComputeLimits, backend_choice, list_adapters,
};
pub use arithmetic::ArithmeticCheck;
pub use choose::AdapterKinds;
pub use context::{
    AdapterSummary, DEFAULT_MAX_TRAVERSAL_STEPS, DEFAULT_MAX_TRIANGLES_PER_DISPATCH, GpuContext,
    GpuOptions, MAX_TRAVERSAL_STACK,
};
pub(crate) use gather::CpuCopy;
pub use gather::MeshBuffers;
pub use instances::GpuInstanceScene;
pub(crate) use instances::NO_BRUTE_INSTANCES;
pub(crate) use mesh::Content as MeshContent;
pub use mesh::GpuMesh;
pub use timing::GpuTimes;
pub(crate) use trace::{Scratch, finish_on_cpu, write_rays};
