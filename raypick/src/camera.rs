//! Screen → ray: the look-at camera of docs/contracts.md §4 and an inverse
//! view-projection form.
//!
//! # Conventions
//!
//! * World space is right-handed. A look-at camera has
//!   `f = normalize(target - eye)`, `r = normalize(cross(f, up))`, `u = cross(r, f)`.
//! * Pixel `(px, py)` of a `width × height` image counts `py` downward from the top
//!   row and is sampled at its centre `(px + 0.5, py + 0.5)`. Pixel `(0, 0)` is the
//!   top-left pixel.
//! * Normalised device coordinates (NDC) have `x` to the right and `y` upward, both
//!   in `[-1, 1]` across the image (the wgpu / Direct3D / OpenGL convention). The
//!   centre of pixel `(px, py)` is at
//!   `ndc = (2*(px+0.5)/width - 1, 1 - 2*(py+0.5)/height)`; see [`pixel_center_ndc`].
//! * Perspective rays start at the eye with `tmin = 0`, `tmax = +inf` and a unit
//!   direction; orthographic rays start on the near plane (same interval, unit
//!   direction along the view axis).
//!
//! [`Camera::ray`] evaluates the closed form of docs/contracts.md §4; it equals unprojecting
//! the pixel through `perspective(fov_y, width/height, near, far) * look_at(eye,
//! target, up)` with [`ray_from_inverse_view_proj`]. (The matrices are
//! [`glam::camera::rh::proj::directx::perspective`] and
//! [`glam::camera::rh::view::look_at_mat4`]; [`Camera::view_matrix`] and
//! [`Camera::projection_matrix`] return them.)
//!
//! A renderer that keeps only a view-projection matrix uses [`Unprojector`]: it
//! inverts the matrix once (in f64) and gives the ray under a pixel, a cursor
//! position or an NDC point, and projects world points back to the screen.
//!
//! ```
//! use glam::Vec3;
//! use raypick::camera::Camera;
//!
//! let cam = Camera::new(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO, Vec3::Y, 60f32.to_radians());
//! let ray = cam.ray(320, 240, 641, 481); // the centre pixel of an odd-sized image
//! assert!((ray.dir - Vec3::NEG_Z).length() < 1e-6);
//! ```

use std::fmt;

use glam::{DMat4, DVec2, DVec3, DVec4, Mat4, Vec2, Vec3};

use crate::Ray;

/// A right-handed look-at pinhole camera (docs/contracts.md §4).
///
/// The field of view is the full vertical angle **in radians** (convert a value in
/// degrees with [`f32::to_radians`]). The horizontal field of view follows from the
/// image aspect ratio `width / height`.
///
/// A camera whose basis cannot be formed (see [`Camera::check`]) produces rays with
/// non-finite directions; such rays never hit anything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Position of the eye (the origin of every ray).
    pub eye: Vec3,
    /// The point the camera looks at; it appears at the centre of the image.
    pub target: Vec3,
    /// Approximate up direction; need not be unit length or orthogonal to the view
    /// direction, but must not be parallel to it.
    pub up: Vec3,
    /// Full vertical field of view, in radians, in `(0, π)`.
    pub fov_y: f32,
}

/// Why a [`Camera`] cannot produce valid rays (see [`Camera::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CameraError {
    /// `eye`, `target`, `up` or `fov_y` has a NaN or infinite component.
    NonFinite,
    /// `eye` and `target` are the same point, so there is no view direction.
    EyeAtTarget,
    /// `up` is zero or parallel to the view direction.
    UpParallelToView,
    /// `fov_y` is not strictly between 0 and π radians.
    FieldOfView,
    /// A view-projection matrix is singular or has a NaN or infinite entry.
    Matrix,
    /// An image side is zero.
    ImageSize,
}

impl fmt::Display for CameraError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CameraError::NonFinite => "camera eye, target, up and field of view must be finite",
            CameraError::EyeAtTarget => "camera eye and target are the same point",
            CameraError::UpParallelToView => {
                "camera up vector is zero or parallel to the view direction"
            }
            CameraError::FieldOfView => {
                "camera vertical field of view must be between 0 and 180 degrees"
            }
            CameraError::Matrix => "view-projection matrix is singular or not finite",
            CameraError::ImageSize => "image width and height must be at least 1 pixel",
        })
    }
}

impl std::error::Error for CameraError {}

