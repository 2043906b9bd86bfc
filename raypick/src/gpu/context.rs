//! The GPU context: device, queue, limits and pipelines, created once and reused for
//! every mesh and ray batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::choose::{AdapterKinds, choose};
use super::pipelines::Pipelines;
use super::timing::{GpuTimes, Timer};
use super::trace::Scratch;
use crate::error::{Error, Result};
use crate::options::NodeLayout;

/// Options for creating a [`GpuContext`].
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Adapter preference when raypick creates its own device.
    pub power_preference: wgpu::PowerPreference,
    /// Lowers the largest storage binding raypick uses (bytes). Meshes and ray
    /// batches larger than this are split across bindings and dispatches. `None`
    /// uses the device limit.
    pub max_binding_bytes: Option<u64>,
    /// Most rays traced per dispatch (`None`: 1 Mi rays, or fewer if the device
    /// limits require).
    pub max_rays_per_dispatch: Option<usize>,
    /// Most triangles one dispatch tests each ray against (`None`:
    /// [`DEFAULT_MAX_TRIANGLES_PER_DISPATCH`]). Larger meshes take several dispatches.
    pub max_triangles_per_dispatch: Option<u32>,
    /// Most loop steps (node visits plus triangle tests) of one ray's BVH traversal
    /// on the GPU (`None`: [`DEFAULT_MAX_TRAVERSAL_STEPS`]); rays that need more are
    /// completed on the CPU.
    pub max_traversal_steps: Option<u32>,
    /// The node layout BVH meshes are uploaded with ([`GpuContext::upload_bvh`], and
    /// the meshes of instance scenes; default [`NodeLayout::Binary`]). Both give the
    /// same hits; meshes read from a renderer's buffers always use
    /// [`NodeLayout::Binary`], which the GPU refits in place.
    pub node_layout: NodeLayout,
    /// Most entries of one ray's stack in the eight-wide BVH traversal on the GPU
    /// (`None`, or anything larger: [`MAX_TRAVERSAL_STACK`]); rays that need more are
    /// completed on the CPU. Lowering it only sends more rays there.
    pub max_traversal_stack: Option<u32>,
    /// Most bytes of GPU memory one mesh may take (`None`: no limit of raypick's own;
    /// the device's memory still is one). A larger mesh fails to upload with
    /// [`Error::OutOfMemory`], which [`Backend::Auto`](crate::Backend::Auto) answers by
    /// tracing on the CPU.
    pub max_mesh_bytes: Option<u64>,
    /// The graphics APIs to look for adapters on (`None`: every API, as restricted by
    /// the `WGPU_BACKEND` environment variable). `Some(wgpu::Backends::empty())` finds
    /// no adapter at all.
    pub backends: Option<wgpu::Backends>,
    /// Which adapters may be opened (`None`: hardware GPUs only for
    /// [`Backend::Auto`](crate::Backend::Auto), any adapter otherwise; see
    /// [`AdapterKinds`]).
    pub adapters: Option<AdapterKinds>,
    /// Measure where traces (of meshes and of instance scenes) spend their time
    /// ([`GpuContext::take_times`]): GPU time of each compute pass from timestamp
    /// queries where the adapter has them (`Features::TIMESTAMP_QUERY`), and host
    /// time submitting, waiting and finishing. Off by default: the timestamps cost
    /// one more small readback per ray batch.
    pub timing: bool,
}

/// Default loop steps of one ray's BVH traversal. Mesa's llvmpipe ends a shader
/// loop after 65,535 iterations counted over all the loops of a SIMD group of
/// invocations, and one step can take up to about four loop iterations (node, child,
/// triangle and pop loops), so the budget stays well below 65,535 / 4; real meshes
/// need far fewer steps (hundreds), and the rare ray that needs more is finished on
/// the CPU.
pub const DEFAULT_MAX_TRAVERSAL_STEPS: u32 = 8_000;

/// Entries of the eight-wide BVH traversal's stack on the GPU (8 bytes each, in each
/// invocation's private memory). Real meshes need a few dozen at most.
pub const MAX_TRAVERSAL_STACK: u32 = crate::cpu::wide_bvh_traverse::STACK_ENTRIES as u32;

