//! Screen → ray (docs/contracts.md §4): the look-at form, the inverse view-projection form
//! (perspective, reversed-Z, orthographic) and the pixel conventions.

use glam::camera::rh::{proj::directx, proj::opengl, view::look_at_mat4};
use glam::dcamera::rh::{proj::directx as ddirectx, view::look_at_mat4 as dlook_at_mat4};
use glam::{DVec2, DVec3, DVec4, Mat4, Vec2, Vec3, Vec4};
use raypick::Ray;
use raypick::camera::{
    self, Camera, CameraError, Unprojector, pixel_center_ndc, ray_from_inverse_view_proj,
    ray_from_inverse_view_proj_f64, ray_from_inverse_view_proj_pixel, screen_to_ndc,
};
use raypick_testkit::fixtures::Rng;

/// A random, well-formed camera and image size.
fn random_camera(rng: &mut Rng) -> (Camera, u32, u32) {
    let eye = rng.point_in_box(Vec3::splat(-10.0), Vec3::splat(10.0));
    let dir = rng.unit_vector();
    let target = eye + dir * rng.range(0.5, 20.0);
    let mut up = rng.unit_vector();
    while up.dot(dir).abs() > 0.95 {
        up = rng.unit_vector();
    }
    let up = up * rng.range(0.5, 3.0); // need not be unit length
    let fov = rng.range(10.0, 150.0).to_radians();
    let width = 1 + rng.below(2000) as u32;
    let height = 1 + rng.below(2000) as u32;
    (Camera::new(eye, target, up, fov), width, height)
}

fn assert_dir_close(a: Vec3, b: Vec3, tol: f32, what: &str) {
    let (a, b) = (a.normalize(), b.normalize());
    assert!(
        (a - b).abs().max_element() <= tol,
        "{what}: {a:?} vs {b:?} (diff {:?})",
        a - b
    );
}

fn assert_unit_interval(ray: &Ray) {
    assert_eq!((ray.tmin, ray.tmax), (0.0, f32::INFINITY));
}

/// Unprojects a pixel centre through an f64 inverse view-projection matrix the
/// textbook way: near (depth 0) and far (depth 1) points with the homogeneous divide.
fn textbook_dir(inv: glam::DMat4, px: u32, py: u32, w: u32, h: u32) -> DVec3 {
    let x = 2.0 * (px as f64 + 0.5) / w as f64 - 1.0;
    let y = 1.0 - 2.0 * (py as f64 + 0.5) / h as f64;
    let near = inv * DVec4::new(x, y, 0.0, 1.0);
    let far = inv * DVec4::new(x, y, 1.0, 1.0);
    (far.truncate() / far.w - near.truncate() / near.w).normalize()
}

