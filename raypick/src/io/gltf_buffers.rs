//! The bytes of glTF buffers: the GLB binary chunk, base64 `data:` URIs, or files
//! next to the `.gltf` file. Each buffer is loaded once, when first needed.

use std::path::Path;

use base64::Engine as _;

/// The buffers of one glTF document.
pub(crate) struct Buffers<'a> {
    /// The directory relative URIs are resolved against.
    base: &'a Path,
    /// The GLB binary chunk, if any.
    bin: Option<&'a [u8]>,
    /// Bytes of the buffers loaded so far, by buffer index.
    loaded: Vec<Option<Vec<u8>>>,
}

impl<'a> Buffers<'a> {
    pub(crate) fn new(base: &'a Path, bin: Option<&'a [u8]>, count: usize) -> Self {
        Self {
            base,
            bin,
            loaded: vec![None; count],
        }
    }

    /// The bytes of `buffer` (exactly its declared `byteLength`); the error is the
    /// message without the file name.
    pub(crate) fn get(&mut self, buffer: &gltf::Buffer) -> Result<&[u8], String> {
        let index = buffer.index();
        let length = buffer.length();
        let uri = match buffer.source() {
            gltf::buffer::Source::Uri(uri) => uri,
            gltf::buffer::Source::Bin => {
                let bin = self.bin.ok_or_else(|| {
                    format!("buffer {index} refers to the GLB binary chunk, but there is none")
                })?;
                return truncate(bin, length, index, "the GLB binary chunk");
            }
        };
        let slot = self
            .loaded
            .get_mut(index)
            .ok_or_else(|| format!("buffer {index} does not exist"))?;
        if slot.is_none() {
            *slot = Some(load_uri(self.base, uri).map_err(|e| format!("buffer {index}: {e}"))?);
        }
        let bytes = slot.as_deref().unwrap_or_default();
        truncate(bytes, length, index, &describe_uri(uri))
    }
}

/// The first `length` bytes of `bytes`, or an error if there are fewer.
fn truncate<'b>(
    bytes: &'b [u8],
    length: usize,
    index: usize,
    what: &str,
) -> Result<&'b [u8], String> {
    bytes.get(..length).ok_or_else(|| {
        format!(
            "buffer {index} declares {length} bytes, but {what} holds {}",
            bytes.len()
        )
    })
}

/// A short name for a URI in messages (data URIs are not quoted whole).
fn describe_uri(uri: &str) -> String {
    if uri.starts_with("data:") {
        "its data URI".to_owned()
    } else {
        format!("'{uri}'")
    }
}

/// The bytes a buffer URI names.
fn load_uri(base: &Path, uri: &str) -> Result<Vec<u8>, String> {
    if let Some(rest) = uri.strip_prefix("data:") {
        let (media, payload) = rest
            .split_once(',')
            .ok_or("a data URI without ',' before its data")?;
        if !media.ends_with(";base64") {
            return Err("only base64 data URIs are supported".to_owned());
        }
        return base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| format!("bad base64 in data URI: {e}"));
    }
    if uri.contains("://") {
        return Err(format!("'{uri}' is not a relative file path"));
    }
    let relative = percent_decode(uri).ok_or_else(|| format!("'{uri}' has bad %-escapes"))?;
    let file = base.join(relative);
    std::fs::read(&file).map_err(|e| format!("cannot read '{}': {e}", file.display()))
}

/// Decodes `%XX` escapes of a URI path; `None` if an escape is malformed or the
/// result is not UTF-8.
fn percent_decode(uri: &str) -> Option<String> {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
