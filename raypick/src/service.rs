//! Asynchronous picking for render loops: submit a few rays during a frame,
//! collect the hits on a later frame, never block the render thread.
//!
//! ```
//! use std::sync::Arc;
//! use raypick::service::PickService;
//! use raypick::{Backend, Mesh, Picker, Ray, TraceOptions};
//! use glam::Vec3;
//!
//! let picker = Arc::new(Picker::new(Backend::Auto)?);
//! let mesh = picker.upload(&Mesh::from_triangles(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]))?;
//! let mut service = PickService::new(picker.clone());
//! let ray = Ray::new(Vec3::new(0.25, 0.25, 1.0), Vec3::NEG_Z);
//! let ticket = service.submit(&mesh, &[ray], &TraceOptions::default())?;
//! // ... each frame:
//! loop {
//!     service.poll();
//!     if let Some(result) = service.next_result() {
//!         assert_eq!(result.ticket, ticket);
//!         assert_eq!(result.hits?[0].prim, 0);
//!         break;
//!     }
//!     # std::thread::yield_now();
//! }
//! # Ok::<(), raypick::Error>(())
//! ```
//!
//! # Frames and latency
//! Call [`PickService::poll`] once per frame: it advances the service's frame
//! counter, polls the device without waiting (`PollType::Poll`), takes the hits of
//! finished picks and starts queued ones. Each result says the frame it was
//! submitted in and the frame it became ready in.
//! - GPU: a pick is dispatched when submitted (if a ring slot is free) and its
//!   readback is mapped by `map_async`; it is ready at the first `poll` after the
//!   GPU is done, so at least one frame later. `examples/pick_service.rs` measures
//!   it: on lavapipe (Mesa's CPU Vulkan driver, two loaded cores), 1M triangles,
//!   16 ms frames, picks of 1 or 64 rays came back after 1.2–2.0 frames on average,
//!   3 at most; a GPU that finishes a pick within the frame gives 1.
//! - CPU: a pick is traced on the calling thread when it is submitted (a few rays
//!   on a BVH take microseconds) and is ready in the same frame (latency 0).
//!
//! # The ring
//! The GPU side keeps a small ring of slots (default [`DEFAULT_SLOTS`]), each with
//! its own ray, hit and staging buffers, so that several picks can be in flight
//! without waiting on each other. When every slot is busy, a submitted pick is
//! queued (with its rays and a handle on the mesh's buffers) and started by a
//! later `poll` when a slot frees up: `submit` never blocks and never drops a pick.
//! Results come back exactly once each, in submission order (a finished pick waits
//! for the ones submitted before it). A queued pick reads the mesh's buffers when
//! it starts, so it sees a refit made in between.
//!
//! The one wait: a ray that runs out of GPU traversal steps is finished on the CPU
//! copy of the tree; for a mesh refitted on the GPU
//! ([`GpuContext::refit_gathered`]) that copy is read back first, once per refit,
//! blocking. Real meshes need hundreds of steps against a budget of
//! [`DEFAULT_MAX_TRAVERSAL_STEPS`](crate::gpu::DEFAULT_MAX_TRAVERSAL_STEPS).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::TraceOptions;
use crate::error::{Error, Result};
use crate::gpu::{CpuCopy, GpuContext, MeshContent, Scratch};
use crate::picker::{PickMesh, Picker};
use crate::types::Query;
use crate::types::{Hit, Ray};
use crate::world::TraceRay;

/// Ring slots (picks in flight on the GPU at once) of [`PickService::new`].
pub const DEFAULT_SLOTS: usize = 3;

/// Rays one slot is first made for (it grows when a pick needs more).
const SLOT_RAYS: usize = 64;

/// Identifies a submitted pick; tickets increase in submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(pub u64);

/// The answer to one submitted pick.
#[derive(Debug)]
pub struct PickResult {
    /// The ticket [`PickService::submit`] returned.
    pub ticket: Ticket,
    /// Frame (count of [`PickService::poll`] calls) the pick was submitted in.
    pub submitted_frame: u64,
    /// Frame its hits became ready in.
    pub ready_frame: u64,
    /// One hit per submitted ray, or why the GPU could not answer.
    pub hits: Result<Vec<Hit>>,
}

impl PickResult {
    /// Frames between submission and readiness.
    pub fn latency_frames(&self) -> u64 {
        self.ready_frame - self.submitted_frame
    }
}

