//! Compute pipelines, built once per context.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::shaders;

/// Every compute pipeline raypick uses.
#[derive(Debug)]
pub(crate) struct Pipelines {
    /// `shaders/brute_force.wgsl`.
    pub(crate) brute_force: wgpu::ComputePipeline,
    /// `shaders/bvh_traverse.wgsl`.
    pub(crate) bvh_traverse: wgpu::ComputePipeline,
    /// `shaders/instance_traverse.wgsl`, compiled on first use (see
    /// [`Pipelines::instance_traverse`]).
    instance_traverse: std::sync::OnceLock<wgpu::ComputePipeline>,
    /// `shaders/gather.wgsl`.
    pub(crate) gather: wgpu::ComputePipeline,
    /// `shaders/refit.wgsl`.
    pub(crate) refit: wgpu::ComputePipeline,
}

impl Pipelines {
    pub(crate) fn new(device: &wgpu::Device) -> Result<Self> {
        Ok(Self {
            brute_force: pipeline(
                device,
                "brute_force",
                shaders::brute_force_module(),
                shaders::BRUTE_FORCE_ENTRY,
            )?,
            bvh_traverse: pipeline(
                device,
                "bvh_traverse",
                shaders::bvh_traverse_module(),
                shaders::BVH_TRAVERSE_ENTRY,
            )?,
            instance_traverse: Default::default(),
            gather: pipeline(
                device,
                "gather",
                shaders::gather_module(),
                shaders::GATHER_ENTRY,
            )?,
            refit: pipeline(
                device,
                "refit",
                shaders::refit_module(),
                shaders::REFIT_ENTRY,
            )?,
        })
    }

    /// The instance traversal pipeline, compiled the first time an instance scene
    /// is traced (contexts that never trace one do not pay for it).
    pub(crate) fn instance_traverse(
        &self,
        device: &wgpu::Device,
    ) -> Result<&wgpu::ComputePipeline> {
        if let Some(built) = self.instance_traverse.get() {
            return Ok(built);
        }
        let built = pipeline(
            device,
            "instance_traverse",
            shaders::instance_traverse_module(),
            shaders::INSTANCE_TRAVERSE_ENTRY,
        )?;
        Ok(self.instance_traverse.get_or_init(|| built))
    }
}

/// Compiles one compute stage, turning a validation error into [`Error::Gpu`].
fn pipeline(
    device: &wgpu::Device,
    name: &str,
    source: String,
    entry: &str,
) -> Result<wgpu::ComputePipeline> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(Cow::Owned(source)),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(name),
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        Some(e) => Err(Error::Gpu(format!("building the {name} pipeline: {e}"))),
        None => Ok(pipeline),
    }
}
