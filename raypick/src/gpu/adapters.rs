//! Every wgpu adapter the machine offers, its limits, and the one
//! [`Backend::Auto`](crate::Backend::Auto) and [`Backend::Gpu`](crate::Backend::Gpu)
//! would use (behind `raypick info`).

use super::choose::AdapterKinds;
use super::context::{AdapterSummary, GpuContext, GpuOptions};

/// A wgpu instance on the given graphics APIs only.
pub(crate) fn instance_on(backends: wgpu::Backends) -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    descriptor.backends = backends;
    wgpu::Instance::new(descriptor)
}

/// The adapters a GPU context chooses from, on `backends`: those of the primary
/// graphics APIs (Vulkan, Metal, Direct3D 12), and OpenGL's only when none of those
/// is one `kinds` accepts.
///
/// OpenGL is the fallback API: where a primary API has the GPU, OpenGL's adapter
/// for it ranks after it, and merely starting OpenGL can cost: with NVIDIA's Linux
/// driver, a process whose threads each started it while others traced on Vulkan
/// has been seen to stall.
pub(crate) async fn find(
    backends: wgpu::Backends,
    power: wgpu::PowerPreference,
    kinds: AdapterKinds,
) -> Vec<wgpu::Adapter> {
    let primary = backends & wgpu::Backends::PRIMARY;
    let mut found = if primary.is_empty() {
        Vec::new()
    } else {
        instance_on(primary).enumerate_adapters(primary).await
    };
    let fallback = backends & wgpu::Backends::SECONDARY;
    let acceptable = |adapter: &wgpu::Adapter| {
        let info = adapter.get_info();
        super::choose::rank(info.device_type, info.backend, power, kinds).is_some()
    };
    if !fallback.is_empty() && !found.iter().any(acceptable) {
        found.extend(instance_on(fallback).enumerate_adapters(fallback).await);
    }
    found
}

/// The device limits that bound raypick's batches and dispatches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ComputeLimits {
    /// Largest storage buffer binding, in bytes (splits meshes and ray batches).
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer, in bytes.
    pub max_buffer_size: u64,
    /// Most workgroups in one dimension of a dispatch (splits ray batches).
    pub max_compute_workgroups_per_dimension: u32,
    /// Most invocations in one workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Workgroup shared memory, in bytes.
    pub max_compute_workgroup_storage_size: u32,
    /// Most storage buffers one shader stage may bind.
    pub max_storage_buffers_per_shader_stage: u32,
}

impl From<&wgpu::Limits> for ComputeLimits {
    fn from(limits: &wgpu::Limits) -> Self {
        Self {
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
        }
    }
}

/// One adapter wgpu found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AdapterReport {
    /// Name, graphics API, device type and driver.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub summary: AdapterSummary,
    /// The limits raypick depends on.
    pub limits: ComputeLimits,
    /// The optional features raypick uses.
    pub features: AdapterFeatures,
}

/// The optional adapter features raypick uses when they are there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AdapterFeatures {
    /// Hardware ray queries (wgpu's `EXPERIMENTAL_RAY_QUERY`), for
    /// [`Accel::RayQuery`](crate::Accel::RayQuery).
    pub ray_queries: bool,
    /// Timestamp queries (`TIMESTAMP_QUERY`), for GPU kernel time
    /// ([`GpuOptions::timing`](super::GpuOptions::timing)).
    pub timestamps: bool,
}

impl From<wgpu::Features> for AdapterFeatures {
    fn from(features: wgpu::Features) -> Self {
        Self {
            ray_queries: features.contains(wgpu::Features::EXPERIMENTAL_RAY_QUERY),
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
        }
    }
}

/// Every adapter of every graphics API wgpu can use here (as restricted by
/// `WGPU_BACKEND`), in wgpu's order. Empty when there is none.
pub fn list_adapters() -> Vec<AdapterReport> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all());
    pollster::block_on(instance_on(backends).enumerate_adapters(backends))
        .iter()
        .map(|adapter| AdapterReport {
            summary: AdapterSummary::from_info(&adapter.get_info()),
            limits: ComputeLimits::from(&adapter.limits()),
            features: AdapterFeatures::from(adapter.features()),
        })
        .collect()
}

/// The adapter a backend opens, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BackendChoice {
    /// The adapter of the GPU context the backend opens, or `None` when it opens
    /// none ([`Backend::Auto`](crate::Backend::Auto) then traces on the CPU).
    pub adapter: Option<AdapterSummary>,
    /// Why: the adapter's type and rank among those found, or why none was opened
    /// (the error, with its causes).
    pub reason: String,
    /// The acceleration structure a mesh gets there when none is named
    /// ([`Picker::default_accel`](crate::Picker::default_accel)), by its
    /// [`Accel::name`](crate::Accel::name).
    pub accel: &'static str,
    /// Why that one.
    pub accel_reason: String,
}

/// Opens a GPU context the way `backend` does ([`Backend::Auto`](crate::Backend::Auto):
/// hardware adapters only; [`Backend::Gpu`](crate::Backend::Gpu): any) and reports
/// which adapter it got and why, or why it got none. [`Backend::Cpu`](crate::Backend::Cpu)
/// opens no adapter.
pub fn backend_choice(backend: crate::Backend) -> BackendChoice {
    let adapters = match backend {
        crate::Backend::Auto => AdapterKinds::Hardware,
        crate::Backend::Gpu => AdapterKinds::Any,
        crate::Backend::Cpu => {
            return BackendChoice::on_the_cpu("the CPU backend was asked for".to_string());
        }
    };
    let options = GpuOptions {
        adapters: Some(adapters),
        ..GpuOptions::default()
    };
    match GpuContext::with_options(options) {
        Ok(gpu) => BackendChoice {
            adapter: Some(gpu.adapter().clone()),
            reason: gpu.adapter_reason().to_string(),
            accel: gpu.default_accel().name(),
            accel_reason: gpu.default_accel_reason().to_string(),
        },
        Err(e) => BackendChoice::on_the_cpu(e.with_sources()),
    }
}

impl BackendChoice {
    /// No adapter, for `reason`: meshes get the CPU's BVH.
    fn on_the_cpu(reason: String) -> Self {
        Self {
            adapter: None,
            reason,
            accel: crate::Accel::Bvh.name(),
            accel_reason: "the CPU backend traverses a BVH".to_string(),
        }
    }
}
