//! `cargo bench --bench driver --features bench-anchors [-- --quick]`: launch submission and round
//! trip, allocation and 1 GiB copies through our engine, beside cudarc 0.19 and the raw bindings in
//! a plain loop, in one run; prints a Markdown table.

use prism_gpu::bench::report::{markdown, Environment};
use prism_gpu::bench::{driver, Settings};

fn main() -> prism_gpu::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let settings = if quick { Settings::QUICK } else { Settings::FULL };
    let probe = prism_gpu::probe()?;
    let rows = driver::run(0, settings)?;
    let env = Environment {
        device: probe.devices.first().map_or_else(|| "no device".into(), |d| d.name.clone()),
        driver: format!("{}.{}", probe.driver_version / 1000, probe.driver_version % 1000 / 10),
        toolkit: "n/a (no kernels of ours)".into(),
        date: "see the run's log".into(),
        commit: option_env!("PRISM_COMMIT").unwrap_or("n/a").into(),
        command: format!(
            "cargo bench --bench driver --features bench-anchors{}",
            if quick { " -- --quick" } else { "" }
        ),
    };
    print!("{}", markdown(&env, &rows));
    Ok(())
}
