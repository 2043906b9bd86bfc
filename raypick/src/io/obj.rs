//! Wavefront OBJ meshes, parsed by `tobj`.
//!
//! Contract (`docs/contracts.md` §2): all triangles of the file in file order, every
//! object and group concatenated, polygons fan-triangulated from their first vertex
//! (`a b c d` gives `a b c`, `a c d`). Relative (negative) indices are supported; a
//! face may use only vertices defined above it.
//!
//! Before `tobj` sees the text, each line passes through [`ObjLines`], which keeps only
//! what a triangle mesh needs (`v`, `f`, and the `o`/`g` boundaries) and checks face
//! indices, so that:
//! - polylines (`l`) never become triangles (`tobj` reads `l a b c` as a face);
//! - texture coordinates, normals and materials are neither stored nor looked up (no
//!   `.mtl` file is opened);
//! - a line that starts with neither a letter nor `#` (binary data, for example) is
//!   an error, not a silently ignored statement;
//! - errors name the line they come from.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::errors::{file_error, format_error};
use super::loaded_mesh::LoadedMesh;
use super::text::{quote, tokens};
use crate::error::{Error, Result};
use crate::mesh::Mesh;

/// Loads a Wavefront OBJ file as one triangle mesh.
///
/// Triangle ids follow the file: faces in order, polygons fan-triangulated, all
/// objects and groups concatenated. Points, lines, normals, texture coordinates and
/// materials are ignored. A face may use only vertices defined above it (negative
/// indices count back from the last one). Errors name the file and, for bad content,
/// the line.
pub fn load_obj(path: impl AsRef<Path>) -> Result<Mesh> {
    let path = path.as_ref();
    read_obj(path)?
        .into_mesh()
        .map_err(|e| format_error(path, e.to_string()))
}

/// Reads the OBJ file `path` at f64 precision (see [`load_obj`]).
pub(crate) fn read_obj(path: &Path) -> Result<LoadedMesh> {
    let file = File::open(path).map_err(|e| file_error(path, e))?;
    read_obj_from(path, BufReader::new(file))
}

