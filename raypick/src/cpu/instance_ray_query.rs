//! The decisions of the instance ray-query stage, mirroring
//! `shaders/instance_ray_query.wgsl`.
//!
//! An instance scene traced with [`Accel::RayQuery`](crate::Accel::RayQuery) gives
//! the driver bottom-level structures over each mesh's boxes in object space
//! ([`InstanceDriverBoxes`]), and one top-level instance per scene instance
//! (its transform, its index as the instance's custom data). The driver finds the
//! boxes a ray crosses; raypick takes the ray into the candidate instance's object
//! space itself ([`crate::instances::object_ray`], the rows both backends use), runs its own test on
//! the candidate triangle and keeps the nearest hit with the ties of the instance
//! traversal ([`nearer`]), so the hits are [`super::instance_traverse`]'s bit for
//! bit. Segments and committed distances are the mesh stage's
//! ([`super::ray_query`]), on the world ray.
//!
//! ## The driver's own object-space ray
//!
//! The driver takes the ray into object space by its own inverse of the transform,
//! not by raypick's rows, so the point it tests at a distance `t` differs from
//! raypick's by rounding. The boxes are padded to cover that, on top of what the
//! triangle test's own rounding needs ([`super::ray_query::DRIVER_PADDING`]). With
//! `u = 2^-24`, for an instance whose raypick inverse has linear rows of norm
//! `ρ = ‖L⁻¹‖∞` and translation `w = max |r.w|`, transform condition `κ`
//! (`‖L‖∞ ‖L⁻¹‖∞` of the linear part), world box of magnitude `W` (largest coordinate or
//! extent), and mesh magnitude `m`, a ray whose origin has coordinates within `F`
//! and which hits at world distance at most `F + W` from its origin:
//!
//! - raypick's object origin and direction carry at most `5u` of rounding relative
//!   to `ρ|o| + w` and `ρ|d|` (f32 rows of the exact inverse, three products and
//!   their sums); a driver's are allowed [`TRANSFORM_ERROR`]` · κ` (an f32 inverse
//!   of the f32 matrix, then the same products), so the two points at `t` differ
//!   by at most `(32κ + 5) u (ρ (2F + W) + w)`;
//! - the test accepts hits within `8u` of the distance from the object origin,
//!   at most `ρF + w + m` away.
//!
//! Together they call for a padding of `(32κ + 13) u (ρ (2F + W) + w + m)`. Each
//! instance takes the least power-of-two padding (relative to `m`, from
//! [`DRIVER_PADDING`] to [`MAX_INSTANCE_PADDING`]) that covers origins within
//! [`PADDED_REACH`] scene magnitudes, and a mesh gets one structure per padding its
//! instances take ([`InstanceDriverBoxes`]): a small instance far from the world
//! origin pads its own copy, not every instance of its mesh.
//! [`InstanceDriverBoxes::far_limit`] is the largest `F` every instance's padding
//! covers for the transforms of the moment (moved instances keep their
//! structures). Rays from farther out are finished on the CPU: a scene with
//! instances too small for their distance from the world origin, or too badly
//! conditioned, sends more rays there, never wrong ones.

use glam::Vec3;

use super::instance_traverse::nearer;
use super::intersect::{RayFrame, intersect};
use super::ray_query::{BoxSearch, DRIVER_PADDING, DriverBoxes, is_far, segments};
use crate::instances::InstanceScene;
use crate::options::{Cull, Mode};
use crate::types::{InstanceHitRecord, Ray};

/// What the stage allows a driver's object-space ray to differ from the exact
/// transform's, relative to the magnitudes involved, per unit of the transform's
/// condition number: 32 units of `2^-24`.
pub const TRANSFORM_ERROR: f64 = 32.0 / (1u64 << 24) as f64;

/// raypick's own part: 5 units of `2^-24` for its object-space ray, 8 for the
/// triangle test's acceptance.
const OWN_ERROR: f64 = 13.0 / (1u64 << 24) as f64;

