//! Mesh files: every format and variant on generated fixtures
//! (`raypick-testkit/meshes/generate.py`), real files from `assimp-testmodels`, OBJ
//! triangulation and grouping, malformed files, and the choice of loader by extension.

use std::path::{Path, PathBuf};

use glam::Vec3;
use raypick::io::{LoadedMesh, load_mesh, load_mesh_f64};
use raypick::{Error, Mesh};
use tempfile::TempDir;

use super::{expect_format_error, message_naming, temp_dir, write_file};
use raypick::io::load_obj;

/// A committed fixture.
fn fixture(name: &str) -> PathBuf {
    raypick_testkit::files::mesh_file(name)
}

/// The vertices of `generate.py`'s two quads, as written in the files.
const QUAD_VERTICES: [[f64; 3]; 8] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
    [0.1, 0.2, 1.5],
    [2.5, 0.2, 1.5],
    [2.5, 1.7, -1.25],
    [0.1, 1.7, -1.25],
];

/// The two quads fan-triangulated from their first corner, in file order.
fn quad_triangles() -> Vec<[Vec3; 3]> {
    let v = |i: usize| Vec3::from_array(QUAD_VERTICES[i].map(|c| c as f32));
    [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]]
        .into_iter()
        .map(|t| t.map(v))
        .collect()
}

/// Every file holding the two quads.
const QUAD_FILES: &[&str] = &[
    "quads.obj",
    "quads_ascii.ply",
    "quads_binary_le.ply",
    "quads_binary_be.ply",
    "quads_ascii.stl",
    "quads_binary.stl",
    "quads_solid_header.stl",
    "quads_embedded.gltf",
    "quads_external.gltf",
    "quads.glb",
];

fn triangles(mesh: &Mesh) -> Vec<[Vec3; 3]> {
    mesh.triangles().collect()
}

fn load(name: &str) -> Mesh {
    load_mesh(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_same_quads_load_to_the_same_triangles_from_every_format() {
    let expected = quad_triangles();
    for name in QUAD_FILES {
        assert_eq!(triangles(&load(name)), expected, "{name}");
    }
}

#[test]
fn binary_stl_whose_header_starts_with_solid_is_read_as_binary() {
    let path = fixture("quads_solid_header.stl");
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"solid"));
    assert_eq!(bytes.len(), 84 + 50 * 4);
    assert_eq!(triangles(&load("quads_solid_header.stl")), quad_triangles());
}

#[test]
fn gltf_index_widths_and_strides() {
    // quads.glb: u8 indices; quads_embedded.gltf: u16; quads_external.gltf: u32,
    // positions interleaved with a 16-byte stride, buffer URI with a %20 escape.
    for (name, component) in [
        ("quads.glb", 5121),
        ("quads_embedded.gltf", 5123),
        ("quads_external.gltf", 5125),
    ] {
        let text = String::from_utf8_lossy(&std::fs::read(fixture(name)).unwrap()).into_owned();
        assert!(
            text.contains(&format!("\"componentType\": {component}"))
                || text.contains(&format!("\"componentType\":{component}")),
            "{name} should use component type {component}"
        );
        assert_eq!(triangles(&load(name)), quad_triangles(), "{name}");
    }
}

#[test]
fn coordinates_are_read_at_the_precision_of_the_file() {
    // Big-endian PLY with `double` coordinates and OBJ text keep 0.1 exactly; the
    // little-endian PLY with `float` coordinates holds 0.1 rounded to f32.
    for name in ["quads_binary_be.ply", "quads.obj", "quads_ascii.stl"] {
        let mesh = load_mesh_f64(fixture(name)).unwrap();
        assert_eq!(
            mesh.triangles().nth(2).unwrap()[0],
            [0.1, 0.2, 1.5],
            "{name}"
        );
    }
    let single = load_mesh_f64(fixture("quads_binary_le.ply")).unwrap();
    assert_eq!(single.positions[4], [0.1f32 as f64, 0.2f32 as f64, 1.5]);
    assert_ne!(single.positions[4][0], 0.1);
}

