//! What the fuzz targets run, one function per target, so that every target is one
//! line and a failing input can be replayed from a test.
//!
//! Properties checked:
//! - file readers: any bytes give a value or an error, never a panic; loaded meshes
//!   become [`Mesh`]es whose BVH passes [`Bvh::validate`];
//! - the ray–triangle test: an accepted hit is finite, inside the ray interval, on
//!   the right side for the culling mode, and confirmed by the f64 reference within
//!   its tolerance model ([`raypick_testkit::reference::check_kernel_hit`]); the block
//!   kernel agrees with the scalar one bit for bit;
//! - BVH traversal (the WGSL mirror and the wide CPU one) gives brute force's answer
//!   bit for bit, except where brute force's hit is not one f64 confirms (see
//!   [`bvh_vs_brute`]).

use glam::Vec3;
use raypick::bvh::{BuildOptions, Bvh};
use raypick::cpu::brute_force::{self, TriangleBlocks};
use raypick::cpu::intersect::{RayFrame, intersect as intersect_one};
use raypick::cpu::wide_bvh::WideBvh;
use raypick::cpu::{bvh_traverse, wide_traverse};
use raypick::prepare::{pack_mesh, pack_triangle, sanitize_ray};
use raypick::{Cull, Hit, Mesh, Mode, Ray};
use raypick_testkit::reference::{check_kernel_hit, intersect_f64, kernel_tolerance};

/// Meshes up to this many triangles also get a BVH built and validated.
const MAX_BVH_TRIANGLES: usize = 512;

/// A directory that does not exist: a fuzzed `.gltf` naming external buffers can
/// never read a real file.
const NOWHERE: &str = "/nonexistent-raypick-fuzz";

/// Loads `data` as a mesh file of `extension`; a loaded mesh is converted, and a
/// small one gets a BVH that must validate.
pub fn mesh_file(data: &[u8], extension: &str) {
    let name = format!("{NOWHERE}/fuzz.{extension}");
    let Ok(loaded) = raypick::io::load_mesh_from_bytes(data, &name) else {
        return;
    };
    assert_eq!(loaded.triangles().count(), loaded.triangle_count());
    let Ok(mesh) = loaded.into_mesh() else {
        return;
    };
    if mesh.triangle_count() <= MAX_BVH_TRIANGLES {
        let bvh = Bvh::build(&mesh);
        if let Err(e) = bvh.validate(&mesh) {
            panic!("BVH of a loaded mesh does not validate: {e}");
        }
    }
}

/// Reads `data` as a ray file of `extension`; every ray read sanitises to itself or
/// to the dead ray.
pub fn ray_file(data: &[u8], extension: &str) {
    let name = format!("{NOWHERE}/fuzz.{extension}");
    let Ok(rays) = raypick::io::read_rays_from_bytes(data, &name) else {
        return;
    };
    for ray in &rays {
        let clean = sanitize_ray(ray);
        assert!(clean == *ray || clean == raypick::prepare::DEAD_RAY);
    }
}

/// Reads `data[1..]` as a hit file, `data[0]` picking `.hits`, `.npy` or `.csv`.
pub fn hit_file(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let extension = ["hits", "npy", "csv"][pick as usize % 3];
    let name = format!("{NOWHERE}/fuzz.{extension}");
    let _ = raypick::io::read_hits_from_bytes(rest, &name);
}

/// Reads fuzz bytes as numbers; zeros once the bytes run out.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte.
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next float: a tag byte with the high bit clear takes the next four bytes as
    /// raw bits (any value, NaN and infinities included); otherwise a 16-bit integer
    /// scaled by a power of two between `2^-40` and `2^23`, so that small, exactly
    /// representable coordinates are common.
    pub fn float(&mut self) -> f32 {
        let tag = self.byte();
        if tag & 0x80 == 0 {
            f32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
        } else {
            let mantissa = i16::from_le_bytes([self.byte(), self.byte()]);
            let exponent = (tag & 0x3f) as i32 - 40;
            mantissa as f32 * 2f32.powi(exponent)
        }
    }

    /// The next point.
    pub fn point(&mut self) -> Vec3 {
        Vec3::new(self.float(), self.float(), self.float())
    }

    /// The next ray: origin, then direction either read or aimed at `target` when the
    /// selector byte is odd, then an interval (`[0, ∞]` or read, by a byte).
    pub fn ray(&mut self, target: Option<Vec3>) -> Ray {
        let origin = self.point();
        let select = self.byte();
        let dir = match target {
            Some(target) if select & 1 == 1 => target + self.point() * 1e-3 - origin,
            _ => self.point(),
        };
        if select & 2 == 0 {
            Ray::new(origin, dir)
        } else {
            Ray::with_interval(origin, dir, self.float(), self.float())
        }
    }
}

/// Test mode and culling mode from a flags byte.
fn modes(flags: u8) -> (Mode, Cull) {
    let mode = if flags & 1 == 1 {
        Mode::Watertight
    } else {
        Mode::Fast
    };
    let cull = [Cull::None, Cull::Back, Cull::Front][(flags >> 1) as usize % 3];
    (mode, cull)
}

