//! Ray and hit files: round trips through every format, `.npy` files built byte by
//! byte, error cases and atomic writes.

use std::fs;
use std::path::Path;

use super::{expect_format_error, file_names, message_naming, temp_dir, write_file};
use crate::support::files::npy_bytes;
use glam::Vec3;
use raypick::io::{
    Precision, load_mesh, ray_file_precision, read_hits, read_rays, read_rays_f64, write_atomic,
    write_hits, write_rays,
};
use raypick::types::MISS;
use raypick::{Error, Hit, Ray};

/// Rays with awkward values: infinities, NaN, negative zero, subnormals, extremes.
fn sample_rays() -> Vec<Ray> {
    vec![
        Ray::new(Vec3::new(0.0, 1.0, 2.0), Vec3::new(0.0, 0.0, -1.0)),
        Ray::with_interval(
            Vec3::new(-0.0, 0.1, -1.5e-7),
            Vec3::new(1.0 / 3.0, f32::MIN_POSITIVE / 8.0, 3.402_823_5e38),
            -0.0,
            f32::INFINITY,
        ),
        Ray::with_interval(
            Vec3::new(f32::NAN, f32::NEG_INFINITY, 16_777_217.0),
            Vec3::new(-2.5, 1e-45, f32::MAX),
            f32::NEG_INFINITY,
            f32::NAN,
        ),
        Ray::with_interval(
            Vec3::new(1234.5677, -0.000_123_456_79, 7.0e-39),
            Vec3::new(0.0, -0.0, 1.0),
            1e-3,
            100.0,
        ),
    ]
}

/// Hits with a miss, negative zero, subnormals and the largest ids.
fn sample_hits() -> Vec<Hit> {
    vec![
        Hit {
            t: 1.5,
            u: 0.25,
            v: 0.125,
            prim: 0,
        },
        Hit::MISS,
        Hit {
            t: 0.1,
            u: -0.0,
            v: 1.0 / 3.0,
            prim: 4_294_967_294,
        },
        Hit {
            t: 1e-45,
            u: f32::MIN_POSITIVE,
            v: 0.999_999_94,
            prim: 7,
        },
        Hit::MISS,
        Hit {
            t: 3.402_823_5e38,
            u: 2.0e-20,
            v: 0.3,
            prim: 123_456,
        },
    ]
}

fn ray_values(ray: &Ray) -> [f32; 8] {
    let (o, d) = (ray.origin, ray.dir);
    [o.x, o.y, o.z, ray.tmin, d.x, d.y, d.z, ray.tmax]
}

/// Bit-exact comparison, except that any NaN equals any NaN (text formats do not keep
/// NaN payloads or signs).
fn same_f32(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn assert_same_rays(got: &[Ray], want: &[Ray], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}: ray count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (ray_values(g), ray_values(w));
        for i in 0..8 {
            assert!(
                same_f32(g[i], w[i]),
                "{context}: ray {k} value {i}: got {:?} ({:#x}), want {:?} ({:#x})",
                g[i],
                g[i].to_bits(),
                w[i],
                w[i].to_bits()
            );
        }
    }
}

fn assert_same_hits(got: &[Hit], want: &[Hit], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}: hit count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let same = same_f32(g.t, w.t) && same_f32(g.u, w.u) && same_f32(g.v, w.v);
        assert!(
            same && g.prim == w.prim,
            "{context}: hit {k}: got {g:?}, want {w:?}"
        );
    }
}

#[test]
fn rays_round_trip_through_every_format() {
    let dir = temp_dir();
    let rays = sample_rays();
    for name in [
        "r.rays",
        "r.npy",
        "r.csv",
        "UPPER.RAYS",
        "Mixed.Npy",
        "x.CSV",
    ] {
        let path = dir.path().join(name);
        write_rays(&path, &rays).unwrap();
        assert_same_rays(&read_rays(&path).unwrap(), &rays, name);

        let wide = read_rays_f64(&path).unwrap();
        let narrowed: Vec<[f32; 8]> = wide.iter().map(|row| row.map(|x| x as f32)).collect();
        let want: Vec<[f32; 8]> = rays.iter().map(ray_values).collect();
        for (g, w) in narrowed.iter().zip(&want) {
            for (a, b) in g.iter().zip(w) {
                assert!(same_f32(*a, *b), "{name}: f64 read {a} vs {b}");
            }
        }
    }
}