#[test]
fn loaded_mesh_converts_to_the_same_mesh_as_load_mesh() {
    for name in QUAD_FILES {
        let loaded: LoadedMesh = load_mesh_f64(fixture(name)).unwrap();
        assert_eq!(loaded.triangle_count(), 4, "{name}");
        assert_eq!(loaded.into_mesh().unwrap(), load(name), "{name}");
    }
}

fn assert_close(actual: &[[Vec3; 3]], expected: &[[[f32; 3]; 3]]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?}");
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        for (p, q) in a.iter().zip(e) {
            assert!(
                p.distance(Vec3::from_array(*q)) < 1e-5,
                "triangle {k}: {a:?} != {e:?}"
            );
        }
    }
}

#[test]
fn gltf_required_extensions_that_keep_the_geometry_are_accepted() {
    let s = Scratch::new();
    let path = s.replaced(
        "quads_embedded.gltf",
        "materials.gltf",
        "\"asset\": {",
        "\"extensionsUsed\": [\"KHR_materials_unlit\", \"KHR_texture_transform\"], \
         \"extensionsRequired\": [\"KHR_materials_unlit\", \"KHR_texture_transform\"], \
         \"asset\": {",
    );
    assert_eq!(triangles(&load_mesh(&path).unwrap()), quad_triangles());
}

#[test]
fn gltf_node_transforms_are_applied_down_the_hierarchy() {
    // Node 0: translation (10, 0, 0), 90° about z, scale 2, holding the triangle
    // (1,0,0) (0,1,0) (0,0,1); its child node 1 (matrix: translation (0, 0, 5)) holds
    // it again. Node 2 is only in scene 1, not the default scene 0.
    // Node 0: p -> (10, 0, 0) + Rz90(2 p), with Rz90(x, y, z) = (-y, x, z).
    // Node 1: p -> node 0 applied to p + (0, 0, 5).
    let mesh = load("hierarchy.gltf");
    assert_close(
        &triangles(&mesh),
        &[
            [[10.0, 2.0, 0.0], [8.0, 0.0, 0.0], [10.0, 0.0, 2.0]],
            [[10.0, 2.0, 10.0], [8.0, 0.0, 10.0], [10.0, 0.0, 12.0]],
        ],
    );
}

#[test]
fn gltf_strips_fans_and_non_indexed_primitives() {
    // One mesh: a triangle strip over vertices 0..5, points (skipped), a fan over
    // 6 5 3 2 0, lines (skipped), and a non-indexed triangle list; no default scene,
    // so every scene is read.
    let v: [[f32; 3]; 7] = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 2.0, 0.0],
        [2.0, 0.0, 1.0],
        [3.0, 0.0, 1.0],
    ];
    let t = |a: usize, b: usize, c: usize| [v[a], v[b], v[c]];
    let mesh = load("modes.gltf");
    assert_close(
        &triangles(&mesh),
        &[
            // Strip: (v_i, v_i+1, v_i+2) for even i, (v_i, v_i+2, v_i+1) for odd i.
            t(0, 1, 2),
            t(1, 3, 2),
            t(2, 3, 4),
            // Fan over corners c = 6 5 3 2 0: (c_i+1, c_i+2, c_0).
            t(5, 3, 6),
            t(3, 2, 6),
            t(2, 0, 6),
            // Non-indexed list.
            [[0.0, 0.0, 5.0], [1.0, 0.0, 5.0], [0.0, 1.0, 5.0]],
            [[0.0, 0.0, 6.0], [1.0, 0.0, 6.0], [0.0, 1.0, 6.0]],
        ],
    );
}

