//! What a prompt says of questions: how an agent asks a person when the
//! run lets questions reach one (and that nobody will answer when it does
//! not), and every question of the story asked so far with its answer,
//! word for word, under a heading of its own.

/// One question an attempt at the story ended with, and the answer a
/// person gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The attempt that asked.
    pub attempt: u32,
    pub question: String,
    pub answer: String,
}

/// The `asking` placeholder: one sentence for the "How to work" list.
pub(super) fn asking(questions: bool) -> String {
    if questions {
        "If you cannot go on without a decision only a person can make, end your final message with that one question, and no promise: the story waits for an answer while the other stories go on, and the next attempt is given it. Any other choice that is open, make yourself and go on.".to_owned()
    } else {
        "Nobody will answer a question while you work: you run unattended. Where a choice is open, make it yourself and go on.".to_owned()
    }
}

/// The `## Questions and answers` section, or nothing when the story has
/// none.
pub(super) fn answers_section(exchange: &[Exchange]) -> String {
    if exchange.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Questions and answers\n\nEarlier attempts at this story ended with a question for a person. Here is each one with the answer given, word for word, oldest first; build on the answers. Those attempts' changes were set aside, so start from the files as they are now.\n",
    );
    for (index, exchange) in exchange.iter().enumerate() {
        out.push_str(&format!(
            "\n### Question {} (attempt {})\n\n",
            index + 1,
            exchange.attempt
        ));
        quote(&mut out, &exchange.question);
        out.push_str("\nAnswer:\n\n");
        quote(&mut out, &exchange.answer);
    }
    out
}

fn quote(out: &mut String, text: &str) {
    for line in text.trim().lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            out.push_str(&format!("> {line}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_question_comes_with_its_answer_in_order() {
        let section = answers_section(&[
            Exchange {
                attempt: 1,
                question: "CSV or JSON?".into(),
                answer: "CSV.\n\nWith a header line.".into(),
            },
            Exchange {
                attempt: 3,
                question: "Which separator?".into(),
                answer: "A semicolon".into(),
            },
        ]);
        assert!(section.starts_with("## Questions and answers\n"));
        let first = section.find("> CSV or JSON?").unwrap();
        let answer = section.find("> CSV.\n>\n> With a header line.\n").unwrap();
        let second = section.find("### Question 2 (attempt 3)").unwrap();
        assert!(first < answer && answer < second, "{section}");
        assert_eq!(answers_section(&[]), "");
    }
}