#[test]
fn empty_ray_and_hit_files_round_trip() {
    let dir = temp_dir();
    for name in ["e.rays", "e.npy", "e.csv"] {
        let path = dir.path().join(name);
        write_rays(&path, &[]).unwrap();
        assert!(read_rays(&path).unwrap().is_empty(), "{name}");
    }
    for name in ["e.hits", "e.npy", "e.csv"] {
        let path = dir.path().join(name);
        write_hits(&path, &[]).unwrap();
        assert!(read_hits(&path).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn rays_file_is_raw_little_endian_f32() {
    let dir = temp_dir();
    let path = dir.path().join("r.rays");
    let rays = sample_rays();
    write_rays(&path, &rays).unwrap();
    let bytes = fs::read(&path).unwrap();
    let want: Vec<u8> = rays
        .iter()
        .flat_map(ray_values)
        .flat_map(f32::to_le_bytes)
        .collect();
    assert_eq!(bytes, want);
    assert_eq!(ray_file_precision(&path).unwrap(), Precision::F32);
}

#[test]
fn written_ray_npy_is_read_by_npyz() {
    let dir = temp_dir();
    let path = dir.path().join("r.npy");
    let rays = sample_rays();
    write_rays(&path, &rays).unwrap();
    let bytes = fs::read(&path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.shape(), &[rays.len() as u64, 8]);
    assert_eq!(npy.order(), npyz::Order::C);
    assert_eq!(npy.dtype().descr(), "'<f4'");
    let values: Vec<f32> = npy.into_vec().unwrap();
    let want: Vec<f32> = rays.iter().flat_map(ray_values).collect();
    assert_eq!(values.len(), want.len());
    for (a, b) in values.iter().zip(&want) {
        assert_eq!(a.to_bits(), b.to_bits());
    }
    // The data starts at a multiple of 64 bytes, as NumPy writes it.
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    assert_eq!(bytes.len(), 10 + header_len + 32 * rays.len());
}

/// Rows whose f64 values are not representable in f32 (far from the origin).
fn f64_rows() -> Vec<[f64; 8]> {
    vec![
        [
            1.0e8 + 0.125,
            -2.0e7 - 0.3,
            0.1,
            0.0,
            1.0,
            0.5,
            -0.25,
            f64::INFINITY,
        ],
        [
            -0.0,
            f64::NEG_INFINITY,
            1.0 / 3.0,
            1e-3,
            f64::NAN,
            1e300,
            -1e-300,
            42.0,
        ],
    ]
}

fn assert_same_f64_rows(got: &[[f64; 8]], want: &[[f64; 8]], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}");
    for (g, w) in got.iter().zip(want) {
        for (a, b) in g.iter().zip(w) {
            assert!(
                (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
                "{context}: {a:?} vs {b:?}"
            );
        }
    }
}

#[test]
fn float64_npy_rays_keep_full_precision() {
    let dir = temp_dir();
    let rows = f64_rows();
    let little: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let big: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let le = write_file(
        &dir,
        "le.npy",
        &npy_bytes("'<f8'", false, "(2, 8)", &little),
    );
    let be = write_file(&dir, "be.npy", &npy_bytes("'>f8'", false, "(2, 8)", &big));
    for path in [&le, &be] {
        assert_same_f64_rows(&read_rays_f64(path).unwrap(), &rows, "f64 read");
        assert_eq!(ray_file_precision(path).unwrap(), Precision::F64);
        // read_rays rounds each value to the nearest f32.
        let rays = read_rays(path).unwrap();
        let want: Vec<Ray> = rows
            .iter()
            .map(|r| {
                let r = r.map(|x| x as f32);
                Ray::with_interval(
                    Vec3::new(r[0], r[1], r[2]),
                    Vec3::new(r[4], r[5], r[6]),
                    r[3],
                    r[7],
                )
            })
            .collect();
        assert_same_rays(&rays, &want, "f64 npy as f32");
    }
}

#[test]
fn big_endian_float32_npy_rays() {
    let dir = temp_dir();
    let rays = sample_rays();
    let data: Vec<u8> = rays
        .iter()
        .flat_map(ray_values)
        .flat_map(f32::to_be_bytes)
        .collect();
    let shape = format!("({}, 8)", rays.len());
    let path = write_file(&dir, "be.npy", &npy_bytes("'>f4'", false, &shape, &data));
    assert_same_rays(&read_rays(&path).unwrap(), &rays, "big-endian f4");
    assert_eq!(ray_file_precision(&path).unwrap(), Precision::F32);
}

#[test]
fn fortran_order_npy_rays() {
    // `np.array([ox, oy, ...]).T` is saved column by column.
    let dir = temp_dir();
    let rays = sample_rays();
    let n = rays.len();
    let rows: Vec<[f32; 8]> = rays.iter().map(ray_values).collect();
    let data: Vec<u8> = (0..8)
        .flat_map(|j| rows.iter().map(move |row| row[j]))
        .flat_map(f32::to_le_bytes)
        .collect();
    let path = write_file(
        &dir,
        "f.npy",
        &npy_bytes("'<f4'", true, &format!("({n}, 8)"), &data),
    );
    assert_same_rays(&read_rays(&path).unwrap(), &rays, "fortran order");
}

#[test]
fn npy_format_version_2_is_read() {
    let dir = temp_dir();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8), }\n";
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let values = [1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0, -1.0, 10.0];
    bytes.extend(values.iter().flat_map(|x| x.to_le_bytes()));
    let path = write_file(&dir, "v2.npy", &bytes);
    let rays = read_rays(&path).unwrap();
    assert_eq!(ray_values(&rays[0]), values);
}

#[test]
fn csv_rays_with_and_without_header() {
    let dir = temp_dir();
    let with_header = "ox,oy,oz,tmin,dx,dy,dz,tmax\n\
                       0,0,5,0,0,0,-1,inf\n\
                       1.5, -2 ,3e2,  0.001,1,0,0 , 100\n";
    let without = "\u{feff}0,0,5,0,0,0,-1,inf\r\n\
                   \r\n\
                   # a comment line\n\
                   1.5,-2,300,0.001,1,0,0,100";
    let want = vec![
        Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::new(0.0, 0.0, -1.0)),
        Ray::with_interval(Vec3::new(1.5, -2.0, 300.0), Vec3::X, 0.001, 100.0),
    ];
    for (name, text) in [("h.csv", with_header), ("n.csv", without)] {
        let path = write_file(&dir, name, text.as_bytes());
        assert_same_rays(&read_rays(&path).unwrap(), &want, name);
    }
}

