//! The arithmetic self-check: the GPU's triangle test stage by stage against its CPU
//! twin, bit for bit ([`GpuContext::check_arithmetic`], `raypick info --check`).
//!
//! The kernels give the CPU's answers only where the driver rounds as raypick's
//! shaders ask: every product on its own, sums in the order written, divisions
//! through the shaders' own exact reciprocal. This runs `shaders/arithmetic_probe.wgsl`
//! on the reciprocal alone (adversarial inputs: zeros, infinities, every power of
//! two, the ends of the subnormal and normal ranges, random bits; and first guesses
//! up to 6 units off, to reach every correction step) and on the ray frame, both
//! triangle tests and the acceptance rule for rays aimed at the inside, the edges and
//! the vertices of random triangles over many scales, and names every field that
//! differs. What the driver's own division and an unprotected `a * b + c` give on the
//! same inputs is reported beside it: they are what the shaders avoid.

use glam::Vec3;

use super::GpuContext;
use super::readback::{Wait, read_mapped};
use crate::Cull;
use crate::cpu::intersect::{RayFrame, accept};
use crate::cpu::moller_trumbore::moller_trumbore;
use crate::cpu::watertight::watertight;
use crate::error::Result;
use crate::prepare::pack_triangle;
use crate::shaders;
use crate::types::{PackedTriangle, Ray};

/// Words the probe writes per case.
const WORDS: usize = 40;

/// Names of the words the kernels rely on, in the probe's order.
const CHECKED: [&str; 35] = [
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
    "reciprocal",
];

/// Word of the reciprocal (from a first guess up to 6 units off).
const RECIPROCAL: usize = 34;
/// Word of the driver's own `1.0 / x`.
const DRIVER_DIVISION: usize = 35;
/// Word of the driver's `a * b + c` with nothing to keep the product apart.
const DRIVER_MULTIPLY_ADD: usize = 36;
/// Words of a subnormal number read and one made by a product.
const SUBNORMALS: [usize; 2] = [37, 38];
/// The subnormal number the probe reads (`opaque.w`: 2^-130).
const SUBNORMAL_READ: f32 = f32::from_bits(1 << 19);
/// The normal number the probe squares into a subnormal one (`opaque.z`: 2^-70).
const SQUARED_TO_SUBNORMAL: f32 = f32::from_bits((127 - 70) << 23);
/// Words holding integers or flags rather than floats.
const INTEGER_WORDS: [usize; 4] = [12, 13, 23, 33];

/// Random triangle cases the stages are compared on.
const STAGE_CASES: usize = 100_000;
/// Random-bit inputs of the reciprocal (each also negated, beside the special values).
const RANDOM_RECIPROCALS: usize = 60_000;

/// What [`GpuContext::check_arithmetic`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ArithmeticCheck {
    /// Inputs the reciprocal was compared on.
    pub reciprocal_cases: usize,
    /// Ray–triangle cases every stage was compared on.
    pub stage_cases: usize,
    /// Each field the GPU computed differently from the CPU, with the number of
    /// cases it differed on; empty when the GPU gives the CPU's bits everywhere.
    pub differing: Vec<(&'static str, usize)>,
    /// The first few differences, as text (field, both values, the case).
    pub examples: Vec<String>,
    /// Stage cases where the driver's own `1.0 / x` is not the CPU's correctly
    /// rounded quotient (the shaders do not use it).
    pub driver_division_differs: usize,
    /// Stage cases where the driver's plain `a * b + c` is not the CPU's (it fused
    /// the product; the shaders keep theirs apart).
    pub driver_multiply_add_differs: usize,
    /// Whether the driver keeps subnormal numbers (below 2^-126), as the CPU does.
    /// A driver that flushes them to zero (Vulkan allows it) gives the CPU's hits
    /// (the tests run tiny triangles on scaled offsets) except where the inputs are
    /// that small themselves (contracts §1.3): coordinates below about 1e-31, edges
    /// shorter than about 1e-19, direction components below 2^-126 of the largest.
    pub subnormals_kept: bool,
}

impl ArithmeticCheck {
    /// Whether every checked field matched the CPU's bits.
    pub fn is_identical(&self) -> bool {
        self.differing.is_empty()
    }
}

impl GpuContext {
    /// Runs the arithmetic self-check on this context's device: the GPU's triangle
    /// test, stage by stage, against the CPU's, bit for bit (see
    /// [`ArithmeticCheck`]). Takes about a second on a software adapter.
    pub fn check_arithmetic(&self) -> Result<ArithmeticCheck> {
        let mut rng = SplitMix(0x5eed_a817);
        let inputs = reciprocal_inputs(&mut rng);
        let reciprocal_rays: Vec<Ray> = inputs
            .iter()
            .map(|&x| Ray::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(x, 1.5, -0.25)))
            .collect();
        let unit = pack_triangle([Vec3::ZERO, Vec3::X, Vec3::Y], 0);
        let unit_tris = vec![unit; reciprocal_rays.len()];
        let (stage_rays, stage_tris): (Vec<Ray>, Vec<PackedTriangle>) =
            (0..STAGE_CASES).map(|_| stage_case(&mut rng)).unzip();

