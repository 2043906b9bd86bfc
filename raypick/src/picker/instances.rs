//! Instance scenes through a [`Picker`]: prepared for its backend, traced with the
//! same answers on both, and carried on by the CPU like meshes when
//! [`Backend::Auto`] loses the GPU.

use glam::{DVec3, Mat4};

use super::{Backend, Picker};
use crate::cpu::CpuBackend;
use crate::error::Result;
use crate::gpu::{GpuContext, GpuInstanceScene};
use crate::instances::{InstanceHit, InstanceScene};
use crate::options::TraceOptions;
use crate::world::TraceRay;
use crate::{Accel, Ray};

/// An instance scene prepared for a [`Picker`]'s backend (uploaded on the GPU).
#[derive(Debug)]
pub struct PickInstances {
    content: Content,
}

/// What a [`PickInstances`] holds.
#[derive(Debug)]
enum Content {
    Cpu(InstanceScene),
    Gpu(Box<GpuInstanceScene>),
}

impl PickInstances {
    /// The scene (the host copy, for a scene on the GPU).
    pub fn scene(&self) -> &InstanceScene {
        match &self.content {
            Content::Cpu(scene) => scene,
            Content::Gpu(scene) => scene.scene(),
        }
    }

    /// Where the scene was prepared: [`Backend::Cpu`] or [`Backend::Gpu`].
    pub fn backend(&self) -> Backend {
        match self.content {
            Content::Cpu(_) => Backend::Cpu,
            Content::Gpu(_) => Backend::Gpu,
        }
    }

    /// The acceleration structure the scene was prepared with: [`Accel::Bvh`] on the
    /// CPU, the GPU scene's otherwise ([`GpuInstanceScene::accel`]).
    pub fn accel(&self) -> Accel {
        match &self.content {
            Content::Cpu(_) => Accel::Bvh,
            Content::Gpu(scene) => scene.accel(),
        }
    }

