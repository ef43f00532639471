//! GEMM on a GPU through our own kernels (every dispatch path: small, SIMT, mma.sync, sm_90a TMA +
//! wgmma, TF32 with staged transposes), against an f64 reference on fresh random inputs. Tests
//! named `small_*` are quick enough for compute-sanitizer; `large_*` are the big shapes.

mod gemm_common;

use gemm_common::*;
use half::{bf16, f16};
use prism_gpu::driver::{CudaView, LaunchConfig, PushKernelArg};
use prism_gpu::raw::kernels::gemm::tuning::Plan;
use prism_gpu::raw::kernels::gemm::Element;
use prism_gpu::rng::SplitMix64;
use prism_gpu::runtime::GpuOps;
use prism_gpu::{Error, Gemm, Precision, ProductionGpuRuntime};

fn gpu() -> ProductionGpuRuntime {
    ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU")
}

/// m, n, k that are multiples of 8 but not of the tiles: TMA-ready in every layout.
const ALIGNED_ODD: (usize, usize, usize) = (136, 200, 264);

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_odd_shapes_every_precision_transpose_and_beta() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (m, n, k) in ODD_SHAPES.into_iter().chain([ALIGNED_ODD]) {
        for (ta, tb) in TRANSPOSES {
            for precision in PRECISIONS {
                for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
                    let spec = Spec::new(m, n, k).trans(ta, tb).scaled(alpha, beta).precision(precision);
                    run_f32(&rt, &spec, &mut rng);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_shallow_k_on_the_tensor_core_kernels() {
    // k below, at and just past one K block (32 for TF32, 64 for 16-bit), with 16-byte pitches so the
    // sm_90 kernels (TF32 through registers in nn / tt) read them through TMA's zero fill.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (precision, depths) in
        [(Precision::Tf32, [4, 20, 36]), (Precision::Bf16, [8, 24, 72]), (Precision::F16, [8, 40, 72])]
    {
        for k in depths {
            for (ta, tb) in TRANSPOSES {
                let spec = Spec::new(304, 400, k).trans(ta, tb).precision(precision).scaled(0.75, -0.5);
                run_f32(&rt, &spec, &mut rng);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_unaligned_leading_dims_and_batches() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in PRECISIONS {
        for (ta, tb) in TRANSPOSES {
            // Unaligned: the mma.sync element-wise path, the SIMT scalar path.
            let odd = Spec::new(131, 67, 205).trans(ta, tb).padded([3, 5, 1]).precision(precision);
            run_f32(&rt, &odd.scaled(0.75, -0.5), &mut rng);
            run_f32(&rt, &odd.batch(3, 7), &mut rng);
            // Aligned pitches and gaps: the TMA kernels, batched through gridDim.z.
            let (m, n, k) = ALIGNED_ODD;
            let aligned =
                Spec::new(m, n, k).trans(ta, tb).padded([8, 16, 1]).batch(3, 8).precision(precision);
            run_f32(&rt, &aligned, &mut rng);
            run_f32(&rt, &aligned.scaled(-1.5, 0.25), &mut rng);
            // One operand broadcast to every batch entry (batch stride 0): TMA reads it in place.
            run_f32(&rt, &aligned.broadcast(false, true), &mut rng);
            run_f32(&rt, &aligned.broadcast(true, false).scaled(0.5, 1.0), &mut rng);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_with_b_broadcast_and_no_gaps_run_as_one_product() {
    // A's entries one after another (no gap), B broadcast, C packed: the batch runs as one product
    // of batch x m rows (`Gemm::stacked`), whose tiles hold rows of two entries where m is off the
    // tile (m = 37). Every precision, B as stored and transposed, scaled with beta.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in PRECISIONS {
        for tb in [false, true] {
            for (m, n, k) in [(37, 131, 67), (256, 264, 320)] {
                let spec = Spec::new(m, n, k).trans(false, tb).batch(5, 0).broadcast(false, true);
                run_f32(&rt, &spec.precision(precision), &mut rng);
                run_f32(&rt, &spec.precision(precision).scaled(0.75, -0.5), &mut rng);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_k_exact_fp32_on_wide_tiles() {
    // 16 x 8 tiles of 128 x 256 (one wave on an H100): the large-tile SIMT kernel, with edges in m,
    // n and k, in every layout: 16-byte copies (sides and pitches multiples of 4) and 4-byte ones
    // (odd sides or pitches); a short k keeps it quick under compute-sanitizer.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (ta, tb) in TRANSPOSES {
        let whole_groups = Spec::new(1924, 2000, 12).trans(ta, tb);
        run_f32(&rt, &whole_groups.scaled(0.75, -0.5), &mut rng);
        run_f32(&rt, &whole_groups.padded([4, 8, 1]), &mut rng);
        let odd = Spec::new(1921, 2000, 13).trans(ta, tb);
        run_f32(&rt, &odd.scaled(0.75, -0.5), &mut rng);
        run_f32(&rt, &odd.padded([3, 5, 1]), &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_skinny_deep_split_k() {
    // 3 tiles and k = 3001 on an H100: exact fp32 in sixteen slices of k (fifteen of 192, the last
    // 121), TF32 and 16-bit (in and out, or f32 out) on mma.sync in eleven (ten of 288, the last
    // 121), every layout, with and without scaling and padding; and k = 1100, exact fp32 in seven
    // slices (6 x 160 + 140), TF32 in four (3 x 288 + 236; on an H100 TF32 splits only there, in
    // tn: its sm_90 kernels take the other layouts without a copy).
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in [Precision::F32, Precision::Tf32] {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(40, 300, 3001).trans(ta, tb).precision(precision);
            run_f32(&rt, &spec, &mut rng);
            run_f32(&rt, &spec.scaled(0.75, -0.5).padded([3, 5, 2]), &mut rng);
        }
        for ta in [false, true] {
            let spec = Spec::new(70, 200, 1100).trans(ta, false).precision(precision);
            run_f32(&rt, &spec.scaled(-2.0, 0.5), &mut rng);
        }
    }
    for (ta, tb) in TRANSPOSES {
        let spec = Spec::new(40, 300, 3001).trans(ta, tb);
        run_sixteen_bit(&rt, &spec, &mut rng);
        run_sixteen_bit(&rt, &spec.scaled(0.75, -0.5).padded([3, 5, 2]), &mut rng);
    }
    // At most 4096 outputs but 4096 deep or more: split (39 slices of 128 on the CUDA cores, 19 of
    // 256 on mma.sync) instead of the small kernel; 51 x 69 is an odd count of outputs (the
    // reduction's path for partial products that are not 16-byte aligned).
    for (ta, tb) in TRANSPOSES {
        for precision in PRECISIONS {
            for (m, n) in [(50, 70), (51, 69)] {
                let spec = Spec::new(m, n, 5000).trans(ta, tb).precision(precision);
                run_f32(&rt, &spec.scaled(0.75, -0.5), &mut rng);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sm90_split_k_every_layout_with_a_short_last_slice() {
    // The sm_90 kernels' partial products over 2-8 slices of k at each tile width (32-aligned
    // depths: k = 4136 in 3 slices is 2 x 1408 + 1320, in 8 it is 7 x 544 + 328, so the last one
    // runs by its own launch), each layout (TF32 `nn` through registers; `tn` is not offered),
    // sides off the tiles, scaled, padded pitches that TMA still reads; 16-bit to 16-bit and to
    // f32 outputs. Only sm_90 devices offer them.
    use prism_gpu::raw::kernels::gemm::tuning::{Kernel, SplitOn};
    let sm90_split = |p: &Plan| matches!(p.kernel, Kernel::SplitK { splits: ..=8, on: SplitOn::Sm90 { .. } });
    sm90_candidates_in_every_layout(&[(56, 1000, 4136), (200, 72, 2056)], sm90_split, "sm_90 split-K");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sm90_split_k_reads_one_copy_of_an_operand_tma_cannot_read() {
    // Split-K on the sm_90 kernels where A, B or both have pitches TMA cannot read (odd k, or a
    // pitch padded by one element): each such operand is copied once to a 128-byte pitch, and
    // every slice (the last, shorter one by its own launch) reads the copy. Every layout, scaled,
    // TF32 and 16-bit to 16-bit and to f32 outputs. Only sm_90 devices offer them.
    use prism_gpu::raw::kernels::gemm::plan::{Partials, SplitK};
    use prism_gpu::raw::kernels::gemm::tuning::{Feed, Launch};
    let copied_split = |p: &Plan| match p.launch {
        Launch::SplitK(SplitK { partials: Partials::Sm90(s), parts, .. }) => {
            parts <= 8 && s.feeds.contains(&Feed::Repitch)
        }
        _ => false,
    };
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let mut runs = 0;
    for ((m, n, k), pad) in
        [((56, 1000, 2059), [0, 0, 0]), ((200, 77, 1033), [1, 0, 2]), ((72, 136, 1024), [1, 1, 0])]
    {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(m, n, k).trans(ta, tb).padded(pad).scaled(0.75, -0.5);
            runs +=
                candidates_where::<f32, f32>(&rt, &spec.precision(Precision::Tf32), &mut rng, copied_split);
            runs +=
                candidates_where::<bf16, bf16>(&rt, &spec.precision(Precision::Bf16), &mut rng, copied_split);
            runs +=
                candidates_where::<f16, f32>(&rt, &spec.precision(Precision::F16), &mut rng, copied_split);
        }
    }
    let sm90 = prism_gpu::raw::kernels::gemm::tuning::device(rt.gpu().unwrap().kernels()).unwrap().sm90;
    assert_eq!(runs > 0, sm90, "{runs} copied sm_90 split-K runs on a device with sm90 = {sm90}");
    println!("{runs} copied sm_90 split-K runs checked");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sm90_sixteen_bit_stores_at_every_alignment_of_c() {
    // The sm_90a kernels' stores of 16-bit C, which take vector or element-wise paths by C's
    // alignment: C's pitch padded to each (n = 300 columns of 2 bytes: 8-byte rows; 304: 16;
    // 302: 4; 301: 2), rows and columns off the tiles, with and without beta, at most 64 rows
    // (the `_short` entries) and more, every tile width.
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let sm90 = |p: &Plan| matches!(p.kernel, Kernel::Sm90 { .. });
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let mut runs = 0;
    for m in [40, 200] {
        for pad_c in [0, 4, 2, 1] {
            for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
                let spec = Spec::new(m, 300, 72).padded([0, 4, pad_c]).scaled(alpha, beta);
                runs += candidates_where::<bf16, bf16>(&rt, &spec.precision(Precision::Bf16), &mut rng, sm90);
                runs += candidates_where::<f16, f16>(&rt, &spec.precision(Precision::F16), &mut rng, sm90);
            }
        }
    }
    let on_sm90 = prism_gpu::raw::kernels::gemm::tuning::device(rt.gpu().unwrap().kernels()).unwrap().sm90;
    assert_eq!(runs > 0, on_sm90, "{runs} sm_90a runs on a device with sm90 = {on_sm90}");
    println!("{runs} sm_90a runs checked");
}

/// The candidates `keep` selects at each of `shapes`, in every layout, plain and scaled with padded
/// pitches that TMA still reads, TF32 and 16-bit to 16-bit and to f32, against the f64 reference;
/// they must run exactly on sm_90 devices (`what` names them in the messages).
fn sm90_candidates_in_every_layout(
    shapes: &[(usize, usize, usize)],
    keep: impl Fn(&Plan) -> bool + Copy,
    what: &str,
) {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let mut runs = 0;
    for &(m, n, k) in shapes {
        for (ta, tb) in TRANSPOSES {
            for spec in [Spec::new(m, n, k), Spec::new(m, n, k).scaled(0.75, -0.5).padded([8, 16, 8])] {
                let spec = spec.trans(ta, tb);
                runs += candidates_where::<f32, f32>(&rt, &spec.precision(Precision::Tf32), &mut rng, keep);
                let (bf, hf) = (spec.precision(Precision::Bf16), spec.precision(Precision::F16));
                runs += candidates_where::<bf16, bf16>(&rt, &bf, &mut rng, keep);
                runs += candidates_where::<f16, f32>(&rt, &hf, &mut rng, keep);
            }
        }
    }
    let sm90 = prism_gpu::raw::kernels::gemm::tuning::device(rt.gpu().unwrap().kernels()).unwrap().sm90;
    assert_eq!(runs > 0, sm90, "{runs} {what} runs on a device with sm90 = {sm90}");
    println!("{runs} {what} runs checked");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_skinny_short_sides_every_layout() {
    // C's short side 1-16 as m and as n, so both operands take both roles (X staged, W streamed
    // along its long side or along k); k past one staged slice (2048 up to 4 rows, 1024 at 8, 512
    // at 16); long sides and k that are not multiples of a 16-byte group; padded pitches for the
    // element-wise loads. At most 4096 outputs, so every precision takes the skinny kernels.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (short, long, k) in [(1, 777, 300), (3, 1000, 2500), (8, 500, 1030), (13, 300, 700)] {
        for (m, n) in [(short, long), (long, short)] {
            for (ta, tb) in TRANSPOSES {
                for precision in PRECISIONS {
                    let spec = Spec::new(m, n, k).trans(ta, tb).precision(precision);
                    run_f32(&rt, &spec, &mut rng);
                    run_f32(&rt, &spec.scaled(0.75, -0.5).padded([3, 5, 2]), &mut rng);
                }
                run_sixteen_bit(&rt, &Spec::new(m, n, k).trans(ta, tb).scaled(-1.5, 0.25), &mut rng);
                run_sixteen_bit(&rt, &Spec::new(m, n, k).trans(ta, tb).padded([3, 5, 2]), &mut rng);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn decode_products_on_the_tensor_cores() {
    // 16-bit, C's short side 1-16 (the tensor-core skinny kernels' 8 and 16 rows) as m and as n,
    // so both operands take both roles; long sides and k that are not multiples of the kernels'
    // 128 / 64 columns and 256-deep slices; padded pitches for the element-wise loads; scaled
    // with beta. Then an aligned decode product along each layout of the weights.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (short, long, k) in [(1, 4100, 4099), (5, 2000, 3000), (16, 1031, 5000)] {
        for (m, n) in [(short, long), (long, short)] {
            for (ta, tb) in TRANSPOSES {
                let spec = Spec::new(m, n, k).trans(ta, tb);
                run_sixteen_bit(&rt, &spec.scaled(0.75, -0.5), &mut rng);
                run_sixteen_bit(&rt, &spec.padded([3, 5, 2]), &mut rng);
            }
        }
    }
    for tb in [false, true] {
        run_sixteen_bit(&rt, &Spec::new(8, 4096, 4096).trans(false, tb), &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_sixteen_bit_inputs_and_outputs() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (m, n, k) in [(127, 129, 131), ALIGNED_ODD] {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(m, n, k).trans(ta, tb).batch(2, 8);
            for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
                run_sixteen_bit(&rt, &spec.scaled(alpha, beta), &mut rng);
            }
        }
    }
}

/// Launches the CUDA-core kernel `gemm_simt_<in>_<out>` on `spec` directly and returns its error
/// against the f64 reference.
fn simt_kernel_case<TIn: Element, TOut: Element>(
    rt: &ProductionGpuRuntime,
    spec: &Spec,
    rng: &mut SplitMix64,
) -> f64 {
    let ops = rt.gpu().unwrap();
    let case = spec.build(rng);
    let g = &case.g;
    let a: Vec<TIn> = case.a.iter().map(|&x| TIn::from_f32(x)).collect();
    let b: Vec<TIn> = case.b.iter().map(|&x| TIn::from_f32(x)).collect();
    let before: Vec<TOut> = case.c.iter().map(|&x| TOut::from_f32(x)).collect();
    let before_f32: Vec<f32> = before.iter().map(|x| x.to_f32()).collect();
    let want = reference(g, &a, &b, |x: TIn| f64::from(x.to_f32()));
    let (da, db, mut dc) = (ops.upload(&a).unwrap(), ops.upload(&b).unwrap(), ops.upload(&before).unwrap());
    let f = ops.kernels().function(&format!("gemm_simt_{}_{}", TIn::NAME, TOut::NAME)).unwrap();
    let dims = [g.m, g.n, g.k, g.lda, g.ldb, g.ldc].map(|d| d as i32);
    let strides = [g.stride_a, g.stride_b, g.stride_c].map(|s| s as i64);
    let (trans_a, trans_b) = (i32::from(g.trans_a), i32::from(g.trans_b));
    let cfg = LaunchConfig {
        grid_dim: (g.n.div_ceil(256) as u32, g.m.div_ceil(128) as u32, g.batch as u32),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = ops.stream().launch_builder(&f);
    launch.arg(&dims[0]).arg(&dims[1]).arg(&dims[2]).arg(&g.alpha);
    launch.arg(&da).arg(&dims[3]).arg(&strides[0]).arg(&trans_a);
    launch.arg(&db).arg(&dims[4]).arg(&strides[1]).arg(&trans_b);
    launch.arg(&g.beta).arg(&mut dc).arg(&dims[5]).arg(&strides[2]);
    // SAFETY: the arguments follow the kernel's signature (cuda/gemm_simt.cu, GEMM_ARGS), and the
    // buffers hold g.min_lens() elements, which covers every element the kernel touches.
    unsafe { launch.launch(cfg) }.unwrap();
    let c = ops.download(&dc).unwrap();
    compare(g, &c, &before_f32, &want).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_sixteen_bit_cuda_core_kernels() {
    // The 16-bit CUDA-core kernels serve GPUs without tensor cores, which the dispatcher never picks
    // here: launched by name, bf16 and f16 in, 16-bit and f32 out, every layout, edges in m, n and
    // k, odd pitches, a batch.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (ta, tb) in TRANSPOSES {
        let spec = Spec::new(131, 260, 37).trans(ta, tb).scaled(0.75, -0.5).padded([1, 2, 3]).batch(2, 5);
        let bf = spec.precision(Precision::Bf16);
        let hf = spec.precision(Precision::F16);
        for err in [
            simt_kernel_case::<bf16, bf16>(&rt, &bf, &mut rng),
            simt_kernel_case::<bf16, f32>(&rt, &bf, &mut rng),
            simt_kernel_case::<f16, f16>(&rt, &hf, &mut rng),
            simt_kernel_case::<f16, f32>(&rt, &hf, &mut rng),
        ] {
            assert!(err <= Precision::Bf16.tolerance(), "{spec:?}: relative Frobenius error {err:.3e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_random_shapes() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for spec in random_specs(&mut rng, 40, 400) {
        run_f32(&rt, &spec, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_exact_f32_reads_padded_copies_of_operands_short_of_whole_groups() {
    // Exact f32 on the 64 x 128 and 64 x 64 CUDA-core kernels (tiled, and split-K over the first)
    // where k, n or a base one element off leaves A or B without whole 16-byte groups, in products
    // large enough that the kernels read copies at a pitch of a multiple of 4 elements (rows padded
    // in the workspace): every layout, scaled, against the f64 reference. Each plan must copy
    // exactly the operands whose stored rows (or base) fall short, and nothing for the others.
    use prism_gpu::raw::kernels::gemm::tuning::{self, Kernel, SplitOn};
    use prism_gpu::raw::kernels::gemm::Workspace;
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let ops = rt.gpu().unwrap();
    let (kernels, stream) = (ops.kernels(), ops.stream());
    let copying = |p: &Plan| {
        matches!(p.kernel, Kernel::Simt64 | Kernel::Simt64x64 | Kernel::SplitK { on: SplitOn::Simt64, .. })
    };
    let workspace = Workspace::default();
    let mut copied = [0usize; 2];
    for ((m, n, k), offset) in
        [((1001, 1003, 1005), 0), ((1000, 1004, 1005), 0), ((1000, 1003, 1008), 0), ((1000, 1004, 1008), 1)]
    {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(m, n, k).trans(ta, tb).scaled(0.75, -0.5);
            let case = spec.build(&mut rng);
            // A stored row is k long for A as given, m transposed; B's n as given, k transposed.
            let rows = [if ta { m } else { k }, if tb { k } else { n }];
            let expected = rows.map(|len| offset != 0 || len % 4 != 0);
            let with_offset = |x: &[f32]| -> Vec<f32> {
                std::iter::repeat_n(7.0, offset).chain(x.iter().copied()).collect()
            };
            let (a, b) = (with_offset(&case.a), with_offset(&case.b));
            let want = reference(&case.g, &case.a, &case.b, f64::from);
            let (da, db) = (ops.upload(&a).unwrap(), ops.upload(&b).unwrap());
            let (va, vb) = (da.slice(offset..), db.slice(offset..));
            let plans =
                tuning::candidates_of::<f32, f32>(kernels, stream, &case.g, &va, &vb, 1 << 30).unwrap();
            let mut runs = 0;
            for plan in plans.iter().filter(|p| copying(p)) {
                let copies = tuning::padded_copies(stream, plan, &case.g, &va, &vb).unwrap();
                assert_eq!(copies, expected, "{spec:?} offset {offset} on {plan}");
                let got = on_plan(ops, &workspace, &case.g, plan, [&va, &vb], &case.c);
                let err = compare(&case.g, &got, &case.c, &want)
                    .unwrap_or_else(|e| panic!("{spec:?} on {plan}: {e}"));
                assert!(
                    err <= 1e-5,
                    "{spec:?} offset {offset} on {plan} (copies {copies:?}): error {err:.3e}"
                );
                runs += 1;
                for (count, c) in copied.iter_mut().zip(copies) {
                    *count += usize::from(c);
                }
            }
            assert!(runs > 0, "{spec:?} offset {offset}: no 64-row CUDA-core plan among the candidates");
        }
    }
    println!("plans with A copied: {}, with B copied: {}", copied[0], copied[1]);
    assert!(copied[0] > 0 && copied[1] > 0, "{copied:?}");
}

/// `g` on device buffers with A and B starting `offset` elements into their buffers (an
/// unaligned base for offset 1: the dispatcher must leave TMA).
fn device_case<T: Element>(
    rt: &ProductionGpuRuntime,
    spec: &Spec,
    offset: usize,
    rng: &mut SplitMix64,
) -> f64 {
    let ops = rt.gpu().unwrap();
    let case = spec.build(rng);
    let widen = |x: &[f32]| -> Vec<T> {
        std::iter::repeat_n(T::from_f32(7.0), offset).chain(x.iter().map(|&v| T::from_f32(v))).collect()
    };
    let (a, b) = (widen(&case.a), widen(&case.b));
    let want = reference(&case.g, &a[offset..], &b[offset..], |x: T| f64::from(x.to_f32()));
    let (da, db) = (ops.upload(&a).unwrap(), ops.upload(&b).unwrap());
    let mut dc = ops.upload(&case.c).unwrap();
    let (va, vb) = (da.slice(offset..), db.slice(offset..));
    ops.gemm(&case.g, &va, &vb, &mut dc.as_view_mut()).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let c = ops.download(&dc).unwrap();
    compare(&case.g, &c, &case.c, &want).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_device_buffers_with_unaligned_views() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let (m, n, k) = ALIGNED_ODD;
    for (ta, tb) in TRANSPOSES {
        for offset in [0, 1] {
            let spec = Spec::new(m, n, k).trans(ta, tb).scaled(0.5, 1.0);
            let err = device_case::<bf16>(&rt, &spec.precision(Precision::Bf16), offset, &mut rng);
            assert!(err <= 1e-2, "bf16 {spec:?} offset {offset}: {err:.3e}");
            let err = device_case::<f16>(&rt, &spec.precision(Precision::F16), offset, &mut rng);
            assert!(err <= 1e-2, "f16 {spec:?} offset {offset}: {err:.3e}");
            let err = device_case::<f32>(&rt, &spec.precision(Precision::Tf32), offset, &mut rng);
            assert!(err <= 2e-3, "tf32 {spec:?} offset {offset}: {err:.3e}");
            let err = device_case::<f32>(&rt, &spec, offset, &mut rng);
            assert!(err <= 1e-5, "f32 {spec:?} offset {offset}: {err:.3e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_k_zero_empty_dims_and_shape_errors_on_device() {
    let rt = gpu();
    let ops = rt.gpu().unwrap();
    // k = 0: C = beta * C inside the blocks, padding untouched; beta = 0 overwrites NaN.
    let g = Gemm::new(2, 2, 0).leading_dims(0, 2, 3).scaled(1.0, 2.0);
    let (a, b) = (ops.upload(&[1.0f32]).unwrap(), ops.upload(&[1.0f32]).unwrap());
    let mut c = ops.upload(&[1.0f32, 2.0, 9.0, 3.0, 4.0]).unwrap();
    ops.gemm(&g, &a.as_view(), &b.as_view(), &mut c.as_view_mut()).unwrap();
    assert_eq!(ops.download(&c).unwrap(), [2.0, 4.0, 9.0, 6.0, 8.0]);
    let mut c = ops.upload(&[f32::NAN; 5]).unwrap();
    ops.gemm(&g.scaled(1.0, 0.0), &a.as_view(), &b.as_view(), &mut c.as_view_mut()).unwrap();
    let c = ops.download(&c).unwrap();
    assert_eq!((c[0], c[1], c[3], c[4]), (0.0, 0.0, 0.0, 0.0));
    assert!(c[2].is_nan());
    // The device matmul and the host matmul on the GPU runtime.
    let (av, bv) = (vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], vec![1.0f32, 0.5, -1.0, 2.0, 0.0, 1.0]);
    let want = [-1.0, 7.5, -1.0, 18.0];
    let (da, db) = (ops.upload(&av).unwrap(), ops.upload(&bv).unwrap());
    assert_eq!(ops.download(&ops.matmul(&da, &db, 2, 2, 3, Precision::F32).unwrap()).unwrap(), want);
    assert_eq!(rt.matmul(&av, &bv, 2, 2, 3).unwrap(), want);
    assert_eq!(rt.matmul(&[], &[], 0, 3, 0).unwrap(), Vec::<f32>::new());
    // Too short buffers and bad leading dimensions are shape errors, before any launch.
    let mut c = ops.upload(&[0.0f32; 3]).unwrap();
    let err = ops.gemm(&Gemm::new(2, 2, 3), &da.as_view(), &db.as_view(), &mut c.as_view_mut()).unwrap_err();
    assert!(matches!(&err, Error::Shape { .. }) && err.to_string().contains("`C` of at least 4"), "{err}");
    let err = ops
        .gemm(&Gemm::new(2, 2, 3).leading_dims(2, 2, 2), &da.as_view(), &db.as_view(), &mut c.as_view_mut())
        .unwrap_err();
    assert!(err.to_string().contains("lda >= 3"), "{err}");
    let err = ops.matmul(&da, &db, 2, 2, 3, Precision::Bf16).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_square_every_precision_and_transpose() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in PRECISIONS {
        for (ta, tb) in TRANSPOSES {
            run_f32(&rt, &Spec::new(1000, 1000, 1000).trans(ta, tb).precision(precision), &mut rng);
        }
        run_f32(&rt, &Spec::new(1024, 1024, 1024).scaled(0.5, 2.0).precision(precision), &mut rng);
    }
    // Exact fp32 on a wave of 128 x 256 tiles (16 x 8), the large-tile SIMT kernel; the shapes
    // above use the 64-row one.
    run_f32(&rt, &Spec::new(1921, 2000, 301).trans(true, true).scaled(0.75, -0.5), &mut rng);
    let c = prism_gpu::runtime()
        .matmul(&rng.vec(1000 * 300, -1.0, 1.0), &rng.vec(300 * 700, -1.0, 1.0), 1000, 700, 300)
        .unwrap();
    assert_eq!(c.len(), 1000 * 700);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_tf32_with_an_operand_through_registers_at_each_tile_width() {
    // nn and tt read B / A through registers; tn transposes A first. On an H100 the first shape
    // takes 256-wide tiles, the second 128-wide (ALIGNED_ODD and 1000^3 above take 64).
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for (m, n, k) in [(2000, 1900, 700), (1500, 1400, 300)] {
        for (ta, tb) in [(false, false), (true, true), (true, false)] {
            let spec = Spec::new(m, n, k).trans(ta, tb).scaled(0.75, -0.5).precision(Precision::Tf32);
            run_f32(&rt, &spec, &mut rng);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_skinny_and_batched() {
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in PRECISIONS {
        run_f32(&rt, &Spec::new(64, 4096, 4096).precision(precision), &mut rng);
        run_f32(&rt, &Spec::new(4096, 65, 1000).trans(true, false).precision(precision), &mut rng);
        run_f32(&rt, &Spec::new(300, 500, 200).batch(16, 8).precision(precision).scaled(1.0, -1.0), &mut rng);
    }
    // The skinny kernels finish each column tile in their own launch while the workspace has a
    // counter per tile (8192); C's long side in more tiles than that (x·Wᵀ: 32-column tiles)
    // takes the reduction kernel instead. Both, one after the other on one workspace.
    for long in [270_000, 4000] {
        let spec = Spec::new(3, long, 96).trans(false, true).scaled(0.75, -0.5);
        run_f32(&rt, &spec.precision(Precision::F32), &mut rng);
        run_sixteen_bit(&rt, &spec, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_slow_or_unreadable_pitches_are_copied() {
    // 16-bit: pitches of 500 and 4200 bytes (TMA's slow case) and, padded, 502 and 4206 (not
    // readable by TMA): large enough that the operands are copied to a 128-byte pitch first.
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    for precision in [Precision::Bf16, Precision::F16] {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(2100, 2100, 250).trans(ta, tb).precision(precision);
            run_f32(&rt, &spec, &mut rng);
            run_f32(&rt, &spec.padded([1, 3, 0]).scaled(0.5, -1.0), &mut rng);
        }
    }
    // TF32, pitches of 1004 and 8412 bytes: K-major operands copied, MN-major ones transposed,
    // or (the other operand readable) read through registers.
    for (ta, tb) in TRANSPOSES {
        let spec = Spec::new(2100, 2100, 250).trans(ta, tb).precision(Precision::Tf32).scaled(0.5, -1.0);
        for pad in [[1, 3, 0], [1, 0, 0], [0, 1, 0]] {
            run_f32(&rt, &spec.padded(pad), &mut rng);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sm90_tail_rows_split_along_k_in_every_layout() {
    // The rows of tiles that fill whole waves on the sm_90 kernels, the other rows split along k
    // (2-8 slices, some with a shorter last one): on 132 multiprocessors 1200 x 1700 is 10 x 14
    // tiles of 128 x 128 (9 rows in the first launch, 48 rows split) or 10 x 27 of 128 x 64, and
    // 300 x 4100 is 3 x 65 tiles of 128 x 64 (2 rows, then 44); each layout, scaled, padded
    // pitches that TMA still reads; 16-bit to 16-bit and to f32, and TF32. Only sm_90 devices
    // offer them.
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let tail = |p: &Plan| matches!(p.kernel, Kernel::Sm90Tail { splits: ..=8, .. });
    sm90_candidates_in_every_layout(&[(1200, 1700, 136), (300, 4100, 200)], tail, "sm_90 tail");
}

/// Every kernel the tuner may pick for `spec` (its candidates), run through
/// `tuning::gemm_with_kernel`, against the f64 reference; and a kernel that cannot compute it is
/// an error, not a launch.
fn every_candidate<T: Element>(rt: &ProductionGpuRuntime, spec: &Spec, rng: &mut SplitMix64) -> usize {
    candidates_where::<T, T>(rt, spec, rng, |_| true)
}

/// `g` on `plan`'s kernel over A and B and a fresh copy of `before` as C: C afterwards.
fn on_plan<TIn: Element, TOut: Element>(
    ops: &GpuOps,
    workspace: &prism_gpu::raw::kernels::gemm::Workspace,
    g: &Gemm,
    plan: &Plan,
    [a, b]: [&CudaView<TIn>; 2],
    before: &[TOut],
) -> Vec<TOut> {
    use prism_gpu::raw::kernels::gemm::tuning;
    let mut dc = ops.upload(before).unwrap();
    tuning::gemm_with_kernel(
        ops.kernels(),
        ops.stream(),
        workspace,
        g,
        plan.kernel,
        a,
        b,
        &mut dc.as_view_mut(),
    )
    .unwrap_or_else(|e| panic!("{g:?} on {plan}: {e}"));
    ops.download(&dc).unwrap()
}

/// [`every_candidate`] for `TIn` inputs and `TOut` outputs, and the candidates `keep` selects.
fn candidates_where<TIn: Element, TOut: Element>(
    rt: &ProductionGpuRuntime,
    spec: &Spec,
    rng: &mut SplitMix64,
    keep: impl Fn(&Plan) -> bool,
) -> usize {
    use prism_gpu::raw::kernels::gemm::{tuning, Workspace};
    let ops = rt.gpu().expect("a GPU runtime");
    let case = spec.build(rng);
    let a: Vec<TIn> = case.a.iter().map(|&x| TIn::from_f32(x)).collect();
    let b: Vec<TIn> = case.b.iter().map(|&x| TIn::from_f32(x)).collect();
    let before: Vec<TOut> = case.c.iter().map(|&x| TOut::from_f32(x)).collect();
    let before_f32: Vec<f32> = before.iter().map(|x| x.to_f32()).collect();
    let want = reference(&case.g, &a, &b, |x: TIn| f64::from(x.to_f32()));
    let (da, db) = (ops.upload(&a).unwrap(), ops.upload(&b).unwrap());
    let (kernels, stream) = (ops.kernels(), ops.stream());
    let plans =
        tuning::candidates_of::<TIn, TOut>(kernels, stream, &case.g, &da.as_view(), &db.as_view(), 1 << 30)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    assert!(!plans.is_empty(), "{spec:?}: no candidates");
    let plans: Vec<_> = plans.into_iter().filter(|p| keep(p)).collect();
    let workspace = Workspace::default();
    for plan in &plans {
        let got = on_plan(ops, &workspace, &case.g, plan, [&da.as_view(), &db.as_view()], &before);
        let err =
            compare(&case.g, &got, &before_f32, &want).unwrap_or_else(|e| panic!("{spec:?} on {plan}: {e}"));
        let tol = spec.precision.tolerance();
        assert!(err <= tol, "{spec:?} on {plan}: relative Frobenius error {err:.3e} > {tol:.0e}");
    }
    plans.len()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn small_every_candidate_kernel_matches_the_reference() {
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let mut runs = 0;
    for (m, n, k) in [(1, 1024, 1536), (701, 1, 1023), (5, 700, 2100), ALIGNED_ODD, (257, 257, 257)] {
        for (ta, tb) in TRANSPOSES {
            for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
                let spec = Spec::new(m, n, k).trans(ta, tb).scaled(alpha, beta);
                runs += every_candidate::<f32>(&rt, &spec.precision(Precision::F32), &mut rng);
                runs += every_candidate::<f32>(&rt, &spec.precision(Precision::Tf32), &mut rng);
                runs += every_candidate::<bf16>(&rt, &spec.precision(Precision::Bf16), &mut rng);
                runs += every_candidate::<f16>(&rt, &spec.precision(Precision::F16), &mut rng);
            }
        }
    }
    // Batched (split-K and skinny are not candidates there).
    let batched = Spec::new(136, 200, 264).batch(3, 8).scaled(0.75, -0.5).precision(Precision::Bf16);
    runs += every_candidate::<bf16>(&rt, &batched, &mut rng);
    for spec in small_f32_batches() {
        runs += every_candidate::<f32>(&rt, &spec, &mut rng);
    }
    // One row and one column with padded pitches: X strided along k, W's rows unaligned (the GEMV
    // kernels' scalar paths); 16-bit inputs to 16-bit and (the GEMV kernels alone) to f32 outputs.
    let gemv = |p: &Plan| matches!(p.kernel, Kernel::Gemv { .. });
    for (ta, tb) in TRANSPOSES {
        for (m, n, k) in [(1, 700, 517), (517, 1, 700)] {
            let spec = Spec::new(m, n, k).trans(ta, tb).padded([3, 5, 2]).scaled(0.75, -0.5);
            let (bf, hf) = (spec.precision(Precision::Bf16), spec.precision(Precision::F16));
            runs += every_candidate::<f32>(&rt, &spec.precision(Precision::F32), &mut rng);
            runs += every_candidate::<bf16>(&rt, &bf, &mut rng);
            runs += every_candidate::<f16>(&rt, &hf, &mut rng);
            runs += candidates_where::<bf16, f32>(&rt, &bf, &mut rng, gemv);
            runs += candidates_where::<f16, f32>(&rt, &hf, &mut rng, gemv);
        }
    }
    for spec in one_row_batches() {
        let bf = spec.precision(Precision::Bf16);
        runs += every_candidate::<f32>(&rt, &spec, &mut rng);
        runs += every_candidate::<bf16>(&rt, &bf, &mut rng);
        runs += candidates_where::<bf16, f32>(&rt, &bf, &mut rng, gemv);
    }
    println!("{runs} candidate runs checked");
}

/// Batches of f32 matrices at most 64 wide (the 64 x 64 tiles' case): sides off the tile, k off
/// the k-tile, a broadcast operand.
fn narrow_f32_batches() -> Vec<Spec> {
    f32_batches(6, &[(201, 61, 301, (false, false)), (130, 64, 17, (true, false))])
}

/// The rules' choice (the 64 x 64 tiles) and the 64 x 64 tiles alone on [`narrow_f32_batches`]
/// (short enough for racecheck).
#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_of_narrow_f32_matrices_on_the_64_tiles() {
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let mut runs = 0;
    for spec in narrow_f32_batches() {
        run_f32(&rt, &spec, &mut rng);
        runs += candidates_where::<f32, f32>(&rt, &spec, &mut rng, |p| p.kernel == Kernel::Simt64x64);
    }
    assert_eq!(runs, narrow_f32_batches().len(), "simt64x64 is a candidate of every spec");
}

/// Batches of one row and one column (the GEMV's grid.z: a decode step's attention scores and
/// weighted values), a broadcast operand.
fn one_row_batches() -> Vec<Spec> {
    f32_batches(5, &[(1, 130, 64, (false, false)), (67, 1, 130, (false, true)), (1, 300, 33, (true, false))])
}

/// The GEMV kernels alone on [`one_row_batches`], f32 and bf16 (short enough for racecheck).
#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_of_one_row_products_on_the_gemv_kernels() {
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let gemv = |p: &Plan| matches!(p.kernel, Kernel::Gemv { .. });
    let mut runs = 0;
    for spec in one_row_batches() {
        runs += candidates_where::<f32, f32>(&rt, &spec, &mut rng, gemv);
        runs += candidates_where::<bf16, bf16>(&rt, &spec.precision(Precision::Bf16), &mut rng, gemv);
    }
    assert_eq!(runs, 2 * one_row_batches().len() * 4, "every GEMV width is a candidate of every spec");
}

/// `batch` entries of each f32 shape `(m, n, k, (broadcast A, broadcast B))` in every layout, with
/// gaps between the entries, scaled with beta.
fn f32_batches(batch: usize, shapes: &[(usize, usize, usize, (bool, bool))]) -> Vec<Spec> {
    let mut specs = Vec::new();
    for (ta, tb) in TRANSPOSES {
        for &(m, n, k, (broadcast_a, broadcast_b)) in shapes {
            let spec = Spec::new(m, n, k).trans(ta, tb).batch(batch, 8).broadcast(broadcast_a, broadcast_b);
            specs.push(spec.scaled(0.75, -0.5).precision(Precision::F32));
        }
    }
    specs
}

/// Batches of small exact-f32 matrices (the 32 x 32 tiles' case): sides off the tile, k off the
/// k-tile, a broadcast operand.
fn small_f32_batches() -> Vec<Spec> {
    f32_batches(5, &[(145, 143, 33, (false, false)), (37, 70, 13, (false, true))])
}

/// The 32 x 32 tiles alone on [`small_f32_batches`] (short enough for racecheck).
#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_of_small_f32_matrices_on_the_32_tiles() {
    use prism_gpu::raw::kernels::gemm::tuning::Kernel;
    let (rt, mut rng) = (gpu(), SplitMix64::from_time());
    let runs: usize = small_f32_batches()
        .iter()
        .map(|spec| candidates_where::<f32, f32>(&rt, spec, &mut rng, |p| p.kernel == Kernel::Simt32))
        .sum();
    assert_eq!(runs, small_f32_batches().len(), "simt32 is a candidate of every spec");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_that_cannot_run_the_gemm_is_an_error() {
    use prism_gpu::raw::kernels::gemm::tuning::{self, Feed, Kernel, SplitOn};
    use prism_gpu::raw::kernels::gemm::Workspace;
    let rt = gpu();
    let ops = rt.gpu().unwrap();
    let g = Gemm::new(64, 64, 64).with_precision(Precision::Bf16);
    let a = ops.upload(&vec![bf16::from_f32(1.0); 64 * 64]).unwrap();
    let mut c = ops.upload(&vec![bf16::from_f32(f32::NAN); 64 * 64]).unwrap();
    let workspace = Workspace::default();
    for kernel in [
        Kernel::Simt64,
        Kernel::Simt32,
        Kernel::Sm90 { bn: 64, a: Feed::Transpose, b: Feed::InPlace },
        Kernel::Skinny { rows: 1, splits: 1 },
        Kernel::SplitK { splits: 4, on: SplitOn::Simt64 },
    ] {
        let run = tuning::gemm_with_kernel(
            ops.kernels(),
            ops.stream(),
            &workspace,
            &g,
            kernel,
            &a.as_view(),
            &a.as_view(),
            &mut c.as_view_mut(),
        );
        match run {
            Err(Error::Shape { op: "gemm plan", .. }) => {}
            other => panic!("{kernel}: {other:?}"),
        }
    }
    assert!(ops.download(&c).unwrap().iter().all(|x| x.to_f32().is_nan()), "nothing was launched");
}
