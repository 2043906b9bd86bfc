//! The WGSL arithmetic the kernels are built from, stage by stage, against its CPU
//! twin on the test adapter, bit for bit: the correctly rounded reciprocal on
//! adversarial inputs, and the ray frame, both triangle tests and the acceptance
//! rule on rays aimed at the inside, the edges and the vertices of random
//! triangles. A driver that rounds differently (an approximate division, a fused
//! or reordered product) shows up here by the stage and field it changes, before
//! any traversal mixes the effects.
//!
//! What the driver's own division and an unprotected `a * b + c` give on the same
//! inputs is printed (`--nocapture`): they are what the kernels avoid.

use glam::Vec3;
use raypick::cpu::intersect::{RayFrame, accept};
use raypick::cpu::moller_trumbore::moller_trumbore;
use raypick::cpu::watertight::watertight;
use raypick::prepare::pack_triangle;
use raypick::types::PackedTriangle;
use raypick::{Cull, Ray, shaders};
use raypick_testkit::fixtures::Rng;
use raypick_testkit::gpu;

use crate::support::{buffer_init, read_mapped};

/// Words written per case: see `PROBE`.
const WORDS: usize = 40;

/// What each word of a case is, for the report.
const FIELDS: [&str; 38] = [
    "frame.dir.x",
    "frame.dir.y",
    "frame.dir.z",
    "frame.dir_norm",
    "frame.shear.x",
    "frame.shear.y",
    "frame.shear.z",
    "frame.shear_norm",
    "frame.t_scale",
    "frame.inv_dir.x",
    "frame.inv_dir.y",
    "frame.inv_dir.z",
    "frame.axes",
    "frame.live",
    "watertight.det",
    "watertight.det_bound",
    "watertight.big_u",
    "watertight.big_v",
    "watertight.big_w",
    "watertight.big_t",
    "watertight.t",
    "watertight.u",
    "watertight.v",
    "watertight.accepted",
    "fast.det",
    "fast.det_bound",
    "fast.big_u",
    "fast.big_v",
    "fast.big_w",
    "fast.big_t",
    "fast.t",
    "fast.u",
    "fast.v",
    "fast.accepted",
    "reciprocal(dir.x), from a first guess -6..6 off",
    "driver 1.0 / dir.x",
    "driver dir.x * dir.y + origin.x",
    "driver fma(dir.x, dir.y, origin.x)",
];

/// Words of `FIELDS` the kernels rely on (the rest are the driver's own, printed).
const CHECKED: usize = 35;

/// The probe: every stage of the triangle test for case `i`, written as bits.
const PROBE: &str = r#"
@group(0) @binding(0) var<uniform> opaque: vec4<f32>;
@group(0) @binding(1) var<storage, read> rays: array<Ray>;
@group(0) @binding(2) var<storage, read> tris: array<PackedTriangle>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn put(i: u32, k: u32, x: f32) {
    out[i * 40u + k] = bitcast<u32>(x);
}

fn put_test(i: u32, k: u32, n: Unnormalised, c: Candidate) {
    put(i, k, n.det);
    put(i, k + 1u, n.det_bound);
    put(i, k + 2u, n.big_u);
    put(i, k + 3u, n.big_v);
    put(i, k + 4u, n.big_w);
    put(i, k + 5u, n.big_t);
    // t, u and v mean something only for an accepted hit.
    put(i, k + 6u, select(0.0, c.t, c.accepted));
    put(i, k + 7u, select(0.0, c.u, c.accepted));
    put(i, k + 8u, select(0.0, c.v, c.accepted));
    out[i * 40u + k + 9u] = u32(c.accepted);
}

@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= arrayLength(&rays) {
        return;
    }
    let one = opaque.x;
    let ray = rays[i];
    let tri = tris[i];
    let f = ray_frame(ray);
    put(i, 0u, f.dir.x);
    put(i, 1u, f.dir.y);
    put(i, 2u, f.dir.z);
    put(i, 3u, f.dir_norm);
    put(i, 4u, f.shear.x);
    put(i, 5u, f.shear.y);
    put(i, 6u, f.shear.z);
    put(i, 7u, f.shear_norm);
    put(i, 8u, f.t_scale);
    put(i, 9u, f.inv_dir.x);
    put(i, 10u, f.inv_dir.y);
    put(i, 11u, f.inv_dir.z);
    out[i * 40u + 12u] = f.axes.x | (f.axes.y << 4u) | (f.axes.z << 8u);
    out[i * 40u + 13u] = u32(f.live);
    let never = bitcast<f32>(0x7f800000u);
    let w = watertight(ray, f, tri, one);
    put_test(i, 14u, w, accept(w, ray, f, tri, CULL_NONE, never, one));
    let m = moller_trumbore(ray, f, tri, one);
    put_test(i, 24u, m, accept(m, ray, f, tri, CULL_NONE, never, one));
    // The correction steps, from first guesses up to 6 units off.
    put(i, 34u, reciprocal_from(ray.dir.x, i32(i % 13u) - 6));
    put(i, 35u, opaque.y / ray.dir.x);
    put(i, 36u, ray.dir.x * ray.dir.y + ray.origin.x);
    put(i, 37u, fma(ray.dir.x, ray.dir.y, ray.origin.x));
}
"#;

