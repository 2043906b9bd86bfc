//! File formats: ray files, hit files and mesh loaders (the `io` feature).
//!
//! The formats are those of `docs/contracts.md` §2; every function picks the format
//! from the file extension, compared case-insensitively:
//!
//! | kind | extensions | read | write |
//! | --- | --- | --- | --- |
//! | rays | `.rays` `.npy` `.csv` | [`read_rays`], [`read_rays_f64`], [`read_rays64`], [`read_rays_from_bytes`] | [`write_rays`] |
//! | hits | `.hits` `.npy` `.csv` | [`read_hits`], [`read_hits_from_bytes`] | [`write_hits`] |
//! | meshes | `.obj` `.gltf` `.glb` `.ply` `.stl` | [`load_mesh`], [`load_mesh_f64`], [`load_mesh_rebased`], [`load_mesh_from_bytes`] | — |
//!
//! The `_from_bytes` readers take a file's content already in memory (the fuzz
//! targets in `fuzz/` call them); a name's extension picks the format.
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
//! Meshes: every triangle of the file, in file order, polygons fan-triangulated from
//! their first corner, triangle id = index in that concatenation (`docs/contracts.md`
//! §2). Coordinates are read as f64 into a [`LoadedMesh`], then rounded to f32
//! by [`LoadedMesh::into_mesh`], or stored relative to a mesh-local f64 origin by
//! [`LoadedMesh::into_rebased_mesh`] (what `raypick trace` does, together with f64 rays
//! from [`read_rays64`], so geometry far from the origin keeps its precision).
//!
//! | mesh format | variants | what is read |
//! | --- | --- | --- |
//! | OBJ (`tobj`) | text | `v` and `f` lines of every object and group; lines, points, normals, texture coordinates and materials ignored |
//! | glTF 2.0 (`gltf`) | `.gltf` with `data:` or external buffers, `.glb` | every primitive of every mesh of the default scene (all scenes without one), node world transforms applied; `TRIANGLES`, `TRIANGLE_STRIP`, `TRIANGLE_FAN` (unrolled as the glTF specification says); `u8`/`u16`/`u32` indices or none; point and line primitives skipped; required extensions only if they leave geometry alone (materials, textures, lights) or `KHR_mesh_quantization`; no sparse accessors, skins or morph targets |
//! | PLY | ASCII, binary little and big endian | `x y z` of `vertex` (any numeric type, `double` kept exact), polygons of `face` `vertex_indices` (or `vertex_index`); other elements ignored |
//! | STL | ASCII, binary | every facet; a file is binary when its size is `84 + 50 n` (`n` from its header), even if it starts with `solid` |
//!
//! Errors always name the file (and for text formats the line and column). Writers
//! never leave a partial file behind: they write a temporary file next to the target
//! and rename it into place at the end (see [`write_atomic`]).

mod atomic_write;
mod binary;
mod csv;
mod errors;
mod extension;
mod glb;
mod gltf_accessor;
mod gltf_buffers;
mod gltf_mesh;
mod hits;
mod loaded_mesh;
mod mesh_loader;
mod npy;
mod obj;
mod ply;
mod ply_header;
mod rays;
mod stl;
mod text;

pub use atomic_write::write_atomic;
pub use hits::{read_hits, read_hits_from_bytes, write_hits};
pub use loaded_mesh::LoadedMesh;
pub use mesh_loader::{
    SUPPORTED_MESH_EXTENSIONS, load_mesh, load_mesh_f64, load_mesh_from_bytes, load_mesh_rebased,
};
pub use obj::load_obj;
pub use rays::{
    Precision, ray_file_precision, read_rays, read_rays_f64, read_rays_from_bytes, read_rays64,
    write_rays,
};
