//! Primary-ray images: what the picker sees through a camera, as RGBA8 pixels.
//!
//! Every pixel's ray ([`Camera::primary_rays`]) is traced through a [`Picker`]; a
//! hit is shaded by the hit triangle's geometric normal (the normal as a colour,
//! lit by a light at the eye) and darkened with distance, a miss is the flat
//! [`BACKGROUND`] colour. Every channel of a shaded pixel is at least
//! [`MIN_HIT_CHANNEL`], above every channel of the background, so
//! [`covered_pixels`] counts exactly the pixels whose ray hit.
//!
//! ```
//! use raypick::render::{self, BACKGROUND};
//! use raypick::{Accel, Backend, Picker, TraceOptions};
//! use raypick_testkit::fixtures;
//!
//! let mesh = fixtures::builtin_scene(2_000);
//! let camera = fixtures::bench_camera(mesh.bounds().unwrap(), 64, 40);
//! let picker = Picker::new(Backend::Cpu)?;
//! let rendered = render::render(&picker, &mesh, Accel::Bvh, &camera, 64, 40, &TraceOptions::default())?;
//! let hits = rendered.hits.iter().filter(|h| h.is_hit()).count();
//! assert_eq!(render::covered_pixels(&rendered.image), hits);
//! assert_eq!(rendered.image.pixel(0, 0), BACKGROUND); // the corner sees past the scene
//! # Ok::<(), raypick::Error>(())
//! ```

use glam::Vec3;

use crate::Mesh;
use crate::camera::Camera;
use crate::error::{Error, Result};
use crate::options::{Accel, TraceOptions};
use crate::picker::Picker;
use crate::types::{Hit, Ray};

/// The colour of pixels whose ray misses (opaque dark slate).
pub const BACKGROUND: [u8; 4] = [28, 30, 36, 255];

/// The smallest value of each colour channel of a pixel whose ray hits; above
/// every channel of [`BACKGROUND`], so hits and misses never share a colour.
pub const MIN_HIT_CHANNEL: u8 = 48;

/// The largest image side [`render`] accepts, in pixels.
pub const MAX_SIDE: u32 = 16_384;

/// An RGBA8 image, rows top to bottom, 4 bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes: red, green, blue, alpha per pixel, row-major
    /// from the top-left pixel.
    pub pixels: Vec<u8>,
}

impl Image {
    /// The RGBA value of pixel `(px, py)` (`py` counted downward from the top).
    ///
    /// # Panics
    /// If the pixel is outside the image.
    pub fn pixel(&self, px: u32, py: u32) -> [u8; 4] {
        assert!(
            px < self.width && py < self.height,
            "pixel outside the image"
        );
        let i = 4 * (py as usize * self.width as usize + px as usize);
        [
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
            self.pixels[i + 3],
        ]
    }
}

/// The result of [`render`]: the image and the hit of every pixel's ray.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The shaded image.
    pub image: Image,
    /// One hit per pixel, row-major from the top-left pixel.
    pub hits: Vec<Hit>,
}

/// Checks an image size: both sides between 1 and [`MAX_SIDE`].
pub fn check_size(width: u32, height: u32) -> Result<()> {
    if (1..=MAX_SIDE).contains(&width) && (1..=MAX_SIDE).contains(&height) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "image size {width}x{height}: each side must be between 1 and {MAX_SIDE} pixels"
        )))
    }
}

/// Traces the primary rays of a `width × height` image of `mesh` seen by `camera`
/// on `picker` (with `accel`) and shades them with [`shade`].
///
/// Fails on an invalid camera ([`Camera::check`]) or size ([`check_size`]), and
/// when the backend fails.
pub fn render(
    picker: &Picker,
    mesh: &Mesh,
    accel: Accel,
    camera: &Camera,
    width: u32,
    height: u32,
    options: &TraceOptions,
) -> Result<Rendered> {
    check_size(width, height)?;
    camera.check()?;
    let rays = camera.primary_rays(width, height);
    let prepared = picker.upload_with(mesh, accel)?;
    let hits = picker.trace(&prepared, &rays, options)?;
    let image = shade(mesh, &rays, &hits, width, height);
    Ok(Rendered { image, hits })
}

