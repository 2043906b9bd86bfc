//! Helpers shared by the test modules: the engines a test traces with, f64
//! reference hits, PNG decoding and file builders (`files`). The test GPU, the
//! fixtures, the reference intersector and the parity comparison come from
//! `raypick_testkit`, re-exported here.
#![allow(dead_code)]

pub use raypick_testkit::files;

use glam::Vec3;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::{Accel, Backend, Cull, Hit, Mesh, Mode, Ray, TraceOptions};
pub use raypick_testkit::gpu::{Renderer, context as gpu, renderer};
pub use raypick_testkit::parity::{assert_contract, assert_contracts, compare, explain, rel_close};
use raypick_testkit::reference;

/// `(t, u, v)` of the f64 reference intersection (see `raypick_testkit::reference`).
pub fn intersect_f64(ray: &Ray, tri: [Vec3; 3], slack: f64) -> Option<(f64, f64, f64)> {
    reference::intersect_f64(ray, tri, slack).map(|h| (h.t, h.u, h.v))
}

/// The nearest hit in f64 (ties to the lowest id) within the ray interval, no culling.
pub fn reference_hit(mesh: &Mesh, ray: &Ray) -> Option<(u32, f64, f64, f64)> {
    reference::nearest_f64(mesh, ray).map(|(k, h)| (k, h.t, h.u, h.v))
}

/// What a test traces with: a backend and an acceleration structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    pub backend: Backend,
    pub accel: Accel,
}

/// The oracle: brute force on the CPU.
pub const CPU_BRUTE: Engine = Engine {
    backend: Backend::Cpu,
    accel: Accel::Brute,
};
pub const CPU_BVH: Engine = Engine {
    backend: Backend::Cpu,
    accel: Accel::Bvh,
};
pub const GPU_BRUTE: Engine = Engine {
    backend: Backend::Gpu,
    accel: Accel::Brute,
};
pub const GPU_BVH: Engine = Engine {
    backend: Backend::Gpu,
    accel: Accel::Bvh,
};
/// Hardware ray queries (only on a GPU that has them).
pub const GPU_RAY_QUERY: Engine = Engine {
    backend: Backend::Gpu,
    accel: Accel::RayQuery,
};

/// Every engine to test: the CPU always, the GPU when there is one (or required),
/// its ray queries when it has them.
pub fn engines() -> Vec<Engine> {
    let mut all = vec![CPU_BRUTE, CPU_BVH];
    if let Some(gpu) = gpu() {
        all.extend([GPU_BRUTE, GPU_BVH]);
        if gpu.has_ray_queries() {
            all.push(GPU_RAY_QUERY);
        }
    }
    all
}

/// Traces with the given engine, culling mode and the default ray–triangle test.
pub fn trace(engine: Engine, mesh: &Mesh, rays: &[Ray], cull: Cull) -> Vec<Hit> {
    trace_with(engine, mesh, rays, &TraceOptions::default().with_cull(cull))
}

/// Traces with the given engine and options.
pub fn trace_with(engine: Engine, mesh: &Mesh, rays: &[Ray], options: &TraceOptions) -> Vec<Hit> {
    match engine.backend {
        Backend::Cpu => {
            CpuBackend::new().trace(&CpuMesh::with_accel(mesh, engine.accel), rays, options)
        }
        Backend::Gpu => {
            let gpu = gpu().expect("GPU backend requested without an adapter");
            let uploaded = gpu.upload_with(mesh, engine.accel).expect("upload");
            gpu.trace(&uploaded, rays, options).expect("GPU trace")
        }
        Backend::Auto => unreachable!("tests name a concrete backend"),
    }
}

/// Every culling mode with both tests.
pub fn all_options() -> Vec<TraceOptions> {
    let mut all = Vec::new();
    for mode in [Mode::Watertight, Mode::Fast] {
        for cull in [Cull::None, Cull::Back, Cull::Front] {
            all.push(TraceOptions::default().with_cull(cull).with_mode(mode));
        }
    }
    all
}

/// A GPU buffer holding `data`.
pub fn buffer_init<T: bytemuck::Pod>(
    device: &wgpu::Device,
    data: &[T],
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(data),
        usage,
    })
}

/// The contents of a `MAP_READ` buffer once the GPU work submitted so far is done.
pub fn read_mapped<T: bytemuck::Pod>(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Vec<T> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("GPU work finishes");
    receiver
        .recv()
        .expect("map callback")
        .expect("map the buffer");
    let data = bytemuck::cast_slice(&slice.get_mapped_range().expect("mapped range")).to_vec();
    buffer.unmap();
    data
}
