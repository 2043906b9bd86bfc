//! raypick's integration tests, one binary with a module per subject. Shared
//! helpers are in `support`; fixtures, the f64 reference, the parity comparison and
//! the test GPU come from `raypick_testkit`.
//!
//! GPU tests run on any adapter found and skip their GPU part without one, unless
//! `RAYPICK_REQUIRE_GPU=1`, which makes a missing adapter a failure.

mod support;

mod arithmetic;
mod bad_input;
mod bvh;
mod camera;
mod closest;
mod contract;
mod far_from_origin;
mod files;
mod gpu_batches;
mod instance_ray_query;
mod instances;
mod layout;
mod parity;
mod pick_service;
mod properties;
mod queries;
mod raster_crosscheck;
mod ray_query;
mod reference;
mod refit;
mod regressions;
mod render;
mod renderer_buffers;
mod scale;
mod scene;
mod screen_pick;
mod watertight;