/// The largest padding of an instanced mesh's boxes, relative to its magnitude:
/// `2^-2`. The boxes of an instance that needs more would overlap too much to be
/// worth a search; scenes with such instances trace fewer rays on the GPU instead
/// ([`InstanceDriverBoxes::far_limit`]).
pub const MAX_INSTANCE_PADDING: f32 = 0.25;

/// The ray origins each instance's padding is chosen to cover, in scene
/// magnitudes (the largest coordinate magnitude or extent of the instances' world
/// boxes): 4, cameras in and around the scene. The far limit then follows from the
/// paddings chosen, often farther.
pub const PADDED_REACH: f64 = 4.0;

/// One bottom-level structure for the driver: a mesh's boxes at one padding.
#[derive(Clone, Debug, Default)]
pub struct Structure {
    /// Index of the mesh in the scene.
    pub mesh: usize,
    /// The padding of its boxes, relative to the mesh's magnitude: a power of two
    /// from [`DRIVER_PADDING`] to [`MAX_INSTANCE_PADDING`].
    pub padding: f32,
    /// The boxes and the hittable triangles.
    pub boxes: DriverBoxes,
}

/// The driver's bottom-level structures of an instance scene, in object space:
/// each mesh once per padding its instances need (most scenes need one), so that a
/// small instance far from the world origin pads only its own structure.
#[derive(Clone, Debug, Default)]
pub struct InstanceDriverBoxes {
    /// The structures.
    pub structures: Vec<Structure>,
    /// Per instance: the index of its structure, `None` when it has nothing to hit.
    pub of_instance: Vec<Option<u32>>,
}

/// The figures of one instance the padding and the far limit rest on.
#[derive(Clone, Copy, Debug)]
struct Reach {
    /// `‖L⁻¹‖∞` of raypick's inverse rows.
    rho: f64,
    /// The largest translation of raypick's inverse rows.
    w: f64,
    /// Magnitude of the instance's world box.
    world: f64,
    /// `TRANSFORM_ERROR · κ + OWN_ERROR`.
    error: f64,
}

impl Reach {
    /// Instance `index`'s figures, `None` when it has nothing to hit.
    fn of(scene: &InstanceScene, index: usize) -> Option<Self> {
        let (lo, hi) = scene.world_box(index)?;
        let placement = &scene.placed()[index].placement;
        let rows = &placement.inverse_rows;
        Some(Self {
            rho: rows
                .iter()
                .map(|r| r.truncate().abs().element_sum() as f64)
                .fold(0.0, f64::max),
            w: rows.iter().map(|r| r.w.abs() as f64).fold(0.0, f64::max),
            world: magnitude(lo, hi),
            error: TRANSFORM_ERROR * placement.condition.max(1.0) + OWN_ERROR,
        })
    }

    /// The padding (object units) the instance needs for rays from within `far` of
    /// the world origin, on a mesh of magnitude `m` (see the module's doc).
    fn allowance(&self, far: f64, m: f64) -> f64 {
        self.error * (self.rho * (2.0 * far + self.world) + self.w + m)
    }

    /// The largest `far` that `pad` (object units) covers on a mesh of magnitude
    /// `m`: [`Reach::allowance`] solved for `far` (negative when none is).
    fn far(&self, pad: f64, m: f64) -> f64 {
        ((pad / self.error - self.w - m) / self.rho - self.world) / 2.0
    }
}

/// The largest coordinate magnitude or extent of the box `(lo, hi)`.
fn magnitude(lo: Vec3, hi: Vec3) -> f64 {
    lo.abs().max(hi.abs()).max(hi - lo).max_element() as f64
}