#[test]
fn gltf_integer_positions_of_mesh_quantization() {
    // u16 positions as they are; normalized i8 positions divided by 127, -128
    // clamped to -1.
    let mesh = load("quantized.gltf");
    assert_eq!(
        triangles(&mesh),
        [
            [
                Vec3::ZERO,
                Vec3::new(2.0, 0.0, 0.0),
                Vec3::new(0.0, 3.0, 0.0)
            ],
            [Vec3::X, Vec3::NEG_Y, Vec3::NEG_Z],
        ]
    );
}

// ---------------------------------------------------------------------------
// Real files from assimp-testmodels.

const ASSIMP_MODELS: &str = "/usr/share/assimp/models";

/// Triangles of an STL file counted independently: the header's count for binary
/// files (size 84 + 50 n), otherwise the `endloop` lines (every facet here has three
/// vertices).
fn count_stl(bytes: &[u8]) -> usize {
    let n = u32::from_le_bytes(bytes[80..84].try_into().unwrap()) as usize;
    if bytes.len() == 84 + 50 * n || !bytes.starts_with(b"solid") {
        return n;
    }
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| line.trim_ascii() == b"endloop")
        .count()
}

/// Triangles of an OBJ file counted independently: `corners - 2` per `f` line.
fn count_obj(bytes: &[u8]) -> usize {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.first() == Some(&"f"))
        .map(|words| words.len() - 3)
        .sum()
}

/// Triangles of an ASCII PLY file counted independently: the `face` rows follow the
/// `vertex` rows, each starting with its corner count.
fn count_ascii_ply(bytes: &[u8]) -> usize {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.iter().position(|l| l.trim() == "end_header").unwrap();
    let declared = |element: &str| {
        lines[..end]
            .iter()
            .find_map(|l| l.strip_prefix(&format!("element {element} ")))
            .map_or(0, |n| n.trim().parse::<usize>().unwrap())
    };
    let (vertices, faces) = (declared("vertex"), declared("face"));
    lines[end + 1 + vertices..end + 1 + vertices + faces]
        .iter()
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
                - 2
        })
        .sum()
}