impl Camera {
    /// A camera at `eye` looking at `target`, with the vertical field of view
    /// `fov_y` in radians.
    pub fn new(eye: Vec3, target: Vec3, up: Vec3, fov_y: f32) -> Self {
        Self {
            eye,
            target,
            up,
            fov_y,
        }
    }

    /// Checks that the camera can form an orthonormal basis and a valid
    /// projection: all fields finite, `eye != target`, `up` not parallel to the
    /// view direction, and `0 < fov_y < π`.
    pub fn check(&self) -> Result<(), CameraError> {
        let finite = self.eye.is_finite()
            && self.target.is_finite()
            && self.up.is_finite()
            && self.fov_y.is_finite();
        if !finite {
            return Err(CameraError::NonFinite);
        }
        if !(self.fov_y > 0.0 && self.fov_y < std::f32::consts::PI) {
            return Err(CameraError::FieldOfView);
        }
        let f = self.target - self.eye;
        if f == Vec3::ZERO || !f.is_finite() {
            return Err(CameraError::EyeAtTarget);
        }
        let [_, r, _] = self.basis();
        if !r.is_finite() || r.length_squared() < 0.5 {
            return Err(CameraError::UpParallelToView);
        }
        Ok(())
    }

    /// The orthonormal camera basis `[f, r, u]`: forward
    /// `f = normalize(target - eye)`, right `r = normalize(cross(f, up))` and
    /// true up `u = cross(r, f)`.
    ///
    /// The vectors are non-finite when [`Camera::check`] fails.
    pub fn basis(&self) -> [Vec3; 3] {
        let f = (self.target - self.eye).normalize();
        let r = f.cross(self.up).normalize();
        let u = r.cross(f);
        [f, r, u]
    }

    /// The ray through the point `ndc` (normalised device coordinates, `y` up) of
    /// an image with aspect ratio `aspect = width / height`.
    ///
    /// `dir = normalize(f + ndc.x*aspect*tan(fov_y/2)*r + ndc.y*tan(fov_y/2)*u)`,
    /// `origin = eye`, `tmin = 0`, `tmax = +inf`.
    pub fn ray_ndc(&self, ndc: Vec2, aspect: f32) -> Ray {
        let [f, r, u] = self.basis();
        let tan_half = (0.5 * self.fov_y).tan();
        let sx = ndc.x * aspect * tan_half;
        let sy = ndc.y * tan_half;
        Ray::new(self.eye, (f + sx * r + sy * u).normalize())
    }

    /// The primary ray through the centre of pixel `(px, py)` of a
    /// `width × height` image (`py` counted downward from the top).
    ///
    /// Exactly docs/contracts.md §4: `sx = (2*(px+0.5)/W - 1) * (W/H) * tan(fov_y/2)`,
    /// `sy = (1 - 2*(py+0.5)/H) * tan(fov_y/2)`, `dir = normalize(f + sx*r + sy*u)`,
    /// `origin = eye`, `tmin = 0`, `tmax = +inf`.
    ///
    /// Pixels outside the image are extrapolated. `width` and `height` must be
    /// non-zero; otherwise the direction is non-finite (and the ray misses).
    pub fn ray(&self, px: u32, py: u32, width: u32, height: u32) -> Ray {
        self.ray_ndc(
            pixel_center_ndc(px, py, width, height),
            aspect(width, height),
        )
    }

    /// The ray through the continuous screen position `(x, y)` of a
    /// `width × height` image, in pixels from the top-left corner of the image
    /// (`y` downward), e.g. a mouse cursor position. Pixel `(px, py)` covers
    /// `[px, px+1) × [py, py+1)`, so `ray_at(px + 0.5, py + 0.5, ..)` equals
    /// [`Camera::ray`]`(px, py, ..)`.
    pub fn ray_at(&self, x: f32, y: f32, width: u32, height: u32) -> Ray {
        self.ray_ndc(screen_to_ndc(x, y, width, height), aspect(width, height))
    }

    /// Primary rays for every pixel of a `width × height` image, row-major with the
    /// top row first: ray `py * width + px` is [`Camera::ray`]`(px, py, width, height)`.
    ///
    /// Returns an empty vector when `width` or `height` is zero.
    pub fn primary_rays(&self, width: u32, height: u32) -> Vec<Ray> {
        if width == 0 || height == 0 {
            return Vec::new();
        }
        let [f, r, u] = self.basis();
        let tan_half = (0.5 * self.fov_y).tan();
        let aspect = aspect(width, height);
        let mut rays = Vec::with_capacity(width as usize * height as usize);
        for py in 0..height {
            for px in 0..width {
                let ndc = pixel_center_ndc(px, py, width, height);
                let sx = ndc.x * aspect * tan_half;
                let sy = ndc.y * tan_half;
                rays.push(Ray::new(self.eye, (f + sx * r + sy * u).normalize()));
            }
        }
        rays
    }