/// A pick waiting for a free slot.
struct Job {
    ticket: Ticket,
    frame: u64,
    rays: Vec<Ray>,
    options: TraceOptions,
    content: MeshContent,
    /// For a mesh gathered from renderer buffers: its CPU copy's state.
    copy: Option<Arc<CpuCopy>>,
}

/// Map state of a slot's staging buffer.
const MAPPING: u8 = 0;
const MAPPED: u8 = 1;
const MAP_FAILED: u8 = 2;

/// A ring slot: buffers for one pick in flight.
struct Slot {
    scratch: Scratch,
    state: Arc<AtomicU8>,
    /// The pick in flight, if any.
    job: Option<Job>,
}

/// Asynchronous picks for a render loop (see the [module docs](self)).
pub struct PickService {
    picker: Arc<Picker>,
    slots: Vec<Slot>,
    /// Slot indices of the picks in flight, in submission order.
    in_flight: VecDeque<usize>,
    queued: VecDeque<Job>,
    ready: VecDeque<PickResult>,
    next_ticket: u64,
    frame: u64,
}

impl std::fmt::Debug for PickService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PickService")
            .field("backend", &self.picker.backend())
            .field("slots", &self.slots.len())
            .field("in_flight", &self.in_flight.len())
            .field("queued", &self.queued.len())
            .field("ready", &self.ready.len())
            .field("frame", &self.frame)
            .finish()
    }
}

impl PickService {
    /// A service on `picker` with [`DEFAULT_SLOTS`] ring slots.
    pub fn new(picker: Arc<Picker>) -> Self {
        Self::with_slots(picker, DEFAULT_SLOTS)
    }

    /// A service with `slots` ring slots (at least one) on the GPU.
    pub fn with_slots(picker: Arc<Picker>, slots: usize) -> Self {
        let slots = match picker.gpu() {
            Some(gpu) => (0..slots.max(1))
                .map(|_| Slot {
                    scratch: Scratch::new(gpu.device(), SLOT_RAYS, 0),
                    state: Arc::new(AtomicU8::new(MAPPING)),
                    job: None,
                })
                .collect(),
            None => Vec::new(),
        };
        Self {
            picker,
            slots,
            in_flight: VecDeque::new(),
            queued: VecDeque::new(),
            ready: VecDeque::new(),
            next_ticket: 0,
            frame: 0,
        }
    }

    /// The picker the service traces with.
    pub fn picker(&self) -> &Picker {
        &self.picker
    }

    /// The current frame: the number of [`PickService::poll`] calls so far.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Picks started on the GPU and not yet read back.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Picks waiting for a free ring slot.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Picks submitted and not yet returned by [`PickService::next_result`].
    pub fn pending(&self) -> usize {
        self.in_flight.len() + self.queued.len() + self.ready.len()
    }

    /// Submits a pick of `rays` against `mesh` (made by this service's picker) and
    /// returns at once. Fails only for a mesh of another backend, or more rays than
    /// one GPU dispatch takes ([`GpuContext::max_rays_per_dispatch`]).
    pub fn submit(
        &mut self,
        mesh: &PickMesh,
        rays: &[Ray],
        options: &TraceOptions,
    ) -> Result<Ticket> {
        let ticket = Ticket(self.next_ticket);
        let picker = self.picker.clone();
        match (picker.gpu(), mesh.gpu()) {
            // The CPU (or a picker that fell back to it): traced right away.
            (None, _) => {
                let hits = self.picker.trace(mesh, rays, options);
                self.next_ticket += 1;
                self.ready.push_back(PickResult {
                    ticket,
                    submitted_frame: self.frame,
                    ready_frame: self.frame,
                    hits,
                });
            }
            (Some(gpu), Some(uploaded)) => {
                if uploaded.context_id != gpu.id {
                    return Err(Error::WrongBackend);
                }
                if rays.len() > gpu.max_rays_per_dispatch() {
                    return Err(Error::GpuLimit(format!(
                        "a pick of {} rays is more than one dispatch takes ({})",
                        rays.len(),
                        gpu.max_rays_per_dispatch()
                    )));
                }
                self.next_ticket += 1;
                self.queued.push_back(Job {
                    ticket,
                    frame: self.frame,
                    rays: Ray::all_to_local(rays, mesh.origin()).into_owned(),
                    options: *options,
                    content: uploaded.content.clone(),
                    copy: uploaded.gathered.as_ref().map(|g| g.copy.clone()),
                });
                self.start_queued(gpu);
            }
            (Some(_), None) => return Err(Error::WrongBackend),
        }
        Ok(ticket)
    }

