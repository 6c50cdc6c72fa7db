//! Stage 2: SETNX then EXPIRE (two commands); DEL to release. (Being written.)
