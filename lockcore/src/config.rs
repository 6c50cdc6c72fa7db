//! Lock configuration, defaulting to the numbers the articles use.

use std::time::Duration;

use crate::LockError;

/// How a lock behaves. [`LockConfig::default`] gives the articles' numbers
/// (30 s TTL, 100 ms retry, 30 s watchdog renewed every 10 s); tests and the
/// matrix shrink them to hundreds of milliseconds so that a run takes seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct LockConfig {
    /// The Redis key that *is* the lock.
    pub key: String,
    /// How long the lock lives without its holder (EXPIRE / PX / lease).
    pub ttl: Duration,
    /// How long a blocking acquire sleeps between two tries (stages 1–5, 7).
    pub retry_interval: Duration,
    /// Stage 6: the lease the watchdog keeps renewing, every third of it.
    pub watchdog_timeout: Duration,
    /// Stage 7: the share of the TTL reserved for clock drift between nodes.
    pub drift_factor: f64,
}

impl Default for LockConfig {
    fn default() -> Self {
        Self {
            key: "lock:stock".to_owned(),
            ttl: Duration::from_secs(30),
            retry_interval: Duration::from_millis(100),
            watchdog_timeout: Duration::from_secs(30),
            drift_factor: 0.01,
        }
    }
}

impl LockConfig {
    /// A configuration with short times for tests: everything else default.
    pub fn with_ttl(ttl: Duration) -> Self {
        Self {
            ttl,
            watchdog_timeout: ttl,
            retry_interval: Duration::from_millis(5),
            ..Self::default()
        }
    }

    /// Refuses settings no lock can honour: an empty key, a zero TTL or
    /// watchdog timeout (Redis rejects `PX 0`, and a zero lease is no lock).
    pub fn validate(&self) -> Result<(), LockError> {
        if self.key.is_empty() {
            return Err(LockError::Config("the lock key must not be empty".into()));
        }
        if self.ttl.as_millis() == 0 {
            return Err(LockError::Config("the TTL must be at least 1 ms".into()));
        }
        if self.watchdog_timeout.as_millis() < 3 {
            return Err(LockError::Config(
                "the watchdog timeout must be at least 3 ms (it is renewed every third)".into(),
            ));
        }
        if !(0.0..1.0).contains(&self.drift_factor) {
            return Err(LockError::Config(
                "the drift factor must be in [0, 1)".into(),
            ));
        }
        Ok(())
    }

    /// The TTL in whole milliseconds, as `PX` and `PEXPIRE` want it.
    pub fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_articles_numbers() {
        let config = LockConfig::default();
        assert_eq!(config.ttl, Duration::from_secs(30));
        assert_eq!(config.retry_interval, Duration::from_millis(100));
        assert_eq!(config.watchdog_timeout / 3, Duration::from_secs(10));
        assert!(config.validate().is_ok());
    }

    #[test]
    fn zero_ttl_is_refused_with_a_clear_message() {
        let config = LockConfig::with_ttl(Duration::ZERO);
        let err = config.validate().unwrap_err();
        assert!(err.to_string().contains("TTL"), "{err}");
    }
}
