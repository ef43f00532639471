//! SVG plots of benchmark rows (plotters): series against size as lines with the anchor dashed,
//! other rows as paired bars of ours and the anchor.

use plotters::prelude::*;

use super::report::groups;
use super::Row;

const OURS: RGBColor = RGBColor(31, 119, 180);
const ANCHOR: RGBColor = RGBColor(255, 127, 14);
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// One SVG document per (group, unit): `(file stem, svg text)`.
pub fn svgs(rows: &[Row]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for group in groups(rows) {
        let mut units: Vec<&str> = Vec::new();
        for r in rows.iter().filter(|r| r.group == group) {
            if !units.contains(&r.unit.as_str()) {
                units.push(&r.unit);
            }
        }
        for unit in units {
            let selected: Vec<&Row> = rows.iter().filter(|r| r.group == group && r.unit == unit).collect();
            let stem = file_stem(&format!("{group}-{}", unit.replace('/', "-per-")));
            let title = format!("{group}: {unit}");
            // Series (sizes of one kind) draw best as lines; rows outside a series stay in the
            // tables. A group with no series gets bars.
            let series: Vec<&Row> = selected.iter().copied().filter(|r| r.series.is_some()).collect();
            let svg =
                if series.is_empty() { bars(&title, unit, &selected) } else { lines(&title, unit, &series) }
                    .map_err(|e| format!("plotting {stem}: {e}"))?;
            out.push((stem, svg));
        }
    }
    Ok(out)
}

/// `name` in lower case with every character but letters, digits, `.` and `_` replaced by `-`, so
/// it is a portable file name.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' { c.to_ascii_lowercase() } else { '-' })
        .collect()
}

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Lines of ours (solid) and the anchor (dashed) per series against log2(size).
fn lines(title: &str, unit: &str, rows: &[&Row]) -> DrawResult<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let xs = rows.iter().filter_map(|r| r.series.as_ref().map(|(_, x)| x.max(1.0).log2()));
        let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let y1 = rows.iter().flat_map(|r| [Some(r.ours), r.anchor_value]).flatten().fold(0.0, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0 - 0.25)..(x1 + 0.25), 0.0..y1.max(1e-9))?;
        chart
            .configure_mesh()
            .x_desc("size (log2)")
            .y_desc(unit)
            .x_label_formatter(&|x| format!("{:.0}", 2f64.powf(*x)))
            .draw()?;
        let mut series_names: Vec<&str> = Vec::new();
        for r in rows {
            let name = r.series.as_ref().map_or("", |(s, _)| s.as_str());
            if !series_names.contains(&name) {
                series_names.push(name);
            }
        }
        for (i, name) in series_names.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut points: Vec<(f64, f64, Option<f64>)> = rows
                .iter()
                .filter_map(|r| match &r.series {
                    Some((s, x)) if s == name => Some((x.max(1.0).log2(), r.ours, r.anchor_value)),
                    _ => None,
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(
                    LineSeries::new(points.iter().map(|p| (p.0, p.1)), color.stroke_width(2)).point_size(3),
                )?
                .label(format!("{name} (ours)"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
            let anchor: Vec<(f64, f64)> = points.iter().filter_map(|p| p.2.map(|a| (p.0, a))).collect();
            if !anchor.is_empty() {
                let label =
                    rows.iter().find(|r| r.anchor_value.is_some()).map_or("anchor", |r| r.anchor.as_str());
                chart
                    .draw_series(DashedLineSeries::new(anchor, 6, 4, color.stroke_width(1)))?
                    .label(format!("{name} ({label})"))
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(1)));
            }
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Horizontal bars, two per row: ours, then the anchor.
fn bars(title: &str, unit: &str, rows: &[&Row]) -> DrawResult<String> {
    let mut svg = String::new();
    {
        // Two slots per row (ours, anchor) when anything has an anchor, else one.
        let per_row = if rows.iter().any(|r| r.anchor_value.is_some()) { 2 } else { 1 };
        let slots = per_row * rows.len();
        let root = SVGBackend::with_string(&mut svg, (1000, 100 + 26 * slots as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let top =
            rows.iter().flat_map(|r| [Some(r.ours), r.anchor_value]).flatten().fold(0.0, f64::max) * 1.15;
        let anchor_label =
            rows.iter().find(|r| r.anchor_value.is_some()).map_or("anchor", |r| r.anchor.as_str());
        let label = |slot: usize| {
            let r = rows[slot / 2];
            if slot % 2 == 0 {
                format!("{} (ours)", r.name)
            } else {
                format!("{} ({})", r.name, r.anchor)
            }
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(420)
            .build_cartesian_2d(0.0..top.max(1e-9), (0..slots).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(unit)
            .y_labels(slots)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if *i < slots => label(*i),
                _ => String::new(),
            })
            .draw()?;
        let bar = |slot: usize, value: f64, color: RGBColor| {
            Rectangle::new(
                [(0.0, SegmentValue::Exact(slot)), (value, SegmentValue::Exact(slot + 1))],
                color.filled(),
            )
        };
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| bar(per_row * i, r.ours, OURS)))?
            .label("ours")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], OURS.filled()));
        chart
            .draw_series(
                rows.iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.anchor_value.map(|a| bar(per_row * i + 1, a, ANCHOR))),
            )?
            .label(anchor_label)
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], ANCHOR.filled()));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: &str, name: &str, series: Option<(&str, f64)>, unit: &str, ours: f64) -> Row {
        Row {
            group: group.into(),
            name: name.into(),
            series: series.map(|(s, x)| (s.to_string(), x)),
            ours,
            anchor: "anchor".into(),
            anchor_value: Some(ours * 0.9),
            unit: unit.into(),
            higher_is_better: true,
            kernel: None,
        }
    }

    #[test]
    fn one_plot_per_group_and_unit_with_every_row_drawn() {
        let rows = [
            row("gemm", "bf16 1024", Some(("bf16", 1024.0)), "TFLOP/s", 500.0),
            row("gemm", "bf16 4096", Some(("bf16", 4096.0)), "TFLOP/s", 700.0),
            row("gemm", "f32 4096", Some(("f32", 4096.0)), "TFLOP/s", 45.0),
            row("launch", "submit", None, "us", 4.0),
            row("launch", "copy up", None, "GB/s", 5.0),
        ];
        let plots = svgs(&rows).unwrap();
        let stems: Vec<&str> = plots.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(stems, ["gemm-tflop-per-s", "launch-us", "launch-gb-per-s"]);
        for (_, svg) in &plots {
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        }
        assert!(plots[0].1.contains("bf16 (ours)") && plots[0].1.contains("f32 (anchor)"));
        assert!(plots[1].1.contains("submit"));
        assert_eq!(file_stem("cpu fallback-GB-per-s"), "cpu-fallback-gb-per-s");
    }
}
