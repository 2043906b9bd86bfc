//! Fuzzes the hit file readers (.hits, .npy, .csv; the first byte picks one): any
//! bytes give hits or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| raypick_fuzz::hit_file(data));