    /// The right-handed view matrix
    /// [`glam::camera::rh::view::look_at_mat4`]`(eye, target, normalize(up))`
    /// (glam < 0.34: `Mat4::look_at_rh`).
    pub fn view_matrix(&self) -> Mat4 {
        glam::camera::rh::view::look_at_mat4(self.eye, self.target, self.up.normalize())
    }

    /// The right-handed projection matrix
    /// [`glam::camera::rh::proj::directx::perspective`]`(fov_y, aspect, near, far)`
    /// (glam < 0.34: `Mat4::perspective_rh`): NDC depth 0 at `near`, 1 at `far`,
    /// `y` up — the wgpu convention.
    pub fn projection_matrix(&self, aspect: f32, near: f32, far: f32) -> Mat4 {
        glam::camera::rh::proj::directx::perspective(self.fov_y, aspect, near, far)
    }

    /// `projection_matrix(aspect, near, far) * view_matrix()`. Its inverse fed to
    /// [`ray_from_inverse_view_proj`] reproduces [`Camera::ray_ndc`] (up to f32
    /// rounding in the matrices).
    pub fn view_projection(&self, aspect: f32, near: f32, far: f32) -> Mat4 {
        self.projection_matrix(aspect, near, far) * self.view_matrix()
    }

    /// The [`Unprojector`] of this camera's `perspective * look_at` matrix for a
    /// `width × height` image with the depth range `[near, far]`, built and
    /// inverted in f64 (so its rays agree with [`Camera::ray`] to f32 rounding).
    ///
    /// Fails when the camera is invalid ([`Camera::check`]), an image side is
    /// zero, or `near`, `far` are not finite with `0 < near < far`.
    pub fn unprojector(
        &self,
        width: u32,
        height: u32,
        near: f32,
        far: f32,
    ) -> Result<Unprojector, CameraError> {
        self.check()?;
        if width == 0 || height == 0 {
            return Err(CameraError::ImageSize);
        }
        if !(near.is_finite() && far.is_finite() && 0.0 < near && near < far) {
            return Err(CameraError::Matrix);
        }
        let projection = glam::dcamera::rh::proj::directx::perspective(
            self.fov_y as f64,
            width as f64 / height as f64,
            near as f64,
            far as f64,
        );
        let view = glam::dcamera::rh::view::look_at_mat4(
            self.eye.as_dvec3(),
            self.target.as_dvec3(),
            self.up.as_dvec3().normalize(),
        );
        Unprojector::new_f64(projection * view, width, height)
    }

