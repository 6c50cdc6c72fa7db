//! Stage 8: fencing tokens checked by the protected resource. (Being written.)