/// Default triangles per dispatch. Mesa's llvmpipe (lavapipe) ends any shader loop
/// after 65,535 iterations in total, which would silently skip triangles; 32,768
/// stays well below that and costs real GPUs nothing measurable.
pub const DEFAULT_MAX_TRIANGLES_PER_DISPATCH: u32 = 32_768;

/// What raypick knows about the adapter it runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AdapterSummary {
    /// Adapter name, e.g. `NVIDIA GeForce RTX 4090` or `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Graphics API backend, e.g. `Vulkan`.
    pub backend: String,
    /// Device type, e.g. `DiscreteGpu` or `Cpu` (a software rasteriser such as lavapipe).
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
}

impl AdapterSummary {
    pub(crate) fn from_info(info: &wgpu::AdapterInfo) -> Self {
        Self {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
        }
    }
}

/// Errors the device reported outside any call (uncaptured errors, device loss).
#[derive(Debug, Default)]
pub(crate) struct ErrorSink(Mutex<Option<SinkError>>);

/// What an [`ErrorSink`] recorded.
#[derive(Clone, Debug)]
enum SinkError {
    Lost(String),
    OutOfMemory(Arc<wgpu::Error>),
    Other(Arc<wgpu::Error>),
}

impl ErrorSink {
    fn record(&self, error: SinkError) {
        log::error!("raypick GPU error: {error:?}");
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Device loss outranks anything recorded before: it is what stays true.
        if slot.is_none() || matches!(error, SinkError::Lost(_)) {
            *slot = Some(error);
        }
    }

    /// Whether the device was lost.
    pub(crate) fn lost(&self) -> bool {
        matches!(
            &*self.0.lock().unwrap_or_else(|p| p.into_inner()),
            Some(SinkError::Lost(_))
        )
    }

    /// The first recorded error, if any (it stays recorded: a lost device stays lost).
    pub(crate) fn check(&self) -> Result<()> {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(SinkError::Lost(m)) => Err(Error::DeviceLost(m.clone())),
            Some(SinkError::OutOfMemory(e)) => Err(driver_out_of_memory(e.clone())),
            Some(SinkError::Other(e)) => Err(Error::Gpu(e.clone())),
            None => Ok(()),
        }
    }
}

/// The crate error for a wgpu error: out of memory, or [`Error::Gpu`] (which
/// [`GpuContext::lost_or`] turns into device loss on a lost device).
pub(crate) fn classify(error: wgpu::Error) -> Error {
    match error {
        wgpu::Error::OutOfMemory { .. } => driver_out_of_memory(Arc::new(error)),
        _ => Error::Gpu(Arc::new(error)),
    }
}

/// [`Error::OutOfMemory`] for the driver's own report.
fn driver_out_of_memory(source: Arc<wgpu::Error>) -> Error {
    Error::OutOfMemory {
        message: "the driver could not allocate".into(),
        source: Some(source),
    }
}

/// What raypick asks of an adapter: its own limits, and with `ray_queries` hardware
/// ray queries ([`wgpu::Features::EXPERIMENTAL_RAY_QUERY`], for
/// [`Accel::RayQuery`](crate::Accel::RayQuery)). wgpu gates the
/// feature behind an opt-in to its experimental features, which raypick gives for
/// this feature alone: its uses are the acceleration structures of
/// `gpu/ray_query.rs` and the stage `shaders/ray_query.wgsl`, whose ray descriptions
/// keep the rules naga's own checks enforce (finite origin and direction,
/// `0 <= tmin <= tmax`, committed distances within the segment).
///
/// With `timing`, also timestamp queries ([`wgpu::Features::TIMESTAMP_QUERY`]) when
/// the adapter has them ([`GpuOptions::timing`]).
fn device_descriptor(
    adapter: &wgpu::Adapter,
    ray_queries: bool,
    timing: bool,
) -> wgpu::DeviceDescriptor<'static> {
    let mut wanted = wgpu::Features::empty();
    if ray_queries {
        wanted |= wgpu::Features::EXPERIMENTAL_RAY_QUERY;
    }
    if timing {
        wanted |= wgpu::Features::TIMESTAMP_QUERY;
    }
    wgpu::DeviceDescriptor {
        label: Some("raypick"),
        required_limits: adapter.limits(),
        required_features: adapter.features() & wanted,
        experimental_features: if ray_queries {
            // SAFETY: wgpu asks callers to acknowledge that its experimental features
            // may have bugs; raypick uses only ray queries, within the rules above.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        },
        ..Default::default()
    }
}

