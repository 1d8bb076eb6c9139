//! An agent run unattended sometimes stops to ask ("Should I use X or Y?",
//! "Do you want me to proceed?") instead of doing the work. Nobody will
//! answer, so such an ending is no signal, and the next prompt says so.
//!
//! Detection is conservative: only the last non-empty line of the final
//! message counts, and only when it ends in `?` outside a code block, a
//! quote or quotation marks. A question asked along the way, quoted or
//! rhetorical, in otherwise finished work is not one; and a final message
//! with a promise is never read for questions at all.

/// The longest question quoted back in a reason.
const MAX_QUESTION: usize = 300;

/// The question `final_text` ends with, if it ends with one.
pub fn trailing_question(final_text: &str) -> Option<String> {
    let mut in_fence: Option<&str> = None;
    let mut last: Option<&str> = None;
    for line in final_text.lines() {
        let trimmed = line.trim();
        let fence = ["```", "~~~"]
            .into_iter()
            .find(|fence| trimmed.starts_with(fence));
        match (in_fence, fence) {
            (None, Some(fence)) => {
                in_fence = Some(fence);
                last = None;
                continue;
            }
            (Some(open), Some(fence)) if open == fence => {
                in_fence = None;
                // A message that ends with a code block ends with no question.
                last = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, None) => {}
        }
        if !trimmed.is_empty() {
            last = Some(trimmed);
        }
    }
    if in_fence.is_some() {
        return None;
    }
    let line = last?;
    if line.starts_with('>') || line.starts_with('|') || line.starts_with("    ") {
        return None;
    }
    let line = line.trim_end_matches(['*', '_']).trim_end();
    if !line.ends_with('?') {
        return None;
    }
    let question = last_sentence(line);
    let question = strip_list_marker(question).trim_start_matches(['*', '_']);
    if question.len() < 2 {
        return None;
    }
    Some(shorten(question))
}

/// The last sentence of `line`, which ends in `?`.
fn last_sentence(line: &str) -> &str {
    let body = &line[..line.len() - 1];
    let start = body
        .char_indices()
        .filter(|(i, c)| {
            matches!(c, '.' | '!' | '?' | ':')
                && body[i + c.len_utf8()..].starts_with(char::is_whitespace)
        })
        .map(|(i, c)| i + c.len_utf8())
        .next_back()
        .unwrap_or(0);
    line[start..].trim()
}

fn strip_list_marker(text: &str) -> &str {
    let text = text.trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = text.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = text[digits..]
            .strip_prefix(". ")
            .or_else(|| text[digits..].strip_prefix(") "))
    {
        return rest.trim_start();
    }
    text
}

fn shorten(text: &str) -> String {
    if text.len() <= MAX_QUESTION {
        return text.to_owned();
    }
    let mut end = MAX_QUESTION;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_question_is_found() {
        assert_eq!(
            trailing_question("I looked at the code.\n\nShould I use X or Y?").as_deref(),
            Some("Should I use X or Y?")
        );
        assert_eq!(
            trailing_question("Two ways exist. Do you want me to proceed?  \n\n").as_deref(),
            Some("Do you want me to proceed?")
        );
        assert_eq!(
            trailing_question("- **Which database should I use?**").as_deref(),
            Some("Which database should I use?")
        );
        assert_eq!(
            trailing_question("Options: a or b? I can do either: which one?").as_deref(),
            Some("which one?")
        );
    }

    #[test]
    fn questions_inside_finished_work_are_not_endings() {
        // Rhetorical, then an answer.
        assert_eq!(
            trailing_question("Why did the test fail? The fixture was stale. Fixed it."),
            None
        );
        // Quoted.
        assert_eq!(
            trailing_question("Done.\n\n> Should the cache expire?"),
            None
        );
        assert_eq!(
            trailing_question("The issue asked \"should the cache expire?\""),
            None
        );
        // In a code block, even at the very end.
        assert_eq!(
            trailing_question("Added the prompt:\n```\nContinue?\n```"),
            None
        );
        assert_eq!(trailing_question("```\nunclosed?"), None);
        assert_eq!(trailing_question("All done, tests pass."), None);
        assert_eq!(trailing_question(""), None);
        assert_eq!(trailing_question("?"), None);
    }

    #[test]
    fn long_questions_are_shortened() {
        let long = format!("{}?", "why ".repeat(200));
        let question = trailing_question(&long).unwrap();
        assert!(question.len() <= MAX_QUESTION + '…'.len_utf8());
        assert!(question.ends_with('…'));
    }
}
