//! What the binary is compiled to. The CPU kernels are compiled once per vector
//! unit and dispatched at run time; each step on the vector lanes must be inlined
//! into those variants. A step the compiler leaves out of line (a closure it did
//! not inline, say) is compiled without the unit and runs each intrinsic as a
//! call: the same answers, several times slower, and only the binary's symbols
//! show it.

/// In an optimised build (a debug build calls every intrinsic), no intrinsic of
/// the kernels' vector units is compiled as a function of its own.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(debug_assertions)))]
#[test]
fn vector_intrinsics_are_inlined_into_the_kernels() {
    // Symbols of intrinsics of the vector units the kernels are compiled for:
    // none may stand alone in the binary.
    const VECTOR_INTRINSICS: [&str; 4] = [
        "core_arch::x86::avx::",
        "core_arch::x86::avx2::",
        "core_arch::x86::fma::",
        "core_arch::x86::avx512",
    ];
    let binary = env!("CARGO_BIN_EXE_raypick");
    let output = std::process::Command::new("nm")
        .arg("--demangle")
        .arg(binary)
        .output()
        .expect("nm (binutils) lists the binary's symbols");
    assert!(
        output.status.success(),
        "nm {binary}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let symbols = String::from_utf8_lossy(&output.stdout);
    // The kernels' own symbols are listed: the binary is not stripped.
    assert!(
        symbols.contains("raypick::cpu::wide_traverse::trace_batch"),
        "nm lists no kernel of {binary}"
    );
    let out_of_line: Vec<&str> = symbols
        .lines()
        .filter(|symbol| VECTOR_INTRINSICS.iter().any(|unit| symbol.contains(unit)))
        .collect();
    assert!(
        out_of_line.is_empty(),
        "intrinsics compiled apart from the kernels (a step on the lanes not inlined): {out_of_line:#?}"
    );
}
