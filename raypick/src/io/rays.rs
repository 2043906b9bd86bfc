//! Ray files: `.rays` (raw little-endian f32), `.npy` (float32/float64) and `.csv`.

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::Path;
use std::str::FromStr;

use glam::Vec3;
use npyz::{DType, TypeChar};

use super::atomic_write::write_atomic;
use super::binary::{ByteOrder, f32_at, f64_at, open_sized, read_records, remaining_bytes};
use super::csv;
use super::errors::{file_error, format_error, reserve_or_fail};
use super::extension::{Encoding, encoding_of};
use super::npy::{self, NpyFile};
use crate::error::Result;
use crate::types::Ray;
use crate::world::Ray64;

/// Numbers per ray: `ox oy oz tmin dx dy dz tmax`.
const RAY_VALUES: usize = 8;
/// Bytes per ray in a `.rays` file.
const RAY_BYTES: usize = 32;
/// Column names written in the header of a ray `.csv` file.
const CSV_HEADER: &str = "ox,oy,oz,tmin,dx,dy,dz,tmax";

/// The precision a ray file stores its numbers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// 32-bit floats (`.rays`, float32 `.npy`).
    F32,
    /// 64-bit floats (float64 `.npy`) or decimal text (`.csv`), which
    /// [`read_rays_f64`] reads at full `f64` precision.
    F64,
}

/// Reads a ray file (`.rays`, `.npy` or `.csv`, chosen by extension).
///
/// Float64 `.npy` values and `.csv` text are rounded to the nearest `f32`. Use
/// [`read_rays_f64`] to keep double precision.
pub fn read_rays(path: impl AsRef<Path>) -> Result<Vec<Ray>> {
    let rows = read_rows::<f32>(path.as_ref())?;
    Ok(rows.into_iter().map(ray_from_row).collect())
}

/// Reads a ray file (`.rays`, `.npy` or `.csv`, chosen by extension) as rows of 8
/// `f64`: `ox oy oz tmin dx dy dz tmax`.
///
/// Float64 `.npy` files and `.csv` text keep their full precision (useful for rays far
/// from the origin); float32 sources are widened exactly.
pub fn read_rays_f64(path: impl AsRef<Path>) -> Result<Vec<[f64; 8]>> {
    read_rows::<f64>(path.as_ref())
}

/// Reads a ray file (`.rays`, `.npy` or `.csv`, chosen by extension) as f64 rays
/// ([`Ray64`]), keeping float64 `.npy` and `.csv` values exact (see
/// [`read_rays_f64`]). Trace them with [`crate::Picker::trace`].
pub fn read_rays64(path: impl AsRef<Path>) -> Result<Vec<Ray64>> {
    let rows = read_rows::<f64>(path.as_ref())?;
    Ok(rows.into_iter().map(Ray64::from_row).collect())
}

/// Like [`read_rays`], for a ray file's content already in memory: `name` (a file
/// name or path, never opened) picks the format by its extension and names the data
/// in errors.
pub fn read_rays_from_bytes(bytes: &[u8], name: impl AsRef<Path>) -> Result<Vec<Ray>> {
    let name = name.as_ref();
    let rows = read_rows_from::<f32>(name, ray_encoding(name)?, bytes, bytes.len() as u64)?;
    Ok(rows.into_iter().map(ray_from_row).collect())
}

/// The precision the ray file at `path` stores its numbers in.
///
/// Only the header of a `.npy` file is read; other formats are decided by extension.
pub fn ray_file_precision(path: impl AsRef<Path>) -> Result<Precision> {
    let path = path.as_ref();
    match ray_encoding(path)? {
        Encoding::Binary => Ok(Precision::F32),
        Encoding::Csv => Ok(Precision::F64),
        Encoding::Npy => {
            let npy = NpyFile::open(path)?;
            match npy_float(path, &npy)?.bytes {
                4 => Ok(Precision::F32),
                _ => Ok(Precision::F64),
            }
        }
    }
}

