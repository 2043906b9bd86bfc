//! NumPy `.npy` files: header reading (parsed by `npyz` after size checks) and writing.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use npyz::{DType, Endianness, NpyHeader, Order, TypeChar, TypeStr};

use super::binary::ByteOrder;
use super::errors::{file_error, format_error};
use crate::error::Result;

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Largest header accepted. NumPy itself refuses headers over 10,000 bytes by default;
/// ray and hit headers are under 200.
const MAX_HEADER_BYTES: usize = 1 << 16;

/// Deepest bracket nesting accepted in the header (the header parser recurses).
const MAX_HEADER_NESTING: usize = 16;

/// An opened `.npy` file whose header has been read and checked; `reader` is at the
/// first data byte.
pub(crate) struct NpyFile<R = BufReader<File>> {
    /// Element type.
    pub dtype: DType,
    /// Array shape.
    pub shape: Vec<u64>,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// Number of bytes after the header.
    pub data_bytes: u64,
    /// The file, positioned at the start of the data.
    pub reader: R,
}

impl NpyFile {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| file_error(path, e))?;
        let file_bytes = file.metadata().map_err(|e| file_error(path, e))?.len();
        NpyFile::from_reader(path, BufReader::new(file), file_bytes)
    }
}

impl<R: Read> NpyFile<R> {
    /// Reads the header of the `file_bytes` long `.npy` content of `reader`; `path`
    /// names it in errors.
    pub fn from_reader(path: &Path, mut reader: R, file_bytes: u64) -> Result<Self> {
        let bad = |message: String| format_error(path, message);
        let read_err = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof => bad("file ends inside the .npy header".to_owned()),
            _ => file_error(path, e),
        };

        let mut preamble = vec![0u8; 8];
        reader
            .read_exact(&mut preamble)
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => bad("not a NumPy .npy file (too short)".to_owned()),
                _ => file_error(path, e),
            })?;
        if !preamble.starts_with(MAGIC) {
            return Err(bad("not a NumPy .npy file (bad magic bytes)".to_owned()));
        }
        let (major, minor) = (preamble[6], preamble[7]);
        let header_bytes = match major {
            1 => {
                let mut len = [0u8; 2];
                reader.read_exact(&mut len).map_err(read_err)?;
                preamble.extend_from_slice(&len);
                u64::from(u16::from_le_bytes(len))
            }
            2 | 3 => {
                let mut len = [0u8; 4];
                reader.read_exact(&mut len).map_err(read_err)?;
                preamble.extend_from_slice(&len);
                u64::from(u32::from_le_bytes(len))
            }
            _ => {
                return Err(bad(format!(
                    "unsupported .npy format version {major}.{minor}"
                )));
            }
        };
        let header_end = preamble.len() as u64 + header_bytes;
        if header_bytes > MAX_HEADER_BYTES as u64 {
            return Err(bad(format!(
                "the .npy header claims {header_bytes} bytes; at most {MAX_HEADER_BYTES} are accepted"
            )));
        }
        if header_end > file_bytes {
            return Err(bad(format!(
                "the .npy header claims {header_bytes} bytes but the file has only {file_bytes} bytes"
            )));
        }
        let mut text = vec![0u8; header_bytes as usize];
        reader.read_exact(&mut text).map_err(read_err)?;
        if nesting_depth(&text) > MAX_HEADER_NESTING {
            return Err(bad("the .npy header is nested too deeply".to_owned()));
        }
        if shape_overflows(&text) {
            return Err(bad(
                "the .npy header declares an impossibly large shape".to_owned()
            ));
        }
        preamble.extend_from_slice(&text);

        // npyz multiplies the dimensions without overflow checks (a panic in debug
        // builds); `shape_overflows` rules that out, and this is the safety net.
        let parsed = std::panic::catch_unwind(|| NpyHeader::from_reader(&preamble[..]))
            .map_err(|_| bad("invalid .npy header".to_owned()))?;
        let header = parsed.map_err(|e| bad(format!("invalid .npy header: {e}")))?;
        if header.uses_pickled_array() {
            return Err(bad(
                "the .npy file holds Python objects (pickled data), not numbers".to_owned(),
            ));
        }
        Ok(Self {
            dtype: header.dtype(),
            shape: header.shape().to_vec(),
            fortran_order: header.order() == Order::Fortran,
            data_bytes: file_bytes - header_end,
            reader,
        })
    }

    /// Checks that the data after the header is exactly `expected` bytes long.
    pub fn check_data_size(&self, path: &Path, expected: Option<u64>, what: &str) -> Result<()> {
        let have = self.data_bytes;
        match expected {
            Some(expected) if expected == have => Ok(()),
            Some(expected) if expected > have => Err(format_error(
                path,
                format!(
                    "truncated .npy file: {what} need {expected} bytes of data, the file has {have}"
                ),
            )),
            Some(expected) => Err(format_error(
                path,
                format!(
                    "{} unexpected bytes after the data of {what}",
                    have - expected
                ),
            )),
            None => Err(format_error(path, format!("{what} is too large"))),
        }
    }
}

