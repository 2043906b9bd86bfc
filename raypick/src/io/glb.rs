//! The binary glTF container (`.glb`): a 12-byte header, a JSON chunk, and an
//! optional binary chunk. Chunks of other types are ignored, as the format requires.

/// Magic bytes at the start of every GLB file.
pub(crate) const MAGIC: &[u8; 4] = b"glTF";
/// Chunk type of the JSON chunk (`JSON` in ASCII, little endian).
const JSON_CHUNK: u32 = 0x4E4F_534A;
/// Chunk type of the binary buffer chunk (`BIN\0`).
const BIN_CHUNK: u32 = 0x004E_4942;

/// The chunks of a GLB file.
pub(crate) struct Glb<'a> {
    /// The glTF JSON document.
    pub(crate) json: &'a [u8],
    /// The buffer that `buffers[0]` without a URI refers to, if present.
    pub(crate) bin: Option<&'a [u8]>,
}

/// Splits a GLB file into its chunks; the error is the message without the file name.
pub(crate) fn split_glb(data: &[u8]) -> Result<Glb<'_>, String> {
    let word = |at: usize| {
        data.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(length)) = (word(4), word(8)) else {
        return Err(format!(
            "GLB header truncated: {} bytes, needs 12",
            data.len()
        ));
    };
    if version != 2 {
        return Err(format!(
            "GLB version {version}; only version 2 is supported"
        ));
    }
    let length = length as usize;
    if length > data.len() || length < 12 {
        return Err(format!(
            "GLB header declares {length} bytes, the file has {}",
            data.len()
        ));
    }
    let mut json = None;
    let mut bin = None;
    let mut offset = 12;
    let mut index = 0;
    while offset < length {
        let (Some(chunk_length), Some(chunk_type)) = (word(offset), word(offset + 4)) else {
            return Err(format!(
                "GLB chunk {index} header truncated at byte {offset}"
            ));
        };
        let start = offset + 8;
        let end = start
            .checked_add(chunk_length as usize)
            .filter(|&end| end <= length)
            .ok_or_else(|| {
                format!(
                    "GLB chunk {index} declares {chunk_length} bytes at byte {start}, past the \
                     end of the file ({length} bytes)"
                )
            })?;
        let content = &data[start..end];
        match (index, chunk_type) {
            (0, JSON_CHUNK) => json = Some(content),
            (0, other) => {
                return Err(format!(
                    "the first GLB chunk must be JSON, found chunk type {other:#010x}"
                ));
            }
            (1, BIN_CHUNK) => bin = Some(content),
            _ => {}
        }
        offset = end;
        index += 1;
    }
    let json = json.ok_or("the GLB file has no JSON chunk")?;
    Ok(Glb { json, bin })
}