    /// Once per frame: advances the frame counter, polls the device without
    /// waiting, makes finished picks ready and starts queued ones. Never blocks.
    pub fn poll(&mut self) {
        self.frame += 1;
        let picker = self.picker.clone();
        let Some(gpu) = picker.gpu() else { return };
        let _ = gpu.device().poll(wgpu::PollType::Poll);
        while let Some(&index) = self.in_flight.front() {
            let state = self.slots[index].state.load(Ordering::Acquire);
            if state == MAPPING {
                break;
            }
            self.in_flight.pop_front();
            let slot = &mut self.slots[index];
            let job = slot.job.take().expect("a slot in flight has a job");
            let hits = if state == MAPPED {
                read_hits(gpu, slot, &job)
            } else {
                Err(Error::Readback(Box::new(wgpu::BufferAsyncError)))
            };
            self.ready.push_back(PickResult {
                ticket: job.ticket,
                submitted_frame: job.frame,
                ready_frame: self.frame,
                hits,
            });
        }
        self.start_queued(gpu);
    }

    /// The next result in submission order, if it is ready.
    pub fn next_result(&mut self) -> Option<PickResult> {
        self.ready.pop_front()
    }

    /// Every ready result, in submission order.
    pub fn drain_results(&mut self) -> impl Iterator<Item = PickResult> + '_ {
        self.ready.drain(..)
    }

    /// Starts queued picks in free slots, oldest first.
    fn start_queued(&mut self, gpu: &GpuContext) {
        while !self.queued.is_empty() {
            let Some(index) = self.slots.iter().position(|s| s.job.is_none()) else {
                return;
            };
            let job = self.queued.pop_front().expect("not empty");
            let slot = &mut self.slots[index];
            if slot.scratch.capacity < job.rays.len() {
                slot.scratch = Scratch::new(gpu.device(), job.rays.len(), 0);
            }
            let n = job.rays.len();
            let state = slot.state.clone();
            let empty = n == 0 || job.content.is_empty();
            if empty {
                // Nothing to dispatch: ready at the next poll, like any other pick.
                state.store(MAPPED, Ordering::Release);
            } else {
                let scratch = &mut slot.scratch;
                crate::gpu::write_rays(gpu.queue(), &scratch.rays, &job.rays);
                let closest = (Query::Closest, 0);
                let dispatched = gpu.dispatch(&job.content, n, &job.options, closest, scratch);
                if let Err(e) = dispatched {
                    log::error!("raypick pick service: {}", e.with_sources());
                    state.store(MAP_FAILED, Ordering::Release);
                } else {
                    state.store(MAPPING, Ordering::Release);
                    let bytes = (n * std::mem::size_of::<Hit>()) as u64;
                    scratch
                        .staging
                        .slice(..bytes)
                        .map_async(wgpu::MapMode::Read, move |result| {
                            let value = if result.is_ok() { MAPPED } else { MAP_FAILED };
                            state.store(value, Ordering::Release);
                        });
                }
            }
            slot.job = Some(job);
            self.in_flight.push_back(index);
        }
    }
}

/// Copies a finished slot's hits out, unmaps it and finishes on the CPU the rays
/// that ran out of GPU traversal steps.
fn read_hits(gpu: &GpuContext, slot: &mut Slot, job: &Job) -> Result<Vec<Hit>> {
    let n = job.rays.len();
    let mut hits = vec![Hit::MISS; n];
    let dispatched = n > 0 && !job.content.is_empty();
    if !dispatched {
        return Ok(hits);
    }
    let bytes = (n * std::mem::size_of::<Hit>()) as u64;
    let slice = slot.scratch.staging.slice(..bytes);
    {
        let view = slice
            .get_mapped_range()
            .map_err(|e| Error::Readback(Box::new(e)))?;
        hits.copy_from_slice(bytemuck::cast_slice(&view));
    }
    slot.scratch.staging.unmap();
    if let Some(tree) = gpu.finishing(&job.content, job.copy.as_deref(), &hits)? {
        // A ray left unfinished was a valid one: the caller's ray is the one traced.
        crate::gpu::finish_on_cpu(&tree, &job.rays, &mut hits, &job.options);
    }
    Ok(hits)
}
