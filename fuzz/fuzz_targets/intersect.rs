//! Fuzzes the ray–triangle test (both modes, every culling mode) against the f64
//! reference and its tolerance model (`raypick_testkit::reference::check_kernel_hit`), and
//! the block kernel against the scalar one.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| raypick_fuzz::intersect(data));
