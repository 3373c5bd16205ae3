//! A record's spans as its line writes them, each serialized once and kept one after another in a
//! single string: a long session's records each re-list every earlier span, and copying tens of
//! thousands of separate strings into every one of them cost more than the copy itself.

use super::Map;

/// The spans of a record being built, in the order their blocks came, the latest span of each
/// block id in the place of its first.
#[derive(Default, Clone)]
pub struct SpanList {
    /// The spans' JSON, `,` between them: what goes between a record's `"spans":[` and `]`.
    json: String,
    /// Where each span's JSON ends in `json`.
    ends: Vec<usize>,
    /// Which span is each block id's.
    at: Map<String, usize>,
}

impl SpanList {
    /// Set `block_id`'s span to `json` (a span object): appended for a new block id, in its place
    /// for one listed already.
    pub fn set(&mut self, block_id: &str, json: &str) {
        let Some(&n) = self.at.get(block_id) else {
            if !self.ends.is_empty() {
                self.json.push(',');
            }
            self.json.push_str(json);
            self.at.insert(block_id.to_string(), self.ends.len());
            self.ends.push(self.json.len());
            return;
        };
        let start = match n {
            0 => 0,
            n => self.ends[n - 1] + 1,
        };
        let old = self.ends[n] - start;
        self.json.replace_range(start..self.ends[n], json);
        for end in &mut self.ends[n..] {
            *end = *end - old + json.len();
        }
    }

    /// The spans, `,` between them.
    pub fn json(&self) -> &str {
        &self.json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_keep_the_place_of_their_block_ids_first_span() {
        let mut spans = SpanList::default();
        assert_eq!(spans.json(), "");
        spans.set("a", r#"{"a":1}"#);
        assert_eq!(spans.json(), r#"{"a":1}"#);
        spans.set("b", r#"{"b":2}"#);
        spans.set("c", r#"{"c":3}"#);
        // Longer, shorter, of the same length, first, middle and last.
        spans.set("b", r#"{"b":22222}"#);
        assert_eq!(spans.json(), r#"{"a":1},{"b":22222},{"c":3}"#);
        spans.set("a", r#"{}"#);
        assert_eq!(spans.json(), r#"{},{"b":22222},{"c":3}"#);
        spans.set("c", r#"{"c":4}"#);
        spans.set("b", r#"{"b":5}"#);
        assert_eq!(spans.json(), r#"{},{"b":5},{"c":4}"#);
        spans.set("d", r#"{"d":6}"#);
        spans.set("a", r#"{"a":7}"#);
        assert_eq!(spans.json(), r#"{"a":7},{"b":5},{"c":4},{"d":6}"#);
    }
}
