//! The training progress bar: `indicatif` with the `progress` feature, nothing without it.

use crate::nn::train::EpochStats;

/// A bar over all the samples of a run, with each epoch's figures printed above it.
pub(crate) struct Progress {
    #[cfg(feature = "progress")]
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A bar when `show` (and the feature) is on.
    #[cfg_attr(not(feature = "progress"), allow(unused_variables))]
    pub(crate) fn new(show: bool, epochs: usize, samples: usize) -> Self {
        #[cfg(feature = "progress")]
        {
            let bar = show.then(|| {
                let bar = indicatif::ProgressBar::new((epochs as u64).saturating_mul(samples as u64));
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{wide_bar}] {pos}/{len} samples ({per_sec}, eta {eta})",
                ) {
                    bar.set_style(style);
                }
                bar
            });
            Self { bar }
        }
        #[cfg(not(feature = "progress"))]
        Self {}
    }

    /// `rows` more samples done.
    #[cfg_attr(not(feature = "progress"), allow(unused_variables))]
    pub(crate) fn step(&self, rows: usize) {
        #[cfg(feature = "progress")]
        if let Some(bar) = &self.bar {
            bar.inc(rows as u64);
        }
    }

    /// An epoch's figures, above the bar.
    #[cfg_attr(not(feature = "progress"), allow(unused_variables))]
    pub(crate) fn epoch_done(&self, stats: &EpochStats) {
        #[cfg(feature = "progress")]
        if let Some(bar) = &self.bar {
            bar.println(format!(
                "epoch {}: loss {:.4}, accuracy {:.4}{}",
                stats.epoch,
                stats.loss,
                stats.accuracy,
                stats.test_accuracy.map(|a| format!(", test accuracy {a:.4}")).unwrap_or_default()
            ));
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        #[cfg(feature = "progress")]
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
