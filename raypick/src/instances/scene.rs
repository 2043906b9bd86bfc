//! The instance scene: shared BLASes, instances with validated transforms, and the
//! TLAS over them.

use std::sync::Arc;

use glam::Vec3;

use super::tlas::Tlas;
use super::transform::{Placement, is_live, object_ray, world_box};
use super::{Blas, Instance, InstanceError, InstanceHit};
use crate::Mesh;
use crate::types::{BvhNode, InstanceHitRecord, Ray};

/// Largest instance count: the traversal marks leaves with the top bit.
pub(crate) const MAX_INSTANCES: usize = (1 << 31) - 1;

/// An instance with what the traversal derives from its transform.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    pub(crate) instance: Instance,
    pub(crate) placement: Placement,
}

/// Meshes (as shared [`Blas`]es) and instances of them, with the top-level BVH.
///
/// ```
/// use std::sync::Arc;
/// use glam::{Mat4, Vec3};
/// use raypick::instances::{Blas, Instance, InstanceScene};
/// use raypick::{Ray, TraceOptions};
/// use raypick_testkit::fixtures;
///
/// let cube = Arc::new(Blas::build(&fixtures::cube()));
/// let mut scene = InstanceScene::new(
///     vec![cube],
///     vec![
///         Instance::new(0, Mat4::from_translation(Vec3::new(0.0, 0.0, -5.0)), 7),
///         Instance::new(0, Mat4::from_translation(Vec3::new(0.0, 0.0, -9.0)), 8),
///     ],
/// )?;
/// let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z);
/// let hit = scene.trace(&[ray], &TraceOptions::default())[0];
/// assert_eq!(hit.id, 7);
/// // Moving an instance refits the top-level tree only.
/// scene.set_transform(0, Mat4::from_translation(Vec3::new(3.0, 0.0, -5.0)))?;
/// assert_eq!(scene.trace(&[ray], &TraceOptions::default())[0].id, 8);
/// # Ok::<(), raypick::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct InstanceScene {
    meshes: Vec<Arc<Blas>>,
    placed: Vec<Placed>,
    tlas: Tlas,
}