    /// The GPU context id of a scene on the GPU, `None` for a CPU scene.
    fn gpu_context(&self) -> Option<u64> {
        match &self.content {
            Content::Cpu(_) => None,
            Content::Gpu(scene) => Some(scene.context_id),
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
        self.prepare_instances(scene, None)
    }

    /// Prepares an instance scene with the given acceleration structure
    /// ([`GpuContext::upload_instances_with`](crate::gpu::GpuContext::upload_instances_with)).
    /// [`Accel::RayQuery`] needs the GPU's hardware ray queries: on the CPU it fails
    /// with [`Error::NoRayQueries`](crate::Error::NoRayQueries), and [`Accel::Brute`]
    /// fails everywhere with [`Error::Unsupported`](crate::Error::Unsupported);
    /// [`Accel::Bvh`] gives the same answers everywhere. A scene already uploaded
    /// with ray queries keeps being traced after a fallback, from its host copy.
    pub fn upload_instances_with(
        &self,
        scene: InstanceScene,
        accel: Accel,
    ) -> Result<PickInstances> {
        self.prepare_instances(scene, Some(accel))
    }

    /// Prepares `scene` with `accel`, or the GPU's default for instance scenes.
    fn prepare_instances(
        &self,
        scene: InstanceScene,
        accel: Option<Accel>,
    ) -> Result<PickInstances> {
        let upload = |gpu: &crate::gpu::GpuContext, scene| match accel {
            Some(accel) => gpu.upload_instances_with(scene, accel),
            None => gpu.upload_instances(scene),
        };
        let content = match self.live_gpu() {
            None => Content::Cpu(scene),
            Some(gpu) if !self.auto => Content::Gpu(Box::new(upload(gpu, scene)?)),
            // Kept until the upload succeeds: the CPU traces it after a fallback.
            Some(gpu) => match upload(gpu, scene.clone()) {
                Ok(uploaded) => Content::Gpu(Box::new(uploaded)),
                Err(e) if self.falls_back_on(&e) => {
                    self.fall_back(&e);
                    Content::Cpu(scene)
                }
                Err(e) => return Err(e),
            },
        };
        if let Content::Cpu(_) = content {
            match accel {
                Some(Accel::RayQuery) => {
                    return Err(crate::Error::NoRayQueries("the CPU backend".into()));
                }
                Some(Accel::Brute) => {
                    return Err(crate::Error::Unsupported(
                        crate::gpu::NO_BRUTE_INSTANCES.into(),
                    ));
                }
                _ => {}
            }
        }
        Ok(PickInstances { content })
    }

    /// Traces rays of either precision through an instance scene (f64 rays are
    /// rounded to f32: an instance scene has no f64 origin); one hit per ray.
    pub fn trace_instances<R: TraceRay>(
        &self,
        scene: &PickInstances,
        rays: &[R],
        options: &TraceOptions,
    ) -> Result<Vec<InstanceHit>> {
        self.on_instances(
            scene,
            rays,
            |gpu, uploaded, rays| gpu.trace_instances(uploaded, rays, options),
            |cpu, scene, rays| cpu.trace_instances(scene, rays, options),
        )
    }

    /// Whether each ray (of either precision) hits anything in an instance scene:
    /// `true` exactly when [`Picker::trace_instances`] gives it a hit; each ray stops
    /// at its first hit, so shadow and visibility rays cost less than a trace.
    pub fn occluded_instances<R: TraceRay>(
        &self,
        scene: &PickInstances,
        rays: &[R],
        options: &TraceOptions,
    ) -> Result<Vec<bool>> {
        self.on_instances(
            scene,
            rays,
            |gpu, uploaded, rays| gpu.occluded_instances(uploaded, rays, options),
            |cpu, scene, rays| cpu.occluded_instances(scene, rays, options),
        )
    }

    /// Runs a query over `rays` (f64 ones rounded to f32) on the scene's backend:
    /// `gpu` for a scene on a live GPU, else `cpu`, after a fallback too.
    fn on_instances<R: TraceRay, T>(
        &self,
        scene: &PickInstances,
        rays: &[R],
        gpu: impl FnOnce(&GpuContext, &GpuInstanceScene, &[Ray]) -> Result<Vec<T>>,
        cpu: impl FnOnce(&CpuBackend, &InstanceScene, &[Ray]) -> Vec<T>,
    ) -> Result<Vec<T>> {
        let rays = R::all_to_local(rays, DVec3::ZERO);
        if let (Some(live), Content::Gpu(uploaded)) = (self.live_gpu(), &scene.content) {
            match gpu(live, uploaded, &rays) {
                Err(e) if self.falls_back_on(&e) => self.fall_back(&e),
                other => return other,
            }
        }
        self.check_cpu_path(scene.gpu_context())?;
        Ok(cpu(self.cpu_backend(), scene.scene(), &rays))
    }

    /// Moves instance `index` of a prepared scene (a TLAS refit; on the GPU, a few
    /// small buffer writes before the next trace). After a fallback to the CPU the
    /// scene continues from its host copy.
    pub fn set_instance_transform(
        &self,
        scene: &mut PickInstances,
        index: usize,
        transform: Mat4,
    ) -> Result<()> {
        if self.live_gpu().is_none() {
            self.check_cpu_path(scene.gpu_context())?;
            if let Content::Gpu(uploaded) = &scene.content {
                scene.content = Content::Cpu(uploaded.scene().clone());
            }
        }
        match &mut scene.content {
            Content::Cpu(cpu) => {
                self.check_cpu_path(None)?;
                Ok(cpu.set_transform(index, transform)?)
            }
            Content::Gpu(uploaded) => {
                let gpu = self.live_gpu().ok_or(crate::Error::WrongBackend)?;
                uploaded.check(gpu)?;
                uploaded.set_transform(index, transform)
            }
        }
    }
}
