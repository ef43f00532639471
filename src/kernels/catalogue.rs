//! Which entry points each kernel family defines. Kept by hand beside the typed launchers; a test
//! checks it against the entries of the PTX that the pinned nvcc makes from `cuda/` (`ptx/`, which
//! CI regenerates and checks for drift), so macro- and template-made entry points count too.

/// A kernel family: one `cuda/<name>.cu` source and the entry points it defines.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The family name (the source's file stem).
    pub name: &'static str,
    /// Every `extern "C" __global__` entry point in the source.
    pub entries: &'static [&'static str],
}

/// Every built-in kernel family.
pub static FAMILIES: &[Family] = &[
    Family {
        name: "activations",
        entries: &[
            "prism_relu_f32",
            "prism_relu_backward_f32",
            "prism_leaky_relu_f32",
            "prism_leaky_relu_backward_f32",
            "prism_sigmoid_f32",
            "prism_sigmoid_backward_f32",
            "prism_tanh_f32",
            "prism_tanh_backward_f32",
            "prism_gelu_f32",
            "prism_gelu_backward_f32",
        ],
    },
    Family {
        name: "convert",
        entries: &["prism_f32_to_f16", "prism_f16_to_f32", "prism_f32_to_bf16", "prism_bf16_to_f32"],
    },
    Family {
        name: "elementwise",
        entries: &[
            "prism_add_f32",
            "prism_sub_f32",
            "prism_mul_f32",
            "prism_div_f32",
            "prism_axpy_f32",
            "prism_scale_f32",
            "prism_fill_f32",
        ],
    },
    Family {
        name: "gemm_mma",
        entries: &[
            "gemm_mma_bf16_bf16",
            "gemm_mma_bf16_f32",
            "gemm_mma_f16_f16",
            "gemm_mma_f16_f32",
            "gemm_mma_tf32_f32",
        ],
    },
    Family {
        name: "gemm_simt",
        entries: &[
            "gemm_simt_f32_f32",
            "gemm_simt64_f32_f32",
            "gemm_small_f32_f32",
            "gemm_simt_bf16_bf16",
            "gemm_small_bf16_bf16",
            "gemm_simt_bf16_f32",
            "gemm_small_bf16_f32",
            "gemm_simt_f16_f16",
            "gemm_small_f16_f16",
            "gemm_simt_f16_f32",
            "gemm_small_f16_f32",
            "gemm_transpose_f32",
            "gemm_splitk_reduce_f32",
            "gemm_splitk_reduce_bf16",
            "gemm_splitk_reduce_f16",
            "gemm_copy_rows",
        ],
    },
    Family {
        name: "gemm_sm90",
        entries: &[
            "gemm_sm90_bf16_bf16_nn_n256",
            "gemm_sm90_bf16_bf16_nt_n256",
            "gemm_sm90_bf16_bf16_tn_n256",
            "gemm_sm90_bf16_bf16_tt_n256",
            "gemm_sm90_bf16_bf16_nn_n128",
            "gemm_sm90_bf16_bf16_nt_n128",
            "gemm_sm90_bf16_bf16_tn_n128",
            "gemm_sm90_bf16_bf16_tt_n128",
            "gemm_sm90_bf16_f32_nn_n256",
            "gemm_sm90_bf16_f32_nt_n256",
            "gemm_sm90_bf16_f32_tn_n256",
            "gemm_sm90_bf16_f32_tt_n256",
            "gemm_sm90_bf16_f32_nn_n128",
            "gemm_sm90_bf16_f32_nt_n128",
            "gemm_sm90_bf16_f32_tn_n128",
            "gemm_sm90_bf16_f32_tt_n128",
            "gemm_sm90_f16_f16_nn_n256",
            "gemm_sm90_f16_f16_nt_n256",
            "gemm_sm90_f16_f16_tn_n256",
            "gemm_sm90_f16_f16_tt_n256",
            "gemm_sm90_f16_f16_nn_n128",
            "gemm_sm90_f16_f16_nt_n128",
            "gemm_sm90_f16_f16_tn_n128",
            "gemm_sm90_f16_f16_tt_n128",
            "gemm_sm90_f16_f32_nn_n256",
            "gemm_sm90_f16_f32_nt_n256",
            "gemm_sm90_f16_f32_tn_n256",
            "gemm_sm90_f16_f32_tt_n256",
            "gemm_sm90_f16_f32_nn_n128",
            "gemm_sm90_f16_f32_nt_n128",
            "gemm_sm90_f16_f32_tn_n128",
            "gemm_sm90_f16_f32_tt_n128",
            "gemm_sm90_bf16_bf16_nn_n64",
            "gemm_sm90_bf16_bf16_nt_n64",
            "gemm_sm90_bf16_bf16_tn_n64",
            "gemm_sm90_bf16_bf16_tt_n64",
            "gemm_sm90_bf16_f32_nn_n64",
            "gemm_sm90_bf16_f32_nt_n64",
            "gemm_sm90_bf16_f32_tn_n64",
            "gemm_sm90_bf16_f32_tt_n64",
            "gemm_sm90_f16_f16_nn_n64",
            "gemm_sm90_f16_f16_nt_n64",
            "gemm_sm90_f16_f16_tn_n64",
            "gemm_sm90_f16_f16_tt_n64",
            "gemm_sm90_f16_f32_nn_n64",
            "gemm_sm90_f16_f32_nt_n64",
            "gemm_sm90_f16_f32_tn_n64",
            "gemm_sm90_f16_f32_tt_n64",
            "gemm_sm90_tf32_f32_nt_n256",
            "gemm_sm90_tf32_f32_nt_n128",
            "gemm_sm90_tf32_f32_nt_n64",
        ],
    },
    Family {
        name: "gemv",
        entries: &["prism_gemv_f32", "prism_gemv_t_partial_f32", "prism_gemv_t_finalize_f32"],
    },
    Family {
        name: "neuromorphic",
        entries: &[
            "matvec_input_kernel",
            "matvec_reservoir_kernel",
            "matvec_reservoir_csr_kernel",
            "leaky_integration_kernel",
            "spike_encode_kernel",
            "pattern_correlation_kernel",
            "power_iteration_init_kernel",
            "power_iteration_normalize_kernel",
        ],
    },
    Family {
        name: "norms",
        entries: &[
            "prism_layer_norm_f32",
            "prism_layer_norm_bf16",
            "prism_rms_norm_f32",
            "prism_rms_norm_bf16",
            "prism_batch_norm_apply_f32",
            "prism_batch_norm_partials_f32",
            "prism_batch_norm_finish_f32",
        ],
    },
    Family {
        name: "reductions",
        entries: &[
            "prism_sum_partial_f32",
            "prism_sum_finalize_f32",
            "prism_max_partial_f32",
            "prism_max_finalize_f32",
            "prism_argmax_partial_f32",
            "prism_argmax_finalize_f32",
            "prism_row_sum_f32",
            "prism_row_mean_f32",
            "prism_row_max_f32",
            "prism_row_argmax_f32",
        ],
    },
    Family { name: "softmax", entries: &["prism_softmax_rows_f32", "prism_log_softmax_rows_f32"] },
    Family { name: "transpose", entries: &["prism_transpose_f32"] },
];

/// The family defining the entry point `kernel`.
pub fn family_of(kernel: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.entries.contains(&kernel))
}
