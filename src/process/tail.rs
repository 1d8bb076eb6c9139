//! The end of an output, kept within a bound however much went through:
//! what error messages, reports and prompts quote of a child's output.

/// The last `max` bytes of a stream, however much went through it.
#[derive(Debug, Clone)]
pub struct Tail {
    bytes: Vec<u8>,
    max: usize,
}

impl Tail {
    pub fn new(max: usize) -> Tail {
        Tail {
            bytes: Vec::new(),
            max,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        // Trimmed in batches, so a stream of small chunks is not quadratic.
        if self.bytes.len() > self.max.saturating_mul(2).max(self.max + 4096) {
            let excess = self.bytes.len() - self.max;
            self.bytes.drain(..excess);
        }
    }

    /// The kept end, decoded lossily.
    pub fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.max);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        // A cut inside a character shows as a replacement mark: drop it.
        match text.strip_prefix('\u{FFFD}') {
            Some(rest) if start > 0 => rest.to_owned(),
            _ => text.into_owned(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// The longest suffix of `text` that fits in `max` bytes, cut on a
/// character boundary.
pub fn tail_str(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The end of `text` for a report: trailing space trimmed, and `…` in front
/// when something was cut.
pub fn report_tail(text: &str, max: usize) -> String {
    let trimmed = text.trim_end();
    let tail = tail_str(trimmed, max);
    if tail.len() == trimmed.len() {
        tail.to_owned()
    } else {
        format!("…{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_stay_bounded_and_cut_on_char_boundaries() {
        let mut tail = Tail::new(4);
        for _ in 0..10_000 {
            tail.push(b"abcdef");
        }
        assert_eq!(tail.text(), "cdef");
        let mut utf8 = Tail::new(3);
        utf8.push("aé€".as_bytes());
        assert_eq!(utf8.text(), "€");
        assert_eq!(tail_str("héllo", 4), "llo");
        assert_eq!(report_tail("short\n", 10), "short");
        assert_eq!(report_tail("0123456789", 3), "…789");
    }
}
