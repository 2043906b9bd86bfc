//! The test GPU: one shared context per test process, and a device opened the way a
//! renderer opens its own. Both are `None` when no adapter opens, unless
//! `RAYPICK_REQUIRE_GPU=1`, which turns a missing adapter into a failure.

use std::sync::OnceLock;

use raypick::gpu::GpuContext;

/// Whether `RAYPICK_REQUIRE_GPU=1` is set: GPU tests then fail instead of skipping.
pub fn required() -> bool {
    flag("RAYPICK_REQUIRE_GPU")
}

/// Whether `RAYPICK_REQUIRE_GL=1` is set: the OpenGL test then fails instead of
/// skipping where no OpenGL device opens. Some drivers list an OpenGL adapter on
/// which no device opens (NVIDIA's without a display); Mesa's opens everywhere.
pub fn gl_required() -> bool {
    flag("RAYPICK_REQUIRE_GL")
}

/// Whether the environment variable `name` is set to `1`.
fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
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

/// A mesh's positions and indices in GPU buffers, as a renderer holds them: vertex
/// and index usage, plus the `STORAGE` raypick reads them through and the
/// `COPY_DST` that moves the vertices.
pub struct RendererMesh {
    /// Tightly packed `[f32; 3]` positions.
    pub vertices: wgpu::Buffer,
    /// 32-bit indices, three per triangle.
    pub indices: wgpu::Buffer,
    /// The layout of the two buffers.
    pub layout: raypick::gather::MeshLayout,
}

impl RendererMesh {
    /// Uploads `mesh`'s positions and indices to `device`.
    pub fn new(device: &wgpu::Device, mesh: &raypick::Mesh) -> Self {
        use wgpu::util::DeviceExt;
        let buffer = |bytes: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("renderer buffer"),
                contents: bytes,
                usage: usage | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            })
        };
        Self {
            vertices: buffer(
                bytemuck::cast_slice(mesh.positions()),
                wgpu::BufferUsages::VERTEX,
            ),
            indices: buffer(
                bytemuck::cast_slice(mesh.indices()),
                wgpu::BufferUsages::INDEX,
            ),
            layout: raypick::gather::MeshLayout::packed(
                mesh.positions().len() as u32,
                mesh.triangle_count() as u32 * 3,
            ),
        }
    }

    /// The buffers as raypick takes them.
    pub fn buffers(&self) -> raypick::gpu::MeshBuffers<'_> {
        raypick::gpu::MeshBuffers {
            vertices: &self.vertices,
            indices: &self.indices,
            layout: self.layout,
        }
    }
}