#[test]
fn look_at_matches_unprojecting_perspective_times_look_at() {
    let mut rng = Rng::new(1);
    let mut worst_f64 = 0f32;
    let mut worst_f32 = 0f32;
    for _ in 0..500 {
        let (cam, w, h) = random_camera(&mut rng);
        let near = rng.range(0.1, 1.0);
        let far = near * rng.log_range(10.0, 1e4);
        let aspect = w as f32 / h as f32;
        // Reference in f64: perspective_rh(fov, aspect, near, far) * look_at_rh(eye, target, up).
        let vp64 = ddirectx::perspective(cam.fov_y as f64, aspect as f64, near as f64, far as f64)
            * dlook_at_mat4(
                cam.eye.as_dvec3(),
                cam.target.as_dvec3(),
                cam.up.as_dvec3().normalize(),
            );
        let inv64 = vp64.inverse();
        // The same thing in f32, as a renderer would hold it.
        let inv32 = cam.view_projection(aspect, near, far).inverse();
        assert_eq!(
            cam.view_projection(aspect, near, far),
            directx::perspective(cam.fov_y, aspect, near, far)
                * look_at_mat4(cam.eye, cam.target, cam.up.normalize())
        );
        for _ in 0..20 {
            let (px, py) = (rng.below(w as usize) as u32, rng.below(h as usize) as u32);
            let ray = cam.ray(px, py, w, h);
            assert_eq!(ray.origin, cam.eye);
            assert_unit_interval(&ray);
            assert!((ray.dir.length() - 1.0).abs() < 1e-6);

            let reference = textbook_dir(inv64, px, py, w, h).as_vec3();
            assert_dir_close(ray.dir, reference, 1e-5, "look-at vs f64 unprojection");
            worst_f64 = worst_f64.max((ray.dir - reference).abs().max_element());

            let via_inverse64 = ray_from_inverse_view_proj_f64(
                inv64,
                DVec2::new(
                    2.0 * (px as f64 + 0.5) / w as f64 - 1.0,
                    1.0 - 2.0 * (py as f64 + 0.5) / h as f64,
                ),
            );
            assert_dir_close(via_inverse64.dir, reference, 1e-6, "inverse form (f64)");
            assert!(via_inverse64.origin.distance(cam.eye) < 1e-5 * (1.0 + cam.eye.length()));
            assert_unit_interval(&via_inverse64);

            let via_inverse32 = ray_from_inverse_view_proj_pixel(inv32, px, py, w, h);
            assert_dir_close(
                via_inverse32.dir,
                ray.dir,
                1e-4,
                "inverse form (f32 matrix)",
            );
            worst_f32 = worst_f32.max((via_inverse32.dir - ray.dir).abs().max_element());
            assert!(via_inverse32.origin.distance(cam.eye) < 1e-4 * (1.0 + cam.eye.length()));
        }
    }
    eprintln!(
        "worst |look-at - f64 unprojection| = {worst_f64:e}, f32 matrix path = {worst_f32:e}"
    );
}

#[test]
fn f32_inverse_matrix_agrees_to_1e5_for_moderate_cameras() {
    // With an f32 matrix the achievable precision depends on |eye| / near; for a
    // typical camera (|eye| <= 10, near >= 0.5) the directions agree to 1e-5.
    let mut rng = Rng::new(11);
    for _ in 0..300 {
        let (mut cam, w, h) = random_camera(&mut rng);
        cam.fov_y = cam.fov_y.min(120f32.to_radians());
        let near = rng.range(0.5, 1.0);
        let far = near * rng.log_range(10.0, 1e3);
        let aspect = w as f32 / h as f32;
        let inv = cam.view_projection(aspect, near, far).inverse();
        for _ in 0..10 {
            let (px, py) = (rng.below(w as usize) as u32, rng.below(h as usize) as u32);
            let a = cam.ray(px, py, w, h);
            let b = ray_from_inverse_view_proj_pixel(inv, px, py, w, h);
            assert_dir_close(a.dir, b.dir, 1e-5, "f32 inverse view-projection");
        }
    }
}

/// Projects `p` to NDC with the homogeneous divide.
fn to_ndc(view_proj: Mat4, p: Vec3) -> Vec3 {
    let c = view_proj * Vec4::from((p, 1.0));
    c.truncate() / c.w
}

/// Distance from `p` to the ray's line, and `t` of the closest point (unit `dir`).
fn line_distance(ray: &Ray, p: Vec3) -> (f32, f32) {
    let t = (p - ray.origin).dot(ray.dir);
    (p.distance(ray.origin + t * ray.dir), t)
}

#[test]
fn reversed_z_infinite_perspective_rays_pass_through_projected_points() {
    let mut rng = Rng::new(2);
    for _ in 0..300 {
        let (cam, w, h) = random_camera(&mut rng);
        let aspect = w as f32 / h as f32;
        let near = rng.range(0.05, 1.0);
        let proj = directx::perspective_infinite_reverse(cam.fov_y, aspect, near);
        let view_proj = proj * cam.view_matrix();
        let inv = view_proj.inverse();
        let [f, r, u] = cam.basis();
        let tan = (0.5 * cam.fov_y).tan();
        for _ in 0..10 {
            // A world point inside the view frustum, up to far away.
            let depth = rng.log_range(near * 1.5, 1e4);
            let sx = rng.range(-0.95, 0.95) * aspect * tan;
            let sy = rng.range(-0.95, 0.95) * tan;
            let p = cam.eye + depth * (f + sx * r + sy * u);
            let ndc = to_ndc(view_proj, p);
            assert!(ndc.z > 0.0 && ndc.z <= 1.0, "reversed-Z depth {}", ndc.z);
            let ray = ray_from_inverse_view_proj(inv, ndc.truncate());
            assert_unit_interval(&ray);
            assert!(ray.origin.distance(cam.eye) < 1e-4 * (1.0 + cam.eye.length()));
            assert_dir_close(ray.dir, p - cam.eye, 2e-5, "reversed-Z ray through point");
            // ... and it is the look-at ray through the same NDC point.
            let look_at = cam.ray_ndc(ndc.truncate(), aspect);
            assert_dir_close(ray.dir, look_at.dir, 2e-5, "reversed-Z vs look-at");
        }
    }
}

