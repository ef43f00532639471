//! Element-wise f32 arithmetic (`cuda/elementwise.cu`): the binary operations.

/// The binary operations `out = a ∘ b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
}

impl Binary {
    /// The entry point computing this operation.
    pub fn kernel(self) -> &'static str {
        match self {
            Binary::Add => "prism_add_f32",
            Binary::Sub => "prism_sub_f32",
            Binary::Mul => "prism_mul_f32",
            Binary::Div => "prism_div_f32",
        }
    }
}
