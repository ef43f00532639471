//! The `sweep` group (`prism-gpu bench --sweep`): GEMM on the shapes users issue, every precision
//! (f64 included), each against cuBLAS in the same run through [`gemm::run`] and
//! [`gemm::run_dgemm`] (so every product up to 4096 x 4096 outputs is also checked against
//! cuBLAS's), and a summary per precision: the lowest ratio with its shape, and the geometric mean
//! of the ratios.
//!
//! The shapes, fixed so that runs compare: decode-sized m (1-64) against transformer weights;
//! transformer projections (hidden 768-8192, ratios 1-4x, 512 and 4096 tokens); skinny, deep-k and
//! short-k products; odd and non-power-of-2 sizes.

use std::fmt::Write as _;

use super::{gemm, Row, Settings};
use prism_gpu::rng::SplitMix64;
use prism_gpu::Result;

/// The group's name in rows and reports.
pub const GROUP: &str = "sweep";

/// Every shape of the sweep, (m, n, k), without repeats.
pub fn shapes() -> Vec<(usize, usize, usize)> {
    let mut shapes = Vec::new();
    // Decode: a few tokens against the weights of a layer ((n, k) = out x in features).
    for m in [1, 2, 4, 8, 16, 32, 64] {
        for (n, k) in [(768, 768), (3072, 768), (4096, 4096), (12288, 4096), (4096, 12288)] {
            shapes.push((m, n, k));
        }
    }
    // Transformer projections: tokens x hidden, to the same hidden, to 4x (up) and back (down).
    for tokens in [512, 4096] {
        for hidden in [768, 1024, 2048, 4096, 8192] {
            shapes.extend([
                (tokens, hidden, hidden),
                (tokens, 4 * hidden, hidden),
                (tokens, hidden, 4 * hidden),
            ]);
        }
    }
    // Skinny and deep-k (one side small, k long), then wide with a short k.
    shapes.extend([
        (64, 64, 131_072),
        (128, 128, 16_384),
        (256, 256, 65_536),
        (64, 4096, 4096),
        (4096, 64, 4096),
        (128, 8192, 8192),
        (8192, 128, 8192),
        (16, 16_384, 16_384),
        (8192, 8192, 64),
        (4096, 4096, 128),
        (8192, 8192, 256),
        (16_384, 4096, 512),
    ]);
    // Sizes that are not multiples of a tile or of a vector width.
    shapes.extend([
        (600, 600, 600),
        (700, 700, 700),
        (1000, 1000, 1000),
        (1001, 1003, 1005),
        (1536, 1536, 1536),
        (2001, 2003, 2005),
        (3000, 5000, 2000),
        (3072, 3072, 3072),
        (4097, 4095, 4093),
        (512, 768, 3072),
    ]);
    // And twenty more odd ones, from a fixed seed: every side odd, 17 to 3000.
    let mut rng = SplitMix64::new(0x005e_ed0f_5ba9_e5a7);
    for _ in 0..20 {
        let mut side = || 17 + 2 * (rng.next_u64() % 1492) as usize;
        shapes.push((side(), side(), side()));
    }
    let mut seen = std::collections::HashSet::new();
    shapes.retain(|s| seen.insert(*s));
    shapes
}

/// Times every precision at every shape of the sweep, ours beside cuBLAS.
pub fn run(settings: Settings) -> Result<Vec<Row>> {
    let shapes = shapes();
    let mut rows = gemm::run(settings, &shapes, gemm::PRECISIONS, gemm::Table::Sweep)?;
    rows.extend(gemm::run_dgemm(settings, &shapes, gemm::Table::Sweep)?);
    Ok(rows)
}

/// One precision's summary over the sweep's rows that have a cuBLAS figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The precision's label (`sgemm`, `tf32`, `bf16`, `f16`, `dgemm`).
    pub precision: String,
    /// Shapes with a ratio.
    pub shapes: usize,
    /// The lowest ratio (ours / cuBLAS) and the row's name.
    pub min: (f64, String),
    /// The geometric mean of the ratios.
    pub geomean: f64,
}

