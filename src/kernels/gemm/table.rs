//! The tuning tables: per architecture, a text file checked in under `tune/` (`tune/sm_90.txt`),
//! embedded at build time, parsed once per process, written by `prism-gpu tune`. Each line names
//! the kernel measured best for one shape:
//!
//! ```text
//! bf16 nn 1 1 4096 4096 -> skinny rows=8 splits=12
//! tf32 tn 1 128 50257 768 -> sm90 bn=128 a=transpose b=inplace
//! f64 nn many 512 512 512 -> dmma
//! ```
//!
//! (precision, layout, batch class `1` or `many`, m n k, then the kernel as [`Kernel`] writes it,
//! or `simt` / `dmma` for f64). A GEMM takes the entry of its precision, layout and batch class
//! whose m, n and k are each within a factor of [`REACH`] of its own, the nearest by the sum of
//! `|ln(ours / entry's)|` over the three (the first in the file on a tie), when the device can run
//! that kernel for it ([`Kernel::resolve`]); otherwise the built-in rules decide. Comments start
//! with `#`. Pure logic, tested without a GPU.

use std::fmt;
use std::sync::OnceLock;

/// How far (a factor on each of m, n, k) a tuned entry reaches. A factor of 2 let entries pick
/// kernels for shapes they were never measured on and lose there (H100 sweep, against the rules:
/// bf16 128 x 8192 x 8192 took 64 x 4096 x 14336's split-K, 0.46x; dgemm 600^3 took 320^3's SIMT,
/// 0.62x; the sweep's geometric mean moved 1.00x), so an entry now covers its shape's near
/// neighbours only.
pub const REACH: f64 = 1.25;

use super::dispatch::{Device, Kernel, SplitOn};
use super::double::PlanF64;
use super::plan::layout_char;
use super::spec::{Gemm, Precision};

/// The precision of a tuned GEMM: one of [`Precision`]'s, or f64 ([`super::double`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tuned {
    /// An f32 / bf16 / f16 GEMM at this precision.
    Gemm(Precision),
    /// A double-precision GEMM.
    F64,
}

impl Tuned {
    /// Every tuned precision, in table order.
    pub const ALL: [Tuned; 5] = [
        Tuned::Gemm(Precision::F32),
        Tuned::Gemm(Precision::Tf32),
        Tuned::Gemm(Precision::Bf16),
        Tuned::Gemm(Precision::F16),
        Tuned::F64,
    ];

    /// The table's name: `f32`, `tf32`, `bf16`, `f16`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            Tuned::Gemm(Precision::F32) => "f32",
            Tuned::Gemm(Precision::Tf32) => "tf32",
            Tuned::Gemm(Precision::Bf16) => "bf16",
            Tuned::Gemm(Precision::F16) => "f16",
            Tuned::F64 => "f64",
        }
    }

    /// The precision called `name`.
    pub fn parse(name: &str) -> Option<Tuned> {
        Tuned::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a table entry chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Choice {
    /// A kernel of the f32 / bf16 / f16 GEMM.
    Kernel(Kernel),
    /// A kernel of the f64 GEMM.
    F64(PlanF64),
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Kernel(kernel) => kernel.fmt(f),
            Choice::F64(plan) => plan.fmt(f),
        }
    }
}

/// The class of GEMM an entry was tuned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class {
    /// The precision.
    pub precision: Tuned,
    /// A stored transposed.
    pub trans_a: bool,
    /// B stored transposed.
    pub trans_b: bool,
    /// More than one batch entry.
    pub batched: bool,
    /// The shape measured (m, n, k).
    pub shape: (usize, usize, usize),
}

impl Class {
    /// The class of `g` at `precision`.
    pub fn of(g: &Gemm, precision: Tuned) -> Class {
        Class {
            precision,
            trans_a: g.trans_a,
            trans_b: g.trans_b,
            batched: g.batch > 1,
            shape: (g.m, g.n, g.k),
        }
    }
}

/// One line of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    /// What was measured.
    pub class: Class,
    /// The kernel chosen for it.
    pub choice: Choice,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.class;
        let (m, n, k) = c.shape;
        write!(
            f,
            "{} {}{} {} {m} {n} {k} -> {}",
            c.precision.name(),
            layout_char(c.trans_a),
            layout_char(c.trans_b),
            if c.batched { "many" } else { "1" },
            self.choice
        )
    }
}

impl std::str::FromStr for Entry {
    type Err = String;

