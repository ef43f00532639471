//! Benchmark output: a Markdown table and a JSON document, both carrying where and when the figures
//! were measured.

use std::fmt::Write as _;

use super::Row;

/// Where and when a benchmark run happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The device's name, or a note that the CPU fallback was timed.
    pub device: String,
    /// The driver's CUDA version (`13.0`), or why none.
    pub driver: String,
    /// The CUDA toolkit the kernels were built with.
    pub toolkit: String,
    /// UTC date and time of the run.
    pub date: String,
    /// The source commit the binary was built from.
    pub commit: String,
    /// The command that made these figures.
    pub command: String,
}

/// The rows as Markdown: a header naming the environment, then one table per group.
pub fn markdown(env: &Environment, rows: &[Row]) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "Device: {} | driver: CUDA {} | kernels built with: {}",
        env.device, env.driver, env.toolkit
    );
    let _ = writeln!(w, "Date: {} | commit: {} | command: `{}`", env.date, env.commit, env.command);
    for group in groups(rows) {
        // A `kernel` column where a row of the group names the kernel that ran (GEMM groups).
        let kernels = rows.iter().any(|r| r.group == group && r.kernel.is_some());
        let _ = writeln!(w, "\n### {group}\n");
        let (head, rule) = if kernels { (" kernel |", "---|") } else { ("", "") };
        let _ = writeln!(
            w,
            "| benchmark | ours | anchor | anchor figure | unit | ratio (>1: ours better) |{head}"
        );
        let _ = writeln!(w, "|---|---|---|---|---|---|{rule}");
        for r in rows.iter().filter(|r| r.group == group) {
            let anchor = r.anchor_value.map_or_else(|| "n/a".to_string(), figure);
            let ratio = r.ratio().map_or_else(|| "-".to_string(), |x| format!("{x:.2}x"));
            let kernel =
                if kernels { format!(" {} |", r.kernel.as_deref().unwrap_or("-")) } else { String::new() };
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} | {} |{kernel}",
                r.name,
                figure(r.ours),
                r.anchor,
                anchor,
                r.unit,
                ratio
            );
        }
    }
    out.push_str(&super::sweep::markdown(rows));
    out
}

/// The rows and environment as a JSON document.
pub fn json(env: &Environment, rows: &[Row]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "group": r.group,
                "name": r.name,
                "series": r.series.as_ref().map(|(s, _)| s),
                "size": r.series.as_ref().map(|(_, x)| x),
                "ours": r.ours,
                "anchor": r.anchor,
                "anchor_value": r.anchor_value,
                "unit": r.unit,
                "higher_is_better": r.higher_is_better,
                "ratio": r.ratio(),
                "kernel": r.kernel,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "device": env.device,
        "driver": env.driver,
        "toolkit": env.toolkit,
        "date": env.date,
        "commit": env.commit,
        "command": env.command,
        "rows": rows,
    });
    serde_json::to_string_pretty(&doc).expect("JSON values serialise")
}

