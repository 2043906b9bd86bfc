//! Hit files: `.hits` (raw little-endian records), `.npy` (structured array) and `.csv`.

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::Path;

use npyz::{DType, TypeChar};

use super::atomic_write::write_atomic;
use super::binary::{ByteOrder, f32_at, open_sized, read_records, remaining_bytes, u32_at};
use super::csv;
use super::errors::{file_error, format_error, reserve_or_fail};
use super::extension::{Encoding, encoding_of};
use super::npy::{self, NpyFile};
use crate::error::Result;
use crate::types::Hit;

/// Bytes per hit in `.hits` files and `.npy` records.
const HIT_BYTES: usize = 16;
/// The `.npy` dtype of a hit file.
const NPY_DESCR: &str = "[('t', '<f4'), ('u', '<f4'), ('v', '<f4'), ('prim', '<u4')]";
/// Header of a hit `.csv` file.
const CSV_HEADER: &str = "t,u,v,prim";
/// Fields of a hit record: name and type (`f4` or `u4`).
const FIELDS: [(&str, TypeChar); 4] = [
    ("t", TypeChar::Float),
    ("u", TypeChar::Float),
    ("v", TypeChar::Float),
    ("prim", TypeChar::Uint),
];

/// Reads a hit file (`.hits`, `.npy` or `.csv`, chosen by extension).
pub fn read_hits(path: impl AsRef<Path>) -> Result<Vec<Hit>> {
    let path = path.as_ref();
    let encoding = hit_encoding(path)?;
    let (reader, bytes) = open_sized(path)?;
    read_from(path, encoding, reader, bytes)
}

/// Like [`read_hits`], for a hit file's content already in memory: `name` (a file
/// name or path, never opened) picks the format by its extension and names the data
/// in errors.
pub fn read_hits_from_bytes(bytes: &[u8], name: impl AsRef<Path>) -> Result<Vec<Hit>> {
    let name = name.as_ref();
    read_from(name, hit_encoding(name)?, bytes, bytes.len() as u64)
}

/// Reads the `bytes` long content of a hit file from `reader`; `path` names it.
fn read_from(
    path: &Path,
    encoding: Encoding,
    reader: impl BufRead,
    bytes: u64,
) -> Result<Vec<Hit>> {
    match encoding {
        Encoding::Binary => read_binary(path, reader, bytes),
        Encoding::Npy => read_npy(path, NpyFile::from_reader(path, reader, bytes)?),
        Encoding::Csv => read_csv(path, reader),
    }
}

/// Writes hits to a `.hits`, `.npy` or `.csv` file, chosen by extension.
///
/// A miss is written as `t = inf, u = v = 0, prim = 4294967295`. The file is replaced
/// all at once (see [`super::write_atomic`]); on error nothing is left behind.
pub fn write_hits(path: impl AsRef<Path>, hits: &[Hit]) -> Result<()> {
    let path = path.as_ref();
    match hit_encoding(path)? {
        Encoding::Binary => write_atomic(path, |w| write_binary(w, hits)),
        Encoding::Npy => write_atomic(path, |w| {
            npy::write_header(w, NPY_DESCR, &[hits.len() as u64])?;
            write_binary(w, hits)
        }),
        Encoding::Csv => write_atomic(path, |w| write_csv(w, hits)),
    }
}

fn hit_encoding(path: &Path) -> Result<Encoding> {
    encoding_of(path, "hit", "hits")
}

/// Decodes one 16-byte record whose four fields have byte orders `orders`.
fn decode(record: &[u8], orders: [ByteOrder; 4]) -> Hit {
    let [t, u, v, prim] = orders;
    Hit {
        t: f32_at(record, 0, t),
        u: f32_at(record, 4, u),
        v: f32_at(record, 8, v),
        prim: u32_at(record, 12, prim),
    }
}

