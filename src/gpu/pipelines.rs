//! Compute pipelines, built once per context.

use std::borrow::Cow;

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::shaders;
use crate::types::{QUERY_ALL, QUERY_ANY, QUERY_CLOSEST};

/// Every compute pipeline raypick uses: each stage once per query (the `QUERY`
/// pipeline constant). The closest-hit pipelines are built with the context, the
/// others on first use.
#[derive(Debug)]
pub(crate) struct Pipelines {
    /// `shaders/brute_force.wgsl`.
    brute_force: Stage,
    /// `shaders/bvh_traverse.wgsl`.
    bvh_traverse: Stage,
}

/// One compute stage: its module and a pipeline per query.
#[derive(Debug)]
struct Stage {
    name: &'static str,
    entry: &'static str,
    module: wgpu::ShaderModule,
    /// Indexed by query ([`QUERY_CLOSEST`], [`QUERY_ANY`], [`QUERY_ALL`]).
    pipelines: [OnceLock<wgpu::ComputePipeline>; 3],
}

impl Pipelines {
    pub(crate) fn new(device: &wgpu::Device) -> Result<Self> {
        let pipelines = Self {
            brute_force: Stage::new(
                device,
                "brute_force",
                shaders::brute_force_module(),
                shaders::BRUTE_FORCE_ENTRY,
            )?,
            bvh_traverse: Stage::new(
                device,
                "bvh_traverse",
                shaders::bvh_traverse_module(),
                shaders::BVH_TRAVERSE_ENTRY,
            )?,
        };
        pipelines.brute_force(device, QUERY_CLOSEST)?;
        pipelines.bvh_traverse(device, QUERY_CLOSEST)?;
        Ok(pipelines)
    }

    /// The brute-force pipeline of `query`.
    pub(crate) fn brute_force(
        &self,
        device: &wgpu::Device,
        query: u32,
    ) -> Result<&wgpu::ComputePipeline> {
        self.brute_force.pipeline(device, query)
    }

    /// The BVH traversal pipeline of `query`.
    pub(crate) fn bvh_traverse(
        &self,
        device: &wgpu::Device,
        query: u32,
    ) -> Result<&wgpu::ComputePipeline> {
        self.bvh_traverse.pipeline(device, query)
    }
}

impl Stage {
    /// Compiles the module, turning a validation error into [`Error::Gpu`].
    fn new(
        device: &wgpu::Device,
        name: &'static str,
        source: String,
        entry: &'static str,
    ) -> Result<Self> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(Cow::Owned(source)),
        });
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(Error::Gpu(format!("building the {name} module: {e}"))),
            None => Ok(Self {
                name,
                entry,
                module,
                pipelines: Default::default(),
            }),
        }
    }

    /// The pipeline with `QUERY = query`, built on first use.
    fn pipeline(&self, device: &wgpu::Device, query: u32) -> Result<&wgpu::ComputePipeline> {
        debug_assert!([QUERY_CLOSEST, QUERY_ANY, QUERY_ALL].contains(&query));
        let slot = &self.pipelines[query as usize];
        if let Some(pipeline) = slot.get() {
            return Ok(pipeline);
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let constants = [("QUERY", f64::from(query))];
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(self.name),
            layout: None,
            module: &self.module,
            entry_point: Some(self.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        });
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(Error::Gpu(format!(
                "building the {} pipeline (query {query}): {e}",
                self.name
            ))),
            None => Ok(slot.get_or_init(|| pipeline)),
        }
    }
}