/// The environment and rows of a document written by [`json`] (to redraw its plots).
pub fn from_json(text: &str) -> Result<(Environment, Vec<Row>), String> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let field = |v: &serde_json::Value, key: &str| -> Result<String, String> {
        v[key].as_str().map(str::to_string).ok_or_else(|| format!("`{key}` missing or not text"))
    };
    let number = |v: &serde_json::Value, key: &str| v[key].as_f64();
    let env = Environment {
        device: field(&doc, "device")?,
        driver: field(&doc, "driver")?,
        toolkit: field(&doc, "toolkit")?,
        date: field(&doc, "date")?,
        commit: field(&doc, "commit")?,
        command: field(&doc, "command")?,
    };
    let rows = doc["rows"]
        .as_array()
        .ok_or("`rows` missing")?
        .iter()
        .map(|r| {
            Ok(Row {
                group: field(r, "group")?,
                name: field(r, "name")?,
                series: match (r["series"].as_str(), number(r, "size")) {
                    (Some(s), Some(x)) => Some((s.to_string(), x)),
                    _ => None,
                },
                ours: number(r, "ours").ok_or("`ours` missing")?,
                anchor: field(r, "anchor")?,
                anchor_value: number(r, "anchor_value"),
                unit: field(r, "unit")?,
                higher_is_better: r["higher_is_better"].as_bool().ok_or("`higher_is_better` missing")?,
                kernel: r["kernel"].as_str().map(str::to_string),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((env, rows))
}

/// The groups in order of first appearance.
pub(crate) fn groups(rows: &[Row]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if !seen.contains(&r.group.as_str()) {
            seen.push(&r.group);
        }
    }
    seen
}

/// A figure with about four significant digits.
fn figure(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment {
            device: "Test GPU".into(),
            driver: "13.0".into(),
            toolkit: "nvcc 13.0".into(),
            date: "2026-11-22 06:00 UTC".into(),
            commit: "abc1234".into(),
            command: "prism-gpu bench".into(),
        }
    }

    fn row(group: &str, name: &str, ours: f64, anchor: Option<f64>) -> Row {
        Row {
            group: group.into(),
            name: name.into(),
            series: Some(("bf16".into(), 1024.0)),
            ours,
            anchor: "cuBLAS".into(),
            anchor_value: anchor,
            unit: "TFLOP/s".into(),
            higher_is_better: true,
            kernel: None,
        }
    }

    #[test]
    fn markdown_has_one_table_per_group_with_ratios() {
        let rows = [row("gemm", "bf16 1024", 600.0, Some(500.0)), row("kernels", "relu", 2.5, None)];
        let md = markdown(&env(), &rows);
        assert!(md.contains("Device: Test GPU") && md.contains("commit: abc1234"), "{md}");
        assert!(md.contains("### gemm") && md.contains("### kernels"));
        assert!(md.contains("| bf16 1024 | 600 | cuBLAS | 500 | TFLOP/s | 1.20x |"), "{md}");
        assert!(md.contains("| relu | 2.50 | cuBLAS | n/a | TFLOP/s | - |"), "{md}");
    }

    #[test]
    fn json_carries_every_figure() {
        let doc: serde_json::Value =
            serde_json::from_str(&json(&env(), &[row("gemm", "bf16 1024", 600.0, Some(500.0))])).unwrap();
        assert_eq!(doc["device"], "Test GPU");
        assert_eq!(doc["rows"][0]["ours"], 600.0);
        assert_eq!(doc["rows"][0]["ratio"], 1.2);
        assert_eq!(doc["rows"][0]["size"], 1024.0);
    }

    #[test]
    fn gemm_rows_name_their_kernel_in_a_column_of_their_own() {
        let gemm = Row {
            kernel: Some("sm90 bn=64 a=inplace b=inplace".into()),
            ..row("gemm", "bf16 1024", 600.0, Some(500.0))
        };
        let md = markdown(&env(), &[gemm, row("kernels", "relu", 2.5, None)]);
        assert!(md.contains("| ratio (>1: ours better) | kernel |"), "{md}");
        assert!(
            md.contains(
                "| bf16 1024 | 600 | cuBLAS | 500 | TFLOP/s | 1.20x | sm90 bn=64 a=inplace b=inplace |"
            ),
            "{md}"
        );
        assert!(md.contains("| relu | 2.50 | cuBLAS | n/a | TFLOP/s | - |\n"), "{md}");
    }

    #[test]
    fn json_reads_back_what_it_wrote() {
        let gemm = Row { kernel: Some("simt64".into()), ..row("gemm", "bf16 1024", 600.0, Some(500.0)) };
        let rows = vec![gemm, row("kernels", "relu", 2.5, None)];
        let (env_back, rows_back) = from_json(&json(&env(), &rows)).unwrap();
        assert_eq!(env_back, env());
        assert_eq!(rows_back, rows);
        assert!(from_json("{}").is_err());
    }
}