fn bits(x: f32) -> u32 {
    x.to_bits()
}

/// The CPU twin of `PROBE` for one case.
fn cpu_probe(ray: &Ray, tri: &PackedTriangle) -> [u32; WORDS] {
    let mut out = [0u32; WORDS];
    let f = RayFrame::new(ray);
    let frame_words = [
        f.dir[0],
        f.dir[1],
        f.dir[2],
        f.dir_norm,
        f.shear[0],
        f.shear[1],
        f.shear[2],
        f.shear_norm,
        f.t_scale,
        f.inv_dir[0],
        f.inv_dir[1],
        f.inv_dir[2],
    ];
    for (k, x) in frame_words.into_iter().enumerate() {
        out[k] = bits(x);
    }
    out[12] = (f.axes[0] | (f.axes[1] << 4) | (f.axes[2] << 8)) as u32;
    out[13] = u32::from(f.live);
    let vertices = [tri.v0.into(), tri.v1.into(), tri.v2.into()];
    for (k, n) in [
        (14, watertight(&f, vertices, tri.edge_norm)),
        (24, moller_trumbore(&f, vertices, tri.edge_norm)),
    ] {
        let (t, u, v, accepted) = accept(n, ray, &f, Cull::None, f32::INFINITY, vertices);
        let (t, u, v) = if accepted { (t, u, v) } else { (0.0, 0.0, 0.0) };
        let words = [
            n.det,
            n.det_bound,
            n.big_u,
            n.big_v,
            n.big_w,
            n.big_t,
            t,
            u,
            v,
        ];
        for (j, x) in words.into_iter().enumerate() {
            out[k + j] = bits(x);
        }
        out[k + 9] = u32::from(accepted);
    }
    let (a, b, c) = (ray.dir.x, ray.dir.y, ray.origin.x);
    out[34] = bits(1.0 / a);
    out[35] = bits(1.0 / a);
    out[36] = bits(a * b + c);
    out[37] = bits(a.mul_add(b, c));
    out
}

/// Two words agree: the same bits, or both NaN for float fields.
fn same(field: usize, a: u32, b: u32) -> bool {
    let float = !matches!(field, 12 | 13 | 23 | 33);
    a == b || (float && f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
}

/// Runs `PROBE` on the test adapter: the words of every case.
fn gpu_probe(gpu: &raypick::gpu::GpuContext, rays: &[Ray], tris: &[PackedTriangle]) -> Vec<u32> {
    let device = gpu.device();
    let source = [
        shaders::TYPES,
        shaders::INTERSECT,
        shaders::MOLLER_TRUMBORE,
        shaders::WATERTIGHT,
        PROBE,
    ]
    .join("\n");
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("arithmetic probe"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("arithmetic probe"),
        layout: None,
        module: &module,
        entry_point: Some("probe"),
        compilation_options: Default::default(),
        cache: None,
    });
    let opaque = buffer_init(
        device,
        &[1.0f32, 1.0, 0.0, 0.0],
        wgpu::BufferUsages::UNIFORM,
    );
    let ray_buffer = buffer_init(device, rays, wgpu::BufferUsages::STORAGE);
    let tri_buffer = buffer_init(device, tris, wgpu::BufferUsages::STORAGE);
    let size = (rays.len() * WORDS * 4) as u64;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: opaque.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: ray_buffer.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: tri_buffer.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 3,
                resource: out.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(rays.len().div_ceil(64) as u32, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, size);
    gpu.queue().submit([encoder.finish()]);
    read_mapped(device, &readback)
}

/// A float whose bits are random but finite (any exponent, subnormals included).
fn random_finite(rng: &mut Rng) -> f32 {
    loop {
        let x = f32::from_bits(rng.next_u32());
        if x.is_finite() {
            return x;
        }
    }
}

/// Reciprocal cases: zeros, infinities, NaN, every power of two, the ends of the
/// subnormal and normal ranges, the neighbours of 1, of 3 and of the largest
/// significand, and random bits, in both signs.
fn reciprocal_inputs(rng: &mut Rng) -> Vec<f32> {
    let mut xs = vec![
        0.0,
        f32::INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        3.0,
    ];
    xs.extend((0..255u32).map(|e| f32::from_bits(e << 23)));
    for base in [
        1u32,
        0x0040_0000,
        0x007f_ffff,
        0x0080_0000,
        0x3f80_0000,
        0x4040_0000,
        0x7e80_0000,
        0x7f7f_ffff,
    ] {
        xs.extend((0..64).map(|k| f32::from_bits(base.saturating_add(k).min(0x7f7f_ffff))));
        xs.extend((0..64).map(|k| f32::from_bits(base.saturating_sub(k))));
    }
    xs.extend((0..60_000).map(|_| random_finite(rng)));
    xs.extend((0..30_000).map(|_| (rng.f32() + 0.5) * 2.0));
    let negated: Vec<f32> = xs.iter().map(|x| -x).collect();
    xs.extend(negated);
    xs
}

