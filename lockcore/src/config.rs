//! Lock configuration, defaulting to the numbers the articles use, and the
//! bounds every setting must stay within.
//!
//! A bad setting is refused when a client is made, with
//! [`LockError::Config`], rather than discovered later as a lock that never
//! expires, a retry loop that never sleeps, or a panic.

use std::time::Duration;

use tokio::time::Instant;

use crate::LockError;

/// The longest TTL, lease or watchdog timeout a lock accepts.
///
/// Redis turns `PX ms` and `PEXPIRE key ms` into an absolute time, its own
/// clock in Unix milliseconds plus `ms`, and refuses ("invalid expire time")
/// any sum past `i64::MAX`. So its limit is `i64::MAX` minus the server's
/// clock. Half of `i64::MAX` (about 146 million years) stays under that
/// limit for any clock a server could show, so a value this bound lets
/// through is one Redis takes.
///
/// Why it matters: a script that runs `HINCRBY` and then a `PEXPIRE` Redis
/// refuses is not rolled back, and leaves a lock with no expiry at all.
pub const MAX_EXPIRY: Duration = Duration::from_millis(i64::MAX as u64 / 2);

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

    /// Refuses settings no lock can honour: an empty key; a zero TTL or
    /// watchdog timeout (Redis rejects `PX 0`, and a zero lease is no lock);
    /// one above [`MAX_EXPIRY`] (Redis rejects it too, after a script may
    /// already have written the lock); a retry interval under 1 ms (a retry
    /// loop that never sleeps hammers Redis instead of waiting); a drift
    /// factor outside `[0, 1)`.
    pub fn validate(&self) -> Result<(), LockError> {
        if self.key.is_empty() {
            return Err(LockError::Config("the lock key must not be empty".into()));
        }
        check_expiry("the TTL", self.ttl)?;
        check_expiry("the watchdog timeout", self.watchdog_timeout)?;
        if self.watchdog_timeout.as_millis() < 3 {
            return Err(LockError::Config(
                "the watchdog timeout must be at least 3 ms (it is renewed every third)".into(),
            ));
        }
        if self.retry_interval.as_millis() == 0 {
            return Err(LockError::Config(
                "the retry interval must be at least 1 ms (a retry must wait between tries)".into(),
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

    /// Stage 7: the part of the TTL set aside because the masters' clocks
    /// do not tick at exactly the same rate: TTL × drift factor, plus 2 ms.
    pub fn drift_allowance(&self) -> Duration {
        self.ttl.mul_f64(self.drift_factor) + Duration::from_millis(2)
    }

    /// Stage 7: refuses a TTL that leaves no validity once the drift
    /// allowance and `asking` (the longest a majority may take to answer)
    /// are taken off it. Such a lock could never be granted: every attempt
    /// would end in a refusal, and a caller would wait in vain.
    pub fn validate_drift(&self, asking: Duration) -> Result<(), LockError> {
        let needed = self.drift_allowance() + asking;
        if self.ttl <= needed {
            return Err(LockError::Config(format!(
                "the TTL ({} ms) must be longer than the drift allowance plus the time to ask \
                 the masters ({} ms), or no lock could ever be granted",
                self.ttl.as_millis(),
                needed.as_millis()
            )));
        }
        Ok(())
    }
}

/// Refuses a TTL, lease or watchdog timeout (`what`) that Redis would not
/// take: under 1 ms, or above [`MAX_EXPIRY`].
pub fn check_expiry(what: &str, expiry: Duration) -> Result<(), LockError> {
    if expiry.as_millis() == 0 {
        return Err(LockError::Config(format!("{what} must be at least 1 ms")));
    }
    if expiry > MAX_EXPIRY {
        return Err(LockError::Config(format!(
            "{what} must be at most {} ms (Redis refuses a longer PX or PEXPIRE)",
            MAX_EXPIRY.as_millis()
        )));
    }
    Ok(())
}

/// When a wait of `wait` from now ends. A wait so long that the clock cannot
/// represent its end (`Duration::MAX`, say) is refused with a clear error
/// instead of panicking on `Instant` arithmetic.
pub fn deadline_after(wait: Duration) -> Result<Instant, LockError> {
    Instant::now().checked_add(wait).ok_or_else(|| {
        LockError::Config(format!(
            "a wait of {} s ends beyond what the clock can count; wait less",
            wait.as_secs()
        ))
    })
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

    fn refusal(config: &LockConfig) -> String {
        match config.validate() {
            Err(LockError::Config(message)) => message,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn expiries_above_what_redis_takes_are_refused() {
        let huge = LockConfig {
            ttl: Duration::MAX,
            ..LockConfig::default()
        };
        assert!(refusal(&huge).contains("the TTL must be at most"));
        let huge = LockConfig {
            watchdog_timeout: Duration::MAX,
            ..LockConfig::default()
        };
        assert!(refusal(&huge).contains("the watchdog timeout must be at most"));
        let just_over = LockConfig::with_ttl(MAX_EXPIRY + Duration::from_millis(1));
        assert!(refusal(&just_over).contains("at most"));
        assert!(LockConfig::with_ttl(MAX_EXPIRY).validate().is_ok());
    }

    #[test]
    fn a_retry_that_never_sleeps_is_refused() {
        let config = LockConfig {
            retry_interval: Duration::ZERO,
            ..LockConfig::default()
        };
        assert!(refusal(&config).contains("retry interval"));
        let config = LockConfig {
            retry_interval: Duration::from_micros(999),
            ..LockConfig::default()
        };
        assert!(refusal(&config).contains("retry interval"));
    }

    #[test]
    fn a_wait_without_end_is_refused_not_a_panic() {
        let err = deadline_after(Duration::MAX).unwrap_err();
        assert!(matches!(err, LockError::Config(_)), "{err}");
        assert!(deadline_after(Duration::from_secs(3600)).is_ok());
    }

    #[test]
    fn a_ttl_eaten_by_the_drift_allowance_is_refused() {
        // 1000 ms × 0.01 + 2 ms = 12 ms set aside, plus 50 ms to ask.
        let config = LockConfig::with_ttl(Duration::from_millis(1000));
        assert_eq!(config.drift_allowance(), Duration::from_millis(12));
        assert!(config.validate_drift(Duration::from_millis(50)).is_ok());
        let short = LockConfig::with_ttl(Duration::from_millis(3));
        assert!(short.validate().is_ok(), "fine for a single-node lock");
        let err = short.validate_drift(Duration::from_millis(1)).unwrap_err();
        assert!(err.to_string().contains("drift allowance"), "{err}");
    }
}
