//! Fixed-size binary records: chunked reading and byte-order aware decoding.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::errors::file_error;
use crate::error::Result;

/// Byte order of a binary value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByteOrder {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

/// Opens `path` for reading: the buffered file and its length in bytes.
pub(crate) fn open_sized(path: &Path) -> Result<(BufReader<File>, u64)> {
    let file = File::open(path).map_err(|e| file_error(path, e))?;
    let bytes = file.metadata().map_err(|e| file_error(path, e))?.len();
    Ok((BufReader::new(file), bytes))
}

/// Bytes read per chunk (a multiple of every record size used here).
const CHUNK_BYTES: usize = 1 << 16;

/// Reads `count` records of `record_size` bytes from `reader` and hands each to `each`.
///
/// Memory use is one fixed-size chunk, whatever `count` is.
pub(crate) fn read_records(
    reader: &mut impl Read,
    count: usize,
    record_size: usize,
    mut each: impl FnMut(&[u8]),
) -> io::Result<()> {
    let record_size = record_size.max(1);
    let per_chunk = (CHUNK_BYTES / record_size).max(1);
    let mut buffer = vec![0u8; per_chunk * record_size];
    let mut left = count;
    while left > 0 {
        let n = left.min(per_chunk);
        let chunk = buffer.get_mut(..n * record_size).unwrap_or_default();
        reader.read_exact(chunk)?;
        chunk.chunks_exact(record_size).for_each(&mut each);
        left -= n;
    }
    Ok(())
}

/// Number of bytes left in `reader` (reads it to the end).
pub(crate) fn remaining_bytes(reader: &mut impl Read) -> io::Result<u64> {
    io::copy(reader, &mut io::sink())
}

/// The `N` bytes of `record` starting at `offset` (zeros where the record is shorter).
fn bytes_at<const N: usize>(record: &[u8], offset: usize) -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Some(src) = record.get(offset..offset + N) {
        bytes.copy_from_slice(src);
    }
    bytes
}

/// The `f32` at `offset` in `record`.
pub(crate) fn f32_at(record: &[u8], offset: usize, order: ByteOrder) -> f32 {
    let bytes = bytes_at(record, offset);
    match order {
        ByteOrder::Little => f32::from_le_bytes(bytes),
        ByteOrder::Big => f32::from_be_bytes(bytes),
    }
}

/// The `f64` at `offset` in `record`.
pub(crate) fn f64_at(record: &[u8], offset: usize, order: ByteOrder) -> f64 {
    let bytes = bytes_at(record, offset);
    match order {
        ByteOrder::Little => f64::from_le_bytes(bytes),
        ByteOrder::Big => f64::from_be_bytes(bytes),
    }
}

/// The `u32` at `offset` in `record`.
pub(crate) fn u32_at(record: &[u8], offset: usize, order: ByteOrder) -> u32 {
    let bytes = bytes_at(record, offset);
    match order {
        ByteOrder::Little => u32::from_le_bytes(bytes),
        ByteOrder::Big => u32::from_be_bytes(bytes),
    }
}
