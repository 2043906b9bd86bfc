//! WGSL sources of the compute stages.
//!
//! WGSL has no `#include`, so each stage is assembled here from the shared struct file
//! (`shaders/types.wgsl`), the shared functions it uses and its own file.

/// Structs and constants shared by every stage (mirrors `src/types.rs`).
pub const TYPES: &str = include_str!("../shaders/types.wgsl");
/// The ray–triangle test (mirrored by `src/cpu/intersect.rs`).
pub const INTERSECT: &str = include_str!("../shaders/intersect.wgsl");
/// The brute-force stage (mirrored by `src/cpu/brute_force.rs`).
pub const BRUTE_FORCE: &str = include_str!("../shaders/brute_force.wgsl");

/// Entry point of the brute-force stage.
pub const BRUTE_FORCE_ENTRY: &str = "brute_force";
/// Workgroup size of the brute-force stage (`WORKGROUP_SIZE` in the WGSL).
pub const BRUTE_FORCE_WORKGROUP: u32 = 64;

/// The complete WGSL module of the brute-force stage.
pub fn brute_force_module() -> String {
    [TYPES, INTERSECT, BRUTE_FORCE].join("\n")
}

/// Every complete module, by name (used by the naga validation test).
pub fn all_modules() -> Vec<(&'static str, String)> {
    vec![("brute_force", brute_force_module())]
}
