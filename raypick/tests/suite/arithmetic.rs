//! The arithmetic self-check on the test adapter: the reciprocal the shaders divide
//! with, on adversarial inputs, and every stage of both triangle tests (frame, sheared
//! vertices, edge functions, determinant, t, u, v, acceptance) on rays at the
//! insides, edges and vertices of random triangles must give the CPU's bits. A
//! driver that rounds differently (an approximate division, a fused or rewritten
//! product) is named here by the stage and field it changes, before any traversal
//! mixes the effects. What the driver's own division and a plain `a * b + c` give is
//! printed (`--nocapture`): the shaders avoid both.

use crate::support::gpu;

#[test]
fn reciprocal_and_triangle_stages_match_the_cpu_bit_for_bit() {
    let Some(gpu) = gpu() else { return };
    let check = gpu.check_arithmetic().expect("the probe runs");
    eprintln!(
        "{}: reciprocal on {} inputs, stages on {} cases; the driver's 1.0 / x differs on {}, its a * b + c on {}; subnormals kept: {}",
        gpu.adapter().name,
        check.reciprocal_cases,
        check.stage_cases,
        check.driver_division_differs,
        check.driver_multiply_add_differs,
        check.subnormals_kept
    );
    for example in &check.examples {
        eprintln!("{example}");
    }
    assert!(check.reciprocal_cases >= 180_000 && check.stage_cases == 100_000);
    assert!(
        check.is_identical(),
        "GPU stages differ from the CPU on {}: {:?}",
        gpu.adapter().name,
        check.differing
    );
}