        let mut tally = Tally {
            differ: [0; CHECKED.len()],
            driver: DriverCounts::default(),
            examples: Vec::new(),
        };
        // The reciprocal's inputs are a ray direction's x; the rest of those rays'
        // stages are not compared (many are not valid rays).
        let pipeline = super::pipelines::pipeline(
            &self.device,
            "raypick arithmetic probe",
            shaders::arithmetic_probe_module(),
            shaders::ARITHMETIC_PROBE_ENTRY,
        )?;
        let words = self.probe(&pipeline, &reciprocal_rays, &unit_tris)?;
        tally.compare(&words, &reciprocal_rays, &unit_tris, &[RECIPROCAL]);
        let words = self.probe(&pipeline, &stage_rays, &stage_tris)?;
        let every: Vec<usize> = (0..=SUBNORMALS[1]).collect();
        tally.compare(&words, &stage_rays, &stage_tris, &every);
        Ok(ArithmeticCheck {
            reciprocal_cases: reciprocal_rays.len(),
            stage_cases: stage_rays.len(),
            differing: CHECKED
                .iter()
                .zip(tally.differ)
                .filter(|&(_, n)| n > 0)
                .map(|(&name, n)| (name, n))
                .collect(),
            examples: tally.examples,
            driver_division_differs: tally.driver.division,
            driver_multiply_add_differs: tally.driver.multiply_add,
            subnormals_kept: tally.driver.subnormals == 0,
        })
    }

    /// The words `pipeline` (the probe) writes for every case (blocking).
    fn probe(
        &self,
        pipeline: &wgpu::ComputePipeline,
        rays: &[Ray],
        tris: &[PackedTriangle],
    ) -> Result<Vec<u32>> {
        use wgpu::util::DeviceExt;
        let device = &self.device;
        let init = |contents: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("raypick arithmetic probe"),
                contents,
                usage,
            })
        };
        let opaque = init(
            bytemuck::cast_slice(&[1.0f32, 1.0, SQUARED_TO_SUBNORMAL, SUBNORMAL_READ]),
            wgpu::BufferUsages::UNIFORM,
        );
        let ray_buffer = init(bytemuck::cast_slice(rays), wgpu::BufferUsages::STORAGE);
        let tri_buffer = init(bytemuck::cast_slice(tris), wgpu::BufferUsages::STORAGE);
        let size = (rays.len() * WORDS * 4) as u64;
        let buffer = |usage| super::trace::buffer(device, "raypick arithmetic probe", size, usage);
        let out = buffer(wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC);
        let readback = buffer(wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ);
        let entries: Vec<wgpu::BindGroupEntry> = [&opaque, &ray_buffer, &tri_buffer, &out]
            .into_iter()
            .enumerate()
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("raypick arithmetic probe"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(rays.len().div_ceil(64) as u32, 1, 1);
        }
        encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, size);
        self.queue.submit([encoder.finish()]);
        let words = pollster::block_on(read_mapped(
            device,
            &readback,
            size,
            Wait::Block,
            <[u32]>::to_vec,
        ))?;
        self.errors.check()?;
        Ok(words)
    }
}

/// Differences counted so far.
struct Tally {
    /// Per checked word.
    differ: [usize; CHECKED.len()],
    /// The driver's own division and multiply-add (which the shaders avoid), and
    /// its subnormal numbers.
    driver: DriverCounts,
    examples: Vec<String>,
}

/// Cases where the driver's arithmetic is not the CPU's.
#[derive(Default)]
struct DriverCounts {
    /// Its `1.0 / x`.
    division: usize,
    /// Its `a * b + c`.
    multiply_add: usize,
    /// Its subnormal numbers (flushed to zero where they differ).
    subnormals: usize,
}

