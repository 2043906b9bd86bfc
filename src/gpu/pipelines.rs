//! Compute pipelines, built once per context.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::shaders;

/// Every compute pipeline raypick uses.
#[derive(Debug)]
pub(crate) struct Pipelines {
    /// `shaders/brute_force.wgsl`.
    pub(crate) brute_force: wgpu::ComputePipeline,
}

impl Pipelines {
    pub(crate) fn new(device: &wgpu::Device) -> Result<Self> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("raypick brute_force"),
            source: wgpu::ShaderSource::Wgsl(Cow::Owned(shaders::brute_force_module())),
        });
        let brute_force = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("raypick brute_force"),
            layout: None,
            module: &module,
            entry_point: Some(shaders::BRUTE_FORCE_ENTRY),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Gpu(format!(
                "building the brute_force pipeline: {e}"
            )));
        }
        Ok(Self { brute_force })
    }
}
