//! Stage 4: a unique value per acquisition; GET, compare, DEL. (Being written.)
