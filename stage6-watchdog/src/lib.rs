//! Stage 6: Redisson-style: reentrant hash, watchdog, pub/sub wait. (Being written.)
