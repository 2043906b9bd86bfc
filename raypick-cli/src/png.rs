//! PNG output of rendered images.

use std::path::Path;

use raypick::Result;
use raypick::render::Image;

/// Writes `image` as an 8-bit RGBA PNG file at `path`, atomically
/// ([`raypick::io::write_atomic`]): on failure no file is left behind. Errors name
/// the file.
pub fn write_png(path: impl AsRef<Path>, image: &Image) -> Result<()> {
    raypick::io::write_atomic(path, |w| {
        let mut encoder = png::Encoder::new(w, image.width, image.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&image.pixels)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    })
}

#[cfg(test)]
mod tests {
    use glam::Vec3;
    use raypick::camera::Camera;
    use raypick::{Accel, Backend, Picker, TraceOptions, render};
    use raypick_testkit::fixtures;

    use super::*;

    #[test]
    fn png_round_trips_and_failures_leave_no_file() {
        let mesh = fixtures::cube();
        let picker = Picker::new(Backend::Cpu).expect("CPU picker");
        let camera = Camera::new(Vec3::new(2.5, 2.0, 3.0), Vec3::ZERO, Vec3::Y, 0.9);
        let rendered = render::render(
            &picker,
            &mesh,
            Accel::Bvh,
            &camera,
            33,
            17,
            &TraceOptions::default(),
        )
        .expect("render");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cube.png");
        write_png(&path, &rendered.image).expect("write PNG");
        let decoded = raypick_testkit::files::decode_png(&std::fs::read(&path).expect("read PNG"));
        assert_eq!(decoded, rendered.image);

        // A directory in the way of the file: an error naming it, nothing left behind.
        let blocked = dir.path().join("taken.png");
        std::fs::create_dir(&blocked).expect("mkdir");
        let err = write_png(&blocked, &rendered.image).expect_err("a directory");
        assert!(err.to_string().contains("taken.png"), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
