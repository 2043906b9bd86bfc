//! Reading glTF accessors (typed views into buffers) with every offset, stride and
//! count checked against the bytes that are really there before anything is
//! allocated.

use gltf::accessor::{DataType, Dimensions};

use super::gltf_buffers::Buffers;

/// Vertex positions of a `VEC3` accessor, as f64 (float components, or integer ones
/// as `KHR_mesh_quantization` allows, normalized or not).
pub(crate) fn read_positions(
    accessor: &gltf::Accessor,
    buffers: &mut Buffers,
) -> Result<Vec<[f64; 3]>, String> {
    let elements = Elements::of(accessor, Dimensions::Vec3, buffers)?;
    let component = Component {
        ty: accessor.data_type(),
        normalized: accessor.normalized(),
    };
    let size = component.ty.size();
    Ok(elements
        .iter()
        .map(|bytes| {
            let c = |i: usize| component.read(&bytes[i * size..(i + 1) * size]);
            [c(0), c(1), c(2)]
        })
        .collect())
}

/// Vertex indices of a `SCALAR` accessor of unsigned bytes, shorts or ints.
pub(crate) fn read_indices(
    accessor: &gltf::Accessor,
    buffers: &mut Buffers,
) -> Result<Vec<u32>, String> {
    let ty = accessor.data_type();
    if !matches!(ty, DataType::U8 | DataType::U16 | DataType::U32) {
        return Err(format!(
            "accessor {} holds indices of type {ty:?}; they must be U8, U16 or U32",
            accessor.index()
        ));
    }
    let elements = Elements::of(accessor, Dimensions::Scalar, buffers)?;
    Ok(elements
        .iter()
        .map(|b| match ty {
            DataType::U8 => b[0] as u32,
            DataType::U16 => u16::from_le_bytes([b[0], b[1]]) as u32,
            _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        })
        .collect())
}

/// The component type of an accessor and whether integers are normalized.
#[derive(Clone, Copy)]
struct Component {
    ty: DataType,
    normalized: bool,
}

impl Component {
    /// One component (little endian, `bytes.len() == self.ty.size()`) as f64.
    fn read(self, bytes: &[u8]) -> f64 {
        let word = |n: usize| {
            let mut raw = [0u8; 4];
            raw[..n].copy_from_slice(&bytes[..n]);
            raw
        };
        let (value, max) = match self.ty {
            DataType::I8 => (bytes[0] as i8 as f64, i8::MAX as f64),
            DataType::U8 => (bytes[0] as f64, u8::MAX as f64),
            DataType::I16 => (
                i16::from_le_bytes([bytes[0], bytes[1]]) as f64,
                i16::MAX as f64,
            ),
            DataType::U16 => (
                u16::from_le_bytes([bytes[0], bytes[1]]) as f64,
                u16::MAX as f64,
            ),
            DataType::U32 => (u32::from_le_bytes(word(4)) as f64, u32::MAX as f64),
            DataType::F32 => return f32::from_le_bytes(word(4)) as f64,
        };
        if self.normalized {
            (value / max).max(-1.0)
        } else {
            value
        }
    }
}

/// The bytes of each element of an accessor, bounds-checked.
struct Elements<'b> {
    /// The bytes from the first element's start to the last element's end.
    bytes: &'b [u8],
    count: usize,
    stride: usize,
    size: usize,
}

impl<'b> Elements<'b> {
    /// Locates the elements of `accessor`, which must have dimensions `dims`.
    fn of(
        accessor: &gltf::Accessor,
        dims: Dimensions,
        buffers: &'b mut Buffers,
    ) -> Result<Self, String> {
        let index = accessor.index();
        if accessor.dimensions() != dims {
            return Err(format!(
                "accessor {index} is {:?}, expected {dims:?}",
                accessor.dimensions()
            ));
        }
        if accessor.sparse().is_some() {
            return Err(format!(
                "accessor {index} is sparse; sparse accessors are not supported"
            ));
        }
        let count = accessor.count();
        let size = accessor.size();
        let Some(view) = accessor.view() else {
            if count == 0 {
                return Ok(Self {
                    bytes: &[],
                    count,
                    stride: size,
                    size,
                });
            }
            return Err(format!("accessor {index} has no buffer view"));
        };
        let stride = view.stride().unwrap_or(size);
        if stride < size {
            return Err(format!(
                "buffer view {} has a byte stride of {stride}, less than the {size}-byte \
                 elements of accessor {index}",
                view.index()
            ));
        }
        let buffer = buffers.get(&view.buffer())?;
        let view_end = view.offset().checked_add(view.length());
        let view_bytes = view_end
            .and_then(|end| buffer.get(view.offset()..end))
            .ok_or_else(|| {
                format!(
                    "buffer view {} (bytes {}..+{}) lies outside buffer {} ({} bytes)",
                    view.index(),
                    view.offset(),
                    view.length(),
                    view.buffer().index(),
                    buffer.len()
                )
            })?;
        let span = match count {
            0 => Some(0),
            n => (n - 1)
                .checked_mul(stride)
                .and_then(|s| s.checked_add(size)),
        };
        let bytes = span
            .and_then(|span| accessor.offset().checked_add(span))
            .and_then(|end| view_bytes.get(accessor.offset()..end))
            .ok_or_else(|| {
                format!(
                    "accessor {index} ({count} elements of {size} bytes, stride {stride}, at \
                     byte {}) does not fit in buffer view {} ({} bytes)",
                    accessor.offset(),
                    view.index(),
                    view_bytes.len()
                )
            })?;
        Ok(Self {
            bytes,
            count,
            stride,
            size,
        })
    }

    /// The bytes of each element in turn.
    fn iter(&self) -> impl Iterator<Item = &'b [u8]> + '_ {
        (0..self.count).map(|k| &self.bytes[k * self.stride..k * self.stride + self.size])
    }
}