#[test]
fn csv_rays_accept_inf_and_nan_spellings() {
    let dir = temp_dir();
    let text = "inf,-inf,nan,NaN,+inf,Infinity,-0,-0.0\n";
    let path = write_file(&dir, "s.csv", text.as_bytes());
    let rays = read_rays(&path).unwrap();
    let v = ray_values(&rays[0]);
    assert_eq!(v[0], f32::INFINITY);
    assert_eq!(v[1], f32::NEG_INFINITY);
    assert!(v[2].is_nan() && v[3].is_nan());
    assert_eq!(v[4], f32::INFINITY);
    assert_eq!(v[5], f32::INFINITY);
    assert_eq!(v[6].to_bits(), (-0.0f32).to_bits());
    assert_eq!(v[7].to_bits(), (-0.0f32).to_bits());
    assert_eq!(ray_file_precision(&path).unwrap(), Precision::F64);
}

#[test]
fn csv_rays_keep_f64_precision_in_read_rays_f64() {
    let dir = temp_dir();
    let path = write_file(&dir, "p.csv", b"100000000.125,0.1,0,0,1,0,0,1e300\n");
    let rows = read_rays_f64(&path).unwrap();
    assert_eq!(rows[0][0], 100_000_000.125);
    assert_eq!(rows[0][1], 0.1);
    assert_eq!(rows[0][7], 1e300);
    let rays = read_rays(&path).unwrap();
    assert_eq!(rays[0].origin.x, 100_000_000.0);
    assert_eq!(rays[0].tmax, f32::INFINITY);
}

