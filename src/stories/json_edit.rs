//! Change one value inside JSON text and leave every other byte as the
//! author wrote it: their indentation, key order, number spelling and
//! escapes. git-ralph puts back a `passes` an agent set on a story it was
//! not given; rewriting the whole file through a JSON library would turn
//! that one-word change into a diff of the whole file.

/// One step into a JSON value: a key of an object, an index of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The byte range of the value at `path` in `text`, if the text is JSON
/// and the path leads to a value.
pub fn span(text: &str, path: &[Step<'_>]) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    for step in path {
        at = match (*step, bytes.get(at)?) {
            (Step::Key(key), b'{') => find_key(text, at, key)?,
            (Step::Index(index), b'[') => find_index(bytes, at, index)?,
            _ => return None,
        };
    }
    let end = value_end(bytes, at)?;
    Some(at..end)
}

/// `text` with the value at `path` replaced by `raw` (JSON text), or
/// `None` when there is no such value.
pub fn replace(text: &str, path: &[Step<'_>], raw: &str) -> Option<String> {
    let range = span(text, path)?;
    let mut out = String::with_capacity(text.len() + raw.len());
    out.push_str(&text[..range.start]);
    out.push_str(raw);
    out.push_str(&text[range.end..]);
    Some(out)
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// The start of the value of `key` in the object opening at `open`.
fn find_key(text: &str, open: usize, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, open + 1);
    if bytes.get(at) == Some(&b'}') {
        return None;
    }
    loop {
        let name_end = string_end(bytes, at)?;
        let name: String = serde_json::from_str(&text[at..name_end]).ok()?;
        at = skip_space(bytes, name_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let value = skip_space(bytes, at + 1);
        if name == key {
            return Some(value);
        }
        at = skip_space(bytes, value_end(bytes, value)?);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            _ => return None,
        }
    }
}

/// The start of element `index` of the array opening at `open`.
fn find_index(bytes: &[u8], open: usize, index: usize) -> Option<usize> {
    let mut at = skip_space(bytes, open + 1);
    if bytes.get(at) == Some(&b']') {
        return None;
    }
    for _ in 0..index {
        at = skip_space(bytes, value_end(bytes, at)?);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            _ => return None,
        }
    }
    Some(at)
}

/// Where the string opening at `at` ends (after its closing quote).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Where the value starting at `at` ends.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(bytes.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Step::{Index, Key};
    use super::*;

    const PRD: &str = "{\n  \"project\": \"x\",\n  \"userStories\": [\n    {\"id\": \"US-1\", \"title\": \"a \\\"quoted\\\" [title]\", \"passes\": true},\n    {\n      \"id\": \"US-2\",\n      \"passes\"  :  true ,\n      \"notes\": {\"passes\": 1}\n    }\n  ]\n}\n";

    #[test]
    fn one_value_changes_and_every_other_byte_stays() {
        let path = [Key("userStories"), Index(1), Key("passes")];
        let edited = replace(PRD, &path, "false").expect("the value is there");
        assert_eq!(
            edited,
            PRD.replacen("\"passes\"  :  true", "\"passes\"  :  false", 1)
        );
        let value: serde_json::Value = serde_json::from_str(&edited).unwrap();
        assert_eq!(value["userStories"][1]["passes"], false);
        assert_eq!(value["userStories"][0]["passes"], true);
        assert_eq!(value["userStories"][1]["notes"]["passes"], 1);
    }

    #[test]
    fn strings_with_brackets_and_quotes_are_stepped_over() {
        let path = [Key("userStories"), Index(0), Key("passes")];
        assert_eq!(
            replace(PRD, &path, "false")
                .map(|t| t.contains("\"a \\\"quoted\\\" [title]\", \"passes\": false")),
            Some(true)
        );
    }

    #[test]
    fn a_path_that_leads_nowhere_is_none() {
        assert_eq!(span(PRD, &[Key("userStories"), Index(2)]), None);
        assert_eq!(span(PRD, &[Key("missing")]), None);
        assert_eq!(span(PRD, &[Index(0)]), None);
        assert_eq!(span("{\"a\": [1, 2", &[Key("a"), Index(1), Key("b")]), None);
        assert_eq!(span("", &[Key("a")]), None);
    }
}
