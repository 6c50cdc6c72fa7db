//! Stage 5: a unique value; compare-and-delete in one Lua script. (Being written.)
