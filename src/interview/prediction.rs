//! The reader's prediction: which runs will show what the question watches
//! for, typed as stage numbers (`3 5 6`, `3,5`) or letters (`a c`), and how
//! it compares with what the runs really showed.

use std::collections::BTreeSet;

/// The keys the reader chose, checked against the question's choices.
pub fn parse(input: &str, keys: &[String]) -> Result<BTreeSet<String>, String> {
    let mut chosen = BTreeSet::new();
    let words = input
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty());
    for word in words {
        let word = word.to_ascii_lowercase();
        let word = word.strip_prefix("stage").unwrap_or(&word);
        if word == "none" || word == "-" {
            continue;
        }
        if keys.iter().any(|k| k == word) {
            chosen.insert(word.to_owned());
        } else {
            return Err(format!(
                "`{word}` is not one of the choices ({}); type some of them, or Enter for none",
                keys.join(" ")
            ));
        }
    }
    Ok(chosen)
}

/// One run's line in the comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// The prediction was right about this run.
    Right,
    /// The prediction said yes or no and the run said the opposite.
    Wrong,
    /// No prediction was made, or the run did not happen.
    Unjudged,
}

/// How one run compares with the prediction.
pub fn mark(predicted: Option<&BTreeSet<String>>, key: &str, observed: Option<bool>) -> Mark {
    match (predicted, observed) {
        (Some(chosen), Some(yes)) if chosen.contains(key) == yes => Mark::Right,
        (Some(_), Some(_)) => Mark::Wrong,
        _ => Mark::Unjudged,
    }
}

/// `3 5 6`, or `none`.
pub fn list(keys: &BTreeSet<String>) -> String {
    if keys.is_empty() {
        "none".to_owned()
    } else {
        keys.iter().cloned().collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn stage_numbers_in_any_form_are_read() {
        let chosen = parse("3, stage5  6", &keys(&["3", "4", "5", "6"])).expect("valid");
        assert_eq!(list(&chosen), "3 5 6");
    }

    #[test]
    fn an_empty_line_or_none_is_a_prediction_of_none() {
        assert!(parse("", &keys(&["1", "3"])).expect("valid").is_empty());
        assert!(parse("none", &keys(&["1", "3"])).expect("valid").is_empty());
    }

    #[test]
    fn a_choice_that_is_not_offered_is_refused_with_the_choices() {
        let error = parse("3 9", &keys(&["3", "4"])).expect_err("9 is not offered");
        assert!(error.contains("`9`") && error.contains("3 4"), "{error}");
    }

    #[test]
    fn letters_are_read_in_either_case() {
        let chosen = parse("A c", &keys(&["a", "b", "c"])).expect("valid");
        assert_eq!(list(&chosen), "a c");
    }

    #[test]
    fn a_run_is_right_when_the_prediction_and_the_verdict_agree() {
        let chosen: BTreeSet<String> = ["3".to_owned()].into();
        assert_eq!(mark(Some(&chosen), "3", Some(true)), Mark::Right);
        assert_eq!(mark(Some(&chosen), "4", Some(false)), Mark::Right);
        assert_eq!(mark(Some(&chosen), "4", Some(true)), Mark::Wrong);
        assert_eq!(mark(None, "3", Some(true)), Mark::Unjudged);
        assert_eq!(mark(Some(&chosen), "3", None), Mark::Unjudged);
    }
}
