//! numpy arrays in: dtype and shape checks, C-contiguous slices, and the values
//! raypick takes (rays, points, vertices, triangles, transforms), with every bad value
//! reported as a `ValueError` that names the row.

use std::borrow::Cow;

use glam::{DVec3, Vec3};
use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use raypick::{Ray, Ray64};

use crate::scene::{Points, Rays};

/// A 2D float array of either precision, borrowed from numpy.
pub enum Floats<'py> {
    /// float32.
    F32(PyReadonlyArray2<'py, f32>),
    /// float64.
    F64(PyReadonlyArray2<'py, f64>),
}

/// A C-contiguous float32 or float64 array of shape `(n, c)` with `c` in `columns`.
pub fn floats<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    columns: &[usize],
) -> PyResult<Floats<'py>> {
    let floats = if let Ok(a) = obj.extract::<PyReadonlyArray2<'py, f32>>() {
        Floats::F32(a)
    } else if let Ok(a) = obj.extract::<PyReadonlyArray2<'py, f64>>() {
        Floats::F64(a)
    } else {
        return Err(PyValueError::new_err(format!(
            "{what} must be a 2-dimensional float32 or float64 numpy array"
        )));
    };
    let (shape, contiguous) = match &floats {
        Floats::F32(a) => (a.shape().to_vec(), a.is_c_contiguous()),
        Floats::F64(a) => (a.shape().to_vec(), a.is_c_contiguous()),
    };
    if !columns.contains(&shape[1]) {
        return Err(PyValueError::new_err(format!(
            "{what} must have {} columns, got shape {shape:?}",
            columns
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        )));
    }
    if !contiguous {
        return Err(PyValueError::new_err(format!(
            "{what} must be C-contiguous"
        )));
    }
    Ok(floats)
}

/// The slice of a C-contiguous array (checked by [`floats`]).
pub fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|e| PyValueError::new_err(format!("array not contiguous: {e}")))
}

/// Checks rows of 6 (`ox oy oz dx dy dz`) or 8 (`ox oy oz tmin dx dy dz tmax`) values:
/// finite origins and directions, intervals that are not NaN.
fn check_ray_rows<T: Real + Default>(data: &[T], columns: usize) -> Result<(), String> {
    if columns == 8 {
        check_rows(
            data,
            8,
            |r| [r[0], r[1], r[2], r[4], r[5], r[6]],
            |r| [r[3], r[7]],
        )
    } else {
        check_rows(
            data,
            6,
            |r| [r[0], r[1], r[2], r[3], r[4], r[5]],
            |_| [T::default(); 2],
        )
    }
}

/// Rows of `columns` values (`ox oy oz dx dy dz`, or raypick's
/// `ox oy oz tmin dx dy dz tmax`) as rays; the first bad row is an error.
pub fn rays_from_f32(data: &[f32], columns: usize) -> Result<Rays<'_>, String> {
    check_ray_rows(data, columns)?;
    if columns == 8 {
        // raypick's own layout: no copy when the memory is aligned for it.
        return Ok(Rays::F32(
            match bytemuck::try_cast_slice::<f32, Ray>(data) {
                Ok(rays) => Cow::Borrowed(rays),
                Err(_) => Cow::Owned(
                    data.chunks_exact(8)
                        .map(|r| {
                            Ray::with_interval(
                                Vec3::new(r[0], r[1], r[2]),
                                Vec3::new(r[4], r[5], r[6]),
                                r[3],
                                r[7],
                            )
                        })
                        .collect(),
                ),
            },
        ));
    }
    Ok(Rays::F32(Cow::Owned(
        data.chunks_exact(6)
            .map(|r| Ray::new(Vec3::new(r[0], r[1], r[2]), Vec3::new(r[3], r[4], r[5])))
            .collect(),
    )))
}

/// [`rays_from_f32`] for float64 rows: [`Ray64`]s, exact.
pub fn rays_from_f64(data: &[f64], columns: usize) -> Result<Rays<'static>, String> {
    check_ray_rows(data, columns)?;
    if columns == 8 {
        return Ok(Rays::F64(
            data.chunks_exact(8)
                .map(|r| Ray64::from_row([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]))
                .collect(),
        ));
    }
    Ok(Rays::F64(
        data.chunks_exact(6)
            .map(|r| Ray64::new(DVec3::new(r[0], r[1], r[2]), DVec3::new(r[3], r[4], r[5])))
            .collect(),
    ))
}

/// A float that can be checked for NaN and infinity.
pub trait Real: Copy {
    /// Neither NaN nor infinite.
    fn finite(self) -> bool;
    /// NaN.
    fn nan(self) -> bool;
}

impl Real for f32 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Real for f64 {
    fn finite(self) -> bool {
        self.is_finite()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Finds the first row whose origin or direction is not finite, or whose bound is NaN.
fn check_rows<T: Real>(
    data: &[T],
    columns: usize,
    coordinates: impl Fn(&[T]) -> [T; 6],
    bounds: impl Fn(&[T]) -> [T; 2],
) -> Result<(), String> {
    for (i, row) in data.chunks_exact(columns).enumerate() {
        if !coordinates(row).iter().all(|x| x.finite()) {
            return Err(format!(
                "rays[{i}] has a NaN or infinite origin or direction"
            ));
        }
        if bounds(row).iter().any(|x| x.nan()) {
            return Err(format!("rays[{i}] has a NaN tmin or tmax"));
        }
    }
    Ok(())
}

/// Rows of 3 finite float32 values as points (no copy when aligned).
pub fn points_from_f32<'a>(data: &'a [f32], what: &str) -> Result<Points<'a>, String> {
    let points: &[Vec3] = bytemuck::try_cast_slice(data)
        .map_err(|e| format!("{what}: unaligned float32 memory ({e})"))?;
    first_non_finite(points.iter().map(|p| p.is_finite()), what)?;
    Ok(Points::F32(points))
}

/// Rows of 3 finite float64 values as points.
pub fn points_from_f64(data: &[f64], what: &str) -> Result<Points<'static>, String> {
    let points: Vec<DVec3> = data
        .chunks_exact(3)
        .map(|r| DVec3::new(r[0], r[1], r[2]))
        .collect();
    first_non_finite(points.iter().map(|p| p.is_finite()), what)?;
    Ok(Points::F64(points))
}

/// An error naming the first row that is not finite.
pub fn first_non_finite(finite: impl Iterator<Item = bool>, what: &str) -> Result<(), String> {
    match finite.enumerate().find(|(_, ok)| !ok) {
        Some((i, _)) => Err(format!("{what}[{i}] has a NaN or infinite coordinate")),
        None => Ok(()),
    }
}
