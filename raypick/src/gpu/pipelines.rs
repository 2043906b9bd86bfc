//! Compute pipelines, built once per context.

use std::borrow::Cow;

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::options::{Mode, NodeLayout};
use crate::shaders;
use crate::types::Query;

/// Every compute pipeline raypick uses: the tracing stages once per query and
/// triangle test (the `QUERY` and `MODE` pipeline constants). The closest-hit
/// pipelines of the default test are built with the context, the others on first
/// use.
#[derive(Debug)]
pub(crate) struct Pipelines {
    /// `shaders/brute_force.wgsl`.
    brute_force: Stage,
    /// Its `brute_force_merge` entry point, built on first use (see
    /// [`Pipelines::brute_force_merge`]).
    brute_force_merge: OnceLock<Stage>,
    /// `shaders/wide_bvh_traverse.wgsl`.
    wide_bvh_traverse: Stage,
    /// `shaders/bvh_traverse.wgsl`, compiled on first use (meshes read from a
    /// renderer's buffers, and meshes uploaded with binary nodes).
    bvh_traverse: OnceLock<Stage>,
    /// `shaders/instance_traverse.wgsl` (nearest or any hit) per mesh node layout
    /// (indexed by [`NodeLayout`]), compiled on first use (see
    /// [`Pipelines::instance_traverse`]).
    instance_traverse: [OnceLock<Stage>; 2],
    /// `shaders/ray_query.wgsl`, compiled on first use (see
    /// [`Pipelines::ray_query`]; only a device with ray queries can).
    ray_query: OnceLock<Stage>,
    /// `shaders/instance_ray_query.wgsl` (nearest or any hit), compiled on first use
    /// (see [`Pipelines::instance_ray_query`]).
    instance_ray_query: OnceLock<Stage>,
    /// `shaders/gather.wgsl`.
    pub(crate) gather: wgpu::ComputePipeline,
    /// `shaders/refit.wgsl`.
    pub(crate) refit: wgpu::ComputePipeline,
}

/// One compute stage: its module and a pipeline per query and triangle test.
#[derive(Debug)]
struct Stage {
    name: &'static str,
    entry: &'static str,
    module: wgpu::ShaderModule,
    /// Indexed by [`Query`], then [`Mode`] (their discriminants).
    pipelines: [[OnceLock<wgpu::ComputePipeline>; 2]; 3],
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
            wide_bvh_traverse: Stage::new(
                device,
                "wide_bvh_traverse",
                shaders::wide_bvh_traverse_module(),
                shaders::WIDE_BVH_TRAVERSE_ENTRY,
            )?,
            brute_force_merge: Default::default(),
            bvh_traverse: Default::default(),
            instance_traverse: Default::default(),
            ray_query: Default::default(),
            instance_ray_query: Default::default(),
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
        };
        pipelines.brute_force(device, Query::Closest, Mode::default())?;
        pipelines.bvh_traverse(
            device,
            NodeLayout::default(),
            Query::Closest,
            Mode::default(),
        )?;
        Ok(pipelines)
    }

    /// The brute-force pipeline of `query` and `mode`.
    pub(crate) fn brute_force(
        &self,
        device: &wgpu::Device,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        self.brute_force.pipeline(device, query, mode)
    }

    /// The pipeline merging the rows of a split brute-force dispatch of `query` and
    /// `mode`, built the first time a batch has too few rays to fill the device (from
    /// the brute-force stage's module, compiled once).
    pub(crate) fn brute_force_merge(
        &self,
        device: &wgpu::Device,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        self.brute_force_merge
            .get_or_init(|| {
                self.brute_force
                    .sibling("brute_force_merge", shaders::BRUTE_FORCE_MERGE_ENTRY)
            })
            .pipeline(device, query, mode)
    }

    /// The BVH traversal pipeline of `layout`, `query` and `mode`.
    pub(crate) fn bvh_traverse(
        &self,
        device: &wgpu::Device,
        layout: NodeLayout,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        match layout {
            NodeLayout::Wide => &self.wide_bvh_traverse,
            NodeLayout::Binary => {
                Stage::on_first_use(&self.bvh_traverse, device, "bvh_traverse", || {
                    (shaders::bvh_traverse_module(), shaders::BVH_TRAVERSE_ENTRY)
                })?
            }
        }
        .pipeline(device, query, mode)
    }

    /// The instance traversal pipeline for meshes in `layout`, of `query` and `mode`,
    /// compiled the first time such an instance scene is traced (contexts that never
    /// trace one do not pay for it).
    pub(crate) fn instance_traverse(
        &self,
        device: &wgpu::Device,
        layout: NodeLayout,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        let slot = &self.instance_traverse[layout as usize];
        Stage::on_first_use(slot, device, "instance_traverse", || {
            (
                shaders::instance_traverse_module(layout),
                shaders::INSTANCE_TRAVERSE_ENTRY,
            )
        })?
        .pipeline(device, query, mode)
    }

    /// The ray-query pipeline of `query` and `mode`, compiled the first time a mesh
    /// uploaded with [`Accel::RayQuery`](crate::Accel::RayQuery) is traced.
    pub(crate) fn ray_query(
        &self,
        device: &wgpu::Device,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        Stage::on_first_use(&self.ray_query, device, "ray_query", || {
            (shaders::ray_query_module(), shaders::RAY_QUERY_ENTRY)
        })?
        .pipeline(device, query, mode)
    }

    /// The instance ray-query pipeline of `query` and `mode`, compiled the first time an
    /// instance scene uploaded with [`Accel::RayQuery`](crate::Accel::RayQuery) is
    /// traced.
    pub(crate) fn instance_ray_query(
        &self,
        device: &wgpu::Device,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        Stage::on_first_use(
            &self.instance_ray_query,
            device,
            "instance_ray_query",
            || {
                (
                    shaders::instance_ray_query_module(),
                    shaders::INSTANCE_RAY_QUERY_ENTRY,
                )
            },
        )?
        .pipeline(device, query, mode)
    }
}

