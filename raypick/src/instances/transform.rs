//! Instance transforms: validation, the f32 inverse both backends use to take rays
//! into object space, and conservative world boxes.

use glam::{DMat3, DMat4, DVec3, Mat4, Vec3, Vec4};

use super::InstanceError;
use crate::types::Ray;

/// Smallest accepted `|det| / (|c0| |c1| |c2|)` of a transform's linear part (the
/// volume of the unit cube's image against the product of its edge lengths: 1 for a
/// rotation times any scale, 0 when columns are parallel). Below it the transform
/// counts as singular: it flattens space too much for an f32 inverse.
const MIN_ORTHOGONALITY: f64 = 1e-6;

/// Relative padding of instance world boxes, times the transform's condition number
/// (see [`world_box`]).
const BOX_PADDING: f64 = 4e-6;

/// What both backends and the host need of one instance transform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Placement {
    /// Rows of the inverse (object-from-world) affine map in f32: object
    /// `x = row.x * wx + row.y * wy + row.z * wz + row.w` (see [`object_ray`]).
    pub(crate) inverse_rows: [Vec4; 3],
    /// The object-to-world transform in f64.
    pub(crate) forward: DMat4,
    /// The transpose of the inverse's linear part, in f64: carries normals to world
    /// space.
    pub(crate) normal_matrix: DMat3,
    /// `‖L‖∞ · ‖L⁻¹‖∞` of the linear part `L`: how much rounding a round trip through
    /// object space can magnify.
    pub(crate) condition: f64,
}

impl Placement {
    /// Validates `transform` (instance `instance`, for the error) and derives what the
    /// traversal needs.
    pub(crate) fn new(transform: &Mat4, instance: usize) -> Result<Self, InstanceError> {
        if !transform.is_finite() {
            return Err(InstanceError::NonFinite { instance });
        }
        if transform.row(3) != Vec4::W {
            return Err(InstanceError::NotAffine { instance });
        }
        let forward = transform.as_dmat4();
        let linear = DMat3::from_mat4(forward);
        let volume = linear.x_axis.length() * linear.y_axis.length() * linear.z_axis.length();
        let det = linear.determinant();
        let invertible = det.abs() > MIN_ORTHOGONALITY * volume; // false for NaN
        if !invertible {
            return Err(InstanceError::Singular { instance });
        }
        let inverse = forward.inverse();
        let rows = [0, 1, 2].map(|i| inverse.row(i).as_vec4());
        if !inverse.is_finite() || rows.iter().any(|r| !r.is_finite()) {
            return Err(InstanceError::NonFinite { instance });
        }
        let norm = |m: DMat3| {
            (0..3)
                .map(|i| m.row(i).abs().element_sum())
                .fold(0.0, f64::max)
        };
        Ok(Self {
            inverse_rows: rows,
            forward,
            normal_matrix: DMat3::from_mat4(inverse).transpose(),
            condition: norm(linear) * norm(linear.inverse()),
        })
    }

    /// World normal of an object-space triangle normal (inverse-transpose,
    /// normalised; zero if it vanishes).
    pub(crate) fn world_normal(&self, normal: DVec3) -> DVec3 {
        self.normal_matrix.mul_vec3(normal).normalize_or_zero()
    }
}

/// The ray in object space: origin and direction through the inverse rows, the
/// direction not renormalised and the interval unchanged, so `t` means the same in
/// both spaces. Each coordinate is `((r.x * x + r.y * y) + r.z * z) + r.w` for the
/// origin (no `r.w` for the direction), every product rounded on its own — exactly
/// what `shaders/instance_traverse.wgsl` computes.
#[inline(always)]
pub fn object_ray(rows: &[Vec4; 3], ray: &Ray) -> Ray {
    let (o, d) = (ray.origin, ray.dir);
    let point = |r: Vec4| ((r.x * o.x + r.y * o.y) + r.z * o.z) + r.w;
    let vector = |r: Vec4| (r.x * d.x + r.y * d.y) + r.z * d.z;
    Ray {
        origin: Vec3::new(point(rows[0]), point(rows[1]), point(rows[2])),
        tmin: ray.tmin,
        dir: Vec3::new(vector(rows[0]), vector(rows[1]), vector(rows[2])),
        tmax: ray.tmax,
    }
}

/// Whether an object-space ray can hit anything: finite origin and direction and a
/// non-zero direction (a far-off origin or extreme scale can overflow).
#[inline(always)]
pub(crate) fn is_live(ray: &Ray) -> bool {
    ray.origin.is_finite() && ray.dir.is_finite() && ray.dir != Vec3::ZERO
}

/// The world box of an object-space box `(lo, hi)` under `placement`: its eight
/// corners mapped in f64, padded by `BOX_PADDING · condition · (|coordinates| +
/// extent)` and rounded outward to f32.
///
/// The padding covers the rounding of the object-space ray: a hit the BLAS finds
/// with the rounded ray lies within that distance of the box (for rays whose origin
/// is within a few box sizes of the instance; farther origins are covered by the
/// traversal's relative margin on `t`).
pub(crate) fn world_box(placement: &Placement, (lo, hi): (Vec3, Vec3)) -> (Vec3, Vec3) {
    let (lo, hi) = (lo.as_dvec3(), hi.as_dvec3());
    let mut wlo = DVec3::INFINITY;
    let mut whi = DVec3::NEG_INFINITY;
    for corner in 0..8 {
        let pick = |bit: usize, a: f64, b: f64| if corner & bit == 0 { a } else { b };
        let p = DVec3::new(
            pick(1, lo.x, hi.x),
            pick(2, lo.y, hi.y),
            pick(4, lo.z, hi.z),
        );
        let w = placement.forward.transform_point3(p);
        wlo = wlo.min(w);
        whi = whi.max(w);
    }
    let magnitude = wlo.abs().max(whi.abs()).max_element();
    let extent = (whi - wlo).max_element();
    let pad = BOX_PADDING * placement.condition.max(1.0) * (magnitude + extent);
    let limit = f32::MAX as f64;
    let down = |x: f64| {
        ((x - pad).clamp(-limit, limit) as f32)
            .next_down()
            .max(-f32::MAX)
    };
    let up = |x: f64| {
        ((x + pad).clamp(-limit, limit) as f32)
            .next_up()
            .min(f32::MAX)
    };
    (
        Vec3::new(down(wlo.x), down(wlo.y), down(wlo.z)),
        Vec3::new(up(whi.x), up(whi.y), up(whi.z)),
    )
}