/// A wgpu device and queue with raypick's pipelines built once.
///
/// Create one with [`GpuContext::new`] (raypick picks an adapter) or
/// [`GpuContext::from_device`] (share a renderer's device and queue). Upload meshes
/// with [`GpuContext::upload`] and trace ray batches of any size with
/// [`GpuContext::trace`] or [`GpuContext::trace_async`].
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) pipelines: Pipelines,
    pub(crate) scratch: futures_intrusive::sync::Mutex<Option<Scratch>>,
    pub(crate) errors: Arc<ErrorSink>,
    pub(crate) id: u64,
    adapter: AdapterSummary,
    /// The adapter's device type (hardware or software), for [`GpuContext::default_accel`].
    device_type: wgpu::DeviceType,
    /// Why this adapter was opened (see [`GpuContext::adapter_reason`]).
    why: String,
    /// Where traces spend their time, when [`GpuOptions::timing`] asked for it.
    pub(crate) timer: Option<Timer>,
    max_binding_bytes: u64,
    max_rays_per_dispatch: usize,
    max_triangles_per_dispatch: u32,
    max_traversal_steps: u32,
    max_traversal_stack: u32,
    node_layout: NodeLayout,
    max_mesh_bytes: Option<u64>,
    /// Whether the device has hardware ray queries ([`GpuContext::has_ray_queries`]).
    ray_queries: bool,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter)
            .field("max_binding_bytes", &self.max_binding_bytes)
            .field("max_rays_per_dispatch", &self.max_rays_per_dispatch)
            .field(
                "max_triangles_per_dispatch",
                &self.max_triangles_per_dispatch,
            )
            .field("ray_queries", &self.ray_queries)
            .finish_non_exhaustive()
    }
}

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

impl GpuContext {
    /// Creates a device on the best adapter found (blocking).
    pub fn new() -> Result<Self> {
        pollster::block_on(Self::new_async(GpuOptions::default()))
    }

    /// Creates a device with options (blocking).
    pub fn with_options(options: GpuOptions) -> Result<Self> {
        pollster::block_on(Self::new_async(options))
    }

