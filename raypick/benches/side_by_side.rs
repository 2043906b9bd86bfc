//! The 1M-triangle trace comparison of `bvh_trace` with the libraries taking turns:
//! `cargo bench --bench side_by_side [rounds]` (default 7).
//!
//! Criterion times one library after another, so a change in the machine's load
//! between them reads as a difference between the libraries. Here every round
//! traces each ray set once with each library — raypick's CPU BVH, parry3d and
//! obvhs, on the scene, rays and 2-thread pools of `bvh_trace` — and the best and
//! median rates over the rounds are printed with raypick's ratios to the others.
//! Every library's hits are checked against raypick's as in `bvh_trace`.
//!
//! raypick runs twice per round: with its default, watertight ray–triangle test
//! (exact on shared edges), and with its fast test (Möller–Trumbore, the kind of
//! test the other libraries run), so that both the default and a like-for-like
//! comparison are on record.

// The fixtures are shared with the criterion benches; this binary uses some.
mod compare;
#[allow(dead_code)]
mod support;

use std::time::Instant;

use raypick::{Hit, Mode, Ray, TraceOptions};
use support::{Agreement, MIN_AGREEMENT, RaySet};

/// A library's trace of a ray set.
type Tracer = fn(&[Ray]) -> Vec<Hit>;

/// The leading entries of [`LIBRARIES`] that are raypick's.
const RAYPICK_RUNS: usize = 2;

const LIBRARIES: [(&str, Tracer); 4] = [
    ("raypick CPU BVH", |rays| raypick(rays, Mode::Watertight)),
    ("raypick, fast", |rays| raypick(rays, Mode::Fast)),
    ("parry3d", |rays| {
        support::pool().install(|| support::parry().trace(rays))
    }),
    ("obvhs", |rays| {
        support::pool().install(|| support::obvhs().trace(rays))
    }),
];

/// raypick's CPU BVH with the given ray–triangle test.
fn raypick(rays: &[Ray], mode: Mode) -> Vec<Hit> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let options = TraceOptions::default().with_mode(mode);
    support::cpu().trace_into(support::cpu_bvh(), rays, &options, &mut hits);
    hits
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(7)
        .max(1);
    support::note_load("side_by_side");
    println!(
        "{} triangles, {} rays per set, {} threads, {rounds} rounds",
        support::TRACE_TRIANGLES,
        support::RAYS,
        support::TRACE_THREADS
    );
    for set in RaySet::ALL {
        let rays = support::rays(set);
        let reference = support::cpu_bvh_hits(set);
        let mut seconds = vec![Vec::with_capacity(rounds); LIBRARIES.len()];
        for round in 0..rounds {
            for ((name, trace), times) in LIBRARIES.iter().zip(&mut seconds) {
                let start = Instant::now();
                let hits = trace(rays);
                times.push(start.elapsed().as_secs_f64());
                if round == 0 {
                    let a = Agreement::new(reference, &hits);
                    assert!(
                        a.rate_with_ties() >= MIN_AGREEMENT,
                        "{name} agrees with raypick on the {} rays: {a}",
                        set.name()
                    );
                }
            }
        }
        let rate = |s: f64| rays.len() as f64 / s / 1e6;
        let summary: Vec<(f64, f64)> = seconds
            .iter_mut()
            .map(|times| {
                times.sort_by(f64::total_cmp);
                (rate(times[0]), rate(times[times.len() / 2]))
            })
            .collect();
        println!("{} rays:", set.name());
        for ((name, _), (best, median)) in LIBRARIES.iter().zip(&summary) {
            println!("  {name:<16} best {best:7.3} Mrays/s, median {median:7.3} Mrays/s");
        }
        let runs = LIBRARIES.iter().zip(&summary);
        for ((ours, _), (best, median)) in runs.clone().take(RAYPICK_RUNS) {
            for ((name, _), (b, m)) in runs.clone().skip(RAYPICK_RUNS) {
                println!(
                    "  {ours:<15} / {name:<8} best {:.2}x, median {:.2}x",
                    best / b,
                    median / m
                );
            }
        }
    }
}
