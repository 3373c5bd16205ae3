//! The user-message lexicon: the first non-empty line of a message, whitespace collapsed, clipped.

/// The first non-empty line of `text`, whitespace collapsed, at most `max` characters.
pub fn first_line(text: &str, max: usize) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let collapsed: Vec<&str> = line.split_whitespace().collect();
    Some(collapsed.join(" ").chars().take(max).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_non_empty_line_collapsed_and_clipped() {
        assert_eq!(
            super::first_line("\n  \n  fix   the\tbug \nmore", 200).as_deref(),
            Some("fix the bug")
        );
        assert_eq!(
            super::first_line("é".repeat(300).as_str(), 200)
                .unwrap()
                .chars()
                .count(),
            200
        );
        assert_eq!(super::first_line(" \n", 200), None);
    }
}
