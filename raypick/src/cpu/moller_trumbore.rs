//! The fast test, Möller–Trumbore, operation for operation the same as
//! `shaders/moller_trumbore.wgsl`:
//! `e1 = v1 − v0`, `e2 = v2 − v0`, `p = d × e2`, `det = e1·p`, `s = o − v0`, `U = s·p`,
//! `q = s × e1`, `V = d·q`, `T = e2·q`, `W = det − (U + V)`. Dot products sum left to
//! right; every product is rounded on its own (Rust never fuses into FMA). `d` is
//! [`RayFrame::dir`], the direction scaled by a power of two.

use super::intersect::{RayFrame, Unnormalised};

/// Möller–Trumbore on scalars for one ray and one triangle (`[v0, v1, v2]`);
/// `edge_norm` is [`crate::types::PackedTriangle::edge_norm`].
#[inline(always)]
pub fn moller_trumbore(
    frame: &RayFrame,
    [v0, v1, v2]: [[f32; 3]; 3],
    edge_norm: f32,
) -> Unnormalised {
    let [ox, oy, oz] = frame.origin;
    let [dx, dy, dz] = frame.dir;
    let [e1x, e1y, e1z] = [v1[0] - v0[0], v1[1] - v0[1], v1[2] - v0[2]];
    let [e2x, e2y, e2z] = [v2[0] - v0[0], v2[1] - v0[1], v2[2] - v0[2]];
    let px = dy * e2z - dz * e2y;
    let py = dz * e2x - dx * e2z;
    let pz = dx * e2y - dy * e2x;
    let det = e1x * px + e1y * py + e1z * pz;
    let sx = ox - v0[0];
    let sy = oy - v0[1];
    let sz = oz - v0[2];
    let big_u = sx * px + sy * py + sz * pz;
    let qx = sy * e1z - sz * e1y;
    let qy = sz * e1x - sx * e1z;
    let qz = sx * e1y - sy * e1x;
    let big_v = dx * qx + dy * qy + dz * qz;
    let big_t = e2x * qx + e2y * qy + e2z * qz;
    Unnormalised {
        det,
        det_bound: edge_norm * frame.dir_norm,
        big_u,
        big_v,
        big_w: det - (big_u + big_v),
        big_t,
    }
}