#[test]
fn other_perspective_conventions_give_the_same_rays() {
    let mut rng = Rng::new(3);
    for _ in 0..200 {
        let (cam, w, h) = random_camera(&mut rng);
        let aspect = w as f32 / h as f32;
        let view = cam.view_matrix();
        let near = rng.range(0.2, 1.0);
        let projections = [
            directx::perspective(cam.fov_y, aspect, near, 1000.0),
            directx::perspective_infinite(cam.fov_y, aspect, near),
            directx::perspective_infinite_reverse(cam.fov_y, aspect, near),
            opengl::perspective(cam.fov_y, aspect, near, 1000.0),
        ];
        let (px, py) = (rng.below(w as usize) as u32, rng.below(h as usize) as u32);
        let expected = cam.ray(px, py, w, h);
        for proj in projections {
            let ray = ray_from_inverse_view_proj_pixel((proj * view).inverse(), px, py, w, h);
            assert_dir_close(ray.dir, expected.dir, 1e-4, "projection convention");
            assert!(ray.origin.distance(cam.eye) < 1e-4 * (1.0 + cam.eye.length()));
        }
    }
}

#[test]
fn orthographic_rays_start_on_the_near_plane_and_pass_through_points() {
    let mut rng = Rng::new(4);
    for case in 0..300 {
        let (cam, _, _) = random_camera(&mut rng);
        let [f, r, u] = cam.basis();
        let half_w = rng.range(0.5, 20.0);
        let half_h = rng.range(0.5, 20.0);
        let off = Vec2::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        let (l, rt, b, t) = (
            off.x - half_w,
            off.x + half_w,
            off.y - half_h,
            off.y + half_h,
        );
        let near = rng.range(-5.0, 5.0);
        let far = near + rng.range(1.0, 100.0);
        let reversed = case % 2 == 1;
        let proj = if reversed {
            directx::orthographic(l, rt, b, t, far, near) // depth 1 at near, 0 at far
        } else {
            directx::orthographic(l, rt, b, t, near, far)
        };
        let view_proj = proj * cam.view_matrix();
        let inv = view_proj.inverse();
        for _ in 0..10 {
            // A point in the view volume.
            let vx = rng.range(l, rt);
            let vy = rng.range(b, t);
            let d = rng.range(near, far);
            let p = cam.eye + vx * r + vy * u + d * f;
            let ndc = to_ndc(view_proj, p);
            let ray = ray_from_inverse_view_proj(inv, ndc.truncate());
            assert_unit_interval(&ray);
            let scale = 1.0 + cam.eye.length() + far.abs() + half_w + half_h;
            assert_dir_close(ray.dir, f, 1e-5, "orthographic direction = forward");
            let on_near_plane = (ray.origin - cam.eye).dot(f) - near;
            assert!(
                on_near_plane.abs() < 1e-4 * scale,
                "origin off the near plane by {on_near_plane} (reversed {reversed})"
            );
            let (dist, t_p) = line_distance(&ray, p);
            assert!(dist < 1e-4 * scale, "point off the ray by {dist}");
            assert!(t_p >= -1e-4 * scale, "point behind the origin: t = {t_p}");
            // The origin is the point of the near plane with the same view x, y.
            let expected_origin = cam.eye + vx * r + vy * u + near * f;
            assert!(ray.origin.distance(expected_origin) < 1e-4 * scale);
        }
    }
}