// ---------------------------------------------------------------------------------
// Hit files
// ---------------------------------------------------------------------------------

#[test]
fn hits_round_trip_through_every_format() {
    let dir = temp_dir();
    let hits = sample_hits();
    for name in ["h.hits", "h.npy", "h.csv", "H.HITS", "h.NPY", "h.Csv"] {
        let path = dir.path().join(name);
        write_hits(&path, &hits).unwrap();
        assert_same_hits(&read_hits(&path).unwrap(), &hits, name);
    }
    // NaN survives the binary formats bit for bit.
    let odd = [Hit {
        t: f32::from_bits(0x7fc0_1234),
        u: -0.0,
        v: f32::NAN,
        prim: MISS,
    }];
    for name in ["n.hits", "n.npy"] {
        let path = dir.path().join(name);
        write_hits(&path, &odd).unwrap();
        let got = read_hits(&path).unwrap();
        assert_eq!(got[0].t.to_bits(), 0x7fc0_1234, "{name}");
        assert_eq!(got[0].u.to_bits(), (-0.0f32).to_bits(), "{name}");
    }
}

#[test]
fn hits_csv_text_matches_the_contract() {
    let dir = temp_dir();
    let path = dir.path().join("h.csv");
    let hits = [
        Hit {
            t: 2.5,
            u: 0.25,
            v: 0.5,
            prim: 3,
        },
        Hit::MISS,
        Hit {
            t: 0.1,
            u: -0.0,
            v: 1e-45,
            prim: 0,
        },
    ];
    write_hits(&path, &hits).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "t,u,v,prim");
    assert_eq!(lines[1], "2.5,0.25,0.5,3");
    assert_eq!(lines[2], "inf,0,0,4294967295");
    let parsed: Vec<f32> = lines[3]
        .split(',')
        .take(3)
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(parsed[0].to_bits(), 0.1f32.to_bits());
    assert_eq!(parsed[1].to_bits(), (-0.0f32).to_bits());
    assert_eq!(parsed[2].to_bits(), 1e-45f32.to_bits());
}

#[test]
fn hits_file_and_npy_layout() {
    let dir = temp_dir();
    let hits = sample_hits();
    let raw = dir.path().join("h.hits");
    let npy = dir.path().join("h.npy");
    write_hits(&raw, &hits).unwrap();
    write_hits(&npy, &hits).unwrap();

    let raw_bytes = fs::read(&raw).unwrap();
    let want: Vec<u8> = hits
        .iter()
        .flat_map(|h| {
            [
                h.t.to_le_bytes(),
                h.u.to_le_bytes(),
                h.v.to_le_bytes(),
                h.prim.to_le_bytes(),
            ]
        })
        .flatten()
        .collect();
    assert_eq!(raw_bytes, want);

    // The .npy is a structured array whose data section equals the .hits file.
    let npy_bytes_read = fs::read(&npy).unwrap();
    let header = npyz::NpyHeader::from_reader(&npy_bytes_read[..]).unwrap();
    assert_eq!(header.shape(), &[hits.len() as u64]);
    assert_eq!(
        header.dtype().descr(),
        "[('t', '<f4'), ('u', '<f4'), ('v', '<f4'), ('prim', '<u4'), ]"
    );
    assert!(npy_bytes_read.ends_with(&raw_bytes));
    assert_eq!((npy_bytes_read.len() - raw_bytes.len()) % 64, 0);
}

#[test]
fn big_endian_hit_npy_is_read() {
    let dir = temp_dir();
    let hits = sample_hits();
    let data: Vec<u8> = hits
        .iter()
        .flat_map(|h| {
            [
                h.t.to_be_bytes(),
                h.u.to_be_bytes(),
                h.v.to_be_bytes(),
                h.prim.to_be_bytes(),
            ]
        })
        .flatten()
        .collect();
    let descr = "[('t', '>f4'), ('u', '>f4'), ('v', '>f4'), ('prim', '>u4')]";
    let shape = format!("({},)", hits.len());
    let path = write_file(&dir, "be.npy", &npy_bytes(descr, false, &shape, &data));
    assert_same_hits(&read_hits(&path).unwrap(), &hits, "big-endian hits");
}

