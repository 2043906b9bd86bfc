//! Where a GPU trace's time goes, when [`GpuOptions::timing`](super::GpuOptions::timing)
//! asks for it: GPU time inside raypick's compute passes from timestamp queries (when
//! the adapter has them), and the host's time submitting, waiting and finishing.
//!
//! Each compute pass of a trace (of a mesh or an instance scene) writes a timestamp
//! at its start and end into a query set; the last pass of a ray batch resolves them
//! into a buffer that is read after the batch's hits, so a batch costs one more
//! small readback. A batch's passes are submitted and read back under its scene's or
//! the context's scratch lock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::readback::{Wait, read_mapped};
use crate::error::Result;

/// Compute passes of one ray batch that get timestamps; later ones are counted in
/// [`GpuTimes::untimed_passes`].
const PASSES: u32 = 256;

/// Bytes of one pass's two resolved timestamps.
const PASS_BYTES: u64 = 2 * wgpu::QUERY_SIZE as u64;

/// Where GPU traces spent their time since the last
/// [`GpuContext::take_times`](super::GpuContext::take_times).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GpuTimes {
    /// GPU time inside raypick's compute passes (the sum of each pass's end minus
    /// start timestamp), in milliseconds; `None` when the adapter has no timestamp
    /// queries.
    pub kernel_ms: Option<f64>,
    /// Compute passes that were timed.
    pub passes: u64,
    /// Compute passes that ran without timestamps (more in one batch than the query
    /// set holds).
    pub untimed_passes: u64,
    /// Host time writing rays and parameters and submitting the passes, in ms.
    pub submit_ms: f64,
    /// Host time waiting for the GPU to run the passes and copy the hits back, in ms.
    pub wait_ms: f64,
    /// Host time after the hits arrived: reading hit lists and finishing on the CPU
    /// the rays that ran out of loop steps, in ms.
    pub finish_ms: f64,
}

/// The timestamp queries of a context whose adapter has them.
#[derive(Debug)]
struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period_ns: f64,
}

/// Totals, and the passes of the current batch that hold a timestamp slot.
#[derive(Debug, Default)]
struct State {
    times: GpuTimes,
    pending: u32,
}

/// The host stages of one trace call, on the context's timer when it has one:
/// nothing is measured without.
#[derive(Clone, Copy)]
pub(crate) struct Laps<'a>(pub(crate) Option<&'a Timer>);

impl Laps<'_> {
    /// Now, when timing.
    pub(crate) fn start(self) -> Option<Instant> {
        self.0.map(|_| Instant::now())
    }

    /// Adds the time since `since` ([`Laps::start`]) to `stage`.
    pub(crate) fn lap(self, stage: HostStage, since: Option<Instant>) {
        if let (Some(timer), Some(since)) = (self.0, since) {
            timer.add(stage, since.elapsed());
        }
    }

    /// Starts a ray batch ([`Timer::begin_batch`]).
    pub(crate) fn begin_batch(self) {
        if let Some(timer) = self.0 {
            timer.begin_batch();
        }
    }
}

/// The timer of one context.
#[derive(Debug)]
pub(crate) struct Timer {
    queries: Option<Queries>,
    state: Mutex<State>,
}

/// A stage of a trace measured on the host.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HostStage {
    Submit,
    Wait,
    Finish,
}

impl Timer {
    /// A timer; with timestamp queries when `timestamps` (the device has
    /// `Features::TIMESTAMP_QUERY`).
    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue, timestamps: bool) -> Self {
        let queries = timestamps.then(|| {
            let bytes = u64::from(PASSES) * PASS_BYTES;
            let buffer = |label, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                })
            };
            use wgpu::BufferUsages as U;
            Queries {
                set: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("raypick pass timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * PASSES,
                }),
                resolve: buffer("raypick timestamps", U::QUERY_RESOLVE | U::COPY_SRC),
                staging: buffer("raypick timestamp readback", U::MAP_READ | U::COPY_DST),
                period_ns: f64::from(queue.get_timestamp_period()),
            }
        });
        let times = GpuTimes {
            kernel_ms: queries.as_ref().map(|_| 0.0),
            ..GpuTimes::default()
        };
        Self {
            queries,
            state: Mutex::new(State { times, pending: 0 }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether passes get GPU timestamps.
    pub(crate) fn has_timestamps(&self) -> bool {
        self.queries.is_some()
    }

    /// Starts a ray batch: no pass holds a timestamp slot yet (a failed batch may
    /// have left some).
    pub(crate) fn begin_batch(&self) {
        self.state().pending = 0;
    }

    /// The timestamp writes of the next compute pass of the current batch, if any.
    pub(crate) fn pass_writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let queries = self.queries.as_ref()?;
        let mut state = self.state();
        if state.pending >= PASSES {
            state.times.untimed_passes += 1;
            return None;
        }
        let slot = state.pending;
        state.pending += 1;
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &queries.set,
            beginning_of_pass_write_index: Some(2 * slot),
            end_of_pass_write_index: Some(2 * slot + 1),
        })
    }

    /// Encodes the copy of the current batch's timestamps to the readback buffer
    /// (in the encoder of the batch's last pass).
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let Some(queries) = &self.queries else {
            return;
        };
        let pending = self.state().pending;
        if pending == 0 {
            return;
        }
        encoder.resolve_query_set(&queries.set, 0..2 * pending, &queries.resolve, 0);
        let bytes = u64::from(pending) * PASS_BYTES;
        encoder.copy_buffer_to_buffer(&queries.resolve, 0, &queries.staging, 0, bytes);
    }

    /// Reads the current batch's timestamps (after its hits were read, so the GPU is
    /// done with them) and adds their passes' time to the totals.
    pub(crate) async fn collect(&self, device: &wgpu::Device, wait: Wait) -> Result<()> {
        let Some(queries) = &self.queries else {
            return Ok(());
        };
        let pending = self.state().pending;
        if pending == 0 {
            return Ok(());
        }
        let bytes = u64::from(pending) * PASS_BYTES;
        let ticks: u64 = read_mapped(device, &queries.staging, bytes, wait, |stamps: &[u64]| {
            stamps
                .chunks_exact(2)
                .map(|pass| pass[1].saturating_sub(pass[0]))
                .sum()
        })
        .await?;
        let mut state = self.state();
        state.pending = 0;
        state.times.passes += u64::from(pending);
        if let Some(ms) = &mut state.times.kernel_ms {
            *ms += ticks as f64 * queries.period_ns / 1e6;
        }
        Ok(())
    }

    /// Adds host time spent in `stage`.
    pub(crate) fn add(&self, stage: HostStage, elapsed: Duration) {
        let ms = elapsed.as_secs_f64() * 1e3;
        let mut state = self.state();
        let times = &mut state.times;
        match stage {
            HostStage::Submit => times.submit_ms += ms,
            HostStage::Wait => times.wait_ms += ms,
            HostStage::Finish => times.finish_ms += ms,
        }
    }

    /// The totals since the last call; starts new ones.
    pub(crate) fn take(&self) -> GpuTimes {
        let mut state = self.state();
        let fresh = GpuTimes {
            kernel_ms: state.times.kernel_ms.map(|_| 0.0),
            ..GpuTimes::default()
        };
        std::mem::replace(&mut state.times, fresh)
    }
}
