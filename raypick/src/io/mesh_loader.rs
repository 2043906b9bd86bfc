//! Loading a mesh file, with the format chosen by extension.

use std::path::Path;

use super::errors::{file_error, format_error};
use super::extension::{describe_extension, lowercase_extension};
use super::gltf_mesh::read_gltf;
use super::loaded_mesh::LoadedMesh;
use super::obj::{read_obj, read_obj_from};
use super::ply::read_ply;
use super::stl::read_stl;
use crate::error::{Error, Result};
use crate::mesh::Mesh;

/// Mesh file extensions [`load_mesh`] reads (lower case, without the dot).
pub const SUPPORTED_MESH_EXTENSIONS: &[&str] = &["obj", "gltf", "glb", "ply", "stl"];

/// Loads a mesh file, choosing the format by extension (case-insensitive): `.obj`,
/// `.gltf`, `.glb`, `.ply` or `.stl` (see the [module docs](crate::io) for what each
/// reads and the triangle order).
///
/// A missing or unreadable file gives [`Error::File`]; broken content gives
/// [`Error::Format`] naming the file and what is wrong; another extension gives
/// [`Error::Unsupported`].
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    load_mesh_f64(path)?
        .into_mesh()
        .map_err(|e| format_error(path, e.to_string()))
}

/// Loads a mesh file with f64 coordinates into a [`Mesh`] with a local origin
/// ([`LoadedMesh::into_rebased_mesh`]): the way to load geometry far from the origin.
pub fn load_mesh_rebased(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    load_mesh_f64(path)?
        .into_rebased_mesh()
        .map_err(|e| format_error(path, e.to_string()))
}

/// Like [`load_mesh`], but keeps the coordinates at the precision the file holds them
/// (f64 for PLY `double` and OBJ text).
pub fn load_mesh_f64(path: impl AsRef<Path>) -> Result<LoadedMesh> {
    let path = path.as_ref();
    let read_all = || std::fs::read(path).map_err(|e| file_error(path, e));
    match mesh_format(path)? {
        "obj" => read_obj(path),
        _ => read_mesh(path, &read_all()?),
    }
}

/// Like [`load_mesh_f64`], for a mesh file's content already in memory: `name` (a
/// file name or path) picks the format by its extension and names the data in errors.
/// `name` itself is never opened; a `.gltf` file's external buffers are looked up
/// relative to its directory, as for a file at `name`.
pub fn load_mesh_from_bytes(bytes: &[u8], name: impl AsRef<Path>) -> Result<LoadedMesh> {
    read_mesh(name.as_ref(), bytes)
}

/// Parses `data` as the content of the mesh file `path`, by its extension.
fn read_mesh(path: &Path, data: &[u8]) -> Result<LoadedMesh> {
    match mesh_format(path)? {
        "obj" => read_obj_from(path, data),
        "gltf" | "glb" => read_gltf(path, data),
        "ply" => read_ply(path, data),
        _ => read_stl(path, data),
    }
}

/// The supported mesh format of `path` (an entry of [`SUPPORTED_MESH_EXTENSIONS`]),
/// or [`Error::UnknownFormat`].
fn mesh_format(path: &Path) -> Result<&'static str> {
    let extension = lowercase_extension(path);
    match SUPPORTED_MESH_EXTENSIONS
        .iter()
        .find(|&&ext| Some(ext) == extension.as_deref())
    {
        Some(&ext) => Ok(ext),
        None => Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            message: format!(
                "unknown mesh format ({}); supported mesh formats: {}",
                describe_extension(path),
                SUPPORTED_MESH_EXTENSIONS
                    .iter()
                    .map(|ext| format!(".{ext}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}
