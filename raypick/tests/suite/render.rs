//! `raypick::render`: images whose covered pixels are exactly the rays that hit,
//! identical on both backends, and PNG files written whole or not at all.

use glam::Vec3;
use raypick::camera::Camera;
use raypick::render::{self, BACKGROUND};
use raypick::{Accel, Backend, Picker, TraceOptions};
use raypick_testkit::fixtures;

fn camera() -> Camera {
    Camera::new(
        Vec3::new(30.0, 45.0, 70.0),
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::Y,
        55f32.to_radians(),
    )
}

#[test]
fn covered_pixels_are_the_rays_that_hit_on_every_backend() {
    let mesh = fixtures::builtin_scene(5_000);
    let (w, h) = (80, 50);
    let cpu = Picker::new(Backend::Cpu).expect("CPU picker");
    let mut pickers = vec![cpu];
    if crate::support::gpu().is_some() {
        pickers.push(Picker::new(Backend::Gpu).expect("GPU picker"));
    }
    let rays = camera().primary_rays(w, h);
    let mut images = Vec::new();
    for picker in &pickers {
        for accel in [Accel::Bvh, Accel::Brute] {
            let rendered = render::render(
                picker,
                &mesh,
                accel,
                &camera(),
                w,
                h,
                &TraceOptions::default(),
            )
            .expect("render");
            // The hits are those of the camera's primary rays traced directly.
            let direct = picker
                .trace(
                    &picker.upload_with(&mesh, accel).expect("upload"),
                    &rays,
                    &TraceOptions::default(),
                )
                .expect("trace");
            assert_eq!(rendered.hits, direct);
            let hit = direct.iter().filter(|h| h.is_hit()).count();
            assert!(
                hit > 0 && hit < rays.len(),
                "{hit} of {} rays hit",
                rays.len()
            );
            assert_eq!(render::covered_pixels(&rendered.image), hit);
            for (i, h) in direct.iter().enumerate() {
                let (px, py) = (i as u32 % w, i as u32 / w);
                assert_eq!(rendered.image.pixel(px, py) == BACKGROUND, !h.is_hit());
            }
            images.push(rendered.image);
        }
    }
    // Same hits on both backends and accelerations: the same picture.
    for image in &images[1..] {
        assert_eq!(image, &images[0]);
    }
}

#[test]
fn bad_sizes_and_cameras_are_errors() {
    let mesh = fixtures::cube();
    let picker = Picker::new(Backend::Cpu).expect("CPU picker");
    let options = TraceOptions::default();
    let good = Camera::new(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO, Vec3::Y, 1.0);
    for (w, h) in [(0, 10), (10, 0), (render::MAX_SIDE + 1, 1)] {
        assert!(render::render(&picker, &mesh, Accel::Bvh, &good, w, h, &options).is_err());
    }
    for camera in [
        Camera {
            eye: Vec3::ZERO,
            ..good
        },
        Camera {
            up: Vec3::Z,
            ..good
        },
        Camera { fov_y: 0.0, ..good },
    ] {
        let err = render::render(&picker, &mesh, Accel::Bvh, &camera, 8, 8, &options)
            .expect_err("bad camera");
        assert!(err.to_string().contains("camera"), "{err}");
    }
}
