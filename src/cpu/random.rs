//! Philox4x32-10 fills on the CPU: the numbers `cuda/random.cu` makes, from the same
//! `(seed, offset, index)`. Uniform values, raw bits and f32 normals are bit-identical to the
//! kernel's (the f32 Box-Muller uses only integer operations, fma and IEEE-rounded `*` and
//! `sqrt`, in the kernel's order, with the kernel's own polynomials: -2 ln u within 1.01 ulp and
//! sin/cos within 0.71 ulp of f64 on every input); f32 log-normals exponentiate in f64 with the
//! host's `exp` (within 1 ulp of the kernel's), and f64 normals use the host's `ln`, `sin`, `cos`,
//! `exp` (within a few ulp).
//!
//! Block `b` of a fill at [`Philox`] `{ seed, offset }` is Philox4x32-10 (Salmon et al., "Parallel
//! random numbers: as easy as 1, 2, 3", SC'11) of the 128-bit counter `offset + b` and the
//! 64-bit key `seed`, both little-endian in 32-bit words.

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

/// Block `b` of the fill at `at`.
fn block(at: Philox, b: u64) -> [u32; 4] {
    let counter = u128::from(at.offset) + u128::from(b);
    let words = counter.to_le_bytes();
    let word =
        |i: usize| u32::from_le_bytes([words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]]);
    philox4x32_10([word(0), word(1), word(2), word(3)], [at.seed as u32, (at.seed >> 32) as u32])
}

/// Blocks per parallel chunk.
const CHUNK_BLOCKS: usize = 1 << 12;

/// Fills `out` block by block: block `b` becomes elements `PER b ..`, as far as `out` reaches.
fn fill<T: Send, const PER: usize>(out: &mut [T], at: Philox, make: impl Fn([u32; 4]) -> [T; PER] + Sync) {
    out.par_chunks_mut(PER * CHUNK_BLOCKS).enumerate().for_each(|(chunk, out)| {
        for (i, dst) in out.chunks_mut(PER).enumerate() {
            let b = (chunk * CHUNK_BLOCKS + i) as u64;
            for (d, v) in dst.iter_mut().zip(make(block(at, b))) {
                *d = v;
            }
        }
    });
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

/// The kernel's f32 Box-Muller (`exact::` in cuda/random.cu), operation for operation: integer
/// operations, exact conversions, fma (`mul_add`, correctly rounded on every target) and
/// IEEE-rounded `*` and `sqrt`, with the kernel's constants (cuda/random_polynomials.inc).
mod exact_f32 {
    include!(concat!(env!("OUT_DIR"), "/random_polynomials.rs"));

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

    /// (sin 2πt, cos 2πt) for t = (w >> 8) 2^-24: t = q/4 + r, r in [-1/8, 1/8).
    #[inline(always)]
    pub fn sin_cos_turns(w: u32) -> (f32, f32) {
        let j = (w >> 8) as i32;
        let q = (j + (1 << 21)) >> 22;
        let r = (j - (q << 22)) as f32 * (1.0 / (1u32 << 24) as f32);
        let r2 = r * r;
        let s = r * horner(&SIN_TURNS, r2);
        let c = horner(&COS_TURNS, r2);
        let odd = q & 1 != 0;
        let flip = |x: f32, negate: bool| if negate { -x } else { x };
        (flip(if odd { c } else { s }, q & 2 != 0), flip(if odd { s } else { c }, (q + 1) & 2 != 0))
    }

    /// Box-Muller on two 32-bit words (radius from the first, angle from the second).
    #[inline(always)]
    fn box_muller(w0: u32, w1: u32) -> (f32, f32) {
        let radius = minus_two_ln_unit(w0).sqrt();
        let (s, c) = sin_cos_turns(w1);
        (radius * c, radius * s)
    }

    /// The four normals of one Philox block: Box-Muller on (w0, w1) and (w2, w3).
    pub fn normals(w: [u32; 4]) -> [f32; 4] {
        let ((z0, z1), (z2, z3)) = (box_muller(w[0], w[1]), box_muller(w[2], w[3]));
        [z0, z1, z2, z3]
    }
}

/// Normal f32 (log-normal when `log`, exponentiated in f64), Box-Muller on the word pairs in f32.
pub fn normal_f32(out: &mut [f32], at: Philox, mean: f32, std: f32, log: bool) {
    let shape = |z: f32| {
        let x = std.mul_add(z, mean);
        if log {
            f64::from(x).exp() as f32
        } else {
            x
        }
    };
    fill(out, at, |w| exact_f32::normals(w).map(shape));
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

    /// The f32 Box-Muller's pieces against f64 on every input they take (2^24 each): -2 ln u
    /// within a few ulp relative to the value, sin/cos within a few ulp of 1 (their argument is
    /// exact), so each normal is within a few ulp of the f64 Box-Muller on the same words.
    #[test]
    fn the_f32_box_muller_is_accurate_on_every_input() {
        let ulp = f64::from(f32::EPSILON);
        let mut worst_ln = 0.0f64;
        let mut worst_trig = 0.0f64;
        for j in 0..1u32 << 24 {
            let u = f64::from(j + 1) / f64::from(1u32 << 24);
            let want = -2.0 * u.ln();
            let got = f64::from(exact_f32::minus_two_ln_unit(j << 8));
            if want == 0.0 {
                assert_eq!(got, 0.0, "-2 ln 1");
            } else {
                worst_ln = worst_ln.max(((got - want) / want).abs());
            }
            let (s, c) = exact_f32::sin_cos_turns(j << 8 | 0xff);
            let (ws, wc) = (2.0 * std::f64::consts::PI * f64::from(j) / f64::from(1u32 << 24)).sin_cos();
            worst_trig = worst_trig.max((f64::from(s) - ws).abs()).max((f64::from(c) - wc).abs());
        }
        println!(
            "f32 Box-Muller: -2 ln u {:.2} ulp (relative), sin/cos {:.2} ulp of 1",
            worst_ln / ulp,
            worst_trig / ulp
        );
        assert!(worst_ln < 1.5 * ulp, "-2 ln u: relative error {:.2} ulp", worst_ln / ulp);
        assert!(worst_trig < ulp, "sin/cos: error {:.2} ulp of 1", worst_trig / ulp);
    }
}
