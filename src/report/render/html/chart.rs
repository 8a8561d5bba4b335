//! The SVG charts: violations over time, stacked by category, and
//! horizontal bar charts (top bots, most-broken rules).

use maud::{html, Markup};

use super::colour;
use crate::report::render::markup::Text;
use crate::report::render::thousands;
use crate::report::Series;

/// Chart width in SVG units (the page scales it to the window).
const WIDTH: f64 = 960.0;

/// A round scale maximum at or above `max` (1, 2 or 5 times a power of ten).
fn nice_max(max: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let v = step.saturating_mul(m);
            if v >= max || v == u64::MAX {
                return v.max(1);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// `v` with `digits` decimals, for SVG coordinates.
fn num(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// Chart (a): stacked bars of violations per time bucket and category.
pub(super) fn over_time(s: &Series) -> Markup {
    const H: f64 = 260.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 10.0;
    const TOP: f64 = 10.0;
    const BOTTOM: f64 = 30.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let max = s.buckets.iter().map(|b| b.total).max().unwrap_or(0);
    let aria = format!("Violations per {} and category", s.unit);
    let view_box = format!("0 0 {WIDTH} {H}");
    if max == 0 {
        return html! {
            svg class="chart" id="chart-over-time" data-testid="chart-over-time" xmlns="http://www.w3.org/2000/svg"
                viewBox=(view_box) width=(WIDTH) height=(H) role="img" aria-label=(aria) {
                text x=(WIDTH / 2.0) y=(H / 2.0) text-anchor="middle" fill="#555" { "No violations." }
            }
        };
    }
    let top = nice_max(max) as f64;
    let n = s.buckets.len() as f64;
    let bw = plot_w / n;
    let gap = if bw > 4.0 { 1.0 } else { 0.0 };
    // Each bucket's categories, stacked from the bottom.
    let mut rects = Vec::new();
    for (i, b) in s.buckets.iter().enumerate() {
        let x = LEFT + bw * i as f64;
        let mut y = TOP + plot_h;
        for (c, &count) in s.categories.iter().zip(&b.counts) {
            if count == 0 {
                continue;
            }
            let h = plot_h * count as f64 / top;
            y -= h;
            rects.push(html! {
                rect x=(num(x, 2)) y=(num(y, 2)) width=(num((bw - gap).max(0.5), 2)) height=(num(h, 2)) fill=(colour(c)) {
                    title { (Text(&b.start)) " " (Text(c)) ": " (thousands(count)) }
                }
            });
        }
    }
    // First, middle and last bucket labels.
    let mut labels = vec![0, s.buckets.len() - 1];
    if s.buckets.len() > 2 {
        labels.insert(1, s.buckets.len() / 2);
    }
    labels.dedup();
    html! {
        svg class="chart" id="chart-over-time" data-testid="chart-over-time" xmlns="http://www.w3.org/2000/svg"
            viewBox=(view_box) width=(WIDTH) height=(H) role="img" aria-label=(aria) {
            // Axis and grid.
            @for k in 0..=4 {
                @let v = top * f64::from(k) / 4.0;
                @let y = TOP + plot_h - plot_h * f64::from(k) / 4.0;
                line x1=(LEFT) x2=(WIDTH - RIGHT) y1=(num(y, 1)) y2=(num(y, 1)) stroke="#e4e4e4" {}
                text x=(LEFT - 6.0) y=(num(y + 4.0, 1)) text-anchor="end" font-size="11" fill="#555" {
                    (thousands(v.round() as u64))
                }
            }
            @for r in &rects {
                (r)
            }
            @for i in labels {
                @let anchor = if i == 0 && s.buckets.len() > 1 {
                    "start"
                } else if i + 1 == s.buckets.len() && i > 0 {
                    "end"
                } else {
                    "middle"
                };
                @let x = match anchor {
                    "start" => LEFT,
                    "end" => WIDTH - RIGHT,
                    _ => LEFT + bw * (i as f64 + 0.5),
                };
                text x=(num(x, 1)) y=(H - 10.0) text-anchor=(anchor) font-size="11" fill="#555" {
                    (Text(&s.buckets[i].start.replace('T', " ")))
                }
            }
        }
        ul.legend {
            @for c in &s.categories {
                li {
                    svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" {
                        rect width="12" height="12" fill=(colour(c)) {}
                    }
                    (Text(c))
                }
            }
        }
    }
}

/// One bar of [`bars`]: label, value, colour, tooltip.
pub(super) struct Bar<'a> {
    pub(super) label: String,
    pub(super) value: u64,
    pub(super) fill: &'a str,
    pub(super) tip: String,
}

/// A horizontal bar chart.
pub(super) fn bars(id: &str, testid: &str, aria: &str, rows: &[Bar<'_>]) -> Markup {
    const ROW: f64 = 24.0;
    const LABEL: f64 = 360.0;
    const COUNT: f64 = 90.0;
    let h = (ROW * rows.len().max(1) as f64 + 10.0).round();
    let max = rows.iter().map(|r| r.value).max().unwrap_or(0).max(1) as f64;
    let plot = WIDTH - LABEL - COUNT - 10.0;
    html! {
        svg class="chart" id=(id) data-testid=(testid) xmlns="http://www.w3.org/2000/svg"
            viewBox=(format!("0 0 {WIDTH} {h}")) width=(WIDTH) height=(h) role="img" aria-label=(Text(aria)) {
            @if rows.is_empty() {
                text x="10" y="22" fill="#555" { "None." }
            }
            @for (i, r) in rows.iter().enumerate() {
                @let y = 5.0 + ROW * i as f64;
                @let w = (plot * r.value as f64 / max).max(1.0);
                g {
                    title { (Text(&r.tip)) }
                    text x=(LABEL - 8.0) y=(num(y + 16.0, 1)) text-anchor="end" font-size="12" { (Text(&r.label)) }
                    rect x=(LABEL) y=(num(y + 3.0, 1)) width=(num(w, 1)) height=(num(ROW - 6.0, 1)) fill=(r.fill) {}
                    text x=(num(LABEL + w + 6.0, 1)) y=(num(y + 16.0, 1)) font-size="12" fill="#333" {
                        (thousands(r.value))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_scale() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(120), 200);
        assert_eq!(nice_max(u64::MAX), u64::MAX);
    }
}