/// Shades the hits of a `width × height` image's primary rays (row-major from the
/// top-left pixel, one hit per ray) into an RGBA8 image.
///
/// A hit on triangle `k` takes the colour `0.5 + 0.5 * n` of its unit geometric
/// normal `n`, times a headlight term `0.35 + 0.65 * |n · d|` (`d` the unit ray
/// direction; both faces are lit) and a distance term falling linearly from 1 at
/// the nearest hit of the image to 0.55 at the farthest; each channel is then
/// mapped into `[MIN_HIT_CHANNEL, 255]`. A miss is [`BACKGROUND`].
///
/// # Panics
/// If `rays` or `hits` does not hold `width * height` entries, or a hit names a
/// triangle that `mesh` does not have.
pub fn shade(mesh: &Mesh, rays: &[Ray], hits: &[Hit], width: u32, height: u32) -> Image {
    let count = width as usize * height as usize;
    assert_eq!(rays.len(), count, "one ray per pixel");
    assert_eq!(hits.len(), count, "one hit per pixel");
    // Distance along the (unit-length) ray direction.
    let distance = |ray: &Ray, hit: &Hit| hit.t * ray.dir.length();
    let (near, far) = rays
        .iter()
        .zip(hits)
        .filter(|(_, h)| h.is_hit())
        .map(|(r, h)| distance(r, h))
        .fold((f32::INFINITY, 0f32), |(lo, hi), d| (lo.min(d), hi.max(d)));
    let span = (far - near).max(f32::MIN_POSITIVE);
    let mut pixels = Vec::with_capacity(4 * count);
    for (ray, hit) in rays.iter().zip(hits) {
        if !hit.is_hit() {
            pixels.extend_from_slice(&BACKGROUND);
            continue;
        }
        let [v0, v1, v2] = mesh.triangle(hit.prim as usize);
        let normal = (v1 - v0).cross(v2 - v0).normalize_or_zero();
        let dir = ray.dir.normalize_or_zero();
        let light = 0.35 + 0.65 * normal.dot(dir).abs();
        let depth = 1.0 - 0.45 * ((distance(ray, hit) - near) / span).clamp(0.0, 1.0);
        let colour = (Vec3::splat(0.5) + 0.5 * normal) * (light * depth);
        let channel = |c: f32| {
            let c = if c.is_finite() {
                c.clamp(0.0, 1.0)
            } else {
                0.5
            };
            MIN_HIT_CHANNEL + (c * f32::from(255 - MIN_HIT_CHANNEL)).round() as u8
        };
        pixels.extend_from_slice(&[channel(colour.x), channel(colour.y), channel(colour.z), 255]);
    }
    Image {
        width,
        height,
        pixels,
    }
}

/// The number of pixels of `image` that are not [`BACKGROUND`]: for an image made
/// by [`shade`], the number of rays that hit.
pub fn covered_pixels(image: &Image) -> usize {
    image
        .pixels
        .chunks_exact(4)
        .filter(|p| *p != BACKGROUND)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_are_background_and_hits_never_are() {
        let mesh = crate::kit::mesh(raypick_testkit::fixtures::cube());
        let camera = Camera::new(Vec3::new(3.0, 2.0, 4.0), Vec3::ZERO, Vec3::Y, 0.8);
        let rays = camera.primary_rays(8, 6);
        let mut hits = vec![Hit::MISS; rays.len()];
        hits[5] = Hit {
            t: 2.0,
            u: 0.2,
            v: 0.3,
            prim: 1,
        };
        hits[7] = Hit {
            t: 9.0,
            u: 0.2,
            v: 0.3,
            prim: 4,
        };
        let image = shade(&mesh, &rays, &hits, 8, 6);
        assert_eq!(image.pixels.len(), 8 * 6 * 4);
        assert_eq!(covered_pixels(&image), 2);
        assert_eq!(image.pixel(0, 0), BACKGROUND);
        for px in [5, 7] {
            let p = image.pixel(px, 0);
            assert!(p[..3].iter().all(|&c| c >= MIN_HIT_CHANNEL), "{p:?}");
        }
    }

    #[test]
    fn sizes_are_checked() {
        assert!(check_size(1, 1).is_ok());
        assert!(check_size(0, 4).is_err());
        assert!(check_size(4, MAX_SIDE + 1).is_err());
    }
}
