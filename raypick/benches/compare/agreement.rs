//! How another library's hits (or one of raypick's engines) compare with reference
//! hits, ray by ray: the measure both bench binaries report and assert on.

use raypick::Hit;

/// Required share of rays on which parry3d and obvhs agree with raypick.
pub const MIN_AGREEMENT: f64 = 0.999;
/// Relative tolerance on `t` for two hits on the same triangle to agree: looser than
/// the test kit's `parity::close` (1e-5), which compares raypick with itself, because
/// parry3d and obvhs run triangle tests of their own.
pub const T_TOLERANCE: f32 = 1e-4;

/// How one backend's hits compare with reference hits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Agreement {
    /// Rays compared.
    pub rays: usize,
    /// Bit-identical hits.
    pub identical: usize,
    /// Same triangle (or both miss) with `t` within [`T_TOLERANCE`] relative.
    pub agree: usize,
    /// Same triangle (or both miss), whatever `t`.
    pub same_prim: usize,
    /// A different triangle at the same `t` (within [`T_TOLERANCE`]): a tie, e.g. on
    /// a shared edge, or coplanar triangles.
    pub other_prim_same_t: usize,
    /// Reference hits / compared hits.
    pub ref_hits: usize,
    /// Hits of the compared backend.
    pub hits: usize,
    /// Largest relative `t` difference over same-triangle hits.
    pub max_t_rel: f32,
    /// Largest `u` or `v` difference over same-triangle hits.
    pub max_uv: f32,
}

impl Agreement {
    /// Compares `hits` with `reference`, ray by ray.
    pub fn new(reference: &[Hit], hits: &[Hit]) -> Self {
        assert_eq!(reference.len(), hits.len(), "one hit per ray");
        let mut a = Agreement {
            rays: hits.len(),
            ..Default::default()
        };
        for (r, h) in reference.iter().zip(hits) {
            a.ref_hits += r.is_hit() as usize;
            a.hits += h.is_hit() as usize;
            a.identical += raypick_testkit::parity::identical(r, h) as usize;
            if r.prim != h.prim {
                let tie = r.is_hit() && h.is_hit() && (h.t - r.t).abs() <= T_TOLERANCE * r.t.abs();
                a.other_prim_same_t += tie as usize;
                continue;
            }
            a.same_prim += 1;
            if !r.is_hit() {
                a.agree += 1;
                continue;
            }
            let rel = if h.t == r.t {
                0.0
            } else {
                (h.t - r.t).abs() / r.t.abs().max(f32::MIN_POSITIVE)
            };
            a.max_t_rel = a.max_t_rel.max(rel);
            a.max_uv = a.max_uv.max((h.u - r.u).abs()).max((h.v - r.v).abs());
            a.agree += (rel <= T_TOLERANCE) as usize;
        }
        a
    }

    /// Share of rays that agree.
    pub fn rate(&self) -> f64 {
        self.agree as f64 / self.rays.max(1) as f64
    }

    /// One line for a table of backends.
    pub fn line(&self) -> String {
        format!(
            "agree {:>6}/{:<6} ({:>8.4}%)  same id {:>6}  hits {:>6} (ref {:>6})  max t rel {:.2e}  max uv {:.2e}",
            self.agree,
            self.rays,
            100.0 * self.rate(),
            self.same_prim,
            self.hits,
            self.ref_hits,
            self.max_t_rel,
            self.max_uv
        )
    }

    /// Share of rays that agree or tie (another triangle at the same `t`).
    pub fn rate_with_ties(&self) -> f64 {
        (self.agree + self.other_prim_same_t) as f64 / self.rays.max(1) as f64
    }
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rays: {} identical, {} agree ({:.4}%: same triangle, t within {:e}; \
             {:.4}% with ties), {} same triangle, {} disagree ({} of them another triangle \
             at the same t); hits {} (reference {}), max t rel diff {:.2e}",
            self.rays,
            self.identical,
            self.agree,
            100.0 * self.rate(),
            T_TOLERANCE,
            100.0 * self.rate_with_ties(),
            self.same_prim,
            self.rays - self.agree,
            self.other_prim_same_t,
            self.hits,
            self.ref_hits,
            self.max_t_rel,
        )
    }
}