/// How deeply brackets nest in `text`.
fn nesting_depth(text: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for &byte in text {
        match byte {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether the product of the non-zero dimensions of the `'shape'` in the header text
/// overflows `u64`. Only the plain form `'shape': (a, b, ...)` is inspected; anything
/// else is left to the header parser to judge.
fn shape_overflows(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    let Some(after_key) = ["'shape'", "\"shape\""]
        .iter()
        .find_map(|key| text.find(key).and_then(|at| text.get(at + key.len()..)))
    else {
        return false;
    };
    let Some(open) = after_key.find(['(', '[']) else {
        return false;
    };
    let Some(dims) = after_key.get(open + 1..).and_then(|rest| {
        let close = rest.find([')', ']'])?;
        rest.get(..close)
    }) else {
        return false;
    };
    let mut product = 1u64;
    for dim in dims
        .split(',')
        .filter_map(|dim| dim.trim().parse::<u64>().ok())
    {
        if dim != 0 {
            match product.checked_mul(dim) {
                Some(p) => product = p,
                None => return true,
            }
        }
    }
    false
}

/// The byte order of a numeric type string such as `<f4` (`None` for `|`, which is
/// only meaningful for single-byte types).
pub(crate) fn byte_order(ty: &TypeStr) -> Option<ByteOrder> {
    match ty.endianness() {
        Endianness::Little => Some(ByteOrder::Little),
        Endianness::Big => Some(ByteOrder::Big),
        Endianness::Irrelevant => None,
    }
}

/// Whether `ty` is a number of kind `kind` and `bytes` bytes with a known byte order.
pub(crate) fn is_number(ty: &TypeStr, kind: TypeChar, bytes: u64) -> bool {
    ty.type_char() == kind && ty.size_field() == bytes && byte_order(ty).is_some()
}

/// The shape as NumPy prints it: `(3,)`, `(3, 8)`.
pub(crate) fn shape_text(shape: &[u64]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Writes a version 1.0 `.npy` header for a C-order array of `descr` (a Python
/// literal such as `'<f4'`) and `shape`, padded so the data starts at a multiple of 64.
pub(crate) fn write_header(writer: &mut impl Write, descr: &str, shape: &[u64]) -> io::Result<()> {
    let mut dict = format!(
        "{{'descr': {descr}, 'fortran_order': False, 'shape': {}, }}",
        shape_text(shape)
    );
    let preamble = MAGIC.len() + 2 + 2;
    let unpadded = preamble + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let len = u16::try_from(dict.len()).map_err(io::Error::other)?;
    writer.write_all(MAGIC)?;
    writer.write_all(&[1, 0])?;
    writer.write_all(&len.to_le_bytes())?;
    writer.write_all(dict.as_bytes())
}
