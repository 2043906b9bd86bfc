//! glTF 2.0 meshes (`.gltf` with embedded or external buffers, and `.glb`).
//!
//! The JSON is parsed and validated by the `gltf` crate; the GLB container, the
//! buffers and the accessors are read here with every size checked first.
//!
//! Triangle order (`docs/contracts.md` §2): the nodes of the default scene (of every
//! scene in order when there is no default, of the root nodes when there is no
//! scene) depth first, a node before its children, children in order; for each node
//! with a mesh, every primitive in order. Vertices are transformed by the node's world
//! matrix (the product of the local matrices from the root down, in f64).
//! `TRIANGLES`, `TRIANGLE_STRIP` and `TRIANGLE_FAN` primitives give triangles, with
//! strips and fans unrolled as the glTF specification defines; point and line
//! primitives, and primitives without positions, are skipped. Skins and morph
//! targets are not applied (the rest pose is used).

use std::path::Path;

use glam::{DMat4, DQuat, DVec3};
use gltf::mesh::{Mode, Semantic};

use super::errors::format_error;
use super::glb::{MAGIC, split_glb};
use super::gltf_accessor::{read_indices, read_positions};
use super::gltf_buffers::Buffers;
use super::loaded_mesh::LoadedMesh;
use crate::error::Result;

/// Reads the glTF (JSON) or GLB (binary) file `path` whose bytes are `data`; the
/// container is told by the magic bytes, not the extension.
pub(crate) fn read_gltf(path: &Path, data: &[u8]) -> Result<LoadedMesh> {
    let bad = |message: String| format_error(path, message);
    let (json, bin) = if data.starts_with(MAGIC) {
        let glb = split_glb(data).map_err(bad)?;
        (glb.json, glb.bin)
    } else {
        (data, None)
    };
    let mut root =
        gltf::json::Root::from_slice(json).map_err(|e| bad(describe_json_error(json, e)))?;
    check_attribute_indices(&root).map_err(bad)?;
    accept_required_extensions(&mut root).map_err(bad)?;
    let document = gltf::Document::from_json(root).map_err(|e| bad(describe_gltf_error(e)))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let mut buffers = Buffers::new(base, bin, document.buffers().len());
    let mut mesh = LoadedMesh::default();
    for (node, world) in scene_nodes(&document).map_err(bad)? {
        let Some(node_mesh) = node.mesh() else {
            continue;
        };
        for primitive in node_mesh.primitives() {
            let at = |message: String| {
                bad(format!(
                    "mesh {} primitive {}: {message}",
                    node_mesh.index(),
                    primitive.index()
                ))
            };
            append_primitive(&mut mesh, &primitive, &world, &mut buffers).map_err(at)?;
        }
    }
    Ok(mesh)
}

/// Appends the triangles of `primitive`, its positions transformed by `world`.
fn append_primitive(
    mesh: &mut LoadedMesh,
    primitive: &gltf::Primitive,
    world: &DMat4,
    buffers: &mut Buffers,
) -> std::result::Result<(), String> {
    let too_many = || "more vertices than 32-bit indices can address".to_owned();
    let mode = primitive.mode();
    if !matches!(
        mode,
        Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
    ) {
        return Ok(());
    }
    let Some(positions) = primitive.get(&Semantic::Positions) else {
        return Ok(());
    };
    let positions = read_positions(&positions, buffers)?;
    let corners = match primitive.indices() {
        Some(accessor) => {
            let corners = read_indices(&accessor, buffers)?;
            if let Some(bad) = corners.iter().find(|&&i| i as usize >= positions.len()) {
                return Err(format!(
                    "index {bad} is out of range: the primitive has {} vertices",
                    positions.len()
                ));
            }
            corners
        }
        None => {
            let count = u32::try_from(positions.len()).map_err(|_| too_many())?;
            (0..count).collect()
        }
    };
    let base = u32::try_from(mesh.positions.len()).map_err(|_| too_many())?;
    if base as u64 + positions.len() as u64 > u32::MAX as u64 {
        return Err(too_many());
    }
    mesh.positions.extend(positions.iter().map(|&p| {
        let p = world.transform_point3(DVec3::from_array(p));
        p.to_array()
    }));
    let shift = |tri: [u32; 3]| tri.map(|i| base + i);
    let n = corners.len();
    match mode {
        Mode::TriangleStrip => mesh.indices.extend((0..n.saturating_sub(2)).map(|i| {
            let (a, b, c) = (corners[i], corners[i + 1], corners[i + 2]);
            shift(if i % 2 == 0 { [a, b, c] } else { [a, c, b] })
        })),
        Mode::TriangleFan => mesh.indices.extend(
            (1..n.saturating_sub(1)).map(|i| shift([corners[i], corners[i + 1], corners[0]])),
        ),
        _ => mesh
            .indices
            .extend(corners.chunks_exact(3).map(|t| shift([t[0], t[1], t[2]]))),
    }
    Ok(())
}