    /// A camera that sees the whole axis-aligned box `[lo, hi]` in a
    /// `fov_y` (radians) × aspect-ratio `aspect` image, filling it as much as it
    /// can.
    ///
    /// It looks along `-from` (`from` points from the box towards the eye; need not
    /// be unit length), with up `+Y`, or `+Z` when `from` is (nearly) vertical. The
    /// target is moved off the box centre (in the image plane) so that the box's
    /// projection is centred in the image, and the eye is at the smallest distance
    /// at which all eight corners lie inside the central 98% of the image (in NDC;
    /// and always a little outside the box). A box with
    /// zero or non-finite size is treated as the cube of half-size 1 around its
    /// centre.
    pub fn framing(lo: Vec3, hi: Vec3, from: Vec3, fov_y: f32, aspect: f32) -> Self {
        let mut center = 0.5 * (lo + hi);
        let mut half = 0.5 * (hi - lo);
        if !(center.is_finite() && half.is_finite() && half.length() > 0.0) {
            center = if center.is_finite() {
                center
            } else {
                Vec3::ZERO
            };
            half = Vec3::ONE;
        }
        let from = from.try_normalize().unwrap_or(Vec3::Z);
        let up = if from.dot(Vec3::Y).abs() > 0.999 {
            Vec3::Z
        } else {
            Vec3::Y
        };
        // Basis of the final camera (it depends only on the view direction).
        let [f, r, u] = Self::new(center + from, center, up, fov_y).basis();
        // Fit into 98% of the image, a small margin.
        let tan_y = 0.98 * (0.5 * fov_y).tan();
        let tan_x = aspect * tan_y;
        let corners: [Vec3; 8] = std::array::from_fn(|i| {
            let s = |bit: usize| if i & (1 << bit) != 0 { 1.0 } else { -1.0 };
            center + half * Vec3::new(s(0), s(1), s(2))
        });
        // Smallest distance from `target` at which every corner is in view.
        let fit = |target: Vec3| {
            let mut distance = 0f32;
            let mut behind = 0f32;
            for c in corners {
                let q = c - target;
                let (x, y, z) = (q.dot(r), q.dot(u), q.dot(f));
                // The corner's depth, distance + z, must cover |x|/tan_x and |y|/tan_y.
                distance = distance.max(x.abs() / tan_x - z).max(y.abs() / tan_y - z);
                behind = behind.max(-z);
            }
            distance.max(behind + 0.05 * half.length())
        };
        // Re-centre the box's projection: move the target within the image plane
        // by the midpoint of the projected extent. Converges in a few steps.
        let mut target = center;
        for _ in 0..8 {
            let distance = fit(target);
            let (mut xs, mut ys) = ((f32::MAX, f32::MIN), (f32::MAX, f32::MIN));
            for c in corners {
                let q = c - target;
                let depth = distance + q.dot(f);
                let (x, y) = (q.dot(r) / depth, q.dot(u) / depth);
                xs = (xs.0.min(x), xs.1.max(x));
                ys = (ys.0.min(y), ys.1.max(y));
            }
            let depth = distance + (center - target).dot(f);
            target += depth * (0.5 * (xs.0 + xs.1) * r + 0.5 * (ys.0 + ys.1) * u);
        }
        let distance = fit(target);
        Self::new(target + distance * from, target, up, fov_y)
    }
}

/// The aspect ratio `width / height` of an image.
pub fn aspect(width: u32, height: u32) -> f32 {
    width as f32 / height as f32
}

/// NDC of the centre of pixel `(px, py)` of a `width × height` image (`py`
/// counted downward from the top): `(2*(px+0.5)/width - 1, 1 - 2*(py+0.5)/height)`.
pub fn pixel_center_ndc(px: u32, py: u32, width: u32, height: u32) -> Vec2 {
    let x = 2.0 * (px as f32 + 0.5) / width as f32 - 1.0;
    let y = 1.0 - 2.0 * (py as f32 + 0.5) / height as f32;
    Vec2::new(x, y)
}

/// NDC of the continuous screen position `(x, y)` in pixels from the top-left
/// corner of a `width × height` image (`y` downward): `(2*x/width - 1, 1 - 2*y/height)`.
pub fn screen_to_ndc(x: f32, y: f32, width: u32, height: u32) -> Vec2 {
    Vec2::new(2.0 * x / width as f32 - 1.0, 1.0 - 2.0 * y / height as f32)
}

/// The ray through the point `ndc` (normalised device coordinates, `x` right,
/// `y` up) of a camera given by its inverse view-projection matrix.
///
/// Works for perspective projections with any depth convention (`[0, 1]`,
/// OpenGL's `[-1, 1]`, reversed-Z, infinite far plane; e.g. glam's
/// `camera::rh::proj::directx::{perspective, perspective_infinite,
/// perspective_infinite_reverse}`, formerly `Mat4::perspective_rh`,
/// `Mat4::perspective_infinite_reverse_rh`, ...) and for orthographic ones
/// (`camera::rh::proj::directx::orthographic`, formerly `Mat4::orthographic_rh`,
/// including a reversed-Z one with `near` and `far` swapped). NDC `y` must point
/// up (the wgpu, Direct3D and OpenGL convention; glam's `vulkan` projections
/// flip `y`, so negate `ndc.y` for them). The matrix is converted to f64 and the point is
/// unprojected at two interior depths (NDC `z = 0.25` and `0.75`, finite for every
/// convention above, even with the far plane at infinity) with the homogeneous
/// divide `(x/w, y/w, z/w)`:
///
/// * **Perspective** (clip `w` changes with depth): `origin` is the eye, recovered
///   exactly as the unprojection of the clip-space point at infinity
///   `inverse * (0, 0, 1, 0)` (the eye is the one point whose clip `w` is zero);
///   `dir` is the unit vector from the eye towards the unprojected points.
/// * **Orthographic** (affine, clip `w` constant): `dir` is the unit vector along
///   the depth axis, oriented forward; `origin` is the unprojected point on the
///   near plane. Which end of the depth range is "near" is decided by assuming a
///   right-handed world: forward is `cross(up, right)`, where right and up are the
///   unprojected NDC `x` and `y` axes. So `orthographic(.., near, far)` starts
///   rays at NDC depth 0 and `orthographic(.., far, near)` (reversed-Z) at
///   depth 1, both on the plane at distance `near` from the eye.
///
/// In both cases `tmin = 0` and `tmax = +inf`. A singular or non-finite matrix
/// gives non-finite rays (which miss).
pub fn ray_from_inverse_view_proj(inv_view_proj: Mat4, ndc: Vec2) -> Ray {
    ray_from_inverse_view_proj_f64(inv_view_proj.as_dmat4(), ndc.as_dvec2())
}

