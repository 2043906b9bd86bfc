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
//! ## Architecture
//!
//! The GPU path is a set of WGSL compute shaders; the CPU path mirrors each shader
//! stage in a Rust module with the same names and loop order, so the CPU backend is
//! both the fallback and the oracle the GPU is tested against:
//!
//! | stage | shader | CPU mirror |
//! | --- | --- | --- |
//! | shared structs | `shaders/types.wgsl` | [`types`] (`#[repr(C)]`, layout checked with naga) |
//! | ray–triangle test | `shaders/intersect.wgsl` | [`cpu::intersect`] |
//! | every ray × every triangle | `shaders/brute_force.wgsl` | [`cpu::brute_force`] |
//! | BVH traversal | `shaders/bvh_traverse.wgsl` | [`cpu::bvh_traverse`] (plus the 8-wide SIMD fast path [`cpu::wide_traverse`]) |
//! | two-level (instance) traversal | `shaders/instance_traverse.wgsl` | [`instances::instance_traverse`] |
//! | triangles from a renderer's buffers | `shaders/gather.wgsl` | [`cpu::gather`] |
//! | BVH refit (one level per dispatch) | `shaders/refit.wgsl` | [`bvh::refit`] |
//!
//! Around them:
//! - [`prepare`]: triangle packing and ray sanitising, shared by both backends.
//! - [`bvh`]: the bounding volume hierarchy both backends trace (the default
//!   [`Accel`]); brute force ([`Accel::Brute`]) is the reference.
//! - [`cpu`]: the CPU backend on a rayon pool; [`cpu::simd_level`] says which
//!   vector unit its kernels use.
//! - [`gpu`]: the wgpu context (own or shared device), uploaded meshes, dispatch and
//!   readback; [`gpu::list_adapters`] lists what the machine offers.
//! - [`picker`]: [`Picker`], one entry point over both backends; [`Backend::Auto`]
//!   continues on the CPU when the GPU is missing, lost or out of memory.
//! - [`world`]: f64 world coordinates ([`Ray64`], [`Mesh::from_f64`]): geometry far
//!   from the origin is traced relative to a mesh-local origin, with the exact
//!   translation guarantee spelled out there.
//! - [`instances`]: many meshes placed by transforms in one scene, picked together
//!   (a top-level BVH over per-mesh BVHs; `shaders/instance_traverse.wgsl`).
//! - [`gather`]: meshes described as a renderer draws them (vertex stride and
//!   offset, 16/32-bit indices, base vertex), read from its GPU buffers or CPU bytes.
//! - [`service`]: asynchronous picks for render loops (submit in one frame, collect
//!   in a later one, never wait).
//! - [`camera`], [`scene`], [`reference`](mod@reference): screen-to-ray, generated
//!   test scenes and an f64 reference intersector.
//! - [`screen`]: screen picks (the triangle under a pixel or cursor, and where).
//! - [`bench`](mod@bench): timing, parity and the `raypick bench` report; [`report`]: the
//!   machine facts of `raypick info`, and the JSON and SVG files of
//!   `raypick bench --report`.
//! - [`render`]: primary-ray images (what the picker sees), PNG output with the
//!   `image` feature.
//! - `io` (feature `io`): mesh loaders and ray/hit file formats.
//! - `src/bin/raypick.rs` (feature `cli`): the command line, a thin layer over the
//!   modules above.
//!
//! ## Features
//! - `io`: file formats ([`tobj`](https://docs.rs/tobj), [`npyz`](https://docs.rs/npyz)).
//! - `image`: `render::write_png` (the `png` crate); implies `io`.
//! - `cli` (default): the `raypick` binary, serde serialisation of the reports,
//!   `report::write_bench_report`; implies `image`.
#![warn(missing_docs)]

pub mod all_hits;
pub mod bench;
pub mod bvh;
pub mod camera;
pub mod cpu;
pub mod error;
pub mod gather;
pub mod gpu;
pub mod instances;
#[cfg(feature = "io")]
pub mod io;
pub mod mesh;
pub mod options;
pub mod picker;
pub mod prepare;
pub mod reference;
pub mod render;
pub mod report;
pub mod scene;
pub mod screen;
pub mod service;
pub mod shaders;
pub mod types;
pub mod world;

pub use all_hits::AllHits;
pub use error::{Error, Result};

/// The README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use mesh::Mesh;
pub use options::{Accel, Cull, Mode, TraceOptions};
pub use picker::{Backend, PickMesh, Picker, PickerOptions};
pub use types::{Hit, MISS, Ray};
pub use world::{Ray64, TraceRay};