/// The nodes to draw with their world matrices, in triangle order (see the module
/// docs). Fails on a node reached twice in one scene (glTF nodes have at most one
/// parent), which also catches cycles.
fn scene_nodes(
    document: &gltf::Document,
) -> std::result::Result<Vec<(gltf::Node<'_>, DMat4)>, String> {
    let roots: Vec<Vec<gltf::Node>> = match document.default_scene() {
        Some(scene) => vec![scene.nodes().collect()],
        None if document.scenes().len() > 0 => {
            document.scenes().map(|s| s.nodes().collect()).collect()
        }
        None => {
            let mut is_child = vec![false; document.nodes().len()];
            for child in document.nodes().flat_map(|n| n.children()) {
                is_child[child.index()] = true;
            }
            vec![document.nodes().filter(|n| !is_child[n.index()]).collect()]
        }
    };
    let mut out = Vec::new();
    for scene_roots in roots {
        let mut seen = vec![false; document.nodes().len()];
        // Depth first with an explicit stack (no recursion on deep hierarchies).
        let mut stack: Vec<(gltf::Node, DMat4)> = scene_roots
            .into_iter()
            .rev()
            .map(|n| (n, DMat4::IDENTITY))
            .collect();
        while let Some((node, parent)) = stack.pop() {
            let visited = &mut seen[node.index()];
            if *visited {
                return Err(format!(
                    "node {} is reached twice in a scene (a node may have only one parent; \
                     cycles are not allowed)",
                    node.index()
                ));
            }
            *visited = true;
            let world = parent * local_matrix(&node)?;
            let first_child = stack.len();
            stack.extend(node.children().map(|child| (child, world)));
            stack[first_child..].reverse();
            out.push((node, world));
        }
    }
    Ok(out)
}

/// The local matrix of `node`, from its `matrix` or its translation, rotation and scale.
fn local_matrix(node: &gltf::Node) -> std::result::Result<DMat4, String> {
    match node.transform() {
        gltf::scene::Transform::Matrix { matrix } => Ok(DMat4::from_cols_array_2d(
            &matrix.map(|col| col.map(f64::from)),
        )),
        gltf::scene::Transform::Decomposed {
            translation,
            rotation,
            scale,
        } => {
            let [x, y, z, w] = rotation.map(f64::from);
            let rotation = DQuat::from_xyzw(x, y, z, w);
            let length = rotation.length();
            if !(length.is_finite() && length > 0.0) {
                return Err(format!(
                    "node {} has rotation {rotation:?}, which is not a rotation",
                    node.index()
                ));
            }
            Ok(DMat4::from_scale_rotation_translation(
                DVec3::from_array(scale.map(f64::from)),
                rotation / length,
                DVec3::from_array(translation.map(f64::from)),
            ))
        }
    }
}

/// Checks that every primitive attribute names an existing accessor. `gltf`'s
/// validation indexes the accessors with the `POSITION` index unchecked (a panic on
/// a bad index), so this runs before it.
fn check_attribute_indices(root: &gltf::json::Root) -> std::result::Result<(), String> {
    let accessors = root.accessors.len();
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, primitive) in mesh.primitives.iter().enumerate() {
            for index in primitive.attributes.values() {
                if index.value() >= accessors {
                    return Err(format!(
                        "mesh {m} primitive {p}: attribute accessor {} does not exist \
                         ({accessors} accessors)",
                        index.value()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Required extensions that leave the triangles as they are (materials, textures,
/// lights) or that the accessor reader handles (`KHR_mesh_quantization`).
fn extension_keeps_geometry(name: &str) -> bool {
    [
        "KHR_materials_",
        "KHR_texture_",
        "EXT_texture_",
        "MSFT_texture_",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || ["KHR_lights_punctual", "KHR_mesh_quantization"].contains(&name)
}

/// Fails on a required extension that changes geometry (such as Draco compression
/// or GPU instancing); the others are accepted and taken off the list, since `gltf`
/// would otherwise reject those it was not built to parse.
fn accept_required_extensions(root: &mut gltf::json::Root) -> std::result::Result<(), String> {
    if let Some(name) = root
        .extensions_required
        .iter()
        .find(|name| !extension_keeps_geometry(name))
    {
        return Err(format!(
            "the file requires the glTF extension {name}, which is not supported"
        ));
    }
    root.extensions_required.clear();
    Ok(())
}

/// A one-line description of a JSON document that is not glTF 2.0, saying so when
/// it declares another glTF version.
fn describe_json_error(json: &[u8], error: gltf::json::Error) -> String {
    let version = gltf::json::deserialize::from_slice::<gltf::json::Value>(json)
        .ok()
        .and_then(|value| value.pointer("/asset/version")?.as_str().map(str::to_owned));
    match version {
        Some(version) if !version.starts_with("2.") => {
            format!("glTF version {version}; only glTF 2.0 is supported")
        }
        _ => format!("invalid glTF JSON: {error}"),
    }
}

/// A one-line description of a `gltf` parse or validation error.
fn describe_gltf_error(error: gltf::Error) -> String {
    match error {
        gltf::Error::Validation(errors) => {
            let more = match errors.len() {
                0 | 1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            match errors.first() {
                Some((path, problem)) => format!("invalid glTF: {path}: {problem}{more}"),
                None => "invalid glTF".to_owned(),
            }
        }
        other => format!("invalid glTF: {other}"),
    }
}