#[test]
fn centre_pixel_of_odd_image_looks_at_target() {
    let mut rng = Rng::new(5);
    for _ in 0..500 {
        let (cam, w, h) = random_camera(&mut rng);
        let (w, h) = (w | 1, h | 1);
        assert_eq!(pixel_center_ndc(w / 2, h / 2, w, h), Vec2::ZERO);
        let ray = cam.ray(w / 2, h / 2, w, h);
        assert_dir_close(ray.dir, cam.target - cam.eye, 1e-6, "centre pixel");
        assert_eq!(ray.origin, cam.eye);
    }
}

#[test]
fn pixel_zero_zero_is_top_left() {
    let mut rng = Rng::new(6);
    for _ in 0..500 {
        let (cam, w, h) = random_camera(&mut rng);
        let (w, h) = (w.max(2), h.max(2));
        let [f, r, u] = cam.basis();
        let top_left = cam.ray(0, 0, w, h).dir;
        assert!(
            top_left.dot(r) < 0.0,
            "pixel (0,0) should be left of the target"
        );
        assert!(
            top_left.dot(u) > 0.0,
            "pixel (0,0) should be above the target"
        );
        assert!(top_left.dot(f) > 0.0);
        let bottom_right = cam.ray(w - 1, h - 1, w, h).dir;
        assert!(bottom_right.dot(r) > 0.0 && bottom_right.dot(u) < 0.0);
        let ndc = pixel_center_ndc(0, 0, w, h);
        assert!(ndc.x < 0.0 && ndc.y > 0.0);
    }
    // A concrete case: looking down -Z with +Y up, the top-left ray goes (-x, +y, -z).
    let cam = Camera::new(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 90f32.to_radians());
    let d = cam.ray(0, 0, 4, 2).dir;
    assert!(d.x < 0.0 && d.y > 0.0 && d.z < 0.0, "{d:?}");
    // Horizontal half-angle: tan = aspect * tan(45°) = 2; pixel 0 of 4 is at ndc x = -0.75.
    let expected = Vec3::new(-0.75 * 2.0, 0.5, -1.0).normalize();
    assert_dir_close(d, expected, 1e-6, "closed form");
}

#[test]
fn primary_rays_are_row_major_top_row_first() {
    let cam = Camera::new(
        Vec3::new(1.0, 2.0, 3.0),
        Vec3::new(-1.0, 0.5, 0.0),
        Vec3::Y,
        1.0,
    );
    let (w, h) = (7, 5);
    let rays = cam.primary_rays(w, h);
    assert_eq!(rays.len(), (w * h) as usize);
    for py in 0..h {
        for px in 0..w {
            assert_eq!(rays[(py * w + px) as usize], cam.ray(px, py, w, h));
        }
    }
    assert!(cam.primary_rays(0, 5).is_empty());
    assert!(cam.primary_rays(5, 0).is_empty());
}

#[test]
fn continuous_screen_positions_match_pixel_centres() {
    let cam = Camera::new(Vec3::new(0.0, 1.0, 5.0), Vec3::ZERO, Vec3::Y, 0.8);
    for (px, py) in [(0, 0), (3, 9), (639, 479), (320, 240)] {
        assert_eq!(
            cam.ray_at(px as f32 + 0.5, py as f32 + 0.5, 640, 480),
            cam.ray(px, py, 640, 480)
        );
    }
    assert_eq!(screen_to_ndc(0.0, 0.0, 640, 480), Vec2::new(-1.0, 1.0));
    assert_eq!(screen_to_ndc(640.0, 480.0, 640, 480), Vec2::new(1.0, -1.0));
    assert_eq!(camera::aspect(640, 480), 640.0 / 480.0);
}