/// Same values bit for bit (so that NaN equals NaN).
fn same(a: &Hit, b: &Hit) -> bool {
    bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// One ray against one triangle: see the crate docs.
pub fn intersect(data: &[u8]) {
    let mut input = Input::new(data);
    let (mode, cull) = modes(input.byte());
    let triangle = [input.point(), input.point(), input.point()];
    let ray = input.ray(Some(triangle[0]));
    check_intersect(&ray, triangle, mode, cull);
}

/// The checks of [`intersect`] for one ray, triangle and mode.
pub fn check_intersect(ray: &Ray, triangle: [Vec3; 3], mode: Mode, cull: Cull) {
    let packed = pack_triangle(triangle, 0);
    let clean = sanitize_ray(ray);
    let frame = RayFrame::new(&clean);
    let c = intersect_one(&clean, &frame, &packed, cull, f32::INFINITY, mode);
    let mut block = [Hit::MISS];
    brute_force::trace_rays(
        &TriangleBlocks::new(&[packed]),
        std::slice::from_ref(ray),
        &mut block,
        cull,
        mode,
    );
    let scalar = if c.accepted {
        Hit {
            t: c.t,
            u: c.u,
            v: c.v,
            prim: 0,
        }
    } else {
        Hit::MISS
    };
    assert!(
        same(&block[0], &scalar),
        "block kernel {:?} != scalar kernel {scalar:?}",
        block[0]
    );
    if !c.accepted {
        return;
    }
    if let Err(e) = check_kernel_hit(&clean, triangle, (c.t, c.u, c.v)) {
        panic!("mode {mode} cull {cull}: {e}\nray {ray:?}\ntriangle {triangle:?}");
    }
    // Culling: the f64 determinant (`-dot(d, normal)`) has the sign culling allows,
    // wherever the tolerance model says the kernels' determinant has a reliable
    // sign (its error bound below `|det|`, i.e. `bary < 1`). Beyond that, e.g. a
    // watertight test whose origin is so far away that rounding the vertices into the
    // ray's frame moves them by more than the triangle's size, the facing is not
    // decidable in f32.
    let e1 = (triangle[1] - triangle[0]).as_dvec3();
    let e2 = (triangle[2] - triangle[0]).as_dvec3();
    let det = e1.dot(clean.dir.as_dvec3().cross(e2));
    let wrong_side = match cull {
        Cull::Back => det < 0.0,
        Cull::Front => det > 0.0,
        Cull::None => false,
    };
    let reliable = kernel_tolerance(&clean, triangle).bary < 1.0;
    assert!(
        !(wrong_side && reliable),
        "cull {cull} accepted a hit with f64 det {det}"
    );
}

/// Whether f64 confirms `hit` of `ray` on `mesh`: within `1e-6` barycentric of the
/// triangle, with its f64 `t` inside the ray interval.
fn confirmed(mesh: &Mesh, ray: &Ray, hit: &Hit) -> bool {
    let triangle = mesh.triangle(hit.prim as usize);
    intersect_f64(ray, triangle, 1e-6)
        .is_some_and(|h| h.t >= ray.tmin as f64 && h.t <= ray.tmax as f64)
}

/// Small meshes (up to 16 triangles on up to 8 shared points) and up to 8 rays:
/// both BVH traversals against brute force.
pub fn bvh_vs_brute(data: &[u8]) {
    let mut input = Input::new(data);
    let (mode, cull) = modes(input.byte());
    let max_leaf_size = 1 + input.byte() as usize % 4;
    let points: Vec<Vec3> = (0..3 + input.byte() % 6).map(|_| input.point()).collect();
    let n = points.len() as u8;
    let indices: Vec<[u32; 3]> = (0..1 + input.byte() % 16)
        .map(|_| [0; 3].map(|_: u32| (input.byte() % n) as u32))
        .collect();
    let mesh = Mesh::new(points.clone(), indices).expect("indices are in range");
    let rays: Vec<Ray> = (0..1 + input.byte() % 8)
        .map(|_| {
            let target = points[(input.byte() % n) as usize];
            input.ray(Some(target))
        })
        .collect();
    check_bvh_vs_brute(&mesh, &rays, max_leaf_size, mode, cull);
}

/// The checks of [`bvh_vs_brute`] for one mesh, rays and modes.
pub fn check_bvh_vs_brute(mesh: &Mesh, rays: &[Ray], max_leaf_size: usize, mode: Mode, cull: Cull) {
    let mut brute = vec![Hit::MISS; rays.len()];
    brute_force::trace_rays(
        &TriangleBlocks::new(&pack_mesh(mesh)),
        rays,
        &mut brute,
        cull,
        mode,
    );
    let options = BuildOptions {
        max_leaf_size,
        ..BuildOptions::default()
    };
    let bvh = Bvh::build_with(mesh, &options);
    let mut mirror = vec![Hit::MISS; rays.len()];
    bvh_traverse::trace_rays(&bvh, rays, &mut mirror, cull, mode);
    let mut wide = vec![Hit::MISS; rays.len()];
    wide_traverse::trace_rays(&WideBvh::from_bvh(&bvh), rays, &mut wide, cull, mode);
    for (k, ray) in rays.iter().enumerate() {
        let expected = &brute[k];
        for (name, got) in [("bvh_traverse", &mirror[k]), ("wide_traverse", &wide[k])] {
            if same(got, expected) {
                continue;
            }
            // Brute force may report a hit f64 does not confirm (the f32 error of a
            // distant or grazing ray); the BVH, whose boxes bound the true geometry,
            // may cull it. Then the BVH's own hit, if any, must be one f64 confirms.
            let explained = expected.is_hit()
                && !confirmed(mesh, &sanitize_ray(ray), expected)
                && (!got.is_hit() || confirmed(mesh, &sanitize_ray(ray), got));
            assert!(
                explained,
                "mode {mode} cull {cull} leaf {max_leaf_size}: {name} {got:?} != brute force \
                 {expected:?}\nray {ray:?}\nmesh {:?}",
                mesh.triangles().collect::<Vec<_>>()
            );
        }
    }
}