/// A case for the triangle stages: a random triangle (its size and place spread over
/// many scales) and a ray from a random point around it towards a point inside it,
/// on one of its edges or at one of its vertices, or in a random direction.
fn stage_case(rng: &mut Rng) -> (Ray, PackedTriangle) {
    let scale = 10f32.powi(rng.below(7) as i32 - 3);
    let offset = Vec3::new(rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5)
        * scale
        * 10f32.powi(rng.below(4) as i32);
    let vertex = |rng: &mut Rng| offset + Vec3::new(rng.f32(), rng.f32(), rng.f32()) * scale;
    let v = [vertex(rng), vertex(rng), vertex(rng)];
    let (a, b) = (rng.f32(), rng.f32());
    let target = match rng.below(8) {
        0 => v[rng.below(3)],
        1 | 2 => {
            let k = rng.below(3);
            v[k] + (v[(k + 1) % 3] - v[k]) * a
        }
        _ => {
            let (a, b) = if a + b > 1.0 {
                (1.0 - a, 1.0 - b)
            } else {
                (a, b)
            };
            v[0] + (v[1] - v[0]) * a + (v[2] - v[0]) * b
        }
    };
    let around = Vec3::new(rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5).normalize_or(Vec3::X);
    let origin = target + around * scale * (1.0 + 4.0 * rng.f32());
    let dir = if rng.below(10) == 0 {
        Vec3::new(rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5)
    } else {
        (target - origin) * 10f32.powi(rng.below(9) as i32 - 4)
    };
    (Ray::new(origin, dir), pack_triangle(v, 0))
}

/// Counts, per field of `fields`, the cases whose GPU word differs from the CPU's,
/// prints the count of every one and the first few differences of each one the
/// kernels rely on; returns the number of differences in those.
fn compare(
    gpu_words: &[u32],
    rays: &[Ray],
    tris: &[PackedTriangle],
    fields: &[usize],
) -> Vec<String> {
    let mut differ = vec![0usize; FIELDS.len()];
    for (i, (ray, tri)) in rays.iter().zip(tris).enumerate() {
        let cpu = cpu_probe(ray, tri);
        let gpu = &gpu_words[i * WORDS..(i + 1) * WORDS];
        for &field in fields {
            if !same(field, gpu[field], cpu[field]) {
                differ[field] += 1;
                if differ[field] <= 3 && field < CHECKED {
                    eprintln!(
                        "{}: gpu {:#010x} ({:e}) cpu {:#010x} ({:e}) for {ray:?} {tri:?}",
                        FIELDS[field],
                        gpu[field],
                        f32::from_bits(gpu[field]),
                        cpu[field],
                        f32::from_bits(cpu[field])
                    );
                }
            }
        }
    }
    for &field in fields {
        eprintln!(
            "{:36} {} of {} differ",
            FIELDS[field],
            differ[field],
            rays.len()
        );
    }
    fields
        .iter()
        .filter(|&&k| k < CHECKED && differ[k] > 0)
        .map(|&k| format!("{}: {}", FIELDS[k], differ[k]))
        .collect()
}

#[test]
fn reciprocal_and_triangle_stages_match_the_cpu_bit_for_bit() {
    let Some(gpu) = gpu::context() else { return };
    let mut rng = Rng::new(0x5eed_a817);
    // The reciprocal alone, of each input as a ray direction's x (the rest of those
    // rays' stages are not compared: many are not valid rays).
    let inputs = reciprocal_inputs(&mut rng);
    let rays: Vec<Ray> = inputs
        .iter()
        .map(|&x| Ray::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(x, 1.5, -0.25)))
        .collect();
    let tris = vec![pack_triangle([Vec3::ZERO, Vec3::X, Vec3::Y], 0); rays.len()];
    let words = gpu_probe(gpu, &rays, &tris);
    let mut wrong = compare(&words, &rays, &tris, &[34, 35]);
    // Every stage on rays at triangles.
    let (rays, tris): (Vec<Ray>, Vec<PackedTriangle>) =
        (0..100_000).map(|_| stage_case(&mut rng)).unzip();
    let words = gpu_probe(gpu, &rays, &tris);
    let every: Vec<usize> = (0..FIELDS.len()).collect();
    wrong.extend(compare(&words, &rays, &tris, &every));
    assert!(
        wrong.is_empty(),
        "GPU stages differ from the CPU on {}: {wrong:?}",
        gpu.adapter().name
    );
}
