//! The asynchronous pick service, driven by a fake render loop: every submitted
//! pick comes back exactly once, in submission order, with the answer of a
//! blocking trace of the same rays; a full ring queues picks instead of blocking
//! or dropping them.

use std::sync::Arc;

use raypick::service::{PickService, Ticket};
use raypick::{Accel, Backend, Hit, Mesh, PickMesh, Picker, Ray, TraceOptions};
use raypick_testkit::fixtures::{self, Rng};

fn pickers() -> Vec<Arc<Picker>> {
    let mut all = vec![Arc::new(Picker::new(Backend::Cpu).expect("CPU picker"))];
    if let Some(r) = crate::support::renderer() {
        let picker = Picker::from_device(r.device.clone(), r.queue.clone(), &r.adapter)
            .expect("picker on a renderer's device");
        all.push(Arc::new(picker));
    }
    all
}

fn scene() -> Mesh {
    fixtures::builtin_scene(4_000)
}

/// A fake render loop of `frames` frames: each frame submits 0–`max_picks` picks of
/// 1–`max_rays` random rays, polls once and collects what is ready. Checks order,
/// uniqueness and answers; returns the latencies in frames.
fn render_loop(
    picker: &Arc<Picker>,
    mesh: &PickMesh,
    bounds: (glam::Vec3, glam::Vec3),
    frames: usize,
    max_picks: usize,
    max_rays: usize,
) -> Vec<u64> {
    let mut service = PickService::new(picker.clone());
    let mut rng = Rng::new(3);
    let options = TraceOptions::default();
    let mut submitted: std::collections::VecDeque<(Ticket, u64, Vec<Ray>)> = Default::default();
    let mut latencies = Vec::new();
    let mut check =
        |result: raypick::service::PickResult,
         submitted: &mut std::collections::VecDeque<(Ticket, u64, Vec<Ray>)>| {
            let (ticket, frame, rays) = submitted
                .pop_front()
                .expect("a result for a submitted pick");
            assert_eq!(
                result.ticket, ticket,
                "results come back in submission order"
            );
            assert_eq!(result.submitted_frame, frame);
            assert!(result.ready_frame >= frame);
            latencies.push(result.latency_frames());
            let hits = result.hits.expect("pick answered");
            let expected = picker.trace(mesh, &rays, &options).expect("blocking trace");
            assert_eq!(
                hits, expected,
                "pick {ticket:?} differs from a blocking trace"
            );
        };
    for _ in 0..frames {
        for _ in 0..rng.below(max_picks + 1) {
            let n = 1 + rng.below(max_rays);
            let rays = fixtures::random_rays(n, &mut rng, bounds);
            let ticket = service.submit(mesh, &rays, &options).expect("submit");
            submitted.push_back((ticket, service.frame(), rays));
        }
        service.poll();
        let ready: Vec<_> = service.drain_results().collect();
        for result in ready {
            check(result, &mut submitted);
        }
    }
    // Drain: everything still in flight comes back (the GPU finishes on its own).
    let mut spins = 0;
    while service.pending() > 0 {
        service.poll();
        let ready: Vec<_> = service.drain_results().collect();
        for result in ready {
            check(result, &mut submitted);
        }
        spins += 1;
        assert!(spins < 1_000_000, "picks never came back");
        std::thread::yield_now();
    }
    assert!(submitted.is_empty(), "{} picks were lost", submitted.len());
    latencies
}

#[test]
fn thousands_of_frames_of_random_picks_come_back_once_in_order_and_right() {
    let mesh = scene();
    let bounds = mesh.bounds().unwrap();
    for picker in pickers() {
        for accel in [Accel::Bvh, Accel::Brute] {
            let uploaded = picker.upload_with(&mesh, accel).unwrap();
            let latencies = render_loop(&picker, &uploaded, bounds, 3_000, 3, 8);
            let max = latencies.iter().max().copied().unwrap_or(0);
            let mean = latencies.iter().sum::<u64>() as f64 / latencies.len().max(1) as f64;
            eprintln!(
                "{} {accel:?}: {} picks, latency mean {mean:.2} frames, max {max}",
                picker.device_name(),
                latencies.len()
            );
            assert!(latencies.len() > 3_000);
        }
    }
}

#[test]
fn a_full_ring_queues_picks_without_blocking_or_losing_them() {
    let mesh = scene();
    let bounds = mesh.bounds().unwrap();
    for picker in pickers() {
        let uploaded = picker.upload(&mesh).unwrap();
        let mut service = PickService::with_slots(picker.clone(), 2);
        let mut rng = Rng::new(5);
        let picks: Vec<Vec<Ray>> = (0..20)
            .map(|i| fixtures::random_rays(1 + i % 5, &mut rng, bounds))
            .collect();
        let tickets: Vec<Ticket> = picks
            .iter()
            .map(|rays| {
                service
                    .submit(&uploaded, rays, &TraceOptions::default())
                    .unwrap()
            })
            .collect();
        if picker.backend() == Backend::Gpu {
            assert_eq!(service.in_flight(), 2, "one pick per ring slot");
            assert_eq!(service.queued(), 18, "the rest wait, nothing blocks");
        }
        assert_eq!(service.pending(), 20);
        let mut results = Vec::new();
        while results.len() < picks.len() {
            service.poll();
            results.extend(service.drain_results());
            std::thread::yield_now();
        }
        assert_eq!(service.pending(), 0);
        for ((result, ticket), rays) in results.into_iter().zip(&tickets).zip(&picks) {
            assert_eq!(result.ticket, *ticket);
            let expected = picker
                .trace(&uploaded, rays, &TraceOptions::default())
                .unwrap();
            assert_eq!(result.hits.unwrap(), expected);
        }
    }
}

#[test]
fn empty_picks_empty_meshes_and_foreign_meshes() {
    let empty = Mesh::default();
    for picker in pickers() {
        let mut service = PickService::new(picker.clone());
        let nothing = picker.upload_with(&empty, Accel::Brute).unwrap();
        let ray = Ray::new(glam::Vec3::Z, glam::Vec3::NEG_Z);
        let a = service
            .submit(&nothing, &[ray], &TraceOptions::default())
            .unwrap();
        let b = service
            .submit(&nothing, &[], &TraceOptions::default())
            .unwrap();
        while service.pending() > 0 {
            service.poll();
            for result in service.drain_results().collect::<Vec<_>>() {
                let hits = result.hits.unwrap();
                if result.ticket == a {
                    assert_eq!(hits, vec![Hit::MISS]);
                } else {
                    assert_eq!(result.ticket, b);
                    assert!(hits.is_empty());
                }
            }
        }
        let other = Picker::new(Backend::Cpu).unwrap();
        let foreign = other.upload(&scene()).unwrap();
        if picker.backend() == Backend::Gpu {
            assert!(
                service
                    .submit(&foreign, &[ray], &TraceOptions::default())
                    .is_err()
            );
        }
    }
}
