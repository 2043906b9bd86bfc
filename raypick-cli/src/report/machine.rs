//! Facts about the machine the CPU backend runs on.

use std::fmt;

/// The CPU side of a machine, as the CPU backend sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MachineFacts {
    /// Operating system (`std::env::consts::OS`), e.g. `linux`.
    pub os: String,
    /// CPU architecture (`std::env::consts::ARCH`), e.g. `x86_64`.
    pub arch: String,
    /// CPU model name, where the operating system tells it (Linux: `/proc/cpuinfo`).
    pub cpu_model: Option<String>,
    /// Threads the CPU backend traces on by default (rayon's global pool).
    pub cpu_threads: usize,
    /// The vector unit the CPU kernels use ([`raypick::cpu_simd_level`]).
    pub simd: String,
}

impl MachineFacts {
    /// The facts of this machine.
    pub fn collect() -> Self {
        Self {
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpu_model: cpu_model(),
            cpu_threads: rayon::current_num_threads(),
            simd: raypick::cpu_simd_level().to_string(),
        }
    }
}

/// The first `model name` line of `/proc/cpuinfo`, where there is one.
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(key, _)| key.trim() == "model name")
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl fmt::Display for MachineFacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} threads, SIMD {} ({} {})",
            self.cpu_threads, self.simd, self.os, self.arch
        )?;
        if let Some(model) = &self.cpu_model {
            write!(f, ", {model}")?;
        }
        Ok(())
    }
}