#[test]
fn invalid_cameras_are_reported_and_never_panic() {
    let ok = Camera::new(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 1.0);
    assert_eq!(ok.check(), Ok(()));
    let cases = [
        (
            Camera {
                target: Vec3::ZERO,
                ..ok
            },
            CameraError::EyeAtTarget,
        ),
        (
            Camera {
                up: Vec3::new(0.0, 0.0, 3.0),
                ..ok
            },
            CameraError::UpParallelToView,
        ),
        (
            Camera {
                up: Vec3::ZERO,
                ..ok
            },
            CameraError::UpParallelToView,
        ),
        (Camera { fov_y: 0.0, ..ok }, CameraError::FieldOfView),
        (Camera { fov_y: 3.2, ..ok }, CameraError::FieldOfView),
        (
            Camera {
                eye: Vec3::new(f32::NAN, 0.0, 0.0),
                ..ok
            },
            CameraError::NonFinite,
        ),
        (
            Camera {
                fov_y: f32::INFINITY,
                ..ok
            },
            CameraError::NonFinite,
        ),
    ];
    for (cam, err) in cases {
        assert_eq!(cam.check(), Err(err), "{cam:?}");
        assert!(!err.to_string().is_empty());
        // Rays from a broken camera are non-finite (so they miss), not a panic.
        let ray = cam.ray(1, 1, 4, 4);
        assert!(!ray.dir.is_finite() || !ray.origin.is_finite() || err == CameraError::FieldOfView);
    }
}

#[test]
fn framing_sees_the_whole_box() {
    let mut rng = Rng::new(7);
    for _ in 0..300 {
        let lo = rng.point_in_box(Vec3::splat(-100.0), Vec3::splat(100.0));
        let hi = lo + rng.point_in_box(Vec3::splat(0.0), Vec3::splat(50.0));
        let from = rng.unit_vector();
        let fov = rng.range(20.0, 120.0).to_radians();
        let aspect = rng.range(0.3, 3.0);
        let cam = Camera::framing(lo, hi, from, fov, aspect);
        assert_eq!(cam.check(), Ok(()));
        assert_dir_close(cam.eye - cam.target, from, 1e-5, "view direction");
        let view_proj = cam.view_projection(aspect, 1e-3, 1e6);
        let mut extent = 0f32;
        for i in 0..8 {
            let corner = Vec3::new(
                if i & 1 != 0 { hi.x } else { lo.x },
                if i & 2 != 0 { hi.y } else { lo.y },
                if i & 4 != 0 { hi.z } else { lo.z },
            );
            let ndc = to_ndc(view_proj, corner);
            assert!(
                ndc.x.abs() <= 1.0 && ndc.y.abs() <= 1.0 && (0.0..=1.0).contains(&ndc.z),
                "corner {corner:?} projects to {ndc:?}"
            );
            extent = extent.max(ndc.x.abs()).max(ndc.y.abs());
        }
        // Tight: the box reaches close to the image border.
        assert!(extent > 0.97, "box fills only {extent} of the image");
    }
}

// ---------------------------------------------------------------------------
// Unprojector: the view-projection matrix form, both ways
// ---------------------------------------------------------------------------

#[test]
fn unprojector_of_a_camera_gives_its_rays() {
    let mut rng = Rng::new(21);
    for _ in 0..300 {
        let (cam, w, h) = random_camera(&mut rng);
        let near = rng.range(0.1, 1.0);
        let far = near * rng.log_range(10.0, 1e4);
        let screen = cam.unprojector(w, h, near, far).expect("valid camera");
        assert_eq!(screen.size(), (w, h));
        for _ in 0..10 {
            let (px, py) = (rng.below(w as usize) as u32, rng.below(h as usize) as u32);
            let (a, b) = (screen.ray(px, py), cam.ray(px, py, w, h));
            assert_unit_interval(&a);
            assert_dir_close(a.dir, b.dir, 1e-5, "Unprojector::ray vs Camera::ray");
            assert!(a.origin.distance(cam.eye) < 1e-5 * (1.0 + cam.eye.length()));
            // A continuous (cursor) position.
            let (x, y) = (rng.range(0.0, w as f32), rng.range(0.0, h as f32));
            let (a, b) = (screen.ray_at(x as f64, y as f64), cam.ray_at(x, y, w, h));
            assert_dir_close(a.dir, b.dir, 1e-5, "Unprojector::ray_at vs Camera::ray_at");
        }
    }
    // Every pixel, row-major with the top row first.
    let cam = Camera::new(Vec3::new(1.0, 2.0, 3.0), Vec3::ZERO, Vec3::Y, 0.9);
    let screen = cam.unprojector(7, 5, 0.5, 50.0).expect("valid camera");
    let (all, expected) = (screen.primary_rays(), cam.primary_rays(7, 5));
    assert_eq!(all.len(), 35);
    for (a, b) in all.iter().zip(&expected) {
        assert_dir_close(a.dir, b.dir, 1e-6, "primary_rays");
    }
}