/// Writes rays to a `.rays`, `.npy` (float32, shape `(N, 8)`) or `.csv` file, chosen
/// by extension.
///
/// The file is replaced all at once (see [`super::write_atomic`]); on error nothing is
/// left behind.
pub fn write_rays(path: impl AsRef<Path>, rays: &[Ray]) -> Result<()> {
    let path = path.as_ref();
    match ray_encoding(path)? {
        Encoding::Binary => write_atomic(path, |w| write_binary(w, rays)),
        Encoding::Npy => write_atomic(path, |w| {
            npy::write_header(w, "'<f4'", &[rays.len() as u64, RAY_VALUES as u64])?;
            write_binary(w, rays)
        }),
        Encoding::Csv => write_atomic(path, |w| write_csv(w, rays)),
    }
}

/// The 8 numbers of a ray, in file order.
fn ray_to_row(ray: &Ray) -> [f32; 8] {
    let (o, d) = (ray.origin, ray.dir);
    [o.x, o.y, o.z, ray.tmin, d.x, d.y, d.z, ray.tmax]
}

/// A ray from its 8 numbers in file order.
fn ray_from_row([ox, oy, oz, tmin, dx, dy, dz, tmax]: [f32; 8]) -> Ray {
    Ray::with_interval(Vec3::new(ox, oy, oz), Vec3::new(dx, dy, dz), tmin, tmax)
}

fn ray_encoding(path: &Path) -> Result<Encoding> {
    encoding_of(path, "ray", "rays")
}

/// A float type ray values can be read as.
trait Scalar: Copy + Default + FromStr {
    fn from_f32(x: f32) -> Self;
    fn from_f64(x: f64) -> Self;
}

impl Scalar for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}

impl Scalar for f64 {
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    fn from_f64(x: f64) -> Self {
        x
    }
}

fn read_rows<T: Scalar>(path: &Path) -> Result<Vec<[T; 8]>> {
    let encoding = ray_encoding(path)?;
    let (reader, bytes) = open_sized(path)?;
    read_rows_from(path, encoding, reader, bytes)
}

/// Reads the `bytes` long content of a ray file from `reader`; `path` names it.
fn read_rows_from<T: Scalar>(
    path: &Path,
    encoding: Encoding,
    reader: impl BufRead,
    bytes: u64,
) -> Result<Vec<[T; 8]>> {
    match encoding {
        Encoding::Binary => read_binary(path, reader, bytes),
        Encoding::Npy => read_npy(path, NpyFile::from_reader(path, reader, bytes)?),
        Encoding::Csv => read_csv(path, reader),
    }
}

fn read_binary<T: Scalar>(path: &Path, mut reader: impl Read, bytes: u64) -> Result<Vec<[T; 8]>> {
    let fail = |e| file_error(path, e);
    if !bytes.is_multiple_of(RAY_BYTES as u64) {
        return Err(format_error(
            path,
            format!(
                "{bytes} bytes is not a whole number of rays \
                 (a .rays file holds 32 bytes per ray: 8 little-endian f32)"
            ),
        ));
    }
    let count = usize::try_from(bytes / RAY_BYTES as u64)
        .map_err(|_| format_error(path, "too many rays for this machine"))?;
    let mut rows = Vec::new();
    reserve_or_fail(&mut rows, count, path)?;
    read_records(&mut reader, count, RAY_BYTES, |record| {
        rows.push(std::array::from_fn(|i| {
            T::from_f32(f32_at(record, 4 * i, ByteOrder::Little))
        }));
    })
    .map_err(fail)?;
    if remaining_bytes(&mut reader).map_err(fail)? != 0 {
        return Err(format_error(path, "the file grew while it was read"));
    }
    Ok(rows)
}

/// Element type of a ray `.npy` file.
struct NpyFloat {
    bytes: usize,
    order: ByteOrder,
}

