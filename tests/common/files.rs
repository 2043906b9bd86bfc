//! Test files built by hand, independent of the crate's writers.

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
