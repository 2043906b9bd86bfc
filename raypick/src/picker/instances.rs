//! Instance scenes through a [`Picker`]: prepared for its backend, traced with the
//! same answers on both.

use glam::Mat4;

use crate::error::{Error, Result};
use crate::gpu::GpuInstanceScene;
use crate::instances::{InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::picker::Picker;
use crate::types::Ray;

/// An instance scene prepared for a [`Picker`]'s backend.
#[derive(Debug)]
pub enum PickInstances {
    /// Traced on the CPU.
    Cpu(InstanceScene),
    /// Uploaded to the GPU.
    Gpu(Box<GpuInstanceScene>),
}

impl PickInstances {
    /// The scene (the CPU copy, for a GPU scene).
    pub fn scene(&self) -> &InstanceScene {
        match self {
            PickInstances::Cpu(scene) => scene,
            PickInstances::Gpu(scene) => scene.scene(),
        }
    }
}

impl Picker {
    /// Prepares an instance scene for this picker's backend (uploads it on the GPU).
    ///
    /// ```
    /// use glam::{Mat4, Vec3};
    /// use raypick::instances::{Instance, InstanceScene};
    /// use raypick::{Backend, Picker, Ray, TraceOptions};
    /// use raypick_testkit::fixtures;
    ///
    /// let picker = Picker::new(Backend::Cpu)?;
    /// let cubes = (0..3)
    ///     .map(|i| Instance::new(0, Mat4::from_translation(Vec3::X * 4.0 * i as f32), 10 + i))
    ///     .collect();
    /// let mut cubes = picker.upload_instances(InstanceScene::from_meshes(&[fixtures::cube()], cubes)?)?;
    /// let ray = Ray::new(Vec3::new(8.0, 0.0, 5.0), Vec3::NEG_Z);
    /// assert_eq!(picker.trace_instances(&cubes, &[ray], &TraceOptions::default())?[0].id, 12);
    /// picker.set_instance_transform(&mut cubes, 2, Mat4::from_translation(Vec3::Y * 9.0))?;
    /// assert!(!picker.trace_instances(&cubes, &[ray], &TraceOptions::default())?[0].is_hit());
    /// # Ok::<(), raypick::Error>(())
    /// ```
    pub fn upload_instances(&self, scene: InstanceScene) -> Result<PickInstances> {
        match self.gpu() {
            Some(gpu) => Ok(PickInstances::Gpu(Box::new(gpu.upload_instances(scene)?))),
            None => Ok(PickInstances::Cpu(scene)),
        }
    }

    /// Traces `rays` through an instance scene; one hit per ray.
    pub fn trace_instances(
        &self,
        scene: &PickInstances,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Vec<InstanceHit>> {
        match (scene, self.cpu(), self.gpu()) {
            (PickInstances::Cpu(scene), Some(cpu), _) => {
                Ok(cpu.trace_instances(scene, rays, options))
            }
            (PickInstances::Gpu(scene), _, Some(gpu)) => gpu.trace_instances(scene, rays, options),
            _ => Err(Error::WrongBackend),
        }
    }

    /// Moves instance `index` of a prepared scene (a TLAS refit; on the GPU, a few
    /// small buffer writes).
    pub fn set_instance_transform(
        &self,
        scene: &mut PickInstances,
        index: usize,
        transform: Mat4,
    ) -> Result<()> {
        match (scene, self.gpu()) {
            (PickInstances::Cpu(scene), None) => Ok(scene.set_transform(index, transform)?),
            (PickInstances::Gpu(scene), Some(_)) => scene.set_transform(index, transform),
            _ => Err(Error::WrongBackend),
        }
    }
}
