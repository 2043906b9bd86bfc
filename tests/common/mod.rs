//! Helpers shared by the integration tests: the GPU context (required when
//! `RAYPICK_REQUIRE_GPU=1`), an f64 reference intersector, and the parity comparison
//! that tells agreements from explained edge cases and real disagreements.
#![allow(dead_code)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod files;

use std::sync::OnceLock;

use glam::Vec3;
use raypick::cpu::{CpuBackend, CpuMesh};
use raypick::gpu::GpuContext;
use raypick::{Accel, Backend, Cull, Hit, Mesh, Ray, TraceOptions};

/// The shared GPU context, or `None` when there is no adapter. With
/// `RAYPICK_REQUIRE_GPU=1` a missing adapter fails the test instead.
pub fn gpu() -> Option<&'static GpuContext> {
    static GPU: OnceLock<Option<GpuContext>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| match GpuContext::new() {
        Ok(gpu) => {
            eprintln!("GPU adapter: {:?}", gpu.adapter());
            Some(gpu)
        }
        Err(e) => {
            eprintln!("no GPU: {e}");
            None
        }
    });
    if gpu.is_none() && std::env::var("RAYPICK_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("RAYPICK_REQUIRE_GPU=1 but no GPU adapter could be opened");
    }
    if gpu.is_none() {
        eprintln!(
            "skipping the GPU part: no adapter (set RAYPICK_REQUIRE_GPU=1 to make this an error)"
        );
    }
    gpu.as_ref()
}

/// `(t, u, v)` of the f64 reference intersection (see `raypick::reference`).
pub fn intersect_f64(ray: &Ray, tri: [Vec3; 3], slack: f64) -> Option<(f64, f64, f64)> {
    raypick::reference::intersect_f64(ray, tri, slack).map(|h| (h.t, h.u, h.v))
}

/// The nearest hit in f64 (ties to the lowest id) within the ray interval, no culling.
pub fn reference_hit(mesh: &Mesh, ray: &Ray) -> Option<(u32, f64, f64, f64)> {
    raypick::reference::nearest_f64(mesh, ray).map(|(k, h)| (k, h.t, h.u, h.v))
}

pub fn rel_close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
}

/// Whether two hits of the same ray are the same answer: same triangle, t within
/// 1e-5 relative, u and v within 1e-5.
pub fn same_hit(a: &Hit, b: &Hit) -> bool {
    if a.prim != b.prim {
        return false;
    }
    if !a.is_hit() {
        return a == b;
    }
    rel_close(a.t as f64, b.t as f64, 1e-5)
        && (a.u - b.u).abs() <= 1e-5
        && (a.v - b.v).abs() <= 1e-5
}

/// Why a disagreement is acceptable, if it is.
pub fn explain(mesh: &Mesh, ray: &Ray, a: &Hit, b: &Hit) -> Option<&'static str> {
    const EDGE: f64 = 1e-6;
    let tri = |h: &Hit| mesh.triangle(h.prim as usize);
    // A tie: two triangles are hit at the same t.
    if a.is_hit() && b.is_hit() && a.prim != b.prim && rel_close(a.t as f64, b.t as f64, 1e-5) {
        let ta = intersect_f64(ray, tri(a), EDGE);
        let tb = intersect_f64(ray, tri(b), EDGE);
        if let (Some(ta), Some(tb)) = (ta, tb)
            && rel_close(ta.0, tb.0, 1e-5)
        {
            return Some("tie");
        }
    }
    // An edge case: a hit that one backend found lies within 1e-6 barycentric of an
    // edge, is grazing (ray nearly in the triangle's plane), or sits on an interval end.
    for h in [a, b].into_iter().filter(|h| h.is_hit()) {
        let [v0, v1, v2] = tri(h);
        let n = (v1 - v0).as_dvec3().cross((v2 - v0).as_dvec3());
        let grazing = n.normalize().dot(ray.dir.as_dvec3().normalize()).abs() < 1e-5;
        let (u, v) = (h.u as f64, h.v as f64);
        let near_edge = u.min(v).min(1.0 - u - v) < EDGE;
        let at_bound = rel_close(h.t as f64, ray.tmin as f64, 1e-5)
            || rel_close(h.t as f64, ray.tmax as f64, 1e-5);
        if near_edge {
            return Some("near an edge");
        }
        if grazing {
            return Some("grazing");
        }
        if at_bound {
            return Some("at an interval bound");
        }
    }
    None
}

/// Outcome of comparing two backends' hits for the same rays.
#[derive(Debug, Default)]
pub struct Parity {
    pub rays: usize,
    pub identical: usize,
    pub close: usize,
    pub explained: usize,
    pub reasons: std::collections::BTreeMap<&'static str, usize>,
    pub unexplained: Vec<(usize, Hit, Hit)>,
}

