//! Reading a session file line by line for its metadata, with memory capped: a line longer than
//! the cap is skipped without being held (base64 images make lines of many megabytes, and no title
//! or id lives in one of them).

use std::io::{self, BufRead};

/// Lines longer than this are skipped by metadata readers.
pub const MAX_META_LINE: usize = 4 << 20;

/// Call `each` with every line of `input` (without its `\n`) no longer than `max` bytes, until it
/// returns `false` or the input ends.
pub fn for_each_line(
    input: &mut dyn BufRead,
    max: usize,
    mut each: impl FnMut(&[u8]) -> bool,
) -> io::Result<()> {
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if !overlong && !line.is_empty() {
                each(&line);
            }
            return Ok(());
        }
        let (chunk, end) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..at], Some(at + 1)),
            None => (buf, None),
        };
        if !overlong {
            if line.len() + chunk.len() > max {
                overlong = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(buf.len());
        input.consume(used);
        if end.is_some() {
            if !overlong && !each(&line) {
                return Ok(());
            }
            line.clear();
            overlong = false;
        }
    }
}

/// The first line of `text` that holds more than whitespace, trimmed and cut to 200 characters.
pub fn title_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut reader = io::BufReader::with_capacity(3, input);
        for_each_line(&mut reader, max, |l| {
            out.push(l.to_vec());
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn overlong_lines_are_skipped_and_a_last_line_without_newline_counts() {
        assert_eq!(
            lines(b"ab\ncdefgh\nij", 4),
            vec![b"ab".to_vec(), b"ij".to_vec()]
        );
        assert_eq!(lines(b"", 4), Vec::<Vec<u8>>::new());
        assert_eq!(lines(b"\n\n", 4), vec![Vec::<u8>::new(), Vec::new()]);
    }

    #[test]
    fn titles_are_the_first_non_blank_line() {
        assert_eq!(
            title_line("\n  fix the build \nmore"),
            Some("fix the build".into())
        );
        assert_eq!(title_line(" \n"), None);
        assert_eq!(title_line(&"é".repeat(300)).unwrap().chars().count(), 200);
    }
}
