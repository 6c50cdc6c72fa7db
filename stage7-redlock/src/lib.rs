//! Stage 7: Redlock over N independent Redis masters. (Being written.)