impl Parity {
    /// Fails unless every disagreement is explained and explained ones are at most 1 in 10,000.
    pub fn assert_ok(&self, what: &str) {
        eprintln!("{what}: {self:?}");
        assert!(
            self.unexplained.is_empty(),
            "{what}: {} unexplained disagreements, first: {:?}",
            self.unexplained.len(),
            &self.unexplained[..self.unexplained.len().min(5)]
        );
        assert!(
            self.explained * 10_000 <= self.rays,
            "{what}: {} tie/edge disagreements in {} rays is more than 1 in 10,000",
            self.explained,
            self.rays
        );
    }
}

/// Compares hits from two backends for the same rays.
pub fn compare(mesh: &Mesh, rays: &[Ray], a: &[Hit], b: &[Hit]) -> Parity {
    assert_eq!(a.len(), rays.len());
    assert_eq!(b.len(), rays.len());
    let mut parity = Parity {
        rays: rays.len(),
        ..Default::default()
    };
    for (i, ((ray, a), b)) in rays.iter().zip(a).zip(b).enumerate() {
        if a == b {
            parity.identical += 1;
        } else if same_hit(a, b) {
            parity.close += 1;
        } else if let Some(reason) = explain(mesh, ray, a, b) {
            parity.explained += 1;
            *parity.reasons.entry(reason).or_default() += 1;
        } else {
            parity.unexplained.push((i, *a, *b));
        }
    }
    parity
}

/// Checks the hit contract for one ray: a hit has finite t in the interval, u, v in
/// range, and its barycentric point equals `o + t*d`; a miss is exactly the marker.
pub fn assert_contract(mesh: &Mesh, ray: &Ray, hit: &Hit) {
    assert!(
        !hit.t.is_nan() && !hit.u.is_nan() && !hit.v.is_nan(),
        "NaN in {hit:?} for {ray:?}"
    );
    if !hit.is_hit() {
        assert_eq!(*hit, Hit::MISS, "miss marker for {ray:?}");
        return;
    }
    assert!(
        hit.t.is_finite() && hit.t >= ray.tmin && hit.t <= ray.tmax,
        "{hit:?} outside {ray:?}"
    );
    // The GPU may round `u + v` differently from the reported u and v (one ulp).
    assert!(
        hit.u >= 0.0 && hit.v >= 0.0 && hit.u + hit.v <= 1.0 + 2.5e-7,
        "{hit:?}"
    );
    let [v0, v1, v2] = mesh.triangle(hit.prim as usize);
    let (u, v) = (hit.u as f64, hit.v as f64);
    let on_triangle = (1.0 - u - v) * v0.as_dvec3() + u * v1.as_dvec3() + v * v2.as_dvec3();
    let on_ray = ray.origin.as_dvec3() + hit.t as f64 * ray.dir.as_dvec3();
    // f32 rounding error grows with the coordinates' magnitude, with how badly
    // conditioned the triangle is (slivers: |e1||e2| / |e1 x e2| large) and with how
    // grazing the ray is (t moves by 1 / |cos| of the angle to the normal).
    let (e1, e2) = ((v1 - v0).as_dvec3(), (v2 - v0).as_dvec3());
    let normal = e1.cross(e2);
    let cos = normal.normalize().dot(ray.dir.as_dvec3().normalize()).abs();
    let condition = (e1.length() * e2.length() / normal.length()).max(1.0) / cos.max(1e-12);
    let scale = [v0, v1, v2, ray.origin, ray.at(hit.t)]
        .iter()
        .map(|p| p.as_dvec3().abs().max_element())
        .fold(1.0, f64::max);
    let err = on_triangle.distance(on_ray);
    let tolerance = 1e-5 * scale * condition;
    assert!(
        err <= tolerance,
        "hit point off by {err} (tolerance {tolerance}, condition {condition}) for {ray:?} {hit:?}"
    );
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

/// Every engine to test: the CPU always, the GPU when there is one (or required).
pub fn engines() -> Vec<Engine> {
    let mut all = vec![CPU_BRUTE, CPU_BVH];
    if gpu().is_some() {
        all.extend([GPU_BRUTE, GPU_BVH]);
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

/// Decodes an 8-bit RGBA PNG file's bytes (panics on anything else).
pub fn decode_png(bytes: &[u8]) -> raypick::render::Image {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .expect("PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut pixels).expect("PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgba);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    pixels.truncate(info.buffer_size());
    raypick::render::Image {
        width: info.width,
        height: info.height,
        pixels,
    }
}

/// A device and queue opened the way a renderer opens its own (default limits), or
/// `None` when there is no adapter (a failure with `RAYPICK_REQUIRE_GPU=1`).
pub struct Renderer {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter: wgpu::AdapterInfo,
}

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
    if renderer.is_none() && std::env::var("RAYPICK_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("RAYPICK_REQUIRE_GPU=1 but no GPU adapter could be opened");
    }
    renderer.as_ref()
}
