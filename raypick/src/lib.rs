//! # raypick
//!
//! Ray–triangle picking on the GPU through wgpu compute shaders (WGSL), with a CPU
//! backend that gives the same answers.
//!
//! A mesh is uploaded once; batches of [`Ray`]s come back as one [`Hit`] per ray: the
//! nearest triangle in the ray's `[tmin, tmax]`, with `t`, barycentric `u`, `v` and the
//! triangle id. Ties on equal `t` go to the lowest triangle id, so results are
//! deterministic and comparable across backends.
//!
//! ```
//! use raypick::{Backend, Hit, Mesh, Picker, Ray, TraceOptions};
//! use glam::Vec3;
//!
//! // A unit square in the z = 0 plane, as two triangles.
//! let positions = vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
//! let mesh = Mesh::new(positions, vec![[0, 1, 2], [0, 2, 3]])?;
//!
//! // The GPU when there is one, else the CPU.
//! let picker = Picker::new(Backend::Auto)?;
//! let uploaded = picker.upload(&mesh)?;
//! let rays = [
//!     Ray::new(Vec3::new(0.75, 0.25, 2.0), Vec3::new(0.0, 0.0, -2.0)),
//!     Ray::new(Vec3::new(5.0, 5.0, 2.0), Vec3::NEG_Z),
//! ];
//! let hits = picker.trace(&uploaded, &rays, &TraceOptions::default())?;
//! assert_eq!(hits[0].prim, 0);
//! assert_eq!(hits[0].t, 1.0); // in units of the direction's length
//! assert_eq!(hits[1], Hit::MISS);
//! # Ok::<(), raypick::Error>(())
//! ```
//!
//! ## The API at a glance
//!
//! - [`Picker`]: one entry point over both backends ([`Backend::Auto`], `Cpu`, `Gpu`;
//!   [`PickerOptions`]); `Auto` continues on the CPU when the GPU is missing, lost or
//!   out of memory.
//! - [`Mesh`] in, [`PickMesh`] out of [`Picker::upload`] (or `upload_with` an
//!   [`Accel`]: the BVH, brute force, or the GPU's hardware ray queries,
//!   [`Accel::RayQuery`]); [`Picker::refit`] follows moving vertices.
//! - Queries, each taking rays of either precision ([`Ray`], or [`Ray64`] far from
//!   the origin) and [`TraceOptions`] ([`Cull`], [`Mode`]): [`Picker::trace`] (the
//!   nearest [`Hit`] per ray), [`Picker::occluded`] (any hit) and
//!   [`Picker::trace_all`] ([`AllHits`]); `trace_into` and `occluded_into` fill the
//!   caller's memory.
//! - [`instances`]: many meshes placed by transforms, picked together.
//! - [`camera`] and [`screen`]: screen → ray, and the triangle under a pixel.
//! - [`service`]: picks submitted in one frame and collected in a later one.
//! - [`gather`]: meshes read from a renderer's vertex and index buffers.
//! - [`render`]: what a camera's primary rays hit, as an image.
//! - `io` (feature `io`): mesh loaders and ray/hit files.
//! - [`Error`]: everything that can fail; misses are [`Hit::MISS`], not errors.
//!
//! The hit convention, file formats and camera convention are written down in the
//! repository's `docs/contracts.md`; `docs/architecture.md` says where each stage
//! lives.
//!
//! ## Stages
//!
//! The GPU path is a set of WGSL compute shaders; the CPU path mirrors each shader
//! stage in a Rust module with the same names and loop order, so the CPU backend is
//! both the fallback and the oracle the GPU is tested against. These modules are
//! private to the crate (the table names them as `docs/architecture.md` does):
//!
//! | stage | shader | CPU twin |
//! | --- | --- | --- |
//! | shared structs | `shaders/types.wgsl` | `types` (`#[repr(C)]`, layout checked with naga) |
//! | ray–triangle test | `shaders/intersect.wgsl` | `cpu::intersect` |
//! | every ray × every triangle | `shaders/brute_force.wgsl` | `cpu::brute_force` |
//! | BVH traversal, binary nodes | `shaders/bvh_traverse.wgsl` | `cpu::bvh_traverse` (plus the 8-wide SIMD fast path `cpu::wide_traverse`) |
//! | BVH traversal, eight-wide nodes (`cpu::wide_nodes`) | `shaders/wide_bvh_traverse.wgsl` | `cpu::wide_bvh_traverse` |
//! | two-level (instance) traversal | `shaders/instance_traverse.wgsl` | `cpu::instance_traverse` |
//! | triangles from a renderer's buffers | `shaders/gather.wgsl` | `cpu::gather` |
//! | BVH refit (one level per dispatch) | `shaders/refit.wgsl` | `cpu::refit` |
//! | hardware ray queries (`Accel::RayQuery`) | `shaders/ray_query.wgsl` | `cpu::ray_query` (raypick's decisions around the driver's traversal, which has no twin) |
//!
//! ## Features
//! - `io`: file formats ([`tobj`](https://docs.rs/tobj), [`npyz`](https://docs.rs/npyz),
//!   glTF).
//! - `serde`: `serde::Serialize` for the adapter and device reports.
#![warn(missing_docs)]

mod all_hits;
pub mod camera;
pub mod closest;
mod error;
pub mod gather;
pub mod gpu;
pub mod instances;
#[cfg(feature = "io")]
pub mod io;
#[cfg(test)]
mod kit;
mod mesh;
mod options;
mod picker;
pub mod render;
pub mod screen;
pub mod service;
mod world;

/// The kernels: private to the crate, public (and hidden from the docs, with no
/// stability promise) under the `kernels` feature, which only raypick's own test kit,
/// benches and fuzz targets turn on.
macro_rules! kernel_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "kernels")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "kernels"))]
        mod $name;
    )*};
}
kernel_modules!(bvh, cpu, prepare, shaders, types);

pub use all_hits::AllHits;
pub use bvh::{RefitError, Refitted};
pub use error::{Error, Result};
pub use mesh::Mesh;
pub use options::{Accel, Cull, Mode, NodeLayout, TraceOptions};
pub use picker::{Backend, PickMesh, Picker, PickerOptions};
pub use types::{Hit, Ray};
pub use world::{Ray64, TraceRay};

pub use cpu::simd::simd_level as cpu_simd_level;

/// The README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
