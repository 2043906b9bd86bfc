//! File formats: ray files, hit files and mesh loaders (the `io` feature).
//!
//! The formats are those of `DESIGN.md` section 3; every function picks the format
//! from the file extension, compared case-insensitively:
//!
//! | kind | extensions | read | write |
//! | --- | --- | --- | --- |
//! | rays | `.rays` `.npy` `.csv` | [`read_rays`], [`read_rays_f64`] | [`write_rays`] |
//! | hits | `.hits` `.npy` `.csv` | [`read_hits`] | [`write_hits`] |
//! | meshes | `.obj` | [`load_mesh`] | — |
//!
//! - `.rays`: 8 little-endian `f32` per ray, `ox oy oz tmin dx dy dz tmax` (32 bytes).
//! - `.hits`: per ray `t f32, u f32, v f32, prim u32`, little-endian (16 bytes).
//! - `.npy` rays: a NumPy `float32` or `float64` array of shape `(N, 8)`, either byte
//!   order, C or Fortran order. `.npy` hits: a structured array
//!   `[('t','<f4'),('u','<f4'),('v','<f4'),('prim','<u4')]` of shape `(N,)`.
//! - `.csv`: comma separated, one ray or hit per line, an optional header line, blank
//!   lines and `#` comment lines skipped, spaces around values allowed; `inf`, `-inf`
//!   and `nan` are numbers. Written floats round-trip exactly. A miss is written as
//!   `inf,0,0,4294967295`.
//!
//! Errors always name the file (and for text formats the line and column). Writers
//! never leave a partial file behind: they write a temporary file next to the target
//! and rename it into place at the end (see [`write_atomic`]).

mod atomic_write;
mod binary;
mod csv;
mod errors;
mod extension;
mod hits;
mod mesh_loader;
mod npy;
mod obj;
mod rays;

pub use atomic_write::write_atomic;
pub use hits::{read_hits, write_hits};
pub use mesh_loader::{SUPPORTED_MESH_EXTENSIONS, load_mesh};
pub use obj::load_obj;
pub use rays::{Precision, ray_file_precision, read_rays, read_rays_f64, write_rays};
