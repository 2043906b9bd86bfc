//! Fuzzes BVH traversal (the WGSL mirror and the wide CPU one) against brute force
//! on small meshes, both modes, every culling mode.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| raypick_fuzz::bvh_vs_brute(data));