impl InstanceScene {
    /// A scene of `instances` of `meshes`; builds the TLAS. Fails on a bad
    /// transform or mesh index (see [`InstanceError`]).
    pub fn new(meshes: Vec<Arc<Blas>>, instances: Vec<Instance>) -> Result<Self, InstanceError> {
        if instances.len() > MAX_INSTANCES {
            return Err(InstanceError::TooManyInstances(instances.len()));
        }
        let placed = instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                if instance.mesh >= meshes.len() {
                    return Err(InstanceError::UnknownMesh {
                        instance: i,
                        mesh: instance.mesh,
                        meshes: meshes.len(),
                    });
                }
                Ok(Placed {
                    instance: *instance,
                    placement: Placement::new(&instance.transform, i)?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut scene = Self {
            meshes,
            placed,
            tlas: Tlas::default(),
        };
        scene.rebuild_tlas();
        Ok(scene)
    }

    /// Builds a [`Blas`] for each mesh, then the scene.
    pub fn from_meshes(meshes: &[Mesh], instances: Vec<Instance>) -> Result<Self, InstanceError> {
        let blases = meshes.iter().map(|m| Arc::new(Blas::build(m))).collect();
        Self::new(blases, instances)
    }

    /// The meshes' BLASes.
    pub fn meshes(&self) -> &[Arc<Blas>] {
        &self.meshes
    }

    /// Number of instances.
    pub fn len(&self) -> usize {
        self.placed.len()
    }

    /// Whether the scene has no instances.
    pub fn is_empty(&self) -> bool {
        self.placed.is_empty()
    }

    /// Instance `index`, if there is one.
    pub fn instance(&self, index: usize) -> Option<&Instance> {
        self.placed.get(index).map(|p| &p.instance)
    }

    /// All instances, in index order.
    pub fn instances(&self) -> impl ExactSizeIterator<Item = &Instance> + '_ {
        self.placed.iter().map(|p| &p.instance)
    }

    /// Moves instance `index`: validates the transform and refits the TLAS boxes on
    /// the instance's path to the root. No BLAS is rebuilt or copied. A refit keeps
    /// the tree's shape; after many large moves [`InstanceScene::rebuild_tlas`]
    /// restores its quality (the answers are the same either way).
    pub fn set_transform(
        &mut self,
        index: usize,
        transform: glam::Mat4,
    ) -> Result<(), InstanceError> {
        self.set_transform_nodes(index, transform).map(|_| ())
    }

    /// [`InstanceScene::set_transform`], returning the TLAS nodes that changed.
    pub(crate) fn set_transform_nodes(
        &mut self,
        index: usize,
        transform: glam::Mat4,
    ) -> Result<Vec<u32>, InstanceError> {
        let instances = self.placed.len();
        let placement = Placement::new(&transform, index)?;
        let placed = self
            .placed
            .get_mut(index)
            .ok_or(InstanceError::NoSuchInstance {
                instance: index,
                instances,
            })?;
        placed.instance.transform = transform;
        placed.placement = placement;
        Ok(match self.world_box(index) {
            Some(b) => self.tlas.refit(index, b),
            None => Vec::new(),
        })
    }

    /// Rebuilds the TLAS from the current transforms.
    pub fn rebuild_tlas(&mut self) {
        let boxes: Vec<_> = (0..self.placed.len()).map(|i| self.world_box(i)).collect();
        self.tlas = Tlas::build(&boxes);
    }

    /// The TLAS nodes (node 0 is the root; a leaf child holds one instance index).
    pub fn tlas_nodes(&self) -> &[BvhNode] {
        &self.tlas.nodes
    }

    /// Interior TLAS nodes on its longest root-to-leaf path.
    pub fn tlas_depth(&self) -> usize {
        self.tlas.depth
    }

    /// The world box of every instance that can be hit (the TLAS root's), `None`
    /// when none can.
    pub(crate) fn world_bounds(&self) -> Option<(Vec3, Vec3)> {
        let root = self.tlas.nodes.first()?;
        root.children
            .iter()
            .filter(|c| !c.is_empty())
            .map(|c| (c.lo, c.hi))
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    }

    /// World box of instance `index` (conservative), or `None` if it can never be hit.
    pub fn world_box(&self, index: usize) -> Option<(Vec3, Vec3)> {
        let placed = self.placed.get(index)?;
        let bounds = self.meshes[placed.instance.mesh].bounds()?;
        Some(world_box(&placed.placement, bounds))
    }

    /// The (world) ray in instance `index`'s object space, as both backends compute
    /// it ([`super::object_ray`]), or `None` when it cannot hit anything (no such
    /// instance, or the transformed ray overflows).
    pub fn object_ray(&self, index: usize, ray: &Ray) -> Option<Ray> {
        let placed = self.placed.get(index)?;
        let local = object_ray(&placed.placement.inverse_rows, ray);
        is_live(&local).then_some(local)
    }

    pub(crate) fn placed(&self) -> &[Placed] {
        &self.placed
    }

    pub(crate) fn blas_of(&self, index: usize) -> &Blas {
        &self.meshes[self.placed[index].instance.mesh]
    }

    /// The full hit of `ray` (world space) from the traversal's record.
    pub(crate) fn finish(&self, ray: &Ray, raw: &InstanceHitRecord) -> InstanceHit {
        let Some(placed) = self.placed.get(raw.instance as usize) else {
            return InstanceHit::MISS;
        };
        if raw.prim == crate::types::MISS {
            return InstanceHit::MISS;
        }
        let blas = &self.meshes[placed.instance.mesh];
        let normal = placed.placement.world_normal(blas.normal(raw.prim));
        InstanceHit {
            t: raw.t,
            u: raw.u,
            v: raw.v,
            prim: raw.prim,
            instance: raw.instance,
            id: placed.instance.id,
            point: ray.origin + raw.t * ray.dir,
            normal: normal.as_vec3(),
            front_face: ray.dir.as_dvec3().dot(normal) < 0.0,
        }
    }
}
