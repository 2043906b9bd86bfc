//! Test files: small mesh files in every supported format (`meshes/`, written by
//! `meshes/generate.py`), `.npy` files built by hand, independent of the
//! library's writers, and PNG decoding.

use std::path::PathBuf;

/// The path of a mesh file in the kit's `meshes/` folder.
pub fn mesh_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("meshes")
        .join(name)
}

/// An `.npy` file built by hand (format version 1.0), independent of the crate's
/// writer: magic, version, little-endian header length, header padded to 64 bytes.
pub fn npy_bytes(descr: &str, fortran_order: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let order = if fortran_order { "True" } else { "False" };
    let mut header = format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// A float64 little-endian `.npy` ray file of shape `(N, 8)` from rows
/// `ox oy oz tmin dx dy dz tmax`.
pub fn npy_f64_rays(rows: &[[f64; 8]]) -> Vec<u8> {
    let data: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    npy_bytes("'<f8'", false, &format!("({}, 8)", rows.len()), &data)
}

/// Decodes an 8-bit RGBA PNG file's bytes (panics on anything else).
pub fn decode_png(bytes: &[u8]) -> raypick::render::Image {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .expect("PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut pixels).expect("PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgba);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    pixels.truncate(info.buffer_size());
    raypick::render::Image {
        width: info.width,
        height: info.height,
        pixels,
    }
}
