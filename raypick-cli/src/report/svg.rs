//! A bar chart of a [`BenchReport`] as SVG text: one horizontal bar per measured
//! row (backend × acceleration structure × ray set), its length the row's
//! Mrays/s, with the value written next to it.

use std::fmt::Write as _;

use crate::bench::{BenchReport, BenchRow, sig3 as value};

/// Chart geometry, in SVG user units (pixels).
const WIDTH: f64 = 760.0;
const LABEL_WIDTH: f64 = 230.0;
const RIGHT_MARGIN: f64 = 90.0;
const TOP: f64 = 56.0;
const BAR_HEIGHT: f64 = 22.0;
const BAR_GAP: f64 = 8.0;
const AXIS_SPACE: f64 = 56.0;

/// Bar colours: the CPU in blue, the GPU in orange; brute force lighter.
fn colour(row: &BenchRow) -> &'static str {
    match (row.backend.as_str(), row.accel.as_str()) {
        ("gpu", "brute") => "#f4b183",
        ("gpu", _) => "#e07b22",
        (_, "brute") => "#9dc3e6",
        _ => "#2e75b6",
    }
}

/// `text` with XML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A round axis step giving about five ticks up to `max` (1, 2 or 5 × 10^k).
fn tick_step(max: f64) -> f64 {
    if !(max > 0.0 && max.is_finite()) {
        return 1.0;
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A tick value with just the decimals its step needs (`0`, `2`, `0.5`, `0.02`).
fn tick_label(x: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).clamp(0.0, 12.0) as usize;
    format!("{x:.decimals$}")
}

/// The chart of `report` as a standalone SVG document: a title (scene, triangle
/// count), one `<rect class="bar">` per row of `report.rows` in report order,
/// labelled `backend accel ray-set` on the left and with its Mrays/s value on the
/// right, and an x axis with ticks labelled "Mrays/s".
pub fn bench_chart(report: &BenchReport) -> String {
    let rows = &report.rows;
    let plot_width = WIDTH - LABEL_WIDTH - RIGHT_MARGIN;
    let max = rows
        .iter()
        .map(|r| r.measured.mrays_per_s)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let step = tick_step(max);
    let ticks = ((max / step).ceil() as usize).max(1);
    let axis_max = step * ticks as f64;
    let scale = plot_width / axis_max;
    let plot_height = rows.len() as f64 * (BAR_HEIGHT + BAR_GAP);
    let height = TOP + plot_height + AXIS_SPACE;
    let axis_y = TOP + plot_height;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" font-size="15" font-weight="bold">raypick bench: {} ({} triangles, cull {})</text>"#,
        LABEL_WIDTH / 2.0,
        escape(&report.scene),
        report.triangles,
        escape(&report.cull)
    );
    // Ticks and grid lines.
    for i in 0..=ticks {
        let x = LABEL_WIDTH + i as f64 * step * scale;
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{axis_y}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            axis_y + 16.0,
            tick_label(i as f64 * step, step)
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LABEL_WIDTH}" y1="{axis_y}" x2="{:.1}" y2="{axis_y}" stroke="#333333"/>"##,
        LABEL_WIDTH + plot_width
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">Mrays/s (million rays per second, higher is better)</text>"#,
        LABEL_WIDTH + plot_width / 2.0,
        axis_y + 38.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">backend, accel, ray set</text>"#,
        TOP + plot_height / 2.0,
        TOP + plot_height / 2.0
    );
    // One bar per row.
    for (i, row) in rows.iter().enumerate() {
        let y = TOP + i as f64 * (BAR_HEIGHT + BAR_GAP) + BAR_GAP / 2.0;
        let mrays = row.measured.mrays_per_s;
        let width = if mrays.is_finite() {
            (mrays * scale).max(1.0)
        } else {
            1.0
        };
        let label = format!("{} {} {}", row.backend, row.accel, row.ray_set);
        let mid = y + BAR_HEIGHT / 2.0 + 4.0;
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{mid:.1}" text-anchor="end">{}</text>"#,
            LABEL_WIDTH - 8.0,
            escape(&label)
        );
        let _ = writeln!(
            svg,
            r#"<rect class="bar" x="{LABEL_WIDTH}" y="{y:.1}" width="{width:.1}" height="{BAR_HEIGHT}" fill="{}" stroke="none"><title>{} on {}: {} Mrays/s ({} rays, {} ms)</title></rect>"#,
            colour(row),
            escape(&label),
            escape(&row.adapter),
            value(mrays),
            row.measured.rays,
            value(row.measured.trace_ms)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{mid:.1}">{}</text>"#,
            LABEL_WIDTH + width + 6.0,
            value(mrays)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(100.0), 20.0);
        assert_eq!(tick_step(7.0), 2.0);
        assert!((tick_step(0.03) - 0.01).abs() < 1e-12);
        assert_eq!(tick_label(4.0, 2.0), "4");
        assert_eq!(tick_label(0.5 * 3.0, 0.5), "1.5");
        assert_eq!(tick_label(0.04, tick_step(0.1)), "0.04");
        assert_eq!(tick_step(0.0), 1.0);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