    fn from_str(line: &str) -> Result<Self, String> {
        let (class, choice) =
            line.split_once("->").ok_or("expected `precision layout batch m n k -> kernel`")?;
        let choice = choice.trim();
        let words: Vec<&str> = class.split_whitespace().collect();
        let [precision, layout, batch, m, n, k] = words[..] else {
            return Err(format!(
                "expected `precision layout batch m n k` before `->`, found `{}`",
                class.trim()
            ));
        };
        let precision = Tuned::parse(precision)
            .ok_or_else(|| format!("unknown precision `{precision}` (f32 tf32 bf16 f16 f64)"))?;
        let (trans_a, trans_b) = match layout {
            "nn" => (false, false),
            "nt" => (false, true),
            "tn" => (true, false),
            "tt" => (true, true),
            _ => return Err(format!("unknown layout `{layout}` (nn nt tn tt)")),
        };
        let batched = match batch {
            "1" => false,
            "many" => true,
            _ => return Err(format!("unknown batch class `{batch}` (1 or many)")),
        };
        let side = |name: &str, v: &str| match v.parse::<usize>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("{name} = `{v}`: expected a positive whole number")),
        };
        let shape = (side("m", m)?, side("n", n)?, side("k", k)?);
        let choice = match precision {
            Tuned::F64 => Choice::F64(choice.parse()?),
            Tuned::Gemm(p) => {
                let kernel: Kernel = choice.parse()?;
                if !kernel_suits(kernel, p) {
                    return Err(format!("`{kernel}` does not compute {}", precision.name()));
                }
                Choice::Kernel(kernel)
            }
        };
        Ok(Entry { class: Class { precision, trans_a, trans_b, batched, shape }, choice })
    }
}

/// Whether `kernel` can compute `precision` at all (whatever the shape and device).
fn kernel_suits(kernel: Kernel, precision: Precision) -> bool {
    use super::dispatch::Feed;
    match kernel {
        Kernel::Simt64 | Kernel::Simt64x64 | Kernel::Simt32 | Kernel::SplitK { on: SplitOn::Simt64, .. } => {
            matches!(precision, Precision::F32 | Precision::Tf32)
        }
        Kernel::Gemv { .. } => true,
        Kernel::Mma
        | Kernel::SplitK { on: SplitOn::Mma | SplitOn::Sm90 { .. }, .. }
        | Kernel::Sm90Tail { .. } => precision != Precision::F32,
        Kernel::Sm90 { a, b, .. } => {
            precision != Precision::F32
                && (precision == Precision::Tf32 || (a != Feed::Transpose && b != Feed::Transpose))
        }
        Kernel::Small | Kernel::Simt | Kernel::Skinny { .. } => true,
    }
}

/// A parsed table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// The entries in file order.
    pub entries: Vec<Entry>,
}

impl Table {
    /// Parses a table's text; the error names the line (1-based) and what is wrong with it.
    pub fn parse(text: &str) -> Result<Table, String> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            entries
                .push(line.parse().map_err(|why| format!("tuning table line {}: {why}: `{line}`", i + 1))?);
        }
        Ok(Table { entries })
    }

    /// The table as text: `header` (each line prefixed with `# `), then one line per entry.
    pub fn to_text(&self, header: &str) -> String {
        let mut out = String::new();
        for line in header.lines() {
            out.push_str(if line.is_empty() { "#" } else { "# " });
            out.push_str(line);
            out.push('\n');
        }
        for entry in &self.entries {
            out.push_str(&entry.to_string());
            out.push('\n');
        }
        out
    }

    /// The entry nearest `class` (module docs): same precision, layout and batch class, each side
    /// within a factor of [`REACH`], the smallest sum of `|ln(ratio)|`, the first on a tie.
    pub fn nearest(&self, class: &Class) -> Option<&Entry> {
        let distance = |e: &Entry| {
            let (m, n, k) = e.class.shape;
            let (qm, qn, qk) = class.shape;
            let side = |a: usize, b: usize| {
                let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
                (hi <= REACH * lo).then(|| (hi / lo).ln())
            };
            Some(side(m, qm)? + side(n, qn)? + side(k, qk)?)
        };
        let same = |e: &&Entry| {
            let c = &e.class;
            (c.precision, c.trans_a, c.trans_b, c.batched)
                == (class.precision, class.trans_a, class.trans_b, class.batched)
        };
        let mut best: Option<(f64, &Entry)> = None;
        for e in self.entries.iter().filter(same) {
            if let Some(d) = distance(e) {
                if best.is_none_or(|(b, _)| d < b) {
                    best = Some((d, e));
                }
            }
        }
        best.map(|(_, e)| e)
    }
}

/// The checked-in table of compute capability 9.0.
const SM_90: &str = include_str!("../../../tune/sm_90.txt");

