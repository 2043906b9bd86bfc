//! End-to-end tests of the `raypick` binary, one test binary with a module per
//! subject; `support` runs the binary and checks how it fails.

mod support;

mod bad_input;
mod commands;
mod compiled;
mod far_from_origin;
mod mesh_files;
mod pick;