#[test]
fn csv_hits_without_header_and_with_spaces() {
    let dir = temp_dir();
    let path = write_file(&dir, "h.csv", b" 1.5 , 0.25, 0.5 ,3\ninf,0,0,4294967295\n");
    let hits = read_hits(&path).unwrap();
    assert_same_hits(
        &hits,
        &[
            Hit {
                t: 1.5,
                u: 0.25,
                v: 0.5,
                prim: 3,
            },
            Hit::MISS,
        ],
        "csv hits",
    );
    assert!(!hits[1].is_hit());
}

// ---------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------

#[test]
fn truncated_rays_file_names_file_and_size() {
    let dir = temp_dir();
    let path = write_file(&dir, "t.rays", &[0u8; 33]);
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("33 bytes"), "{message}");
    let path = write_file(&dir, "t.hits", &[0u8; 20]);
    let message = expect_format_error(read_hits(&path), &path);
    assert!(message.contains("20 bytes"), "{message}");
}

#[test]
fn npy_with_wrong_dtype_is_rejected() {
    let dir = temp_dir();
    let data = vec![0u8; 4 * 8 * 2];
    let path = write_file(&dir, "i.npy", &npy_bytes("'<i4'", false, "(2, 8)", &data));
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("float32 or float64"), "{message}");
    assert!(message.contains("<i4"), "{message}");

    // Ray data is not hit data.
    let message = expect_format_error(read_hits(&path), &path);
    assert!(message.contains("prim"), "{message}");

    // Hit records with another type or name.
    let descr = "[('t', '<f4'), ('u', '<f4'), ('v', '<f4'), ('prim', '<i4')]";
    let path = write_file(&dir, "h.npy", &npy_bytes(descr, false, "(1,)", &[0u8; 16]));
    expect_format_error(read_hits(&path), &path);
    let descr = "[('t', '<f4'), ('u', '<f4'), ('w', '<f4'), ('prim', '<u4')]";
    let path = write_file(&dir, "h2.npy", &npy_bytes(descr, false, "(1,)", &[0u8; 16]));
    expect_format_error(read_hits(&path), &path);
}

#[test]
fn npy_with_wrong_shape_is_rejected() {
    let dir = temp_dir();
    for (name, shape, values) in [
        ("s7.npy", "(2, 7)", 14),
        ("s1.npy", "(16,)", 16),
        ("s3.npy", "(1, 2, 8)", 16),
    ] {
        let data = vec![0u8; 4 * values];
        let path = write_file(&dir, name, &npy_bytes("'<f4'", false, shape, &data));
        let message = expect_format_error(read_rays(&path), &path);
        assert!(message.contains("(N, 8)"), "{message}");
        assert!(message.contains(shape), "{message}");
    }
    let path = write_file(
        &dir,
        "h.npy",
        &npy_bytes("'<f4'", false, "(2, 8)", &[0u8; 64]),
    );
    expect_format_error(read_hits(&path), &path);
}

