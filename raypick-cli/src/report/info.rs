//! What `raypick info` prints: every GPU adapter, its limits, which one
//! [`Backend::Auto`](raypick::Backend::Auto) and [`Backend::Gpu`](raypick::Backend::Gpu)
//! use and why, and the CPU.

use std::fmt;

use super::machine::MachineFacts;
use raypick::gpu::{
    AdapterReport, AdapterSummary, ArithmeticCheck, BackendChoice, backend_choice, list_adapters,
};
use raypick::{Backend, Picker};

/// One adapter, and whether [`Backend::Auto`](raypick::Backend::Auto) uses it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AdapterEntry {
    /// Name, graphics API, device type, driver and limits.
    #[serde(flatten)]
    pub adapter: AdapterReport,
    /// True for the adapter `Backend::Auto` opens.
    pub used_by_auto: bool,
    /// True for the adapter `Backend::Gpu` opens.
    pub used_by_gpu: bool,
}

/// The machine as raypick sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InfoReport {
    /// raypick's version.
    pub version: String,
    /// The CPU.
    pub cpu: MachineFacts,
    /// Every adapter wgpu found, in wgpu's order.
    pub adapters: Vec<AdapterEntry>,
    /// What `Backend::Auto` runs on and why, or why it falls back to the CPU.
    pub auto: BackendChoice,
    /// What `Backend::Gpu` runs on and why, or why it fails.
    pub gpu: BackendChoice,
    /// The arithmetic self-check on the adapter `Backend::Gpu` opens (`--check`),
    /// else `None`.
    pub check: Option<CheckReport>,
}

/// The arithmetic self-check of `raypick info --check`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// The adapter checked.
    pub adapter: AdapterSummary,
    /// What the check found.
    #[serde(flatten)]
    pub result: ArithmeticCheck,
    /// Whether every field matched the CPU's bits.
    pub identical: bool,
}

impl CheckReport {
    /// Opens the GPU as `--backend gpu` does (any adapter, software ones last) and
    /// runs [`GpuContext::check_arithmetic`](raypick::gpu::GpuContext::check_arithmetic)
    /// there.
    pub fn run() -> raypick::Result<Self> {
        let picker = Picker::new(Backend::Gpu)?;
        let gpu = picker.gpu().expect("Backend::Gpu traces on its GPU");
        let result = gpu.check_arithmetic()?;
        Ok(Self {
            adapter: gpu.adapter().clone(),
            identical: result.is_identical(),
            result,
        })
    }
}

impl fmt::Display for CheckReport {
    /// One line when the GPU matches the CPU; else a line per differing field and
    /// the first differences.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.result;
        let verdict = if self.identical {
            "identical to the CPU"
        } else {
            "DIFFERS from the CPU"
        };
        writeln!(
            f,
            "arithmetic check on {} ({}): {verdict} (the reciprocal on {} inputs, every stage of both triangle tests on {} cases; the driver's own 1.0 / x differs on {} of those, a plain a * b + c on {}: the shaders use neither)",
            self.adapter.name,
            self.adapter.backend,
            r.reciprocal_cases,
            r.stage_cases,
            r.driver_division_differs,
            r.driver_multiply_add_differs,
        )?;
        if !r.subnormals_kept {
            writeln!(
                f,
                "    the driver flushes subnormal numbers to zero: the triangle tests keep their values above them, so hits differ from the CPU's only where inputs are that small themselves (coordinates below about 1e-31, edges shorter than about 1e-19 away from the ray's origin, direction components below 2^-126 of the largest)"
            )?;
        }
        for (field, count) in &r.differing {
            writeln!(f, "    {field:<24} differs on {count} cases")?;
        }
        for example in &r.examples {
            writeln!(f, "    {example}")?;
        }
        Ok(())
    }
}