impl Stage {
    /// The stage in `slot`, compiled from `source()` (module, entry point) the first
    /// time it is asked for.
    fn on_first_use<'a>(
        slot: &'a OnceLock<Stage>,
        device: &wgpu::Device,
        name: &'static str,
        source: impl FnOnce() -> (String, &'static str),
    ) -> Result<&'a Stage> {
        if let Some(stage) = slot.get() {
            return Ok(stage);
        }
        let (module, entry) = source();
        let built = Stage::new(device, name, module, entry)?;
        Ok(slot.get_or_init(|| built))
    }

    /// A stage of another entry point of this stage's module (not compiled again).
    fn sibling(&self, name: &'static str, entry: &'static str) -> Self {
        Self {
            name,
            entry,
            module: self.module.clone(),
            pipelines: Default::default(),
        }
    }

    /// Compiles the module, turning a validation error into [`Error::Pipeline`].
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
            Some(source) => Err(Error::Pipeline {
                stage: format!("{name} (module)"),
                source,
            }),
            None => Ok(Self {
                name,
                entry,
                module,
                pipelines: Default::default(),
            }),
        }
    }

    /// The pipeline with `QUERY = query` and `MODE = mode`, built on first use.
    fn pipeline(
        &self,
        device: &wgpu::Device,
        query: Query,
        mode: Mode,
    ) -> Result<&wgpu::ComputePipeline> {
        let slot = &self.pipelines[query as usize][mode as usize];
        if let Some(pipeline) = slot.get() {
            return Ok(pipeline);
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let constants = [
            ("QUERY", f64::from(query as u32)),
            ("MODE", f64::from(mode as u32)),
        ];
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
            Some(source) => Err(Error::Pipeline {
                stage: format!("{} ({query:?}, {mode:?})", self.name),
                source,
            }),
            None => Ok(slot.get_or_init(|| pipeline)),
        }
    }
}

/// Compiles one compute stage, turning a validation error into [`Error::Pipeline`].
pub(crate) fn pipeline(
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
        Some(source) => Err(Error::Pipeline {
            stage: name.to_string(),
            source,
        }),
        None => Ok(pipeline),
    }
}
