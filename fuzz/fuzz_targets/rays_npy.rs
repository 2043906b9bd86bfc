//! Fuzzes the .npy ray file reader: any bytes give rays or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| raypick_fuzz::ray_file(data, "npy"));
