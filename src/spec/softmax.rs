//! Softmax (`cuda/softmax.cu`): which of the two row functions.

/// Which of the two row functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Softmax {
    /// `exp(x - max) / sum(exp(x - max))`
    Softmax,
    /// `x - max - ln(sum(exp(x - max)))`
    LogSoftmax,
}

impl Softmax {
    /// The entry point computing it.
    pub fn kernel(self) -> &'static str {
        match self {
            Softmax::Softmax => "prism_softmax_rows_f32",
            Softmax::LogSoftmax => "prism_log_softmax_rows_f32",
        }
    }
}
