//! Loading a mesh file, with the format chosen by extension.

use std::path::Path;

use super::extension::{describe_extension, lowercase_extension};
use super::obj::load_obj;
use crate::error::{Error, Result};
use crate::mesh::Mesh;

/// Mesh file extensions [`load_mesh`] reads (lower case, without the dot).
pub const SUPPORTED_MESH_EXTENSIONS: &[&str] = &["obj"];

/// Mesh formats of the design that are not implemented yet.
const PLANNED: &[&str] = &["gltf", "glb", "ply", "stl"];

/// Loads a mesh file, choosing the format by extension (case-insensitive).
///
/// Supported now: `.obj` (see [`load_obj`]). `.gltf`, `.glb`, `.ply` and `.stl` give
/// [`Error::Unsupported`], as does any other extension. A missing or unreadable file
/// gives [`Error::File`]; broken content gives [`Error::Format`].
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    let supported = SUPPORTED_MESH_EXTENSIONS
        .iter()
        .map(|ext| format!(".{ext}"))
        .collect::<Vec<_>>()
        .join(", ");
    match lowercase_extension(path).as_deref() {
        Some("obj") => load_obj(path),
        Some(ext) if PLANNED.contains(&ext) => Err(Error::Unsupported(format!(
            "{}: .{ext} meshes are not supported yet; supported mesh formats for now: {supported}",
            path.display()
        ))),
        _ => Err(Error::Unsupported(format!(
            "{}: unknown mesh format ({}); supported mesh formats for now: {supported}",
            path.display(),
            describe_extension(path)
        ))),
    }
}