impl InfoReport {
    /// Lists the adapters and opens a GPU context the way `Backend::Auto` and
    /// `Backend::Gpu` do (so this takes as long as creating two devices); with
    /// `check`, the arithmetic self-check too (a third device).
    pub fn collect(check: bool) -> raypick::Result<Self> {
        let auto = backend_choice(Backend::Auto);
        let gpu = backend_choice(Backend::Gpu);
        let adapters = list_adapters()
            .into_iter()
            .map(|adapter| AdapterEntry {
                used_by_auto: auto.adapter.as_ref() == Some(&adapter.summary),
                used_by_gpu: gpu.adapter.as_ref() == Some(&adapter.summary),
                adapter,
            })
            .collect();
        Ok(Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            cpu: MachineFacts::collect(),
            adapters,
            auto,
            gpu,
            check: check.then(CheckReport::run).transpose()?,
        })
    }
}

/// `bytes` in the largest binary unit at or below it: exact (`128 MiB`) when the
/// unit divides it, else the byte count and a rounded size (`2147483647 B (2.0 GiB)`).
fn bytes(bytes: u64) -> String {
    let units = [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    match units.iter().find(|(size, _)| bytes >= *size) {
        Some((size, unit)) if bytes.is_multiple_of(*size) => format!("{} {unit}", bytes / size),
        Some((size, unit)) => format!("{bytes} B ({:.1} {unit})", bytes as f64 / *size as f64),
        None => format!("{bytes} B"),
    }
}

impl fmt::Display for InfoReport {
    /// A list for people: the CPU, each adapter (`*` marks the one `--backend auto`
    /// uses, `+` the one only `--backend gpu` uses) with its limits, and what
    /// `--backend auto` and `--backend gpu` do and why.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "raypick {}", self.version)?;
        writeln!(f, "cpu: {}", self.cpu)?;
        writeln!(f, "gpu adapters: {}", self.adapters.len())?;
        for entry in &self.adapters {
            let (a, l) = (&entry.adapter.summary, &entry.adapter.limits);
            let mark = match (entry.used_by_auto, entry.used_by_gpu) {
                (true, _) => "*",
                (false, true) => "+",
                (false, false) => "-",
            };
            writeln!(
                f,
                "{mark} {} ({}, {}, driver {})",
                a.name, a.backend, a.device_type, a.driver
            )?;
            let rows = [
                (
                    "max storage buffer binding",
                    bytes(l.max_storage_buffer_binding_size),
                ),
                ("max buffer size", bytes(l.max_buffer_size)),
                (
                    "max workgroups per dimension",
                    l.max_compute_workgroups_per_dimension.to_string(),
                ),
                (
                    "max invocations per workgroup",
                    l.max_compute_invocations_per_workgroup.to_string(),
                ),
                (
                    "workgroup storage",
                    bytes(u64::from(l.max_compute_workgroup_storage_size)),
                ),
                (
                    "storage buffers per stage",
                    l.max_storage_buffers_per_shader_stage.to_string(),
                ),
            ];
            let yes_no = |on: bool| if on { "yes" } else { "no" }.to_string();
            let features = [
                (
                    "ray queries (--accel ray-query)",
                    yes_no(entry.adapter.features.ray_queries),
                ),
                (
                    "kernel timing (timestamps)",
                    yes_no(entry.adapter.features.timestamps),
                ),
            ];
            for (name, value) in rows.into_iter().chain(features) {
                writeln!(f, "    {name:<30} {value}")?;
            }
        }
        for (flag, choice, otherwise) in [
            ("auto", &self.auto, "the CPU"),
            ("gpu", &self.gpu, "nothing (an error)"),
        ] {
            match &choice.adapter {
                Some(a) => writeln!(f, "--backend {flag} uses: {} ({})", a.name, a.backend)?,
                None => writeln!(f, "--backend {flag} uses: {otherwise}")?,
            }
            writeln!(f, "    because: {}", choice.reason)?;
            if choice.adapter.is_some() {
                writeln!(
                    f,
                    "    meshes get: --accel {} ({})",
                    choice.accel, choice.accel_reason
                )?;
            }
        }
        if let Some(check) = &self.check {
            write!(f, "{check}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_sizes() {
        assert_eq!(super::bytes(128 << 20), "128 MiB");
        assert_eq!(super::bytes(2 << 30), "2 GiB");
        assert_eq!(super::bytes(32 << 10), "32 KiB");
        assert_eq!(super::bytes(1000), "1000 B");
        assert_eq!(super::bytes((2 << 30) - 1), "2147483647 B (2.0 GiB)");
        assert_eq!(super::bytes(0), "0 B");
    }
}
