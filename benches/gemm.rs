//! `cargo bench --bench gemm --features bench-anchors [-- --quick] [-- MxNxK ...]`: our GEMM
//! kernels beside cuBLAS, every precision, in one run; prints a Markdown table.

use prism_gpu::bench::{gemm, Settings};

fn main() -> prism_gpu::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let settings = if args.iter().any(|a| a == "--quick") { Settings::QUICK } else { Settings::FULL };
    let picked: Vec<(usize, usize, usize)> = args
        .iter()
        .filter_map(|a| {
            let dims: Vec<usize> = a.split('x').map(str::parse).collect::<Result<_, _>>().ok()?;
            (dims.len() == 3).then(|| (dims[0], dims[1], dims[2]))
        })
        .collect();
    let shapes = if picked.is_empty() { gemm::SHAPES } else { &picked[..] };
    let rows = gemm::run(settings, shapes, gemm::PRECISIONS)?;
    println!("| gemm (row-major NN) | ours TFLOP/s | cuBLAS TFLOP/s | ratio |\n|---|---|---|---|");
    for row in &rows {
        let show = |v: Option<f64>, digits: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"));
        println!(
            "| {} | {:.1} | {} | {} |",
            row.name,
            row.ours,
            show(row.anchor_value, 1),
            show(row.ratio(), 3)
        );
    }
    Ok(())
}