impl InstanceDriverBoxes {
    /// The structures of `scene`'s instances as placed now: each instance takes the
    /// least padding (a power of two) that covers rays from within [`PADDED_REACH`]
    /// scene magnitudes, at most [`MAX_INSTANCE_PADDING`] (see the module's doc).
    pub fn new(scene: &InstanceScene) -> Self {
        let reaches: Vec<Option<Reach>> = (0..scene.len()).map(|i| Reach::of(scene, i)).collect();
        let far = PADDED_REACH * reaches.iter().flatten().map(|r| r.world).fold(0.0, f64::max);
        // The BVH's root box is the union of the padded triangle boxes, so this is
        // the magnitude the structures' boxes measure.
        let mesh_magnitude: Vec<f64> = scene
            .meshes()
            .iter()
            .map(|blas| blas.bounds().map_or(0.0, |(lo, hi)| magnitude(lo, hi)))
            .collect();
        let mut structures: Vec<Structure> = Vec::new();
        let mut chosen: std::collections::HashMap<(usize, u32), u32> = Default::default();
        let of_instance = reaches
            .iter()
            .zip(scene.instances())
            .map(|(reach, instance)| {
                let reach = reach.as_ref()?;
                let m = mesh_magnitude[instance.mesh];
                let need = (reach.allowance(far, m) / m) as f32;
                let padding = need.clamp(DRIVER_PADDING, MAX_INSTANCE_PADDING).to_bits();
                // Up to the next power of two (the paddings are powers of two).
                let padding = f32::from_bits((padding + 0x7f_ffff) & !0x7f_ffff);
                let key = (instance.mesh, padding.to_bits());
                Some(*chosen.entry(key).or_insert_with(|| {
                    let packed = scene.meshes()[instance.mesh].bvh().triangles();
                    structures.push(Structure {
                        mesh: instance.mesh,
                        padding,
                        boxes: DriverBoxes::with_padding(packed, padding),
                    });
                    structures.len() as u32 - 1
                }))
            })
            .collect();
        Self {
            structures,
            of_instance,
        }
    }

    /// The largest origin coordinate for which every instance's padding covers the
    /// two object-space rays (see the module's doc), for the scene's transforms now
    /// (the instances keep the structures [`InstanceDriverBoxes::new`] gave them);
    /// negative when some instance's padding covers none. `f32::MAX` for a scene
    /// with nothing to hit.
    pub fn far_limit(&self, scene: &InstanceScene) -> f32 {
        let far = self
            .of_instance
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let structure = &self.structures[(*s)? as usize];
                let m = structure.boxes.magnitude as f64;
                Some(Reach::of(scene, i)?.far(structure.padding as f64 * m, m))
            })
            .fold(f64::INFINITY, f64::min);
        if far < 0.0 {
            return -1.0; // every origin is far
        }
        let rounded = far.min(f32::MAX as f64) as f32;
        if rounded as f64 > far {
            rounded.next_down()
        } else {
            rounded
        }
    }
}

/// Nearest hit of one (sanitised) world ray over the candidates `search` reports,
/// taking each into its instance's object space as the instance traversal does;
/// `None` for a ray from beyond `far_limit` ([`InstanceDriverBoxes::far_limit`]),
/// which the caller finishes with [`super::instance_traverse::trace_ray`].
pub fn traverse(
    scene: &InstanceScene,
    boxes: &InstanceDriverBoxes,
    far_limit: f32,
    search: &mut impl BoxSearch<Candidate = (u32, u32)>,
    ray: &Ray,
    (cull, mode): (Cull, Mode),
) -> Option<InstanceHitRecord> {
    if is_far(ray, far_limit) {
        return None;
    }
    let mut best = InstanceHitRecord::MISS;
    if ray.dir == Vec3::ZERO {
        return Some(best); // an invalid ray
    }
    let frame = RayFrame::new(ray);
    for segment in segments(ray, &frame).into_iter().flatten() {
        let Some(mut committed) = segment.first_commit(best.t, &frame) else {
            break;
        };
        search.start(ray.origin, segment.dir(&frame), segment.tmin, committed);
        while let Some((instance, index)) = search.proceed() {
            let Some(local) = scene.object_ray(instance as usize, ray) else {
                continue;
            };
            let Some(structure) = boxes.of_instance[instance as usize] else {
                continue;
            };
            let structure = &boxes.structures[structure as usize].boxes;
            let tri = &structure.triangles[index as usize];
            let c = intersect(&local, &RayFrame::new(&local), tri, cull, f32::INFINITY, mode);
            if !c.accepted
                || !segment.direction.holds(c.t)
                || !nearer(c.t, instance, tri.id, &best)
            {
                continue;
            }
            best = InstanceHitRecord {
                t: c.t,
                u: c.u,
                v: c.v,
                prim: tri.id,
                instance,
                ..InstanceHitRecord::MISS
            };
            if let Some(lower) = segment.lowered(best.t, &frame, committed) {
                committed = lower;
                search.commit(lower);
            }
        }
    }
    Some(best)
}