/// [`ray_from_inverse_view_proj`] for the centre of pixel `(px, py)` of a
/// `width × height` image (see [`pixel_center_ndc`]).
pub fn ray_from_inverse_view_proj_pixel(
    inv_view_proj: Mat4,
    px: u32,
    py: u32,
    width: u32,
    height: u32,
) -> Ray {
    let ndc = DVec2::new(
        2.0 * (px as f64 + 0.5) / width as f64 - 1.0,
        1.0 - 2.0 * (py as f64 + 0.5) / height as f64,
    );
    ray_from_inverse_view_proj_f64(inv_view_proj.as_dmat4(), ndc)
}

/// [`ray_from_inverse_view_proj`] with an f64 matrix and NDC point, for callers that
/// keep their camera matrices in double precision (large worlds). The result is
/// rounded to f32 once, at the end.
pub fn ray_from_inverse_view_proj_f64(inv_view_proj: DMat4, ndc: DVec2) -> Ray {
    let m = inv_view_proj;
    let unproject_h = |z: f64| m * DVec4::new(ndc.x, ndc.y, z, 1.0);
    let a = unproject_h(0.25);
    let b = unproject_h(0.75);
    let pa = a.truncate() / a.w;
    let pb = b.truncate() / b.w;
    let perspective = (a.w - b.w).abs() > 1e-6 * a.w.abs().max(b.w.abs());
    let (origin, dir) = if perspective {
        let e = m.z_axis; // = m * (0, 0, 1, 0)
        let eye = e.truncate() / e.w;
        // Both points lie in front of the eye; use the farther one for precision.
        let p = if pa.distance_squared(eye) >= pb.distance_squared(eye) {
            pa
        } else {
            pb
        };
        (eye, (p - eye).normalize())
    } else {
        let right = m.x_axis.truncate();
        let up = m.y_axis.truncate();
        let forward = up.cross(right);
        let depth_axis = pb - pa; // towards increasing NDC depth
        let (near_z, dir) = if depth_axis.dot(forward) >= 0.0 {
            (0.0, depth_axis)
        } else {
            (1.0, -depth_axis)
        };
        let n = unproject_h(near_z);
        (n.truncate() / n.w, dir.normalize())
    };
    Ray::new(origin.as_vec3(), dir.as_vec3())
}

/// Screen → ray (and world → screen) for a camera given by its view-projection
/// matrix, the form a renderer holds: perspective with any depth convention
/// (including reversed-Z and an infinite far plane) or orthographic, NDC `y` up.
///
/// The matrix is inverted once, in f64; every ray is
/// [`ray_from_inverse_view_proj_f64`] of the point's NDC, so the conventions of
/// that function apply (perspective rays start at the eye, orthographic ones on
/// the near plane; unit directions; `[0, +inf]`). Screen positions are in pixels
/// from the top-left corner of the `width × height` image, `y` downward, pixel
/// `(px, py)` covering `[px, px+1) × [py, py+1)`.
///
/// ```
/// use glam::Vec3;
/// use raypick::camera::{Camera, Unprojector};
///
/// let cam = Camera::new(Vec3::new(0.0, 1.0, 5.0), Vec3::ZERO, Vec3::Y, 50f32.to_radians());
/// let (w, h) = (640, 400);
/// let view_proj = cam.view_projection(w as f32 / h as f32, 0.1, 100.0);
/// let screen = Unprojector::new(view_proj, w, h)?;
/// let (a, b) = (screen.ray(100, 50), cam.ray(100, 50, w, h));
/// assert!(a.dir.distance(b.dir) < 1e-5 && a.origin.distance(b.origin) < 1e-5);
/// // A point on the ray projects back into that pixel.
/// let p = screen.project(a.at(7.0)).unwrap();
/// assert!((p.x - 100.5).abs() < 1e-3 && (p.y - 50.5).abs() < 1e-3);
/// # Ok::<(), raypick::camera::CameraError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unprojector {
    view_proj: DMat4,
    inverse: DMat4,
    width: u32,
    height: u32,
}

