//! Running the `raypick` binary and checking how it fails; PNG decoding; the test
//! GPU and files from `raypick_testkit`.
#![allow(dead_code)]

pub use raypick_testkit::files::{self, decode_png};
pub use raypick_testkit::gpu::context as gpu;

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output};

/// `raypick trace --mesh <mesh> --rays <rays> --out <out> <extra..>` with extra
/// environment variables.
pub fn trace(mesh: &Path, rays: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args: Vec<OsString> = vec![
        "trace".into(),
        "--mesh".into(),
        mesh.into(),
        "--rays".into(),
        rays.into(),
        "--out".into(),
        out.into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    raypick(&args, env)
}

/// Runs the binary with `args` and extra environment variables.
pub fn raypick<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_raypick"));
    command.args(args).env("RUST_BACKTRACE", "1");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run raypick")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 stderr")
}

/// Asserts success and returns stdout.
pub fn success(output: &Output) -> String {
    assert!(
        output.status.success(),
        "raypick failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

/// Asserts a failure reported as exactly one `raypick: error:` line that contains
/// every one of `needles`, with nothing on stdout.
pub fn assert_error(output: &Output, needles: &[&str]) {
    let err = stderr(output);
    assert!(
        !output.status.success(),
        "expected a failure, got success; stderr:\n{err}"
    );
    assert_eq!(output.status.code(), Some(1), "exit status; stderr:\n{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{err}");
    assert!(
        lines[0].starts_with("raypick: error: "),
        "not an error line: {err}"
    );
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "error line does not mention {needle:?}: {err}"
        );
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert_eq!(stdout(output), "", "stdout of a failed run");
}
