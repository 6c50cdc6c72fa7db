//! What is measured around a workload: latencies and the client side's
//! memory.

use std::time::Duration;

/// Latencies of one kind of operation, one sample each.
#[derive(Debug, Default)]
pub struct Latencies {
    samples: Vec<Duration>,
    total: Duration,
}

impl Latencies {
    /// Room for `count` samples, so recording allocates nothing.
    pub fn with_capacity(count: usize) -> Self {
        Self {
            samples: Vec::with_capacity(count),
            total: Duration::ZERO,
        }
    }

    /// Records one operation.
    pub fn record(&mut self, took: Duration) {
        self.samples.push(took);
        self.total += took;
    }

    /// Operations per second, back to back.
    pub fn per_second(&self) -> f64 {
        self.samples.len() as f64 / self.total.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The `q`-quantile (0.5 for the median) in microseconds.
    pub fn quantile_us(&mut self, q: f64) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.samples.sort_unstable();
        let rank = ((self.samples.len() - 1) as f64 * q).round() as usize;
        self.samples[rank].as_secs_f64() * 1e6
    }
}

/// Forgets the peak resident memory so far, so the next [`peak_kib`] is the
/// peak of what runs in between (`echo 5 > /proc/self/clear_refs`).
pub fn reset_peak() {
    // Without the permission the peak simply covers the run so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident memory since the last [`reset_peak`] (VmHWM), in KiB.
pub fn peak_kib() -> u64 {
    status_kib("VmHWM:")
}

/// The resident memory now (VmRSS), in KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}
