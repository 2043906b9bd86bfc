//! The test GPU: one shared context per test process, and a device opened the way a
//! renderer opens its own. Both are `None` when no adapter opens, unless
//! `RAYPICK_REQUIRE_GPU=1`, which turns a missing adapter into a failure.

use std::sync::OnceLock;

use raypick::gpu::GpuContext;

/// Whether `RAYPICK_REQUIRE_GPU=1` is set: GPU tests then fail instead of skipping.
pub fn required() -> bool {
    std::env::var("RAYPICK_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Panics when a GPU is required but `found` is false; otherwise says that the GPU
/// part is skipped.
fn check_found(found: bool) {
    if found {
        return;
    }
    if required() {
        panic!("RAYPICK_REQUIRE_GPU=1 but no GPU adapter could be opened");
    }
    eprintln!(
        "skipping the GPU part: no adapter (set RAYPICK_REQUIRE_GPU=1 to make this an error)"
    );
}

/// The shared GPU context, or `None` when there is no adapter.
pub fn context() -> Option<&'static GpuContext> {
    static GPU: OnceLock<Option<GpuContext>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| match GpuContext::new() {
        Ok(gpu) => {
            eprintln!("GPU adapter: {:?}", gpu.adapter());
            Some(gpu)
        }
        Err(e) => {
            eprintln!("no GPU: {}", e.with_sources());
            None
        }
    });
    check_found(gpu.is_some());
    gpu.as_ref()
}

/// A device and queue opened the way a renderer opens its own (default limits).
pub struct Renderer {
    /// The renderer's device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter it was opened on.
    pub adapter: wgpu::AdapterInfo,
}

/// The shared renderer device, or `None` when there is no adapter.
pub fn renderer() -> Option<&'static Renderer> {
    static RENDERER: OnceLock<Option<Renderer>> = OnceLock::new();
    let renderer = RENDERER.get_or_init(|| {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&Default::default())).ok()?;
        let (device, queue) =
            pollster::block_on(adapter.request_device(&Default::default())).ok()?;
        Some(Renderer {
            device,
            queue,
            adapter: adapter.get_info(),
        })
    });
    check_found(renderer.is_some());
    renderer.as_ref()
}