/// A driver with an exact box test over an instance scene, taking rays into object
/// space by its own f32 inverse of each transform (glam's, not raypick's rows),
/// optionally perturbed: every entry of the inverse scaled by `1 ± error · κ`, the
/// sign pseudo-random per entry. Instances are visited in a scrambled order, each
/// with [`super::ray_query::ExactBoxSearch`] over its mesh's boxes.
#[cfg(any(test, feature = "kernels"))]
#[derive(Clone, Debug)]
pub struct ExactInstanceSearch<'a> {
    boxes: &'a InstanceDriverBoxes,
    /// Per instance: its structure and the driver's object-from-world transform.
    inverses: Vec<(Option<u32>, glam::Mat4)>,
    ray: (Vec3, Vec3, f32),
    committed: f32,
    next: usize,
    current: Option<(u32, super::ray_query::ExactBoxSearch<'a>)>,
}

#[cfg(any(test, feature = "kernels"))]
impl<'a> ExactInstanceSearch<'a> {
    /// A search over `scene` as `boxes` pad it, with inverses perturbed by `error`
    /// per unit of condition (0: glam's inverse as it is).
    pub fn new(scene: &InstanceScene, boxes: &'a InstanceDriverBoxes, error: f32) -> Self {
        let inverses = scene
            .placed()
            .iter()
            .enumerate()
            .map(|(i, placed)| {
                let scale = error * placed.placement.condition.max(1.0) as f32;
                let mut inverse = placed.instance.transform.inverse().to_cols_array();
                for (e, x) in inverse.iter_mut().enumerate() {
                    let hash = (i as u32 ^ 0x9e37_79b9).wrapping_mul(2_654_435_761 + e as u32);
                    let sign = if hash.rotate_left(13) & 1 == 0 { 1.0 } else { -1.0 };
                    *x *= 1.0 + sign * scale;
                }
                let mut inverse = glam::Mat4::from_cols_array(&inverse);
                inverse.w_axis.w = 1.0;
                (inverse.x_axis.w, inverse.y_axis.w, inverse.z_axis.w) = (0.0, 0.0, 0.0);
                (boxes.of_instance[i], inverse)
            })
            .collect();
        Self {
            boxes,
            inverses,
            ray: (Vec3::ZERO, Vec3::ZERO, 0.0),
            committed: 0.0,
            next: 0,
            current: None,
        }
    }
}

#[cfg(any(test, feature = "kernels"))]
impl BoxSearch for ExactInstanceSearch<'_> {
    type Candidate = (u32, u32);

    fn start(&mut self, origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) {
        self.ray = (origin, dir, tmin);
        self.committed = tmax;
        self.next = 0;
        self.current = None;
    }

    fn proceed(&mut self) -> Option<(u32, u32)> {
        let n = self.inverses.len();
        loop {
            if let Some((instance, search)) = &mut self.current {
                if let Some(b) = search.proceed() {
                    return Some((*instance, b));
                }
                self.current = None;
            }
            if self.next >= n {
                return None;
            }
            // Instances in a scrambled order: a stride coprime with n.
            let stride = if n.is_multiple_of(7) { 1 } else { 7 };
            let i = (self.next * stride + 3) % n;
            self.next += 1;
            let (Some(structure), inverse) = self.inverses[i] else {
                continue;
            };
            let boxes = &self.boxes.structures[structure as usize].boxes.boxes;
            let (origin, dir, tmin) = self.ray;
            let mut search = super::ray_query::ExactBoxSearch::new(boxes);
            search.start(
                inverse.transform_point3(origin),
                inverse.transform_vector3(dir),
                tmin,
                self.committed,
            );
            self.current = Some((i as u32, search));
        }
    }

    fn commit(&mut self, t: f32) {
        self.committed = self.committed.min(t);
        if let Some((_, search)) = &mut self.current {
            search.commit(t);
        }
    }
}
