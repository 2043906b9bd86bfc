//! `raypick trace` on bad input files: each gives one `raypick: error:` line naming
//! the file and what is wrong, a non-zero exit status, no output file (and no
//! temporary file) left behind, and an existing output file left untouched.

use std::path::{Path, PathBuf};

use crate::support::files::npy_bytes;
use crate::support::{assert_error, trace};
use glam::Vec3;
use raypick::{Ray, io};
use tempfile::TempDir;

/// A unit square in z = 0 (two triangles) as OBJ.
const OBJ: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";

/// A temp dir with a good mesh (`good.obj`) and good rays (`good.rays`).
struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("good.obj"), OBJ).expect("write obj");
        let rays = [Ray::new(Vec3::new(0.5, 0.25, 1.0), Vec3::NEG_Z)];
        io::write_rays(dir.path().join("good.rays"), &rays).expect("write rays");
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).expect("write test file");
        path
    }

    /// Traces `mesh` and `rays` twice, into a new and into an existing hit file; both
    /// must fail with one error line containing `needles`, leave no new file in the
    /// directory, and leave the existing hit file as it was.
    fn assert_fails_cleanly(&self, mesh: &Path, rays: &Path, needles: &[&str]) {
        for name in ["out.hits", "out.csv", "out.npy"] {
            let out = self.path(name);
            let before = self.listing();
            assert_error(
                &trace(mesh, rays, &out, &["--backend", "cpu"], &[]),
                needles,
            );
            assert!(!out.exists(), "{name} was created");
            assert_eq!(self.listing(), before, "files left behind");

            std::fs::write(&out, b"previous results").expect("write old output");
            assert_error(
                &trace(mesh, rays, &out, &["--backend", "cpu"], &[]),
                needles,
            );
            assert_eq!(
                std::fs::read(&out).expect("old output"),
                b"previous results",
                "{name} was changed"
            );
            std::fs::remove_file(&out).expect("remove old output");
        }
    }

    /// The names in the directory, sorted.
    fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("list dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn good_mesh(&self) -> PathBuf {
        self.path("good.obj")
    }

    fn good_rays(&self) -> PathBuf {
        self.path("good.rays")
    }
}

#[test]
fn numpy_rays_of_the_wrong_dtype() {
    let fx = Fixture::new();
    let rays = fx.write("ints.npy", npy_bytes("'<i4'", false, "(1, 8)", &[0u8; 32]));
    fx.assert_fails_cleanly(&fx.good_mesh(), &rays, &["ints.npy", "float32 or float64"]);
}

#[test]
fn numpy_rays_of_the_wrong_shape() {
    let fx = Fixture::new();
    let rays = fx.write("seven.npy", npy_bytes("'<f4'", false, "(2, 7)", &[0u8; 56]));
    fx.assert_fails_cleanly(&fx.good_mesh(), &rays, &["seven.npy", "shape (2, 7)"]);
    let flat = fx.write("flat.npy", npy_bytes("'<f8'", false, "(8,)", &[0u8; 64]));
    fx.assert_fails_cleanly(&fx.good_mesh(), &flat, &["flat.npy", "shape"]);
}

#[test]
fn csv_rays_with_a_bad_number() {
    let fx = Fixture::new();
    let rays = fx.write(
        "bad-number.csv",
        "ox,oy,oz,tmin,dx,dy,dz,tmax\n0.5,0.5,1,0,0,0,-1,inf\n0.5,0.5,1,0,0,zero,-1,inf\n",
    );
    fx.assert_fails_cleanly(
        &fx.good_mesh(),
        &rays,
        &["bad-number.csv", "line 3", "zero"],
    );
}

#[test]
fn csv_rays_with_the_wrong_column_count() {
    let fx = Fixture::new();
    let rays = fx.write(
        "seven.csv",
        "0.5,0.5,1,0,0,0,-1,inf\n0.5,0.5,1,0,0,-1,inf\n",
    );
    fx.assert_fails_cleanly(&fx.good_mesh(), &rays, &["seven.csv", "line 2", "8"]);
}

#[test]
fn broken_obj_mesh() {
    let fx = Fixture::new();
    let mesh = fx.write("broken.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 9\n");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["broken.obj"]);
    let mesh = fx.write("text.obj", "v 0 zero 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["text.obj"]);
}

#[test]
fn broken_gltf_mesh() {
    let fx = Fixture::new();
    let mesh = fx.write(
        "broken.gltf",
        r#"{"asset": {"version": "2.0"}, "meshes": [ {"#,
    );
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["broken.gltf"]);
    // Valid JSON whose accessor points past the end of its buffer.
    let mesh = fx.write(
        "short.gltf",
        r#"{"asset": {"version": "2.0"},
            "buffers": [{"byteLength": 36, "uri": "data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAA"}],
            "bufferViews": [{"buffer": 0, "byteLength": 36}],
            "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}],
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
            "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0}"#,
    );
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["short.gltf"]);
}

#[test]
fn broken_glb_mesh() {
    let fx = Fixture::new();
    let mesh = fx.write("broken.glb", b"glTF\x02\x00\x00\x00\xff\x00\x00\x00");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["broken.glb"]);
    let mesh = fx.write("notglb.glb", b"this is not a binary glTF file at all");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["notglb.glb"]);
}

#[test]
fn broken_ply_mesh() {
    let fx = Fixture::new();
    // The header promises three vertices and a face; the body stops after two.
    let mesh = fx.write(
        "short.ply",
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
         property float z\nelement face 1\nproperty list uchar int vertex_indices\n\
         end_header\n0 0 0\n1 0 0\n",
    );
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["short.ply"]);
    let mesh = fx.write("noheader.ply", "ply\nformat ascii 1.0\nelement vertex 3\n");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["noheader.ply"]);
}

#[test]
fn broken_stl_mesh() {
    let fx = Fixture::new();
    let mesh = fx.write(
        "broken.stl",
        "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0\nendloop\n",
    );
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["broken.stl"]);
    // Binary: the header promises two triangles, the file holds one.
    let mut binary = vec![0u8; 80];
    binary.extend_from_slice(&2u32.to_le_bytes());
    binary.extend_from_slice(&[0u8; 50]);
    let mesh = fx.write("short.stl", binary);
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["short.stl"]);
}

/// Tests run as root, where permissions do not stop reading: a directory in place of
/// a file is what cannot be read.
#[test]
fn unreadable_mesh_and_ray_files() {
    let fx = Fixture::new();
    let mesh = fx.path("dir.obj");
    std::fs::create_dir(&mesh).expect("dir");
    fx.assert_fails_cleanly(&mesh, &fx.good_rays(), &["dir.obj"]);
    for name in ["dir.rays", "dir.npy", "dir.csv"] {
        let rays = fx.path(name);
        std::fs::create_dir(&rays).expect("dir");
        fx.assert_fails_cleanly(&fx.good_mesh(), &rays, &[name]);
    }
    // And where permissions do count, a file nobody may read.
    #[cfg(unix)]
    {
        let locked = fx.write("locked.rays", [0u8; 32]);
        let mut permissions = std::fs::metadata(&locked).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o000);
        std::fs::set_permissions(&locked, permissions).unwrap();
        if std::fs::read(&locked).is_err() {
            fx.assert_fails_cleanly(&fx.good_mesh(), &locked, &["locked.rays"]);
        }
    }
}
