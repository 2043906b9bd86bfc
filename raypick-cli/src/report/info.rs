//! What `raypick info` prints: every GPU adapter, its limits, which one
//! [`Backend::Auto`](raypick::Backend::Auto) and [`Backend::Gpu`](raypick::Backend::Gpu)
//! use and why, and the CPU.

use std::fmt;

use super::machine::MachineFacts;
use raypick::Backend;
use raypick::gpu::{AdapterReport, BackendChoice, backend_choice, list_adapters};

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
}

impl InfoReport {
    /// Lists the adapters and opens a GPU context the way `Backend::Auto` and
    /// `Backend::Gpu` do (so this takes as long as creating two devices).
    pub fn collect() -> Self {
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
        Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            cpu: MachineFacts::collect(),
            adapters,
            auto,
            gpu,
        }
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