impl Unprojector {
    /// From a view-projection matrix (`projection * view`) and the image size.
    ///
    /// Fails with [`CameraError::Matrix`] when the matrix is not finite or not
    /// invertible, and [`CameraError::ImageSize`] when a side is zero.
    pub fn new(view_proj: Mat4, width: u32, height: u32) -> Result<Self, CameraError> {
        Self::new_f64(view_proj.as_dmat4(), width, height)
    }

    /// [`Unprojector::new`] with an f64 matrix (large worlds, exact inverses).
    pub fn new_f64(view_proj: DMat4, width: u32, height: u32) -> Result<Self, CameraError> {
        if width == 0 || height == 0 {
            return Err(CameraError::ImageSize);
        }
        let inverse = view_proj.inverse();
        let det = view_proj.determinant();
        if !(view_proj.is_finite() && inverse.is_finite() && det != 0.0 && det.is_finite()) {
            return Err(CameraError::Matrix);
        }
        Ok(Self {
            view_proj,
            inverse,
            width,
            height,
        })
    }

    /// The view-projection matrix.
    pub fn view_projection(&self) -> DMat4 {
        self.view_proj
    }

    /// Its inverse, as [`ray_from_inverse_view_proj_f64`] takes it.
    pub fn inverse_view_projection(&self) -> DMat4 {
        self.inverse
    }

    /// The image size `(width, height)` in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The ray through the NDC point `ndc` (`x` right, `y` up, `[-1, 1]` across
    /// the image).
    pub fn ray_ndc(&self, ndc: DVec2) -> Ray {
        ray_from_inverse_view_proj_f64(self.inverse, ndc)
    }

    /// The ray through the continuous screen position `(x, y)` (pixels from the
    /// top-left corner, `y` down), e.g. a cursor. Positions outside the image are
    /// extrapolated.
    pub fn ray_at(&self, x: f64, y: f64) -> Ray {
        self.ray_ndc(self.screen_to_ndc(DVec2::new(x, y)))
    }

    /// The ray through the centre of pixel `(px, py)`: `ray_at(px + 0.5, py + 0.5)`.
    pub fn ray(&self, px: u32, py: u32) -> Ray {
        self.ray_at(px as f64 + 0.5, py as f64 + 0.5)
    }

    /// The rays through every pixel centre, row-major with the top row first.
    pub fn primary_rays(&self) -> Vec<Ray> {
        (0..self.height)
            .flat_map(|py| (0..self.width).map(move |px| (px, py)))
            .map(|(px, py)| self.ray(px, py))
            .collect()
    }

    /// NDC of a screen position: `(2*x/width - 1, 1 - 2*y/height)`.
    pub fn screen_to_ndc(&self, screen: DVec2) -> DVec2 {
        DVec2::new(
            2.0 * screen.x / self.width as f64 - 1.0,
            1.0 - 2.0 * screen.y / self.height as f64,
        )
    }

    /// The screen position (pixels from the top-left corner, `y` down) of the
    /// world point `p`, with the homogeneous divide; `None` when `p` is at or
    /// behind the eye plane of a perspective projection (clip `w <= 0`) or the
    /// result is not finite. Depth is not checked against the near and far planes.
    pub fn project(&self, p: Vec3) -> Option<DVec2> {
        self.project_f64(p.as_dvec3())
    }

    /// [`Unprojector::project`] for an f64 point.
    pub fn project_f64(&self, p: DVec3) -> Option<DVec2> {
        let clip = self.view_proj * DVec4::from((p, 1.0));
        // `w <= 0` (at or behind the eye plane) or NaN.
        if clip.w.is_nan() || clip.w <= 0.0 {
            return None;
        }
        let ndc = clip.truncate().truncate() / clip.w;
        let screen = DVec2::new(
            0.5 * (ndc.x + 1.0) * self.width as f64,
            0.5 * (1.0 - ndc.y) * self.height as f64,
        );
        screen.is_finite().then_some(screen)
    }
}