#[test]
fn broken_npy_files_are_errors_not_panics() {
    let dir = temp_dir();
    // Data shorter or longer than the header declares.
    let path = write_file(
        &dir,
        "short.npy",
        &npy_bytes("'<f4'", false, "(3, 8)", &[0u8; 64]),
    );
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("truncated"), "{message}");
    let path = write_file(
        &dir,
        "long.npy",
        &npy_bytes("'<f4'", false, "(1, 8)", &[0u8; 40]),
    );
    expect_format_error(read_rays(&path), &path);
    // A huge declared shape must not be allocated.
    let path = write_file(
        &dir,
        "huge.npy",
        &npy_bytes("'<f8'", false, "(2305843009213693951, 8)", &[0u8; 64]),
    );
    expect_format_error(read_rays(&path), &path);
    let path = write_file(
        &dir,
        "overflow.npy",
        &npy_bytes("'<f4'", false, "(18446744073709551615, 8)", &[]),
    );
    expect_format_error(read_rays(&path), &path);
    let path = write_file(
        &dir,
        "strides.npy",
        &npy_bytes("'<f4'", false, "(0, 1099511627776, 1099511627776)", &[]),
    );
    expect_format_error(read_rays(&path), &path);
    // A header length of 4 GiB in a tiny file.
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(b"{'descr': '<f4'}");
    let path = write_file(&dir, "hdr.npy", &bytes);
    expect_format_error(read_rays(&path), &path);
    // Not an npy file, empty file, bad header text, deep nesting, pickled objects.
    let path = write_file(&dir, "text.npy", b"ox,oy,oz,tmin,dx,dy,dz,tmax\n");
    expect_format_error(read_rays(&path), &path);
    let path = write_file(&dir, "empty.npy", b"");
    expect_format_error(read_rays(&path), &path);
    let path = write_file(
        &dir,
        "bad.npy",
        &npy_bytes("'<f4", false, "(1, 8)", &[0u8; 32]),
    );
    expect_format_error(read_rays(&path), &path);
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let path = write_file(&dir, "deep.npy", &npy_bytes("'<f4'", false, &deep, &[]));
    expect_format_error(read_rays(&path), &path);
    let path = write_file(
        &dir,
        "obj.npy",
        &npy_bytes("'|O'", false, "(1, 8)", &[0u8; 64]),
    );
    expect_format_error(read_rays(&path), &path);
    let path = write_file(&dir, "v9.npy", b"\x93NUMPY\x09\x00\x10\x00");
    expect_format_error(read_rays(&path), &path);
}

#[test]
fn csv_bad_number_names_line_and_column() {
    let dir = temp_dir();
    let path = write_file(
        &dir,
        "bad.csv",
        b"ox,oy,oz,tmin,dx,dy,dz,tmax\n0,0,0,0,0,0,1,inf\n0,0,0,0,0,abc,1,inf\n",
    );
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("line 3"), "{message}");
    assert!(message.contains("column 6"), "{message}");
    assert!(message.contains("abc"), "{message}");

    let path = write_file(&dir, "bad.csv", b"1,2,3,-4\n");
    let message = expect_format_error(read_hits(&path), &path);
    assert!(
        message.contains("line 1") && message.contains("column 4"),
        "{message}"
    );
}