/// The summary of every precision among the `sweep` rows, in the order they first appear.
pub fn summarize(rows: &[Row]) -> Vec<Summary> {
    let mut out: Vec<(String, Vec<(f64, &str)>)> = Vec::new();
    for row in rows.iter().filter(|r| r.group == GROUP) {
        let Some(ratio) = row.ratio() else { continue };
        let precision = row.name.split(' ').next().unwrap_or_default();
        match out.iter_mut().find(|(p, _)| p == precision) {
            Some((_, ratios)) => ratios.push((ratio, &row.name)),
            None => out.push((precision.to_string(), vec![(ratio, &row.name)])),
        }
    }
    out.into_iter()
        .map(|(precision, ratios)| {
            let (min, name) =
                ratios.iter().copied().fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a });
            let geomean = (ratios.iter().map(|(r, _)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            Summary { precision, shapes: ratios.len(), min: (min, name.to_string()), geomean }
        })
        .collect()
}

/// The summary as a Markdown section, or nothing when no sweep ran.
pub fn markdown(rows: &[Row]) -> String {
    let summaries = summarize(rows);
    let mut out = String::new();
    if summaries.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n### sweep summary (ours / cuBLAS)\n");
    let _ = writeln!(out, "| precision | shapes | minimum | at | geometric mean |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for s in summaries {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2}x | {} | {:.2}x |",
            s.precision, s.shapes, s.min.0, s.min.1, s.geomean
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_covers_what_the_issue_names() {
        let shapes = shapes();
        assert!(shapes.len() >= 100, "{} shapes", shapes.len());
        assert!(shapes.iter().all(|&(m, n, k)| m > 0 && n > 0 && k > 0));
        let distinct: std::collections::HashSet<_> = shapes.iter().collect();
        assert_eq!(distinct.len(), shapes.len(), "repeated shapes");
        for m in [1, 2, 4, 8, 16, 32, 64] {
            assert!(shapes.iter().any(|s| s.0 == m && s.2 >= 4096), "decode m = {m}");
        }
        for hidden in [768, 8192] {
            assert!(shapes.contains(&(4096, 4 * hidden, hidden)), "up projection of {hidden}");
        }
        assert!(shapes.iter().filter(|s| s.0 % 2 == 1 && s.1 % 2 == 1 && s.2 % 2 == 1).count() >= 20);
        assert!(shapes.iter().any(|s| s.2 >= 16 * s.0.max(s.1)), "deep k");
        assert_eq!(shapes, super::shapes(), "the sweep must be the same every run");
    }

    fn row(name: &str, ours: f64, cublas: Option<f64>) -> Row {
        Row {
            group: GROUP.into(),
            name: name.into(),
            series: None,
            ours,
            anchor: "cuBLAS".into(),
            anchor_value: cublas,
            unit: "TFLOP/s".into(),
            higher_is_better: true,
            kernel: None,
        }
    }

    #[test]
    fn the_summary_takes_the_minimum_and_the_geometric_mean_per_precision() {
        let rows = vec![
            row("bf16 1x768x768", 2.0, Some(4.0)),   // 0.5
            row("sgemm 8x8x8", 1.0, Some(1.0)),      // 1
            row("bf16 512x512x512", 8.0, Some(4.0)), // 2
            row("bf16 9x9x9", 3.0, None),            // no cuBLAS figure: left out
            row("sgemm 16x16x16", 4.0, Some(1.0)),   // 4
            Row { group: "gemm".into(), ..row("bf16 2x2x2", 1.0, Some(100.0)) }, // not the sweep
        ];
        let s = summarize(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].precision.as_str(), s[0].shapes), ("bf16", 2));
        assert_eq!(s[0].min, (0.5, "bf16 1x768x768".to_string()));
        assert!((s[0].geomean - 1.0).abs() < 1e-12, "sqrt(0.5 * 2) = 1, got {}", s[0].geomean);
        assert_eq!((s[1].precision.as_str(), s[1].shapes, s[1].min.0), ("sgemm", 2, 1.0));
        assert!((s[1].geomean - 2.0).abs() < 1e-12, "sqrt(1 * 4) = 2, got {}", s[1].geomean);
        let text = markdown(&rows);
        assert!(text.contains("| bf16 | 2 | 0.50x | bf16 1x768x768 | 1.00x |"), "{text}");
        assert!(markdown(&rows[5..]).is_empty());
    }
}