/// Reads OBJ text from `reader` at f64 precision; `path` names it in errors.
pub(crate) fn read_obj_from(path: &Path, reader: impl BufRead) -> Result<LoadedMesh> {
    let mut lines = ObjLines::new(reader);
    // `..Default::default()` covers fields that exist only with some tobj features.
    #[allow(clippy::needless_update)]
    let options = tobj::LoadOptions {
        single_index: false,
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    let models = match tobj::load_obj_buf(&mut lines, &options, |_| Ok(Default::default())) {
        Ok((models, _materials)) => models,
        Err(e) => return Err(lines.into_error(path, e)),
    };

    let mut mesh = LoadedMesh::default();
    for model in models {
        let base = mesh.next_index(path)?;
        // Positions are f64 (tobj's `use_f64` feature); `f64::from` also accepts f32.
        #[allow(clippy::useless_conversion)]
        mesh.positions.extend(
            model
                .mesh
                .positions
                .chunks_exact(3)
                .map(|p| [f64::from(p[0]), f64::from(p[1]), f64::from(p[2])]),
        );
        for tri in model.mesh.indices.chunks_exact(3) {
            let shifted = [tri[0], tri[1], tri[2]].map(|i| i.checked_add(base));
            let [Some(a), Some(b), Some(c)] = shifted else {
                return Err(format_error(
                    path,
                    "more vertices than 32-bit indices can address",
                ));
            };
            mesh.indices.push([a, b, c]);
        }
    }
    mesh.check_indices(path)?;
    Ok(mesh)
}

/// Why [`ObjLines`] stopped the parse.
enum Stop {
    /// Reading the file failed.
    Io(io::Error),
    /// Bad content at a line.
    Bad { line: usize, message: String },
}

/// A line filter in front of `tobj` (see the module docs). Every input line gives one
/// output line, so line numbers are kept.
struct ObjLines<R> {
    inner: R,
    /// The current (filtered) line and how much of it was consumed.
    line: Vec<u8>,
    consumed: usize,
    /// 1-based number of the current line.
    line_number: usize,
    /// `v` lines seen so far.
    vertices: u64,
    stop: Option<Stop>,
}

impl<R: BufRead> ObjLines<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            line: Vec::new(),
            consumed: 0,
            line_number: 0,
            vertices: 0,
            stop: None,
        }
    }

    /// Turns a `tobj` error into ours, naming `path` and the line.
    fn into_error(self, path: &Path, error: tobj::LoadError) -> Error {
        use tobj::LoadError as E;
        let line = self.line_number;
        match self.stop {
            Some(Stop::Io(e)) => return file_error(path, e),
            Some(Stop::Bad { line, message }) => {
                return format_error(path, format!("line {line}: {message}"));
            }
            None => {}
        }
        let message = match error {
            E::ReadError => "not valid UTF-8 text".to_owned(),
            E::PositionParseError => "a vertex needs three numbers: v x y z [w]".to_owned(),
            E::ScalingByZeroError => "a vertex has w = 0".to_owned(),
            E::ColorParseError => {
                "a vertex needs 3, 4 or 6 numbers: v x y z [w] or v x y z r g b".to_owned()
            }
            E::FaceParseError => {
                "a face needs vertex indices such as 'f 1 2 3' or 'f 1/1/1 2/2/2 3/3/3'".to_owned()
            }
            other => format!("invalid OBJ ({other})"),
        };
        format_error(path, format!("line {line}: {message}"))
    }

    /// Reads and filters the next line into `self.line`; `false` at the end.
    fn next_line(&mut self) -> io::Result<bool> {
        self.line.clear();
        self.consumed = 0;
        match self.inner.read_until(b'\n', &mut self.line) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(e) => {
                let kind = e.kind();
                self.stop = Some(Stop::Io(e));
                return Err(io::Error::new(kind, "read failed"));
            }
        }
        self.line_number += 1;
        if let Err(message) = self.filter_line() {
            self.stop = Some(Stop::Bad {
                line: self.line_number,
                message,
            });
            return Err(io::Error::other("bad OBJ line"));
        }
        Ok(true)
    }

    /// Rewrites `self.line` to what `tobj` should see.
    fn filter_line(&mut self) -> std::result::Result<(), String> {
        let keyword = tokens(&self.line).next().map(|(_, token)| token);
        // Every OBJ statement starts with a letter (`v`, `f`, `usemtl`, ...) or `#`.
        if let Some(&first) = keyword.and_then(|k| k.first())
            && !(first.is_ascii_alphabetic() || first == b'#')
        {
            return Err(format!(
                "'{}' is not an OBJ statement",
                quote(keyword.unwrap_or_default())
            ));
        }
        match keyword {
            Some(b"v") => {
                self.vertices += 1;
                // `v x y z r g b`: drop the colour, which tobj would try to index.
                let ends: Vec<usize> = tokens(&self.line)
                    .skip(1)
                    .map(|(end, _)| end)
                    .take(7)
                    .collect();
                if let (6, Some(&z_end)) = (ends.len(), ends.get(2)) {
                    self.line.truncate(z_end);
                    self.line.push(b'\n');
                }
            }
            Some(b"f") => {
                let mut count = 0;
                for (_, corner) in tokens(&self.line).skip(1) {
                    count += 1;
                    self.check_face_index(corner)?;
                }
                if count == 0 {
                    return Err("a face without vertices".to_owned());
                }
            }
            // Object and group names are not needed; only the boundary is kept.
            Some(b"o" | b"g") => self.replace(b"g\n"),
            // Comments, normals, texture coordinates, polylines, materials, ...
            _ => self.replace(b"\n"),
        }
        Ok(())
    }

    fn replace(&mut self, with: &[u8]) {
        self.line.clear();
        self.line.extend_from_slice(with);
    }

    /// Checks the vertex part of a face corner such as `3`, `-1`, `3/1/2` or `3//2`.
    fn check_face_index(&self, corner: &[u8]) -> std::result::Result<(), String> {
        let vertex = corner.split(|&b| b == b'/').next().unwrap_or_default();
        let Some(index) = std::str::from_utf8(vertex)
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
        else {
            return Err(format!(
                "'{}' is not a face vertex index such as 3, -1 or 3/1/2",
                String::from_utf8_lossy(corner)
            ));
        };
        let vertices = self.vertices;
        if index == 0 || index.unsigned_abs() > vertices {
            return Err(format!(
                "face vertex index {index} is out of range: {vertices} vertices are defined \
                 before this line (indices start at 1; negative ones count back from the last)"
            ));
        }
        Ok(())
    }
}

impl<R: BufRead> Read for ObjLines<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for ObjLines<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.consumed >= self.line.len() && !self.next_line()? {
            return Ok(&[]);
        }
        Ok(self.line.get(self.consumed..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.consumed = (self.consumed + amount).min(self.line.len());
    }
}
