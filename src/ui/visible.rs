//! Text from outside shown as data. An agent's reason, its output, a
//! file's lines can hold terminal control sequences: `ESC]0;…BEL` retitles
//! the window, `ESC[2J` clears the screen, a lone carriage return writes
//! over what a line said. Printed raw, they act on the user's terminal
//! instead of being read. Every view (the console, `status`, `log`, `show`,
//! the loop screen, the web pages) shows such characters in one visible
//! form instead: `\x1b` for ESC, `\x07` for BEL, `\x00` for NUL, `\x7f`,
//! and `\u{9b}` for the C1 controls, which some terminals obey too. A line
//! break, a tab, and the carriage return of a CRLF stay as they are.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character but a line break, a tab and the
/// carriage return of a CRLF written out visibly.
pub fn visible(text: &str) -> Cow<'_, str> {
    shown(text, false)
}

/// A line git-ralph prints: like [`visible`], except that, when `styled`,
/// the colour codes of git-ralph's own styles (bold, dim, red, green,
/// yellow and their reset) are left to colour it. They change no more than
/// a colour, whoever wrote them.
pub(crate) fn visible_styled(line: &str, styled: bool) -> Cow<'_, str> {
    shown(line, styled)
}

fn shown(text: &str, styled: bool) -> Cow<'_, str> {
    let crlf = |at: usize, c: char| c == '\r' && text[at + 1..].starts_with('\n');
    if !text
        .char_indices()
        .any(|(at, c)| is_hidden(c) && !crlf(at, c))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if styled
            && c == '\u{1b}'
            && let Some(len) = own_style(rest)
        {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        let crlf = c == '\r' && rest[1..].starts_with('\n');
        match c {
            c if crlf || !is_hidden(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// A character a terminal would act on rather than show (CR included: a
/// CRLF is let through where it is met).
fn is_hidden(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// The length of the colour code `text` starts with, when it is one the
/// styles of `ui` write: `ESC [ n ; … m` with each `n` a reset, bold, dim,
/// or a red, green or yellow foreground.
fn own_style(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\u{1b}[")?;
    let end = params.find('m')?;
    let params = &params[..end];
    let known = params
        .split(';')
        .all(|n| matches!(n, "" | "0" | "1" | "2" | "22" | "31" | "32" | "33" | "39"));
    known.then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(
            visible("\u{1b}]0;pwned\u{7}\u{1b}[2Jgone\0\r!\u{7f}\u{9b}"),
            "\\x1b]0;pwned\\x07\\x1b[2Jgone\\x00\\x0d!\\x7f\\u{9b}"
        );
    }

    #[test]
    fn lines_tabs_and_crlf_stay_and_plain_text_is_not_copied() {
        assert!(matches!(
            visible("a\tb\r\nc\n"),
            Cow::Borrowed("a\tb\r\nc\n")
        ));
        assert!(matches!(visible("héllo ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_style_of_the_ui_passes_as_it_is() {
        let on = console::Style::new().force_styling(true);
        for style in [
            on.clone().bold(),
            on.clone().dim(),
            on.clone().green(),
            on.clone().red().bold(),
            on.clone().yellow(),
        ] {
            let line = format!("{} rest", style.apply_to("styled"));
            assert!(line.contains('\u{1b}'), "{line:?}");
            assert_eq!(visible_styled(&line, true), line);
        }
    }

    #[test]
    fn only_the_own_colours_pass_and_only_when_styled() {
        let ours = "\u{1b}[31m\u{1b}[1m✗\u{1b}[0m \u{1b}[2mreason\u{1b}[0m";
        assert_eq!(visible_styled(ours, true), ours);
        assert_eq!(
            visible_styled(ours, false),
            "\\x1b[31m\\x1b[1m✗\\x1b[0m \\x1b[2mreason\\x1b[0m"
        );
        assert_eq!(
            visible_styled("\u{1b}[8mhidden \u{1b}[2J\u{1b}[", true),
            "\\x1b[8mhidden \\x1b[2J\\x1b["
        );
    }
}