#[test]
fn real_files_from_assimp_testmodels_have_the_triangle_counts_of_their_formats() {
    let root = Path::new(ASSIMP_MODELS);
    if !root.is_dir() {
        let message = format!(
            "{ASSIMP_MODELS} is missing: install the Debian package assimp-testmodels \
             (.ci/run does)"
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        eprintln!("skipping the real-file checks: {message}");
        return;
    }
    type Counter = fn(&[u8]) -> usize;
    let counted: &[(&str, Counter)] = &[
        ("STL/Spider_ascii.stl", count_stl),
        ("STL/Spider_binary.stl", count_stl),
        ("STL/Wuson.stl", count_stl),
        ("STL/sphereWithHole.stl", count_stl),
        ("STL/triangle_with_two_solids.stl", count_stl),
        ("STL/3DSMaxExport.STL", count_stl),
        ("OBJ/spider.obj", count_obj),
        ("OBJ/box.obj", count_obj),
        ("OBJ/WusonOBJ.obj", count_obj),
        ("PLY/cube.ply", count_ascii_ply),
        ("PLY/Wuson.ply", count_ascii_ply),
        ("PLY/cube_uv.ply", count_ascii_ply),
        ("PLY/float-color.ply", count_ascii_ply),
    ];
    for (name, count) in counted {
        let path = root.join(name);
        let expected = count(&std::fs::read(&path).unwrap());
        assert!(expected > 0, "{name}");
        let mesh = load_mesh(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mesh.triangle_count(), expected, "{name}");
    }
    // Counts checked with a Python (standard library) walk of each file: binary PLY
    // face lists (`n - 2` per face), and for glTF the default scene's nodes, each
    // primitive's index (or position) count over 3 for triangle lists and minus 2
    // for strips and fans.
    let known = [
        ("PLY/cube_binary.ply", 12),
        ("glTF2/BoxTextured-glTF/BoxTextured.gltf", 12),
        ("glTF2/BoxTextured-glTF-Embedded/BoxTextured.gltf", 12),
        ("glTF2/BoxTextured-glTF-Binary/BoxTextured.glb", 12),
        (
            "glTF2/2CylinderEngine-glTF-Binary/2CylinderEngine.glb",
            121_496,
        ),
        // Points and lines: no triangles.
        (
            "glTF2/glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_00.gltf",
            0,
        ),
        (
            "glTF2/glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_02.gltf",
            0,
        ),
        // Triangle strip and fan.
        (
            "glTF2/glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_05.gltf",
            2,
        ),
        (
            "glTF2/glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_06.gltf",
            2,
        ),
        (
            "glTF2/glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_13.gltf",
            2,
        ),
    ];
    for (name, expected) in known {
        let mesh = load_mesh(root.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mesh.triangle_count(), expected, "{name}");
    }
    // The same model in three files: the same triangles.
    let box_triangles = |name: &str| triangles(&load_mesh(root.join(name)).unwrap());
    let textured = box_triangles("glTF2/BoxTextured-glTF/BoxTextured.gltf");
    assert_eq!(
        box_triangles("glTF2/BoxTextured-glTF-Binary/BoxTextured.glb"),
        textured
    );
    assert_eq!(
        box_triangles("glTF2/BoxTextured-glTF-Embedded/BoxTextured.gltf"),
        textured
    );
    // Broken real files are errors that name the file.
    for name in [
        "glTF2/RecursiveNodes/RecursiveNodes.gltf",
        "glTF2/MissingBin/BoxTextured.gltf",
        "glTF2/IndexOutOfRange/IndexOutOfRange.gltf",
    ] {
        assert_format_error(&root.join(name), "");
    }
}

// ---------------------------------------------------------------------------
// Malformed files.

/// Asserts that loading `path` fails with [`Error::Format`] for that path, with a
/// one-line message containing `needle` and the file name.
fn assert_format_error(path: &Path, needle: &str) {
    match load_mesh(path) {
        Err(error @ Error::Format { .. }) => {
            let Error::Format {
                path: named,
                message,
            } = &error
            else {
                unreachable!()
            };
            assert_eq!(named, path);
            let text = error.to_string();
            assert!(!text.contains('\n'), "not one line: {text}");
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(
                message.contains(needle),
                "{}: message {message:?} does not mention {needle:?}",
                path.display()
            );
        }
        other => panic!("{}: expected a format error, got {other:?}", path.display()),
    }
}

/// A temp dir and files written into it.
struct Scratch(TempDir);

impl Scratch {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A fixture with its bytes changed by `edit`.
    fn edited(&self, fixture_name: &str, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
        let mut bytes = std::fs::read(fixture(fixture_name)).unwrap();
        edit(&mut bytes);
        self.write(name, bytes)
    }

    /// A text fixture with `from` replaced by `to` (which must change it).
    fn replaced(&self, fixture_name: &str, name: &str, from: &str, to: &str) -> PathBuf {
        let text = std::fs::read_to_string(fixture(fixture_name)).unwrap();
        let changed = text.replacen(from, to, 1);
        assert_ne!(changed, text, "{from:?} not in {fixture_name}");
        self.write(name, changed)
    }
}

/// For each `(from, to, needle)`: the text fixture with `from` replaced by `to` fails
/// with a format error mentioning `needle`.
fn assert_text_edits_fail(s: &Scratch, fixture_name: &str, cases: &[(&str, &str, &str)]) {
    let ext = Path::new(fixture_name)
        .extension()
        .unwrap()
        .to_str()
        .unwrap();
    for (k, (from, to, needle)) in cases.iter().enumerate() {
        let path = s.replaced(fixture_name, &format!("edit{k}.{ext}"), from, to);
        assert_format_error(&path, needle);
    }
}

#[test]
fn missing_and_unreadable_files_are_file_errors() {
    let scratch = Scratch::new();
    for ext in ["obj", "gltf", "glb", "ply", "stl"] {
        let path = scratch.0.path().join(format!("absent.{ext}"));
        match load_mesh(&path) {
            Err(error @ Error::File { .. }) => {
                assert!(error.to_string().contains("absent"), "{error}");
            }
            other => panic!("{ext}: expected a file error, got {other:?}"),
        }
    }
    // A directory cannot be read as a file.
    let dir = scratch.0.path().join("dir.ply");
    std::fs::create_dir(&dir).unwrap();
    assert!(matches!(load_mesh(&dir), Err(Error::File { .. })));
}

#[test]
fn an_unknown_mesh_extension_names_the_supported_ones() {
    let scratch = Scratch::new();
    let path = scratch.write("mesh.off", "OFF\n");
    match load_mesh(&path) {
        Err(Error::UnknownFormat {
            path: named,
            message,
        }) => {
            assert_eq!(named, path);
            assert!(message.contains(".glb"), "{message}");
        }
        other => panic!("expected UnknownFormat, got {other:?}"),
    }
}

#[test]
fn broken_stl_files_are_format_errors() {
    let s = Scratch::new();
    // Binary, 10 bytes short.
    let truncated = s.edited("quads_binary.stl", "short.stl", |b| {
        b.truncate(b.len() - 10)
    });
    assert_format_error(&truncated, "truncated binary STL");
    // A header declaring 4 billion triangles: no huge allocation, just the error.
    let huge = s.edited("quads_binary.stl", "huge.stl", |b| {
        b[80..84].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert_format_error(&huge, "4294967295 triangles");
    // Binary whose header starts with "solid", truncated: neither reading works.
    let solid = s.edited("quads_solid_header.stl", "solid.stl", |b| b.truncate(150));
    assert_format_error(&solid, "nor binary STL");
    // ASCII: a bad number, a facet cut off, a stray keyword, too short.
    let bad_number = s.replaced("quads_ascii.stl", "number.stl", "vertex 1.0", "vertex 1.x");
    assert_format_error(&bad_number, "'1.x' is not a number");
    let message = load_mesh(&bad_number).unwrap_err().to_string();
    assert!(!message.contains("binary"), "a text file: {message}");
    let cut = s.edited("quads_ascii.stl", "cut.stl", |b| b.truncate(120));
    assert_format_error(&cut, "ends inside a facet");
    let stray = s.replaced("quads_ascii.stl", "stray.stl", "endloop", "endlop");
    assert_format_error(&stray, "unexpected 'endlop'");
    assert_format_error(&s.write("tiny.stl", "abc"), "too short");
}

#[test]
fn broken_ply_files_are_format_errors() {
    let s = Scratch::new();
    assert_text_edits_fail(
        &s,
        "quads_ascii.ply",
        &[
            ("ply\n", "plx\n", "first line is not 'ply'"),
            (
                "format ascii 1.0",
                "format ebcdic 1.0",
                "unknown format 'ebcdic'",
            ),
            (
                "element vertex 8",
                "element vertex eight",
                "'eight' is not an element count",
            ),
            (
                "property float x",
                "property quad x",
                "unknown property type 'quad'",
            ),
            ("end_header", "end_heder", "end_header"),
            ("property float y", "property float w", "'y'"),
            // Index out of range, negative index.
            (
                "4 4 5 6 7",
                "4 4 5 6 9",
                "uses vertex 9, but the file has 8 vertices",
            ),
            ("4 4 5 6 7", "4 4 5 -6 7", "-6"),
            // A huge declared count: no huge allocation before the data runs out.
            (
                "element vertex 8",
                "element vertex 4000000000",
                "unexpected end of file",
            ),
        ],
    );
    // Bodies cut short, ASCII and binary.
    let cut = s.edited("quads_ascii.ply", "cut.ply", |b| b.truncate(b.len() - 30));
    assert_format_error(&cut, "unexpected end of file");
    let cut = s.edited("quads_binary_le.ply", "cut_le.ply", |b| {
        b.truncate(b.len() - 3)
    });
    assert_format_error(&cut, "element 'face' row 1");
    // Huge declared counts: rows without properties read nothing; the others run
    // out of data before any huge allocation.
    let empty_rows = s.replaced(
        "quads_ascii.ply",
        "rows.ply",
        "end_header",
        "element nothing 18446744073709551615\nend_header",
    );
    assert_eq!(load_mesh(&empty_rows).unwrap().triangle_count(), 4);
    let huge = s.edited("quads_binary_le.ply", "huge_le.ply", |b| {
        let at = b.windows(14).position(|w| w == b"element face 2").unwrap();
        b.splice(at..at + 14, b"element face 999999999999".iter().copied());
    });
    assert_format_error(&huge, "unexpected end of file");
}

#[test]
fn broken_gltf_files_are_format_errors() {
    let s = Scratch::new();
    assert_format_error(&s.write("syntax.gltf", "{\"asset\": "), "invalid glTF JSON");
    assert_format_error(
        &s.write("v1.gltf", r#"{"asset": {"version": "1.0"}, "meshes": {}}"#),
        "glTF version 1.0; only glTF 2.0 is supported",
    );
    assert_text_edits_fail(
        &s,
        "quads_embedded.gltf",
        &[
            ("\"indices\": 1", "\"indices\": 7", "invalid glTF"),
            (
                "\"POSITION\": 0",
                "\"POSITION\": 9",
                "accessor 9 does not exist",
            ),
            // A count past the end of the data: no huge allocation.
            (
                "\"count\": 12",
                "\"count\": 1000000000",
                "does not fit in buffer view",
            ),
            ("base64,", "base64,@@@", "bad base64"),
            (
                "\"asset\": {",
                "\"extensionsRequired\": [\"KHR_draco_mesh_compression\"], \"asset\": {",
                "requires the glTF extension KHR_draco_mesh_compression",
            ),
            (
                "\"byteLength\": 120",
                "\"byteLength\": 900",
                "declares 900 bytes",
            ),
        ],
    );
    // A missing external buffer.
    let external = s.write(
        "external.gltf",
        std::fs::read(fixture("quads_external.gltf")).unwrap(),
    );
    assert_format_error(&external, "quads external.bin");
    // Index out of range, node cycle.
    let path = s.edited("quads.glb", "index.glb", |b| {
        // The u8 indices are the last 12 bytes of the binary chunk: 0 1 2 0 2 3 ...
        let at = b.len() - 12;
        b[at] = 200;
    });
    assert_format_error(&path, "index 200 is out of range");
    let cycle = s.replaced(
        "hierarchy.gltf",
        "cycle.gltf",
        "\"mesh\": 0,\n   \"matrix\"",
        "\"mesh\": 0,\n   \"children\": [0],\n   \"matrix\"",
    );
    assert_format_error(&cycle, "reached twice");
}

#[test]
fn broken_glb_containers_are_format_errors() {
    let s = Scratch::new();
    let glb = |name: &str, edit: fn(&mut Vec<u8>)| s.edited("quads.glb", name, edit);
    assert_format_error(
        &glb("header.glb", |b| b.truncate(10)),
        "GLB header truncated",
    );
    assert_format_error(&glb("version.glb", |b| b[4] = 1), "GLB version 1");
    assert_format_error(
        &glb("length.glb", |b| b.truncate(b.len() - 4)),
        "GLB header declares",
    );
    // The JSON chunk claims more bytes than there are.
    assert_format_error(
        &glb("chunk.glb", |b| {
            b[12..16].copy_from_slice(&u32::MAX.to_le_bytes())
        }),
        "GLB chunk 0 declares",
    );
    // The first chunk is not JSON.
    assert_format_error(&glb("type.glb", |b| b[16] = b'X'), "must be JSON");
    // The binary chunk is missing: the buffer cannot be found.
    let no_bin = glb("nobin.glb", |b| {
        let json_length = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
        let end = 20 + json_length;
        b.truncate(end);
        let total = (end as u32).to_le_bytes();
        b[8..12].copy_from_slice(&total);
    });
    assert_format_error(&no_bin, "GLB binary chunk");
}

#[test]
fn broken_obj_files_are_format_errors() {
    let s = Scratch::new();
    assert_format_error(&s.write("garbage.obj", "v 1 2 x\n"), "line 1");
    assert_format_error(
        &s.replaced("quads.obj", "index.obj", "f 5//1", "f 15//1"),
        "out of range",
    );
    assert_format_error(
        &s.write("binary.obj", [0xff, 0xfe, b'v', 0, 0x80]),
        r"'\xff\xfev\x00\x80' is not an OBJ statement",
    );
}

/// Every prefix of every fixture, and every fixture with bytes flipped, loads or fails
/// with an error, never a panic.
#[test]
fn damaged_fixtures_never_panic() {
    let s = Scratch::new();
    // The external glTF needs its buffer next to it.
    s.write(
        "quads external.bin",
        std::fs::read(fixture("quads external.bin")).unwrap(),
    );
    let names = QUAD_FILES
        .iter()
        .chain(&["hierarchy.gltf", "modes.gltf", "quantized.gltf"]);
    let mut outcomes = [0usize; 2];
    for name in names {
        let original = std::fs::read(fixture(name)).unwrap();
        let step = (original.len() / 50).max(1);
        let mut variants: Vec<Vec<u8>> = (0..original.len())
            .step_by(step)
            .map(|n| original[..n].to_vec())
            .collect();
        for at in (0..original.len()).step_by(step) {
            for flip in [0x01u8, 0xff] {
                let mut bytes = original.clone();
                bytes[at] ^= flip;
                variants.push(bytes);
            }
        }
        for bytes in variants {
            let path = s.write(name, &bytes);
            match load_mesh_f64(&path) {
                Ok(_) => outcomes[0] += 1,
                Err(Error::Format { path: named, .. }) => {
                    assert_eq!(named, path);
                    outcomes[1] += 1;
                }
                Err(other) => panic!("{name}: unexpected {other}"),
            }
        }
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

#[test]
fn mesh_formats_are_chosen_by_extension_case_insensitively() {
    let dir = temp_dir();
    // An empty ASCII STL: valid as `.STL`, broken content for every other format.
    let content = b"solid x\nendsolid x\n";
    let path = write_file(&dir, "m.STL", content);
    assert_eq!(load_mesh(&path).expect("empty STL").triangle_count(), 0);
    for name in ["m.gltf", "m.GLB", "m.ply"] {
        let path = write_file(&dir, name, content);
        match load_mesh(&path) {
            Err(error @ Error::Format { .. }) => {
                message_naming(&error, &path);
            }
            other => panic!("{name}: expected a format error, got {other:?}"),
        }
    }
}

fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

#[test]
fn obj_quads_and_polygons_are_fan_triangulated_in_file_order() {
    let dir = temp_dir();
    let text = "\
# a quad, a triangle and a pentagon
mtllib missing.mtl
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
vt 0 0
vn 0 0 1
usemtl nothing
f 1 2 3 4
f 4/1 3/1 2/1
v 0 0 1
v 2 0 1
v 3 1 1
v 2 2 1
v 0 2 1
f 5//1 6//1 7//1 8//1 9//1
l 1 2 3
p 1
";
    let path = write_file(&dir, "quad.obj", text.as_bytes());
    let mesh = load_mesh(&path).unwrap();
    let want = [
        [v(0., 0., 0.), v(1., 0., 0.), v(1., 1., 0.)],
        [v(0., 0., 0.), v(1., 1., 0.), v(0., 1., 0.)],
        [v(0., 1., 0.), v(1., 1., 0.), v(1., 0., 0.)],
        [v(0., 0., 1.), v(2., 0., 1.), v(3., 1., 1.)],
        [v(0., 0., 1.), v(3., 1., 1.), v(2., 2., 1.)],
        [v(0., 0., 1.), v(2., 2., 1.), v(0., 2., 1.)],
    ];
    assert_eq!(mesh.triangle_count(), want.len());
    for (k, tri) in want.iter().enumerate() {
        assert_eq!(mesh.triangle(k), *tri, "triangle {k}");
    }
}

#[test]
fn obj_objects_and_groups_are_concatenated_with_relative_indices() {
    let dir = temp_dir();
    let text = "\
o first
v 0 0 0
v 1 0 0
v 0 1 0
f 1 2 3
g part
f -1 -2 -3
o second
v 5 5 5
v 6 5 5
v 6 6 5
v 5 6 5
f -4 -3 -2 -1
g
v 9 9 9
f 1 4 8
";
    let path = write_file(&dir, "two.obj", text.as_bytes());
    let mesh = load_obj(&path).unwrap();
    let want = [
        [v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.)],
        [v(0., 1., 0.), v(1., 0., 0.), v(0., 0., 0.)],
        [v(5., 5., 5.), v(6., 5., 5.), v(6., 6., 5.)],
        [v(5., 5., 5.), v(6., 6., 5.), v(5., 6., 5.)],
        [v(0., 0., 0.), v(5., 5., 5.), v(9., 9., 9.)],
    ];
    assert_eq!(mesh.triangle_count(), want.len());
    for (k, tri) in want.iter().enumerate() {
        assert_eq!(mesh.triangle(k), *tri, "triangle {k}");
    }
}

#[test]
fn obj_vertex_colours_w_and_crlf_are_handled() {
    let dir = temp_dir();
    let text = "v 0 0 0 1 0 0\r\nv 2 0 0 2\r\nv 0 1 0\r\nf 1 2 3\r\n";
    let path = write_file(&dir, "c.OBJ", text.as_bytes());
    let mesh = load_mesh(&path).unwrap();
    assert_eq!(
        mesh.triangle(0),
        [v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.)]
    );
}

#[test]
fn obj_without_faces_is_an_empty_mesh() {
    let dir = temp_dir();
    let path = write_file(&dir, "empty.obj", b"# nothing\nv 1 2 3\n");
    assert!(load_mesh(&path).unwrap().is_empty());
}

#[test]
fn broken_obj_files_name_file_and_line() {
    let dir = temp_dir();
    let cases = [
        (
            "index.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n",
            "line 4",
        ),
        ("zero.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "line 4"),
        (
            "neg.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -4\n",
            "line 4",
        ),
        (
            "later.obj",
            "v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 1 0\n",
            "line 3",
        ),
        (
            "number.obj",
            "v 0 0 0\nv 1 zero 0\nv 0 1 0\nf 1 2 3\n",
            "line 2",
        ),
        ("short.obj", "v 0 0\n", "line 1"),
        (
            "face.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 two 3\n",
            "line 4",
        ),
        ("empty_face.obj", "v 0 0 0\nf\n", "line 2"),
        ("w.obj", "v 0 0 0 0\n", "line 1"),
        (
            "huge.obj",
            "v 0 0 0\nf 1 1 99999999999999999999999\n",
            "line 2",
        ),
    ];
    for (name, text, line) in cases {
        let path = write_file(&dir, name, text.as_bytes());
        let message = expect_format_error(load_mesh(&path), &path);
        assert!(message.contains(line), "{name}: {message}");
    }
    let path = write_file(
        &dir,
        "utf8.obj",
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\xff\n",
    );
    let message = expect_format_error(load_mesh(&path), &path);
    assert!(message.contains("line 4"), "{message}");
    // Comments in other encodings do not matter.
    let path = write_file(
        &dir,
        "latin1.obj",
        b"# caf\xe9\nv 0 0 0\nv 1 0 0\nv 0 1 0\no caf\xe9\nf 1 2 3\n",
    );
    assert_eq!(load_mesh(&path).unwrap().triangle_count(), 1);
}
