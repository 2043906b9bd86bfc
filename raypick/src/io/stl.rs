//! STL meshes, ASCII and binary.
//!
//! A file is binary when its size is exactly `84 + 50 n` bytes, `n` being the
//! triangle count at byte 80, even if its 80-byte header starts with `solid` (many
//! exporters write that). Otherwise a file starting with `solid` is ASCII, and any
//! other file is binary (trailing bytes after the `n` records are ignored).
//!
//! STL has no shared vertices: triangle `k` uses vertices `3k`, `3k + 1`, `3k + 2`.
//! ASCII facets with more than three vertices are fan-triangulated. Facet normals and
//! the attribute bytes of binary records are ignored.

use std::path::Path;

use super::errors::format_error;
use super::loaded_mesh::LoadedMesh;
use super::text::{parse_f64, quote, tokens};
use crate::error::Result;

/// Size of the binary header plus the triangle count.
const BINARY_HEADER: usize = 84;
/// Size of one binary triangle record: normal, three vertices, attribute bytes.
const BINARY_RECORD: usize = 50;

/// Reads the STL file `path` whose bytes are `data`.
pub(crate) fn read_stl(path: &Path, data: &[u8]) -> Result<LoadedMesh> {
    let declared = declared_triangles(data);
    let binary_size = declared.map(|n| BINARY_HEADER as u64 + BINARY_RECORD as u64 * n as u64);
    let looks_ascii = data.trim_ascii_start().starts_with(b"solid");
    if looks_ascii && binary_size != Some(data.len() as u64) {
        return read_ascii(data).map_err(|message| {
            // Mention the binary reading only when the count bytes are not text.
            let count_bytes = data.get(80..BINARY_HEADER).unwrap_or_default();
            let binary_like = count_bytes
                .iter()
                .any(|b| !b.is_ascii_graphic() && !b.is_ascii_whitespace());
            let as_binary = match (declared, binary_size) {
                (Some(n), Some(size)) if binary_like => format!(
                    "; nor binary STL: its header declares {n} triangles ({size} bytes), \
                     the file has {} bytes",
                    data.len()
                ),
                _ => String::new(),
            };
            format_error(path, format!("not valid ASCII STL: {message}{as_binary}"))
        });
    }
    let (Some(n), Some(size)) = (declared, binary_size) else {
        return Err(format_error(
            path,
            format!(
                "not STL: {} bytes, too short for a binary STL header ({BINARY_HEADER} bytes), \
                 and it does not start with 'solid'",
                data.len()
            ),
        ));
    };
    if size > data.len() as u64 {
        return Err(format_error(
            path,
            format!(
                "truncated binary STL: the header declares {n} triangles ({size} bytes), \
                 the file has {} bytes",
                data.len()
            ),
        ));
    }
    if 3 * n as u64 > u32::MAX as u64 {
        return Err(format_error(
            path,
            format!("{n} triangles: more vertices than 32-bit indices can address"),
        ));
    }
    Ok(read_binary(data, n as usize))
}

/// The triangle count of the binary header, if the file is long enough to have one.
fn declared_triangles(data: &[u8]) -> Option<u32> {
    let bytes = data.get(80..BINARY_HEADER)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads `n` binary records; the caller has checked that they are all there.
fn read_binary(data: &[u8], n: usize) -> LoadedMesh {
    let mut mesh = LoadedMesh {
        positions: Vec::with_capacity(3 * n),
        indices: Vec::with_capacity(n),
    };
    let records = data[BINARY_HEADER..].chunks_exact(BINARY_RECORD).take(n);
    for (k, record) in records.enumerate() {
        // Bytes 0..12 hold the normal, 12..48 the vertices, 48..50 the attributes.
        for vertex in record[12..48].chunks_exact(12) {
            let coordinate = |i: usize| {
                let b = &vertex[4 * i..4 * i + 4];
                f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64
            };
            mesh.positions
                .push([coordinate(0), coordinate(1), coordinate(2)]);
        }
        let first = 3 * k as u32;
        mesh.indices.push([first, first + 1, first + 2]);
    }
    mesh
}

/// Reads ASCII STL; the error is the message without the file name.
fn read_ascii(data: &[u8]) -> std::result::Result<LoadedMesh, String> {
    let mut mesh = LoadedMesh::default();
    // Indices of the vertices of the open `outer loop`, if one is open.
    let mut open_loop: Option<Vec<u32>> = None;
    // Whether a `solid` is open (its `endsolid` not seen yet).
    let mut open_solid = false;
    let mut line_number = 0;
    for line in data.split(|&b| b == b'\n') {
        line_number += 1;
        let at = |message: String| format!("line {line_number}: {message}");
        let mut tokens = tokens(line).map(|(_, token)| token);
        let Some(keyword) = tokens.next() else {
            continue;
        };
        match (keyword, open_loop.as_mut()) {
            (b"vertex", Some(corners)) => {
                let mut coordinate = || {
                    let token = tokens.next().ok_or_else(|| {
                        at("a vertex needs three numbers: vertex x y z".to_owned())
                    })?;
                    parse_f64(token).map_err(at)
                };
                let position = [coordinate()?, coordinate()?, coordinate()?];
                let index = u32::try_from(mesh.positions.len())
                    .map_err(|_| at("more vertices than 32-bit indices can address".into()))?;
                mesh.positions.push(position);
                corners.push(index);
            }
            (b"endloop", Some(corners)) => {
                if corners.len() < 3 {
                    return Err(at(format!(
                        "a facet needs at least 3 vertices, this one has {}",
                        corners.len()
                    )));
                }
                let corners = std::mem::take(corners);
                mesh.push_fan(&corners);
                open_loop = None;
            }
            (b"outer", None) => open_loop = Some(Vec::new()),
            (b"solid", None) => open_solid = true,
            (b"endsolid", None) => open_solid = false,
            (b"facet" | b"endfacet", None) => {}
            (other, _) => {
                let context = if open_loop.is_some() {
                    "inside 'outer loop'"
                } else {
                    "outside 'outer loop'"
                };
                return Err(at(format!("unexpected '{}' {context}", quote(other))));
            }
        }
    }
    if open_loop.is_some() {
        return Err(format!(
            "the file ends inside a facet (line {line_number}): truncated?"
        ));
    }
    if open_solid {
        return Err(format!(
            "the file ends without 'endsolid' (line {line_number}): truncated?"
        ));
    }
    Ok(mesh)
}