fn read_binary(path: &Path, mut reader: impl Read, bytes: u64) -> Result<Vec<Hit>> {
    let fail = |e| file_error(path, e);
    if !bytes.is_multiple_of(HIT_BYTES as u64) {
        return Err(format_error(
            path,
            format!(
                "{bytes} bytes is not a whole number of hits \
                 (a .hits file holds 16 bytes per ray: t, u, v as f32 and prim as u32)"
            ),
        ));
    }
    let count = usize::try_from(bytes / HIT_BYTES as u64)
        .map_err(|_| format_error(path, "too many hits for this machine"))?;
    let mut hits = Vec::new();
    reserve_or_fail(&mut hits, count, path)?;
    read_records(&mut reader, count, HIT_BYTES, |record| {
        hits.push(decode(record, [ByteOrder::Little; 4]));
    })
    .map_err(fail)?;
    if remaining_bytes(&mut reader).map_err(fail)? != 0 {
        return Err(format_error(path, "the file grew while it was read"));
    }
    Ok(hits)
}

/// The byte order of each field, if `dtype` is the hit record type (either byte order).
fn hit_field_orders(dtype: &DType) -> Option<[ByteOrder; 4]> {
    let DType::Record(fields) = dtype else {
        return None;
    };
    if fields.len() != FIELDS.len() {
        return None;
    }
    let mut orders = [ByteOrder::Little; 4];
    for ((field, (name, kind)), order) in fields.iter().zip(FIELDS).zip(&mut orders) {
        let DType::Plain(ty) = &field.dtype else {
            return None;
        };
        if field.name != name || !npy::is_number(ty, kind, 4) {
            return None;
        }
        *order = npy::byte_order(ty)?;
    }
    Some(orders)
}

fn read_npy(path: &Path, mut npy: NpyFile<impl Read>) -> Result<Vec<Hit>> {
    let orders = hit_field_orders(&npy.dtype).ok_or_else(|| {
        format_error(
            path,
            format!(
                "hit .npy files must hold records {NPY_DESCR}, this one holds {}",
                npy.dtype.descr()
            ),
        )
    })?;
    let count = match npy.shape[..] {
        [n] => n,
        _ => {
            return Err(format_error(
                path,
                format!(
                    "hit .npy files must have shape (N,), this one has shape {}",
                    npy::shape_text(&npy.shape)
                ),
            ));
        }
    };
    npy.check_data_size(
        path,
        count.checked_mul(HIT_BYTES as u64),
        &format!("{count} hits"),
    )?;
    let count =
        usize::try_from(count).map_err(|_| format_error(path, "too many hits for this machine"))?;
    let mut hits = Vec::new();
    reserve_or_fail(&mut hits, count, path)?;
    read_records(&mut npy.reader, count, HIT_BYTES, |record| {
        hits.push(decode(record, orders));
    })
    .map_err(|e| file_error(path, e))?;
    Ok(hits)
}

fn read_csv(path: &Path, reader: impl BufRead) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    csv::read_table::<4>(path, reader, |row| {
        hits.push(Hit {
            t: row.parse(0, "a number")?,
            u: row.parse(1, "a number")?,
            v: row.parse(2, "a number")?,
            prim: row.parse(3, "a triangle id (0 to 4294967295)")?,
        });
        Ok(())
    })?;
    Ok(hits)
}

fn write_binary(writer: &mut BufWriter<File>, hits: &[Hit]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        return writer.write_all(bytemuck::cast_slice(hits));
    }
    for hit in hits {
        writer.write_all(&hit.t.to_le_bytes())?;
        writer.write_all(&hit.u.to_le_bytes())?;
        writer.write_all(&hit.v.to_le_bytes())?;
        writer.write_all(&hit.prim.to_le_bytes())?;
    }
    Ok(())
}

fn write_csv(writer: &mut BufWriter<File>, hits: &[Hit]) -> io::Result<()> {
    writeln!(writer, "{CSV_HEADER}")?;
    for Hit { t, u, v, prim } in hits {
        // `{}` prints the shortest text that parses back to the same f32, and `inf`.
        writeln!(writer, "{t},{u},{v},{prim}")?;
    }
    Ok(())
}
