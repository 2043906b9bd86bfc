//! Fuzzes the .obj mesh loader: any bytes give a mesh or an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| raypick_fuzz::mesh_file(data, "obj"));
