//! Tuning on first use (`PRISM_AUTOTUNE=1`) on a GPU: GEMMs of classes the checked-in table does
//! not reach are tuned on their first call, answer as the f64 reference says (C's old values
//! scaled by beta, nothing outside the m x n blocks written: the tuning runs on a scratch C), and
//! leave one entry per class in the on-disk table, which a second call and a shape within reach
//! reuse instead of tuning again. One test: the configuration is read once per process.

mod dgemm_common;
mod gemm_common;

use half::{bf16, f16};
use prism_gpu::raw::kernels::gemm::table::{Table, Tuned};
use prism_gpu::raw::kernels::gemm::tuning::{self, Class};
use prism_gpu::{Gemm, Precision, ProductionGpuRuntime};

/// The table files in `dir`, parsed.
fn tables(dir: &std::path::Path) -> Vec<Table> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|p| Table::parse(&std::fs::read_to_string(&p).unwrap()).unwrap())
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn untuned_classes_are_tuned_once_kept_on_disk_and_answer_right() {
    let dir = std::env::temp_dir().join(format!("prism-autotune-gpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Before the first GEMM of the process, which reads the configuration.
    std::env::set_var("PRISM_AUTOTUNE", "1");
    std::env::set_var("PRISM_AUTOTUNE_DIR", &dir);
    let rt = ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU");
    let device = tuning::device(rt.gpu().unwrap().kernels()).unwrap();
    let checked_in = prism_gpu::raw::kernels::gemm::table::for_device(&device);
    let mut rng = dgemm_common::fresh_rng("autotune");

    use gemm_common::Spec;
    let specs = [
        Spec::new(333, 77, 555).scaled(0.5, -0.75),
        Spec::new(333, 77, 555).precision(Precision::Tf32).trans(true, false),
        Spec::new(61, 1400, 700).precision(Precision::Bf16),
        Spec::new(45, 45, 300).scaled(1.0, 0.5).batch(3, 5),
    ];
    let class = |s: &Spec| {
        let g = Gemm::new(s.m, s.n, s.k).transposed(s.trans_a, s.trans_b);
        let g = if s.batch > 1 { g.batched(s.batch, 0, 0, 0) } else { g };
        Class::of(&g, Tuned::Gemm(s.precision))
    };
    for spec in &specs {
        assert!(checked_in.nearest(&class(spec)).is_none(), "{spec:?} is in the checked-in table's reach");
    }
    let run = |spec: &Spec, rng: &mut prism_gpu::rng::SplitMix64| match spec.precision {
        Precision::Bf16 => {
            gemm_common::run_typed::<bf16, bf16>(&rt, spec, rng);
            gemm_common::run_typed::<bf16, f32>(&rt, spec, rng);
        }
        _ => gemm_common::run_f32(&rt, spec, rng),
    };
    for spec in &specs {
        run(spec, &mut rng);
    }
    let f16_spec = Spec::new(61, 1400, 700).precision(Precision::F16);
    gemm_common::run_typed::<f16, f16>(&rt, &f16_spec, &mut rng);

    let tuned = tables(&dir);
    assert_eq!(tuned.len(), 1, "one table file for the one device in {}", dir.display());
    let entries = &tuned[0].entries;
    for spec in specs.iter().chain([&f16_spec]) {
        let c = class(spec);
        let kept = entries.iter().filter(|e| e.class == c).count();
        assert_eq!(kept, 1, "{spec:?}: {kept} entries in {entries:?}");
    }
    assert_eq!(entries.len(), specs.len() + 1, "{entries:?}");

    // Again, and shapes within reach of the kept classes: answered from the table, no new entry.
    for spec in &specs {
        run(spec, &mut rng);
        run(&Spec { m: spec.m + 5, k: spec.k + 20, ..*spec }, &mut rng);
    }
    assert_eq!(tables(&dir)[0].entries.len(), specs.len() + 1);

    // f64: tuned too.
    let case =
        dgemm_common::case(&mut rng, (333, 77, 555), (false, true), 2, 1, (false, false), (0.75, -0.5));
    assert!(checked_in.nearest(&Class::of(&case.g.layout, Tuned::F64)).is_none());
    dgemm_common::check(&rt, &case, 1e-12);
    let entries = &tables(&dir)[0].entries;
    assert_eq!(entries.iter().filter(|e| e.class == Class::of(&case.g.layout, Tuned::F64)).count(), 1);
    println!("tuned on first use: {entries:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
