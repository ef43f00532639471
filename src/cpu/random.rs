//! Philox4x32-10 fills on the CPU: the numbers `cuda/random.cu` makes, from the same
//! `(seed, offset, index)`. Uniform values, raw bits and f32 normals are bit-identical to the
//! kernel's (the f32 ziggurat uses only integer operations, fma and IEEE-rounded `+` and `*`, in
//! the kernel's order, with the kernel's own tables and polynomials: -2 ln u within 1.01 ulp of
//! f64 on every input, exp(-x^2 / 2) within a few ulp); f32 log-normals exponentiate in f64 with
//! the host's `exp` (within 1 ulp of the kernel's), and f64 normals use the host's `ln`, `sin`,
//! `cos`, `exp` (within a few ulp).
//!
//! Block `b` of a fill at [`Philox`] `{ seed, offset }` is Philox4x32-10 (Salmon et al., "Parallel
//! random numbers: as easy as 1, 2, 3", SC'11) of the 128-bit counter `offset + b` and the
//! 64-bit key `seed`, both little-endian in 32-bit words. The f32 normal's ziggurat draws its rare
//! extra uniforms from the blocks whose counter has `4t + e` in its top word (retry `t = 1, 2, ..`
//! of element `e` of block `b`); the main stream's top word is always 0.

use rayon::prelude::*;

use crate::spec::random::Philox;

const MULTIPLIERS: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
const WEYL: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox4x32-10 of `counter` under `key` (Random123's `philox4x32`, 10 rounds).
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut x = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(WEYL[0]), k[1].wrapping_add(WEYL[1])];
        }
        let p0 = u64::from(MULTIPLIERS[0]) * u64::from(x[0]);
        let p1 = u64::from(MULTIPLIERS[1]) * u64::from(x[2]);
        x = [(p1 >> 32) as u32 ^ x[1] ^ k[0], p1 as u32, (p0 >> 32) as u32 ^ x[3] ^ k[1], p0 as u32];
    }
    x
}

/// The counter of block `b` of the fill at `at`: `offset + b` in 128 bits (its top word 0).
fn counter(at: Philox, b: u64) -> [u32; 4] {
    let words = (u128::from(at.offset) + u128::from(b)).to_le_bytes();
    let word =
        |i: usize| u32::from_le_bytes([words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]]);
    [word(0), word(1), word(2), word(3)]
}

/// The key of the fill at `at`.
fn key(at: Philox) -> [u32; 2] {
    [at.seed as u32, (at.seed >> 32) as u32]
}

/// Block `b` of the fill at `at`.
fn block(at: Philox, b: u64) -> [u32; 4] {
    philox4x32_10(counter(at, b), key(at))
}

/// Blocks per parallel chunk.
const CHUNK_BLOCKS: usize = 1 << 12;

/// Fills `out` block by block: `make(b)` becomes elements `PER b ..`, as far as `out` reaches.
fn fill_blocks<T: Send, const PER: usize>(out: &mut [T], make: impl Fn(u64) -> [T; PER] + Sync) {
    out.par_chunks_mut(PER * CHUNK_BLOCKS).enumerate().for_each(|(chunk, out)| {
        for (i, dst) in out.chunks_mut(PER).enumerate() {
            let b = (chunk * CHUNK_BLOCKS + i) as u64;
            for (d, v) in dst.iter_mut().zip(make(b)) {
                *d = v;
            }
        }
    });
}

/// Fills `out` block by block: block `b`'s words, through `make`, become elements `PER b ..`.
fn fill<T: Send, const PER: usize>(out: &mut [T], at: Philox, make: impl Fn([u32; 4]) -> [T; PER] + Sync) {
    fill_blocks(out, |b| make(block(at, b)));
}

fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// A 32-bit word as f32 in (0, 1]: its top 24 bits plus one, times 2^-24 (exact).
fn unit_f32(w: u32) -> f32 {
    ((w >> 8) + 1) as f32 / (1u32 << 24) as f32
}