    /// Creates a device on the best adapter found. Backends can be restricted with
    /// the `WGPU_BACKEND` environment variable (e.g. `vulkan`).
    pub async fn new_async(options: GpuOptions) -> Result<Self> {
        let backends = options
            .backends
            .or_else(wgpu::Backends::from_env)
            .unwrap_or(wgpu::Backends::all());
        let kinds = options.adapters.unwrap_or_default();
        let found = super::adapters::find(backends, options.power_preference, kinds).await;
        let (adapter, why) = match choose(found, options.power_preference, kinds)? {
            Some(chosen) => chosen,
            // No adapter listed: wgpu's own request says why (or finds one that
            // listing does not show, which the same rules then judge).
            None => {
                let adapter = super::adapters::instance_on(backends)
                    .request_adapter(&wgpu::RequestAdapterOptions {
                        power_preference: options.power_preference,
                        ..Default::default()
                    })
                    .await
                    .map_err(Error::NoAdapter)?;
                choose(vec![adapter], options.power_preference, kinds)?
                    .expect("one adapter to choose from")
            }
        };
        let ray_queries = adapter
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_RAY_QUERY);
        let (device, queue) = match adapter
            .request_device(&device_descriptor(&adapter, ray_queries, options.timing))
            .await
        {
            Ok(opened) => opened,
            // A driver that offers ray queries but cannot open a device with them
            // still serves every other acceleration structure.
            Err(e) if ray_queries => {
                log::warn!(
                    "raypick: no hardware ray queries, the device did not open with them: {e}"
                );
                adapter
                    .request_device(&device_descriptor(&adapter, false, options.timing))
                    .await
                    .map_err(Error::Device)?
            }
            Err(e) => return Err(Error::Device(e)),
        };
        let errors = Arc::new(ErrorSink::default());
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            sink.record(match e {
                wgpu::Error::OutOfMemory { .. } => SinkError::OutOfMemory(Arc::new(e)),
                _ => SinkError::Other(Arc::new(e)),
            })
        }));
        let sink = errors.clone();
        device.set_device_lost_callback(move |reason, message| {
            sink.record(SinkError::Lost(format!("{reason:?}: {message}")));
        });
        Self::build(device, queue, &adapter.get_info(), why, errors, options)
    }

    /// Uses a device and queue the caller already has (a renderer's). raypick leaves
    /// the device's error handlers alone; `adapter` is only used for reporting.
    ///
    /// Without its own device-lost handler raypick cannot tell a lost device from
    /// other failures: on a shared device they come back as [`Error::Gpu`] or
    /// [`Error::Readback`] (never a panic), and out-of-memory errors inside raypick's
    /// calls still as [`Error::OutOfMemory`].
    pub fn from_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter: &wgpu::AdapterInfo,
    ) -> Result<Self> {
        Self::build(
            device,
            queue,
            adapter,
            "the caller's own device".to_string(),
            Arc::default(),
            GpuOptions::default(),
        )
    }

    fn build(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: &wgpu::AdapterInfo,
        why: String,
        errors: Arc<ErrorSink>,
        options: GpuOptions,
    ) -> Result<Self> {
        let limits = device.limits();
        let device_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let max_binding_bytes = options
            .max_binding_bytes
            .map_or(device_binding, |b| b.min(device_binding));
        let ray_bytes = std::mem::size_of::<crate::Ray>() as u64;
        let max_rays_per_dispatch = [
            options.max_rays_per_dispatch.unwrap_or(1 << 20) as u64,
            max_binding_bytes / ray_bytes,
            limits.max_compute_workgroups_per_dimension as u64
                * crate::shaders::BRUTE_FORCE_WORKGROUP as u64,
        ]
        .into_iter()
        .min()
        .unwrap_or(1)
        .max(1) as usize;
        let pipelines = Pipelines::new(&device)?;
        let timer = options.timing.then(|| {
            let timestamps = device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
            Timer::new(&device, &queue, timestamps)
        });
        let ray_queries = device
            .features()
            .contains(wgpu::Features::EXPERIMENTAL_RAY_QUERY);
        Ok(Self {
            device,
            queue,
            pipelines,
            scratch: futures_intrusive::sync::Mutex::new(None, false),
            errors,
            id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
            adapter: AdapterSummary::from_info(info),
            device_type: info.device_type,
            why,
            timer,
            max_binding_bytes,
            max_rays_per_dispatch,
            max_triangles_per_dispatch: options
                .max_triangles_per_dispatch
                .unwrap_or(DEFAULT_MAX_TRIANGLES_PER_DISPATCH)
                .max(1),
            max_traversal_steps: options
                .max_traversal_steps
                .unwrap_or(DEFAULT_MAX_TRAVERSAL_STEPS)
                .max(1),
            max_traversal_stack: options
                .max_traversal_stack
                .map_or(MAX_TRAVERSAL_STACK, |entries| {
                    entries.min(MAX_TRAVERSAL_STACK)
                }),
            node_layout: options.node_layout,
            max_mesh_bytes: options.max_mesh_bytes,
            ray_queries,
        })
    }

    /// The adapter this context runs on.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// Where traces (of meshes and of instance scenes) spent their time since the
    /// last call (GPU kernel time when the adapter has timestamp queries; host time
    /// submitting, waiting and finishing), and starts counting again; `None` unless
    /// [`GpuOptions::timing`] was set.
    pub fn take_times(&self) -> Option<GpuTimes> {
        self.timer.as_ref().map(Timer::take)
    }

    /// Whether [`GpuContext::take_times`] includes GPU kernel time (timing was asked
    /// for and the adapter has timestamp queries).
    pub fn has_kernel_timing(&self) -> bool {
        self.timer.as_ref().is_some_and(Timer::has_timestamps)
    }

    /// Why this adapter was opened: its type and rank among the adapters found
    /// (see [`AdapterKinds`]), or that it is the caller's own device.
    pub fn adapter_reason(&self) -> &str {
        &self.why
    }

    /// The acceleration structure [`GpuContext::upload`] and
    /// [`Picker::upload`](crate::Picker::upload) give a mesh:
    /// [`Accel::RayQuery`](crate::Accel::RayQuery) on a hardware GPU with ray queries
    /// ([`GpuContext::has_ray_queries`]), else [`Accel::Bvh`](crate::Accel::Bvh) — also on
    /// a software adapter that has ray queries, where they run slower than the BVH.
    /// [`GpuContext::default_accel_reason`] says which case applies.
    pub fn default_accel(&self) -> crate::Accel {
        super::choose::default_accel(self.device_type, self.ray_queries).0
    }

    /// Why [`GpuContext::default_accel`] is what it is, in a phrase for users.
    pub fn default_accel_reason(&self) -> &'static str {
        super::choose::default_accel(self.device_type, self.ray_queries).1
    }

    /// Whether meshes can be uploaded with [`Accel::RayQuery`](crate::Accel::RayQuery):
    /// the device has wgpu's `EXPERIMENTAL_RAY_QUERY` (requested by
    /// [`GpuContext::new`] whenever the adapter offers it; a renderer's device given to
    /// [`GpuContext::from_device`] has it only if the renderer requested it).
    pub fn has_ray_queries(&self) -> bool {
        self.ray_queries
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Largest storage binding raypick uses, in bytes.
    pub fn max_binding_bytes(&self) -> u64 {
        self.max_binding_bytes
    }

    /// Most rays traced in one dispatch; larger batches are split.
    pub fn max_rays_per_dispatch(&self) -> usize {
        self.max_rays_per_dispatch
    }

    /// Most triangles one dispatch tests; larger meshes take several dispatches.
    pub fn max_triangles_per_dispatch(&self) -> u32 {
        self.max_triangles_per_dispatch
    }

    /// Most loop steps of one ray's BVH traversal on the GPU.
    pub fn max_traversal_steps(&self) -> u32 {
        self.max_traversal_steps
    }

    /// The node layout BVH meshes are uploaded with ([`GpuOptions::node_layout`]).
    pub fn node_layout(&self) -> NodeLayout {
        self.node_layout
    }

    /// Most entries of one ray's stack in the eight-wide BVH traversal on the GPU.
    pub fn max_traversal_stack(&self) -> u32 {
        self.max_traversal_stack
    }

    /// Most bytes of GPU memory one mesh may take, if limited
    /// ([`GpuOptions::max_mesh_bytes`]).
    pub fn max_mesh_bytes(&self) -> Option<u64> {
        self.max_mesh_bytes
    }

    /// Fails with [`Error::OutOfMemory`] when a mesh of `bytes` bytes exceeds
    /// [`GpuContext::max_mesh_bytes`].
    pub(crate) fn check_mesh_bytes(&self, bytes: u64) -> Result<()> {
        match self.max_mesh_bytes {
            Some(max) if bytes > max => Err(Error::OutOfMemory {
                message: format!(
                    "the mesh needs {bytes} bytes of GPU memory, more than the {max} bytes allowed"
                ),
                source: None,
            }),
            _ => Ok(()),
        }
    }

    /// `error`, or [`Error::DeviceLost`] in its place when the device was lost (a
    /// failed readback or poll on a lost device is device loss).
    pub(crate) fn lost_or(&self, error: Error) -> Error {
        match error {
            Error::DeviceLost(_) | Error::OutOfMemory { .. } => error,
            // The recorded loss says why; the failed call only that it failed.
            _ if self.errors.lost() => self.errors.check().err().unwrap_or(error),
            _ => error,
        }
    }

    /// Runs `f` inside validation and out-of-memory error scopes and turns a captured
    /// error into [`Error::OutOfMemory`], [`Error::DeviceLost`] or [`Error::Gpu`].
    pub(crate) fn scoped<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        self.errors.check()?;
        match oom.or(validation) {
            Some(e) => Err(self.lost_or(classify(e))),
            None => Ok(out),
        }
    }
}