#[test]
fn csv_wrong_column_count_names_line() {
    let dir = temp_dir();
    let path = write_file(&dir, "seven.csv", b"0,0,0,0,0,0,1,inf\n0,0,0,0,0,0,1\n");
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains("8") && message.contains("7"), "{message}");

    let path = write_file(&dir, "nine.csv", b"0,0,0,0,0,0,1,inf,9\n");
    expect_format_error(read_rays(&path), &path);
    let path = write_file(&dir, "hdr.csv", b"a,b,c\n0,0,0,0,0,0,1,inf\n");
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("line 1"), "{message}");
    let path = write_file(&dir, "h5.csv", b"t,u,v,prim\n1,0,0,0,5\n");
    let message = expect_format_error(read_hits(&path), &path);
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn csv_non_utf8_is_an_error() {
    let dir = temp_dir();
    let path = write_file(&dir, "latin.csv", b"0,0,0,0,0,0,1,inf\n\xff\xfe,1\n");
    let message = expect_format_error(read_rays(&path), &path);
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn missing_files_are_file_errors_naming_the_path() {
    let dir = temp_dir();
    for name in ["none.rays", "none.npy", "none.csv"] {
        let path = dir.path().join(name);
        match read_rays(&path) {
            Err(error @ Error::File { .. }) => {
                message_naming(&error, &path);
            }
            other => panic!("{name}: expected a file error, got {other:?}"),
        }
        assert!(matches!(read_rays_f64(&path), Err(Error::File { .. })));
    }
    for name in ["none.hits", "none.npy", "none.csv"] {
        let path = dir.path().join(name);
        assert!(
            matches!(read_hits(&path), Err(Error::File { .. })),
            "{name}"
        );
    }
    let path = dir.path().join("none.obj");
    match load_mesh(&path) {
        Err(error @ Error::File { .. }) => {
            message_naming(&error, &path);
        }
        other => panic!("expected a file error, got {other:?}"),
    }
}

#[test]
fn unknown_extensions_are_unknown_formats() {
    let dir = temp_dir();
    type Call = fn(&Path) -> raypick::Result<()>;
    let cases: [(&str, Call); 6] = [
        ("r.txt", |p| read_rays(p).map(drop)),
        ("r", |p| read_rays(p).map(drop)),
        ("r.hits", |p| write_rays(p, &sample_rays())),
        ("h.rays", |p| read_hits(p).map(drop)),
        ("h.bin", |p| write_hits(p, &sample_hits())),
        ("m.fbx", |p| load_mesh(p).map(drop)),
    ];
    for (name, call) in cases {
        let path = dir.path().join(name);
        match call(&path) {
            Err(error @ Error::UnknownFormat { .. }) => {
                message_naming(&error, &path);
            }
            other => panic!("{name}: expected UnknownFormat, got {other:?}"),
        }
    }
    // Nothing was written for the rejected writes.
    assert!(file_names(dir.path()).is_empty());
}

// ---------------------------------------------------------------------------------
// Atomic writes
// ---------------------------------------------------------------------------------

#[test]
fn writing_into_a_missing_directory_fails_and_leaves_nothing() {
    let dir = temp_dir();
    let missing = dir.path().join("no_such_dir");
    for name in ["r.rays", "r.npy", "r.csv"] {
        let path = missing.join(name);
        match write_rays(&path, &sample_rays()) {
            Err(error @ Error::File { .. }) => {
                message_naming(&error, &path);
            }
            other => panic!("{name}: expected a file error, got {other:?}"),
        }
    }
    for name in ["h.hits", "h.npy", "h.csv"] {
        let path = missing.join(name);
        assert!(matches!(
            write_hits(&path, &sample_hits()),
            Err(Error::File { .. })
        ));
    }
    assert!(!missing.exists());
    assert!(file_names(dir.path()).is_empty());
}

#[test]
fn failed_write_leaves_no_temporary_file() {
    let dir = temp_dir();
    // The target is a directory: the rename at the end fails.
    let names = ["out.hits", "out.npy", "out.csv"];
    for name in names {
        fs::create_dir(dir.path().join(name)).unwrap();
    }
    for name in names {
        let path = dir.path().join(name);
        assert!(matches!(
            write_hits(&path, &sample_hits()),
            Err(Error::File { .. })
        ));
        if name != "out.hits" {
            assert!(matches!(
                write_rays(&path, &sample_rays()),
                Err(Error::File { .. })
            ));
        }
    }
    assert_eq!(file_names(dir.path()), ["out.csv", "out.hits", "out.npy"]);
    for name in ["out.hits", "out.npy", "out.csv"] {
        assert!(file_names(&dir.path().join(name)).is_empty());
    }

    // A writer that fails half way leaves neither the target nor a temporary file.
    let path = dir.path().join("partial.bin");
    let result = write_atomic(&path, |w| {
        use std::io::Write;
        w.write_all(&[1u8; 100_000])?;
        Err(std::io::Error::other("disk on fire"))
    });
    match result {
        Err(error @ Error::File { .. }) => {
            let message = message_naming(&error, &path);
            assert!(message.contains("disk on fire"), "{message}");
        }
        other => panic!("expected a file error, got {other:?}"),
    }
    assert_eq!(file_names(dir.path()), ["out.csv", "out.hits", "out.npy"]);
}

#[test]
fn failed_write_keeps_the_previous_file() {
    let dir = temp_dir();
    let path = dir.path().join("keep.hits");
    write_hits(&path, &sample_hits()).unwrap();
    let before = fs::read(&path).unwrap();
    let result = write_atomic(&path, |_| Err(std::io::Error::other("no")));
    assert!(result.is_err());
    assert_eq!(fs::read(&path).unwrap(), before);
    // A successful write replaces it completely (a shorter file, no leftovers).
    write_hits(&path, &[Hit::MISS]).unwrap();
    assert_eq!(fs::read(&path).unwrap().len(), 16);
    assert_eq!(file_names(dir.path()), ["keep.hits"]);
}

// ---------------------------------------------------------------------------------
// OBJ meshes
// ---------------------------------------------------------------------------------
