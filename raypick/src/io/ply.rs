//! PLY meshes: ASCII, binary little endian and binary big endian.
//!
//! Positions are the `x`, `y`, `z` properties of the `vertex` element, read at the
//! precision the file declares (`float` or `double`, integers too). Triangles come
//! from the `face` element's `vertex_indices` (or `vertex_index`) list, in file order,
//! each polygon fan-triangulated from its first corner; faces with fewer than three
//! corners give none. Every other element and property is read past and ignored.

use std::path::Path;

use super::errors::format_error;
use super::loaded_mesh::LoadedMesh;
use super::ply_header::{Element, Encoding, Header, Kind, Scalar, parse_header};
use super::text::{parse_f64, tokens};
use crate::error::Result;

/// Reads the PLY file `path` whose bytes are `data`.
pub(crate) fn read_ply(path: &Path, data: &[u8]) -> Result<LoadedMesh> {
    let header = parse_header(data).map_err(|message| format_error(path, message))?;
    let mesh = read_body(&header, &data[header.body_start..])
        .map_err(|message| format_error(path, message))?;
    mesh.check_indices(path)?;
    Ok(mesh)
}

/// Reads every element of the body, keeping vertex positions and face polygons.
fn read_body(header: &Header, body: &[u8]) -> std::result::Result<LoadedMesh, String> {
    let mut values = Values::new(header.encoding, body);
    let mut mesh = LoadedMesh::default();
    for element in &header.elements {
        let role = Role::of(element)?;
        if element.properties.is_empty() {
            // Rows without properties take no bytes: nothing to read, however many.
            continue;
        }
        // Reserve no more rows than the bytes left could hold.
        let fit = values.remaining() / element.min_row_bytes(header.encoding);
        let rows = usize::try_from(element.count).unwrap_or(usize::MAX);
        match role {
            Role::Vertices { .. } => mesh.positions.reserve(rows.min(fit)),
            Role::Faces { .. } => mesh.indices.reserve(rows.min(fit)),
            Role::Other => {}
        }
        let mut corners = Vec::new();
        for row in 0..element.count {
            let at = |message: String| {
                format!(
                    "element '{}' row {row} (of {}): {message}",
                    element.name, element.count
                )
            };
            let mut position = [0.0; 3];
            for (p, property) in element.properties.iter().enumerate() {
                match property.kind {
                    Kind::Scalar(scalar) => {
                        let value = values.next(scalar).map_err(at)?;
                        if let Role::Vertices { xyz } = role
                            && let Some(axis) = xyz.iter().position(|&q| q == p)
                        {
                            position[axis] = value;
                        }
                    }
                    Kind::List { count, item } => {
                        let n = values.next_count(count).map_err(at)?;
                        let keep = matches!(role, Role::Faces { list } if list == p);
                        corners.clear();
                        for _ in 0..n {
                            let value = values.next(item).map_err(at)?;
                            if keep {
                                corners.push(vertex_index(value).map_err(at)?);
                            }
                        }
                        if keep {
                            mesh.push_fan(&corners);
                        }
                    }
                }
            }
            if let Role::Vertices { .. } = role {
                mesh.positions.push(position);
            }
        }
    }
    Ok(mesh)
}

/// What an element is to the mesh.
#[derive(Clone, Copy)]
enum Role {
    /// The `vertex` element with the positions of its `x`, `y`, `z` properties.
    Vertices { xyz: [usize; 3] },
    /// The `face` element with the position of its vertex index list.
    Faces { list: usize },
    /// Anything else.
    Other,
}

impl Role {
    fn of(element: &Element) -> std::result::Result<Self, String> {
        match element.name.as_str() {
            "vertex" => {
                let axis = |name: &str| {
                    element
                        .property(name)
                        .filter(|&p| matches!(element.properties[p].kind, Kind::Scalar(_)))
                        .ok_or_else(|| {
                            format!("the 'vertex' element has no scalar '{name}' property")
                        })
                };
                Ok(Self::Vertices {
                    xyz: [axis("x")?, axis("y")?, axis("z")?],
                })
            }
            "face" => {
                let list = element
                    .property("vertex_indices")
                    .or_else(|| element.property("vertex_index"))
                    .filter(|&p| matches!(element.properties[p].kind, Kind::List { .. }))
                    .ok_or("the 'face' element has no 'vertex_indices' list property")?;
                Ok(Self::Faces { list })
            }
            _ => Ok(Self::Other),
        }
    }
}

/// A vertex index read as a number: a whole number from 0 to `u32::MAX`.
fn vertex_index(value: f64) -> std::result::Result<u32, String> {
    if value.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&value) {
        Ok(value as u32)
    } else {
        Err(format!("{value} is not a vertex index"))
    }
}

/// The values of a body, one after the other.
struct Values<'a> {
    encoding: Encoding,
    body: &'a [u8],
    /// Bytes of `body` consumed.
    offset: usize,
}

impl<'a> Values<'a> {
    fn new(encoding: Encoding, body: &'a [u8]) -> Self {
        Self {
            encoding,
            body,
            offset: 0,
        }
    }

    /// Bytes not read yet.
    fn remaining(&self) -> usize {
        self.body.len() - self.offset
    }

    /// The next value, of type `scalar`, as an f64 (exact for every PLY type).
    fn next(&mut self, scalar: Scalar) -> std::result::Result<f64, String> {
        match self.encoding {
            Encoding::Ascii => self.next_text(),
            Encoding::BinaryLittleEndian => self.next_binary(scalar, false),
            Encoding::BinaryBigEndian => self.next_binary(scalar, true),
        }
    }

    /// The next value as a list length.
    fn next_count(&mut self, scalar: Scalar) -> std::result::Result<u64, String> {
        let value = self.next(scalar)?;
        if value.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&value) {
            Ok(value as u64)
        } else {
            Err(format!("{value} is not a list length"))
        }
    }

    fn next_text(&mut self) -> std::result::Result<f64, String> {
        let rest = &self.body[self.offset..];
        let Some((end, token)) = tokens(rest).next() else {
            return Err("unexpected end of file".to_owned());
        };
        self.offset += end;
        parse_f64(token)
    }

    fn next_binary(&mut self, scalar: Scalar, big: bool) -> std::result::Result<f64, String> {
        let size = scalar.size();
        let Some(bytes) = self.body.get(self.offset..self.offset + size) else {
            return Err("unexpected end of file".to_owned());
        };
        self.offset += size;
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(bytes);
        if big {
            raw[..size].reverse();
        }
        let [b0, b1, b2, b3, ..] = raw;
        Ok(match scalar {
            Scalar::I8 => i8::from_le_bytes([b0]) as f64,
            Scalar::U8 => b0 as f64,
            Scalar::I16 => i16::from_le_bytes([b0, b1]) as f64,
            Scalar::U16 => u16::from_le_bytes([b0, b1]) as f64,
            Scalar::I32 => i32::from_le_bytes([b0, b1, b2, b3]) as f64,
            Scalar::U32 => u32::from_le_bytes([b0, b1, b2, b3]) as f64,
            Scalar::F32 => f32::from_le_bytes([b0, b1, b2, b3]) as f64,
            Scalar::F64 => f64::from_le_bytes(raw),
        })
    }
}