fn npy_float<R>(path: &Path, npy: &NpyFile<R>) -> Result<NpyFloat> {
    if let DType::Plain(ty) = &npy.dtype {
        for bytes in [4, 8] {
            let float = npy::is_number(ty, TypeChar::Float, bytes as u64);
            if let (true, Some(order)) = (float, npy::byte_order(ty)) {
                return Ok(NpyFloat { bytes, order });
            }
        }
    }
    Err(format_error(
        path,
        format!(
            "ray .npy files must hold float32 or float64 numbers, this one holds {}",
            npy.dtype.descr()
        ),
    ))
}

fn read_npy<T: Scalar>(path: &Path, mut npy: NpyFile<impl Read>) -> Result<Vec<[T; 8]>> {
    let float = npy_float(path, &npy)?;
    let count = match npy.shape[..] {
        [n, cols] if cols == RAY_VALUES as u64 => n,
        _ => {
            return Err(format_error(
                path,
                format!(
                    "ray .npy files must have shape (N, 8), this one has shape {}",
                    npy::shape_text(&npy.shape)
                ),
            ));
        }
    };
    let row_bytes = (RAY_VALUES * float.bytes) as u64;
    npy.check_data_size(path, count.checked_mul(row_bytes), &format!("{count} rays"))?;
    let count =
        usize::try_from(count).map_err(|_| format_error(path, "too many rays for this machine"))?;

    let value = |record: &[u8], offset: usize| match float.bytes {
        4 => T::from_f32(f32_at(record, offset, float.order)),
        _ => T::from_f64(f64_at(record, offset, float.order)),
    };
    let fail = |e| file_error(path, e);
    let mut rows = Vec::new();
    reserve_or_fail(&mut rows, count, path)?;
    if npy.fortran_order {
        // Column-major: all `ox`, then all `oy`, ...
        let values = count
            .checked_mul(RAY_VALUES)
            .ok_or_else(|| format_error(path, "too many rays for this machine"))?;
        let mut flat = Vec::new();
        reserve_or_fail(&mut flat, values, path)?;
        read_records(&mut npy.reader, values, float.bytes, |record| {
            flat.push(value(record, 0));
        })
        .map_err(fail)?;
        rows.extend((0..count).map(|i| {
            std::array::from_fn(|j| flat.get(j * count + i).copied().unwrap_or_default())
        }));
    } else {
        read_records(&mut npy.reader, count, RAY_VALUES * float.bytes, |record| {
            rows.push(std::array::from_fn(|j| value(record, j * float.bytes)));
        })
        .map_err(fail)?;
    }
    Ok(rows)
}

fn read_csv<T: Scalar>(path: &Path, reader: impl BufRead) -> Result<Vec<[T; 8]>> {
    let mut rows = Vec::new();
    csv::read_table::<RAY_VALUES>(path, reader, |row| {
        let mut values = [T::default(); RAY_VALUES];
        for (column, value) in values.iter_mut().enumerate() {
            *value = row.parse(column, "a number")?;
        }
        rows.push(values);
        Ok(())
    })?;
    Ok(rows)
}

fn write_binary(writer: &mut BufWriter<File>, rays: &[Ray]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        return writer.write_all(bytemuck::cast_slice(rays));
    }
    for value in rays.iter().flat_map(ray_to_row) {
        writer.write_all(&value.to_le_bytes())?;
    }
    Ok(())
}

fn write_csv(writer: &mut BufWriter<File>, rays: &[Ray]) -> io::Result<()> {
    writeln!(writer, "{CSV_HEADER}")?;
    for ray in rays {
        // `{}` prints the shortest text that parses back to the same f32, and `inf`.
        let [a, b, c, d, e, f, g, h] = ray_to_row(ray);
        writeln!(writer, "{a},{b},{c},{d},{e},{f},{g},{h}")?;
    }
    Ok(())
}
