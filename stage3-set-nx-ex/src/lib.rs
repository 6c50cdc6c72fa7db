//! Stage 3: SET key value NX PX in one command; DEL to release. (Being written.)