/// A 64-bit value as f64 in (0, 1]: its top 53 bits plus one, times 2^-53 (exact).
fn unit_f64(v: u64) -> f64 {
    ((v >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// `(sin πx, cos πx)` for `x` in [0, 2), accurate relative to the result: `x` is split exactly
/// into quarter turns and a remainder in [-1/4, 1/4].
fn sin_cos_pi(x: f64) -> (f64, f64) {
    let quarters = (2.0 * x).round();
    let (s, c) = (std::f64::consts::PI * (x - 0.5 * quarters)).sin_cos();
    match quarters as u32 % 4 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// Box-Muller: the radius from `u` in (0, 1], the angle `2π turns` for `turns` in [0, 1).
fn box_muller(u: f64, turns: f64) -> (f64, f64) {
    let r = (-2.0 * u.ln()).sqrt();
    let (s, c) = sin_cos_pi(2.0 * turns);
    (r * c, r * s)
}

/// `mean + std z`, exponentiated for a log-normal draw.
fn shape(z: f64, mean: f64, std: f64, log: bool) -> f64 {
    let x = std.mul_add(z, mean);
    if log {
        x.exp()
    } else {
        x
    }
}

/// Raw 32-bit words.
pub fn bits_u32(out: &mut [u32], at: Philox) {
    fill(out, at, |w| w);
}

/// Raw 64-bit values: word pairs, low word first.
pub fn bits_u64(out: &mut [u64], at: Philox) {
    fill(out, at, |w| [join(w[0], w[1]), join(w[2], w[3])]);
}

/// Uniform f32 in (0, 1].
pub fn uniform_f32(out: &mut [f32], at: Philox) {
    fill(out, at, |w| w.map(unit_f32));
}

/// Uniform f64 in (0, 1].
pub fn uniform_f64(out: &mut [f64], at: Philox) {
    fill(out, at, |w| [unit_f64(join(w[0], w[1])), unit_f64(join(w[2], w[3]))]);
}

/// The kernel's f32 ziggurat (`exact::` in cuda/random.cu), operation for operation: integer
/// operations, exact conversions, fma (`mul_add`, correctly rounded on every target) and
/// IEEE-rounded `+` and `*`, with the kernel's tables and constants (cuda/random_ziggurat.inc,
/// cuda/random_polynomials.inc).
mod exact_f32 {
    include!(concat!(env!("OUT_DIR"), "/random_polynomials.rs"));
    include!(concat!(env!("OUT_DIR"), "/random_ziggurat.rs"));

    /// The ziggurat's layers: bits `0 .. LAYER_BITS` of a word pick one, the next bit is the sign,
    /// the rest the fraction.
    const LAYERS: usize = ZIGGURAT_FAST.len() / 2;
    const LAYER_BITS: u32 = LAYERS.trailing_zeros();
    const _: () = assert!(LAYERS.is_power_of_two() && ZIGGURAT_F.len() == LAYERS + 1);

    /// Horner's rule, one fma per coefficient (highest power first).
    #[inline(always)]
    fn horner(coefficients: &[u32], x: f32) -> f32 {
        let (first, rest) = coefficients.split_first().expect("a polynomial has a coefficient");
        rest.iter().fold(f32::from_bits(*first), |acc, c| acc.mul_add(x, f32::from_bits(*c)))
    }

    /// -2 ln u for u = j 2^-24, j = (w >> 8) + 1: j = 2^k m with m in [sqrt(1/2), sqrt(2)),
    /// -2 ln u = (k - 24)(-2 ln 2) + f P(f) with f = m - 1.
    #[inline(always)]
    pub fn minus_two_ln_unit(w: u32) -> f32 {
        let bits = (((w >> 8) + 1) as f32).to_bits() as i32;
        let k = (bits - 0x3f35_04f3) >> 23;
        let f = f32::from_bits((bits - (k << 23)) as u32) + -1.0;
        let ef = (k - 24) as f32;
        let ln1p = f * horner(&LN1P_M2, f);
        ef.mul_add(f32::from_bits(M2LN2[0]), ef.mul_add(f32::from_bits(M2LN2[1]), ln1p))
    }

    /// exp(-x^2 / 2) for |x| <= r: h = -x^2 / 2 = k ln 2 + s, k rounded by adding and taking away
    /// 1.5 2^23 (its low bits are k), exp(s) by the polynomial, 2^k added to the exponent.
    #[inline(always)]
    pub fn exp_minus_half_square(x: f32) -> f32 {
        let h = (x * x) * -0.5;
        let shifted = h.mul_add(f32::from_bits(EXP_REDUCE[0]), 12_582_912.0);
        let k = shifted + -12_582_912.0;
        let s = (-k).mul_add(f32::from_bits(EXP_REDUCE[1]), h);
        let s = (-k).mul_add(f32::from_bits(EXP_REDUCE[2]), s);
        let scale = ((shifted.to_bits() as i32).wrapping_sub(0x4b40_0000) as u32) << 23;
        f32::from_bits(horner(&EXP, s).to_bits().wrapping_add(scale))
    }

    /// A word's ziggurat draw: its layer, its fraction j, the layer's K and j W (the value if
    /// accepted).
    #[derive(Clone, Copy)]
    struct Draw {
        layer: usize,
        fraction: u32,
        k: u32,
        x: f32,
    }

    impl Draw {
        #[inline(always)]
        fn new(w: u32) -> Draw {
            let layer = (w & (LAYERS as u32 - 1)) as usize;
            let fraction = w >> (LAYER_BITS + 1);
            let x = fraction as f32 * f32::from_bits(ZIGGURAT_FAST[2 * layer + 1]);
            Draw { layer, fraction, k: ZIGGURAT_FAST[2 * layer], x }
        }

        /// j < K: the point lies in the layer's inner rectangle, under the curve.
        #[inline(always)]
        fn fast(self) -> bool {
            self.fraction < self.k
        }
    }

    /// The sign of a word's normal (its bit `LAYER_BITS`) as an f32 sign bit.
    fn sign_bit(w: u32) -> u32 {
        (w << (31 - LAYER_BITS)) & 0x8000_0000
    }

    /// |z| for element `e` of the block at `counter` whose draw `d` missed the fast path: retry
    /// `t = 1, 2, ..` is the block at `counter` with `4t + e` as its top word; a wedge test takes
    /// its word 0 as the height and, rejected, word 1 as the next draw; a tail round takes words
    /// 0 and 1 as u1, u2 (Marsaglia's tail method). Ends with probability 1 (0.015 retry blocks
    /// per normal on average).
    fn slow_magnitude(mut counter: [u32; 4], key: [u32; 2], e: u32, mut d: Draw) -> f32 {
        let mut t = 1u32;
        loop {
            counter[3] = t.wrapping_mul(4).wrapping_add(e);
            t = t.wrapping_add(1);
            let b = super::philox4x32_10(counter, key);
            if d.layer == 0 {
                let x = minus_two_ln_unit(b[0]) * f32::from_bits(ZIGGURAT_TAIL[1]);
                if minus_two_ln_unit(b[1]) > x * x {
                    return f32::from_bits(ZIGGURAT_TAIL[0]) + x;
                }
                continue;
            }
            let (lo, hi) = (f32::from_bits(ZIGGURAT_F[d.layer]), f32::from_bits(ZIGGURAT_F[d.layer + 1]));
            let y = ((b[0] >> 8) as f32 * (1.0 / 16_777_216.0)).mul_add(hi - lo, lo);
            if y < exp_minus_half_square(d.x) {
                return d.x;
            }
            d = Draw::new(b[1]);
            if d.fast() {
                return d.x;
            }
        }
    }

    /// The four standard normals of the block at `counter` (under `key`), whose words are `w`.
    pub fn normals(counter: [u32; 4], key: [u32; 2], w: [u32; 4]) -> [f32; 4] {
        let mut z = [0.0; 4];
        for (e, (z, &w)) in z.iter_mut().zip(&w).enumerate() {
            let d = Draw::new(w);
            let magnitude = if d.fast() { d.x } else { slow_magnitude(counter, key, e as u32, d) };
            *z = f32::from_bits(magnitude.to_bits() | sign_bit(w));
        }
        z
    }
}

/// Normal f32 (log-normal when `log`, exponentiated in f64): the ziggurat on each word, in f32.
pub fn normal_f32(out: &mut [f32], at: Philox, mean: f32, std: f32, log: bool) {
    let shape = |z: f32| {
        let x = std.mul_add(z, mean);
        if log {
            f64::from(x).exp() as f32
        } else {
            x
        }
    };
    fill_blocks(out, |b| {
        let c = counter(at, b);
        exact_f32::normals(c, key(at), philox4x32_10(c, key(at))).map(shape)
    });
}

/// Normal f64 (log-normal when `log`), Box-Muller on the pair of 64-bit values.
pub fn normal_f64(out: &mut [f64], at: Philox, mean: f64, std: f64, log: bool) {
    fill(out, at, |w| {
        let turns = (join(w[2], w[3]) >> 11) as f64 / (1u64 << 53) as f64;
        let (z0, z1) = box_muller(unit_f64(join(w[0], w[1])), turns);
        [z0, z1].map(|z| shape(z, mean, std, log))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's published known answers for Philox4x32-10 (its `kat_vectors`): counter, key,
    /// result.
    #[test]
    fn philox_matches_the_random123_known_answers() {
        let kats: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            ([0; 4], [0; 2], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
            ([u32::MAX; 4], [u32::MAX; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (counter, key, want) in kats {
            assert_eq!(philox4x32_10(counter, key), want, "counter {counter:08x?} key {key:08x?}");
        }
    }

    #[test]
    fn the_counter_is_offset_plus_block_in_128_bits() {
        let at = Philox { seed: 0xa409_3822_299f_31d0, offset: u64::MAX };
        assert_eq!(block(at, 0), philox4x32_10([u32::MAX, u32::MAX, 0, 0], [0x299f_31d0, 0xa409_3822]));
        assert_eq!(block(at, 2), philox4x32_10([1, 0, 1, 0], [0x299f_31d0, 0xa409_3822]));
    }

    #[test]
    fn sin_cos_pi_agrees_with_sin_cos_in_every_quarter() {
        for i in 0..64 {
            let x = i as f64 / 32.0 + 1.0 / 97.0;
            let (s, c) = sin_cos_pi(x);
            let (ws, wc) = (std::f64::consts::PI * x).sin_cos();
            assert!((s - ws).abs() < 1e-15 && (c - wc).abs() < 1e-15, "x {x}: ({s}, {c}) vs ({ws}, {wc})");
        }
        assert_eq!(sin_cos_pi(1.0), (0.0, -1.0));
        assert_eq!(sin_cos_pi(0.5).0, 1.0);
    }

    /// The f32 ziggurat's slow-path functions against f64: -2 ln u (the tail) on every input it
    /// takes (2^24) within a few ulp relative to the value; exp(-x^2 / 2) (the wedges) on 2^22
    /// points of [0, r] within the rounding of x^2 (|x^2 / 2| 2^-24 relative) and a few ulp.
    #[test]
    fn the_f32_ln_and_exp_are_accurate() {
        let ulp = f64::from(f32::EPSILON);
        let mut worst_ln = 0.0f64;
        for j in 0..1u32 << 24 {
            let u = f64::from(j + 1) / f64::from(1u32 << 24);
            let want = -2.0 * u.ln();
            let got = f64::from(exact_f32::minus_two_ln_unit(j << 8));
            if want == 0.0 {
                assert_eq!(got, 0.0, "-2 ln 1");
            } else {
                worst_ln = worst_ln.max(((got - want) / want).abs());
            }
        }
        let r = f64::from(f32::from_bits(exact_f32::ZIGGURAT_TAIL[0]));
        let mut worst_exp = 0.0f64;
        for i in 0..=1u32 << 22 {
            let x = (r * f64::from(i) / f64::from(1u32 << 22)) as f32;
            let h = f64::from(x) * f64::from(x) / 2.0;
            let want = (-h).exp();
            let got = f64::from(exact_f32::exp_minus_half_square(x));
            // The rounding of x^2 moves h by up to h 2^-24, the result by as much relative.
            worst_exp = worst_exp.max(((got - want) / want).abs() / (1.0 + h / 2.0));
        }
        println!(
            "f32 ziggurat: -2 ln u {:.2} ulp (relative), exp {:.2} ulp",
            worst_ln / ulp,
            worst_exp / ulp
        );
        assert!(worst_ln < 1.5 * ulp, "-2 ln u: relative error {:.2} ulp", worst_ln / ulp);
        assert!(worst_exp < 2.0 * ulp, "exp(-x^2 / 2): relative error {:.2} ulp", worst_exp / ulp);
    }
}
