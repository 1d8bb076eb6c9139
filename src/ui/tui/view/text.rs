//! Fitting text to the loop screen: lines wrapped at word boundaries (a
//! word longer than the row is the only thing split), a line of parts that
//! leaves out the least important ones rather than cutting the rest, and a
//! cut with an ellipsis as the last resort.

/// Cut `text` to `width` characters with an ellipsis, its control
/// characters visible.
pub fn fit(text: &str, width: usize) -> String {
    let text = clean(text);
    if text.chars().count() <= width {
        return text;
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `line` with tabs as spaces and every other control character shown as
/// data ([`crate::ui::visible`]), so that nothing moves the cursor and
/// nothing is hidden.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in crate::ui::visible(line).chars() {
        match c {
            '\t' => out.push_str("    "),
            '\r' | '\n' => {}
            c => out.push(c),
        }
    }
    out
}

/// Split a line into rows of at most `width` characters, breaking between
/// words (runs of spaces inside a row are kept); a word longer than a row
/// is split.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let clean = clean(line);
    if clean.chars().count() <= width {
        return vec![clean];
    }
    let mut rows: Vec<String> = Vec::new();
    let mut row: Vec<char> = Vec::new();
    for token in clean.split_inclusive(' ') {
        let chars: Vec<char> = token.chars().collect();
        let word = chars.iter().take_while(|c| **c != ' ').count();
        if word == 0 && row.is_empty() && !rows.is_empty() {
            // No row begins with the spaces between two words.
            continue;
        }
        if row.len() + word <= width {
            row.extend(&chars);
            continue;
        }
        if row.iter().any(|c| *c != ' ') {
            rows.push(trimmed(&row));
            row.clear();
        }
        // The word alone is longer than what is left: split it.
        let mut rest = &chars[..];
        let mut left = word;
        while row.len() + left > width {
            if row.len() >= width {
                rows.push(trimmed(&row));
                row.clear();
                continue;
            }
            let room = width - row.len();
            row.extend(&rest[..room]);
            rest = &rest[room..];
            left -= room;
            rows.push(trimmed(&row));
            row.clear();
        }
        row.extend(rest);
    }
    if row.iter().any(|c| *c != ' ') || rows.is_empty() {
        rows.push(trimmed(&row));
    }
    rows
}

fn trimmed(row: &[char]) -> String {
    row.iter().collect::<String>().trim_end().to_owned()
}

/// `parts` joined with ` · `, leaving out the least important (the
/// highest number) until they fit in `width`; the one left is cut. Returns
/// the indexes of the parts kept, in order.
pub fn keep_parts(parts: &[(u8, String)], width: usize) -> Vec<usize> {
    let mut kept: Vec<usize> = (0..parts.len())
        .filter(|at| !parts[*at].1.is_empty())
        .collect();
    let len = |kept: &[usize]| -> usize {
        let text: usize = kept.iter().map(|at| parts[*at].1.chars().count()).sum();
        text + 3 * kept.len().saturating_sub(1)
    };
    while len(&kept) > width && kept.len() > 1 {
        let least = kept
            .iter()
            .enumerate()
            .max_by_key(|(order, at)| (parts[**at].0, *order))
            .map(|(order, _)| order);
        match least {
            Some(order) if parts[kept[order]].0 > 0 => {
                kept.remove(order);
            }
            _ => break,
        }
    }
    kept
}

/// The agent as a few characters: a preset's name, or the program of a
/// command (`/path/to/agents/chatty.sh --verbose` → `chatty.sh`; of a
/// shell line, the program its last command runs).
pub fn agent_short(agent: &str) -> String {
    let last = agent
        .rsplit([';', '|', '&'])
        .map(str::trim)
        .find(|part| !part.is_empty())
        .unwrap_or(agent);
    let words: Vec<&str> = last
        .split_whitespace()
        .filter(|word| *word != "exec" && !word.contains('='))
        .collect();
    let program = words
        .iter()
        .find(|word| word.contains('/'))
        .or(words.first())
        .copied()
        .unwrap_or(last);
    let name = program
        .trim_matches(|c| c == '\'' || c == '"')
        .rsplit('/')
        .next()
        .unwrap_or(program);
    fit(name, 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_between_words() {
        assert_eq!(
            wrap("a rather long line at eighty", 10),
            ["a rather", "long line", "at eighty"]
        );
        assert_eq!(
            wrap("  │ indented output here", 12),
            ["  │ indented", "output here"]
        );
        assert_eq!(wrap("abcdefghijkl xy", 5), ["abcde", "fghij", "kl xy"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("tab\there", 40), ["tab    here"]);
    }

    #[test]
    fn parts_are_left_out_least_important_first() {
        let parts = vec![
            (0, "story 2/3".to_owned()),
            (2, "attempt 1/4".to_owned()),
            (0, "01:23".to_owned()),
            (3, "1.5k tok · $0.05".to_owned()),
            (1, "claude".to_owned()),
        ];
        assert_eq!(keep_parts(&parts, 80), [0, 1, 2, 3, 4]);
        assert_eq!(keep_parts(&parts, 40), [0, 1, 2, 4]);
        assert_eq!(keep_parts(&parts, 26), [0, 2, 4]);
        assert_eq!(keep_parts(&parts, 5), [0, 2]);
    }

    #[test]
    fn an_agent_command_is_named_by_its_program() {
        assert_eq!(agent_short("claude"), "claude");
        assert_eq!(agent_short("/x/agents/chatty.sh --verbose"), "chatty.sh");
        assert_eq!(agent_short("python3 /x/agent.py"), "agent.py");
        assert_eq!(agent_short("my-agent --stdin"), "my-agent");
        assert_eq!(
            agent_short("echo $$ > /tmp/pid; env | sort > /tmp/env; exec '/x/fake-agent'"),
            "fake-agent"
        );
    }
}