/// The table for `device`'s architecture (empty where none is checked in), parsed once. A table
/// that does not parse counts as empty (the unit tests parse every checked-in table).
pub fn for_device(device: &Device) -> &'static Table {
    static TABLES: OnceLock<Table> = OnceLock::new();
    static EMPTY: Table = Table { entries: Vec::new() };
    match device.capability {
        (9, 0) => TABLES.get_or_init(|| Table::parse(SM_90).unwrap_or_default()),
        _ => &EMPTY,
    }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::testing::{ALIGNED, H100};
    use super::super::dispatch::{heuristic, Feed, TmaReady};
    use super::*;

    const TEXT: &str = "# a comment\n\
        \n\
        bf16 nn 1 1 4096 4096 -> skinny rows=8 splits=12   # decode\n\
        tf32 tn 1 128 50257 768 -> sm90 bn=128 a=transpose b=inplace\n\
        f32 nt many 257 257 257 -> splitk simt64 splits=4\n\
        f16 tt 1 1568 512 4608 -> mma\n\
        f64 nn 1 4096 4096 4096 -> dmma\n\
        f64 nn many 16 16 16 -> simt\n\
        bf16 nn 1 8 4096 4096 -> sm90 bn=64 a=inplace b=inplace\n";

    #[test]
    fn the_checked_in_tables_parse() {
        Table::parse(SM_90).unwrap();
        assert!(for_device(&Device { capability: (8, 0), ..H100 }).entries.is_empty());
    }

    #[test]
    fn tables_read_back_what_they_write() {
        let table = Table::parse(TEXT).unwrap();
        assert_eq!(table.entries.len(), 7);
        assert_eq!(
            table.entries[1],
            Entry {
                class: Class {
                    precision: Tuned::Gemm(Precision::Tf32),
                    trans_a: true,
                    trans_b: false,
                    batched: false,
                    shape: (128, 50257, 768)
                },
                choice: Choice::Kernel(Kernel::Sm90 { bn: 128, a: Feed::Transpose, b: Feed::InPlace }),
            }
        );
        assert_eq!(table.entries[4].choice, Choice::F64(PlanF64::Dmma { tile: (128, 64), splits: 1 }));
        let text = table.to_text("written by a test\n\nsecond line");
        assert!(
            text.starts_with("# written by a test\n#\n# second line\nbf16 nn 1 1 4096 4096 -> skinny"),
            "{text}"
        );
        assert_eq!(Table::parse(&text).unwrap(), table);
        assert_eq!(Table::parse("# only comments\n").unwrap(), Table::default());
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        for (text, why) in [
            ("bf16 nn 1 1 4096 4096 skinny rows=1 splits=33", "line 1: expected `precision layout"),
            ("# ok\nbf16 nn 1 1 4096 -> mma", "line 2: expected `precision layout batch m n k`"),
            ("f8 nn 1 1 1 1 -> mma", "line 1: unknown precision `f8`"),
            ("f16 nx 1 1 1 1 -> mma", "unknown layout `nx`"),
            ("f16 nn 2 1 1 1 -> mma", "unknown batch class `2`"),
            ("f16 nn 1 0 1 1 -> mma", "m = `0`"),
            ("f16 nn 1 1 1 1 -> sm90 bn=32 a=inplace b=inplace", "256, 192, 128 or 64"),
            ("f16 nn 1 1 1 1 -> sm90 bn=64 a=transpose b=inplace", "does not compute f16"),
            ("f32 nn 1 1 1 1 -> mma", "does not compute f32"),
            ("bf16 nn 1 1 1 1 -> simt64", "does not compute bf16"),
            ("f64 nn 1 1 1 1 -> mma", "unknown f64 kernel `mma`"),
            ("\n\nf32 nn 1 1 1 1 -> warp", "line 3: unknown kernel `warp`"),
        ] {
            let e = Table::parse(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_nearest_class_is_within_reach_on_every_side() {
        let table = Table::parse(TEXT).unwrap();
        let class =
            |p, (ta, tb), batched, shape| Class { precision: p, trans_a: ta, trans_b: tb, batched, shape };
        let bf16 = Tuned::Gemm(Precision::Bf16);
        let at = |shape| table.nearest(&class(bf16, (false, false), false, shape)).map(|e| e.choice);
        let skinny = Some(Choice::Kernel(Kernel::Skinny { rows: 8, splits: 12 }));
        let sm90 = Some(Choice::Kernel(Kernel::Sm90 { bn: 64, a: Feed::InPlace, b: Feed::InPlace }));
        assert_eq!(at((1, 4096, 4096)), skinny);
        assert_eq!(at((1, 3600, 4700)), skinny); // n / 1.14, k x 1.15
        assert_eq!(at((2, 4096, 4096)), None); // 2 x 1 and 8 / 2: neither in reach
        assert_eq!(at((8, 4096, 4096)), sm90);
        assert_eq!(at((10, 4096, 4096)), sm90); // x 1.25 exactly
        assert_eq!(at((11, 4096, 4096)), None);
        assert_eq!(at((8, 4096, 5121)), None);
        // Other precision, layout or batch class: no entry.
        assert_eq!(
            table.nearest(&class(Tuned::Gemm(Precision::F16), (false, false), false, (1, 4096, 4096))),
            None
        );
        assert_eq!(table.nearest(&class(bf16, (false, true), false, (1, 4096, 4096))), None);
        assert_eq!(table.nearest(&class(bf16, (false, false), true, (1, 4096, 4096))), None);
        let f32nt = table.nearest(&class(Tuned::Gemm(Precision::F32), (false, true), true, (300, 220, 260)));
        assert_eq!(
            f32nt.map(|e| e.choice),
            Some(Choice::Kernel(Kernel::SplitK { splits: 4, on: SplitOn::Simt64 }))
        );
    }

    #[test]
    fn entries_the_device_or_shape_cannot_run_fall_back_to_the_rules() {
        let table = Table::parse(TEXT).unwrap();
        let applied = |g: Gemm, p: Precision, device: &Device, tma: TmaReady| {
            super::super::dispatch::plan_with(&table, &g, p, device, tma).unwrap().kernel
        };
        // In reach and valid: the table's kernel.
        let decode = Gemm::new(1, 4096, 4096);
        assert_eq!(applied(decode, Precision::Bf16, &H100, ALIGNED), Kernel::Skinny { rows: 8, splits: 12 });
        // A row count the 16-bit kernels do not have (they run 8 or 16 rows): the rules.
        let one_row = Table::parse("f16 nn 1 1 4096 4096 -> skinny rows=1 splits=33\n").unwrap();
        assert_eq!(
            super::super::dispatch::plan_with(&one_row, &decode, Precision::F16, &H100, ALIGNED)
                .unwrap()
                .kernel,
            heuristic(&decode, Precision::F16, &H100, ALIGNED)
        );
        // m = 2: out of both entries' reach, the rules.
        let two = Gemm::new(2, 4096, 4096);
        assert_eq!(
            applied(two, Precision::Bf16, &H100, ALIGNED),
            heuristic(&two, Precision::Bf16, &H100, ALIGNED)
        );
        // An sm90 entry on a device whose sm_90a module failed, or with an operand TMA cannot read.
        let eight = Gemm::new(8, 4096, 4096);
        let failed = Device { sm90: false, ..H100 };
        assert_eq!(
            applied(eight, Precision::Bf16, &failed, ALIGNED),
            heuristic(&eight, Precision::Bf16, &failed, ALIGNED)
        );
        let b_unaligned = TmaReady { a: true, b: false };
        assert_eq!(
            applied(eight, Precision::Bf16, &H100, b_unaligned),
            heuristic(&eight, Precision::Bf16, &H100, b_unaligned)
        );
        assert_eq!(
            applied(eight, Precision::Bf16, &H100, ALIGNED),
            Kernel::Sm90 { bn: 64, a: Feed::InPlace, b: Feed::InPlace }
        );
        // A copy to a new pitch, measured on an unaligned neighbour, is dropped where TMA reads the
        // operand (the rules' feed instead), kept where it cannot (257).
        let repitched = Table::parse("tf32 nn 1 257 257 257 -> sm90 bn=64 a=repitch b=repitch\n").unwrap();
        let tf32 = |g: &Gemm, tma| {
            super::super::dispatch::plan_with(&repitched, g, Precision::Tf32, &H100, tma).unwrap().kernel
        };
        let (cube, odd) = (Gemm::new(256, 256, 256), Gemm::new(257, 257, 257));
        assert_eq!(tf32(&cube, ALIGNED), Kernel::Sm90 { bn: 64, a: Feed::InPlace, b: Feed::InPlace });
        let unaligned = TmaReady { a: false, b: false };
        assert_eq!(tf32(&odd, unaligned), Kernel::Sm90 { bn: 64, a: Feed::Repitch, b: Feed::Repitch });
        // No table: exactly the rules (what the empty checked-in tables give).
        let empty = Table::default();
        for g in [decode, two, eight, Gemm::new(4096, 4096, 4096)] {
            for p in [Precision::F32, Precision::Tf32, Precision::Bf16, Precision::F16] {
                let planned = super::super::dispatch::plan_with(&empty, &g, p, &H100, ALIGNED).unwrap();
                assert_eq!(planned, heuristic(&g, p, &H100, ALIGNED).resolve(&g, p, &H100, ALIGNED).unwrap());
            }
        }
    }
}
