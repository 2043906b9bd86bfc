//! `raypick trace` with a mesh and float64 rays far from the origin answers like the
//! library's f64 path, and writes the same hit file as for the unshifted scene.

use raypick::{Accel, Backend, Picker, io};
use raypick_testkit::parity::assert_bits_equal as assert_identical;
use raypick_testkit::world::{WorldFixture, shift_vector, trace64};

#[test]
fn float64_rays_far_from_the_origin_trace_like_the_library() {
    let scene = WorldFixture::new(3, 300, 2, 400);
    let dir = tempfile::tempdir().expect("temp dir");
    let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
    let mut outputs = Vec::new();
    for s in [0.0, 1e6] {
        let moved = scene.shifted(shift_vector(s));
        let mesh_path = dir.path().join(format!("mesh-{s}.obj"));
        let rays_path = dir.path().join(format!("rays-{s}.npy"));
        let out = dir.path().join(format!("hits-{s}.hits"));
        let mut obj = String::new();
        for p in &moved.positions {
            obj += &format!("v {} {} {}\n", p.x, p.y, p.z);
        }
        for [a, b, c] in &moved.indices {
            obj += &format!("f {} {} {}\n", a + 1, b + 1, c + 1);
        }
        std::fs::write(&mesh_path, obj).expect("write obj");
        let rows: Vec<[f64; 8]> = moved
            .rays
            .iter()
            .map(|r| {
                let (o, d) = (r.origin, r.dir);
                [o.x, o.y, o.z, r.tmin, d.x, d.y, d.z, r.tmax]
            })
            .collect();
        std::fs::write(&rays_path, crate::support::files::npy_f64_rays(&rows)).expect("write rays");
        let output =
            crate::support::trace(&mesh_path, &rays_path, &out, &["--backend", "cpu"], &[]);
        crate::support::success(&output);
        let hits = io::read_hits(&out).expect("read hits");
        let want = trace64(&cpu, &moved.rebased_mesh(), Accel::Bvh, &moved.rays);
        assert_identical(&hits, &want, &format!("CLI vs library, shift {s:e}"));
        outputs.push(std::fs::read(&out).expect("hits file"));
    }
    assert!(
        outputs[0] == outputs[1],
        "the shifted scene's hit file differs from the unshifted one"
    );
}
