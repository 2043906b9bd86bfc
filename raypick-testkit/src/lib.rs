//! What raypick's tests, benches, fuzz targets and the command line's built-in scene
//! share:
//!
//! - [`fixtures`]: a fixed-seed [`Rng`](fixtures::Rng), generated meshes (the
//!   built-in scene, icospheres, grids, triangle soups, degenerate triangles) and ray
//!   sets (camera, incoherent, random, adversarial);
//! - [`reference`](mod@reference): an f64 intersector and the tolerance model a kernel's hit is
//!   checked against;
//! - [`parity`]: the one comparison of two backends' hits (bit-identical, or a
//!   difference explained as a tie or an edge case, and bounded);
//! - [`world`]: a mesh and rays in f64 that move far from the origin exactly;
//! - [`files`]: small mesh files in every supported format, and `.npy` builders;
//! - [`gpu`]: the test GPU (required, not skipped, when `RAYPICK_REQUIRE_GPU=1`).
//!
//! Not part of raypick's API: nothing here is needed to pick.

pub mod files;
pub mod fixtures;
pub mod gpu;
pub mod parity;
pub mod reference;
pub mod world;

/// The library the kit works with (for code that must name its types, such as the
/// library's own unit tests, which link a second copy of it).
pub use raypick;