#[test]
fn unprojector_projects_points_back_to_their_pixel() {
    let mut rng = Rng::new(22);
    for case in 0..300 {
        let (cam, w, h) = random_camera(&mut rng);
        let aspect = w as f32 / h as f32;
        let near = rng.range(0.2, 1.0);
        let proj = match case % 3 {
            0 => directx::perspective(cam.fov_y, aspect, near, 1e3),
            1 => directx::perspective_infinite_reverse(cam.fov_y, aspect, near),
            _ => directx::orthographic(-aspect * 3.0, aspect * 3.0, -3.0, 3.0, near, 1e3),
        };
        let screen = Unprojector::new(proj * cam.view_matrix(), w, h).expect("invertible");
        for _ in 0..10 {
            let (px, py) = (rng.below(w as usize) as u32, rng.below(h as usize) as u32);
            let ray = screen.ray(px, py);
            let p = ray.at(rng.range(1.0, 50.0));
            let back = screen.project(p).expect("in front of the camera");
            let tol = 2e-3 * (1.0 + w.max(h) as f64 / 100.0);
            assert!(
                (back - DVec2::new(px as f64 + 0.5, py as f64 + 0.5))
                    .abs()
                    .max_element()
                    < tol,
                "case {case}: pixel ({px}, {py}) projected back to {back}"
            );
        }
        // Points behind a perspective camera have no screen position.
        if case % 3 != 2 {
            let [f, _, _] = cam.basis();
            assert_eq!(screen.project(cam.eye - f), None);
        }
    }
}

#[test]
fn unprojector_rejects_unusable_matrices_and_sizes() {
    let good = directx::perspective(1.0, 1.5, 0.1, 100.0);
    assert!(Unprojector::new(good, 3, 2).is_ok());
    let singular = Mat4::from_cols(Vec4::X, Vec4::X, Vec4::Z, Vec4::W);
    let mut nan = good;
    nan.w_axis.x = f32::NAN;
    for (matrix, w, h, expected) in [
        (Mat4::ZERO, 4, 4, CameraError::Matrix),
        (singular, 4, 4, CameraError::Matrix),
        (nan, 4, 4, CameraError::Matrix),
        (good, 0, 4, CameraError::ImageSize),
        (good, 4, 0, CameraError::ImageSize),
    ] {
        assert_eq!(Unprojector::new(matrix, w, h), Err(expected));
    }
    let cam = Camera::new(Vec3::Z, Vec3::ZERO, Vec3::Y, 1.0);
    assert!(cam.unprojector(4, 4, 0.1, 10.0).is_ok());
    assert_eq!(cam.unprojector(4, 4, 1.0, 1.0), Err(CameraError::Matrix));
    assert_eq!(cam.unprojector(4, 4, 0.0, 1.0), Err(CameraError::Matrix));
    assert_eq!(
        cam.unprojector(4, 4, 0.1, f32::INFINITY),
        Err(CameraError::Matrix)
    );
    assert_eq!(
        cam.unprojector(0, 4, 0.1, 10.0),
        Err(CameraError::ImageSize)
    );
    let bad = Camera { fov_y: 0.0, ..cam };
    assert_eq!(
        bad.unprojector(4, 4, 0.1, 10.0),
        Err(CameraError::FieldOfView)
    );
    for e in [CameraError::Matrix, CameraError::ImageSize] {
        assert!(!e.to_string().is_empty());
    }
}