impl Tally {
    /// Compares the GPU's `words` with the CPU's in the words `fields` of each case.
    fn compare(&mut self, words: &[u32], rays: &[Ray], tris: &[PackedTriangle], fields: &[usize]) {
        for ((ray, tri), gpu) in rays.iter().zip(tris).zip(words.chunks_exact(WORDS)) {
            let cpu = cpu_probe(ray, tri);
            for &field in fields {
                if same(field, gpu[field], cpu[field]) {
                    continue;
                }
                match field {
                    DRIVER_DIVISION => self.driver.division += 1,
                    DRIVER_MULTIPLY_ADD => self.driver.multiply_add += 1,
                    _ if SUBNORMALS.contains(&field) => self.driver.subnormals += 1,
                    _ => {
                        self.differ[field] += 1;
                        if self.differ[field] <= 3 {
                            self.examples.push(format!(
                                "{}: gpu {:#010x} ({:e}), cpu {:#010x} ({:e}) for {ray:?} and {tri:?}",
                                CHECKED[field],
                                gpu[field],
                                f32::from_bits(gpu[field]),
                                cpu[field],
                                f32::from_bits(cpu[field]),
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// Two words agree: the same bits, or both NaN for float words.
fn same(field: usize, a: u32, b: u32) -> bool {
    let float = !INTEGER_WORDS.contains(&field);
    a == b || (float && f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
}

/// The CPU twin of the probe for one case.
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
        out[k] = x.to_bits();
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
            out[k + j] = x.to_bits();
        }
        out[k + 9] = u32::from(accepted);
    }
    let (a, b, c) = (ray.dir.x, ray.dir.y, ray.origin.x);
    out[RECIPROCAL] = (1.0 / a).to_bits();
    out[DRIVER_DIVISION] = (1.0 / a).to_bits();
    out[DRIVER_MULTIPLY_ADD] = (a * b + c).to_bits();
    out[SUBNORMALS[0]] = SUBNORMAL_READ.to_bits();
    out[SUBNORMALS[1]] = (SQUARED_TO_SUBNORMAL * SQUARED_TO_SUBNORMAL).to_bits();
    out
}

/// A small deterministic generator (SplitMix64): the cases are the same on every run.
struct SplitMix(u64);

impl SplitMix {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }

    /// A point of the cube `[-0.5, 0.5)³`.
    fn centred(&mut self) -> Vec3 {
        Vec3::new(self.unit(), self.unit(), self.unit()) - 0.5
    }
}

/// The reciprocal's inputs: zeros, infinities, NaN, every power of two, the ends of
/// the subnormal and normal ranges, the neighbours of 1, of 3 and of the largest
/// significand, random bits and random values around 1, in both signs.
fn reciprocal_inputs(rng: &mut SplitMix) -> Vec<f32> {
    let mut xs = vec![
        0.0,
        f32::INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        3.0,
    ];
    xs.extend((0..255u32).map(|e| f32::from_bits(e << 23)));
    let bases = [
        1u32,
        0x0040_0000,
        0x007f_ffff,
        0x0080_0000,
        0x3f80_0000,
        0x4040_0000,
        0x7e80_0000,
        0x7f7f_ffff,
    ];
    for base in bases {
        xs.extend((0..64).map(|k| f32::from_bits(base.saturating_add(k).min(0x7f7f_ffff))));
        xs.extend((0..64).map(|k| f32::from_bits(base.saturating_sub(k))));
    }
    while xs.len() < RANDOM_RECIPROCALS {
        let x = f32::from_bits(rng.next_u32());
        if x.is_finite() {
            xs.push(x);
        }
    }
    xs.extend((0..RANDOM_RECIPROCALS / 2).map(|_| (rng.unit() + 0.5) * 2.0));
    let negated: Vec<f32> = xs.iter().map(|x| -x).collect();
    xs.extend(negated);
    xs
}

/// A random triangle (its size and place spread over many scales) and a ray from a
/// random point around it towards a point inside it, on one of its edges or at one
/// of its vertices, in a random direction, or in one with subnormal components.
fn stage_case(rng: &mut SplitMix) -> (Ray, PackedTriangle) {
    let scale = 10f32.powi(rng.below(7) as i32 - 3);
    let offset = rng.centred() * scale * 10f32.powi(rng.below(4) as i32);
    let mut vertex = || offset + (rng.centred() + 0.5) * scale;
    let v = [vertex(), vertex(), vertex()];
    let (a, b) = (rng.unit(), rng.unit());
    let target = match rng.below(8) {
        0 => v[rng.below(3) as usize],
        1 | 2 => {
            let k = rng.below(3) as usize;
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
    let around = rng.centred().normalize_or(Vec3::X);
    let origin = target + around * scale * (1.0 + 4.0 * rng.unit());
    let dir = match rng.below(20) {
        0 | 1 => rng.centred(),
        2 => subnormal_direction(rng),
        _ => (target - origin) * 10f32.powi(rng.below(9) as i32 - 4),
    };
    (Ray::new(origin, dir), pack_triangle(v, 0))
}

/// A direction whose largest component (x) is a normal number near `2^-125` and
/// whose others are subnormal numbers: the frame scales them into the normal range
/// from their bits, so a driver that flushed them on reading would change it.
fn subnormal_direction(rng: &mut SplitMix) -> Vec3 {
    let x = f32::from_bits((2 << 23) | rng.below(0x0080_0000));
    let y = f32::from_bits(1 + rng.below(0x007f_ffff));
    let z = f32::from_bits(1 + rng.below(0x007f_ffff));
    let sign =
        Vec3::new(1.0, 1.0, 1.0) - 2.0 * Vec3::new(rng.unit(), rng.unit(), rng.unit()).round();
    Vec3::new(x, y, z).copysign(sign)
}
