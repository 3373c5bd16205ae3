//! The lexicons: pure functions that pick errors, identifiers, files, commands and user intents out
//! of block text, verbatim. Choosing among many (caps, diversity, recency) is the record builder's job.

pub mod commands;
pub mod errors;
pub mod files;
pub mod identifiers;
pub mod user;

/// The classes of a byte for the two token lexicons, held in one table so that one scan finds the
/// runs of both ([`tokens`]). Most runs are plain words, told apart by their classes at no cost
/// beyond the scan that finds them.
pub mod class {
    /// Of an identifier-shaped token: ASCII letters and digits, `_$.-`.
    pub const IDENTIFIER: u8 = 1;
    /// Of a path-shaped token: ASCII letters and digits, `_./~@+-`.
    pub const PATH: u8 = 2;
    /// A capital, a digit, `_` or `$`: an identifier-shaped run holding one is no plain word.
    pub const IDENTIFIER_MARK: u8 = 4;
    /// `/` or `.`: a path-shaped run holding neither is no path.
    pub const PATH_MARK: u8 = 8;
    /// `.` or `-`: what an identifier-shaped run is trimmed of and cut at.
    pub const DOT_OR_DASH: u8 = 16;
}

static CLASSES: [u8; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if byte.is_ascii_alphanumeric() {
            table[b] = class::IDENTIFIER | class::PATH;
        }
        if byte.is_ascii_uppercase() || byte.is_ascii_digit() {
            table[b] |= class::IDENTIFIER_MARK;
        }
        b += 1;
    }
    table[b'_' as usize] = class::IDENTIFIER | class::PATH | class::IDENTIFIER_MARK;
    table[b'$' as usize] = class::IDENTIFIER | class::IDENTIFIER_MARK;
    table[b'-' as usize] = class::IDENTIFIER | class::PATH | class::DOT_OR_DASH;
    table[b'.' as usize] = class::IDENTIFIER | class::PATH | class::PATH_MARK | class::DOT_OR_DASH;
    table[b'/' as usize] = class::PATH | class::PATH_MARK;
    table[b'~' as usize] = class::PATH;
    table[b'@' as usize] = class::PATH;
    table[b'+' as usize] = class::PATH;
    table
};

/// A maximal run of bytes of some classes, with the classes any of its bytes has and those all of
/// them have.
#[derive(Clone, Copy)]
pub struct Run<'t> {
    pub text: &'t str,
    pub any: u8,
    pub all: u8,
}

/// Each maximal run in `text` of bytes of any of the classes `of`, in order. The bytes are ASCII,
/// so every run lies on character boundaries, and a non-ASCII character separates runs as any
/// other byte outside `of`.
pub fn runs<'t>(text: &'t str, of: u8, mut found: impl FnMut(Run<'t>)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if CLASSES[bytes[i] as usize] & of == 0 {
            i += 1;
            continue;
        }
        let start = i;
        let (mut any, mut all) = (0, u8::MAX);
        while let Some(&b) = bytes.get(i) {
            let class = CLASSES[b as usize];
            if class & of == 0 {
                break;
            }
            any |= class;
            all &= class;
            i += 1;
        }
        found(Run {
            text: &text[start..i],
            any,
            all,
        });
    }
}

/// The identifiers and the paths of `text`, each kind in order, in one scan.
pub fn tokens<'t>(
    text: &'t str,
    mut identifier: impl FnMut(&'t str),
    mut path: impl FnMut(&'t str),
) {
    runs(text, class::IDENTIFIER | class::PATH, |run| {
        // A plain word (most runs): neither lexicon's.
        if run.any & (class::IDENTIFIER_MARK | class::PATH_MARK | class::DOT_OR_DASH) == 0 {
            return;
        }
        within(run, class::IDENTIFIER, |run| {
            identifiers::in_run(run, &mut identifier)
        });
        within(run, class::PATH, |run| files::in_run(run, &mut path));
    });
}

/// The runs of class `of` within `run` (most often `run` itself).
fn within<'t>(run: Run<'t>, of: u8, mut found: impl FnMut(Run<'t>)) {
    if run.all & of != 0 {
        found(run)
    } else {
        runs(run.text, of, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_maximal_and_say_which_classes_they_hold() {
        let mut seen = Vec::new();
        runs("plain x_y, é9a.b\tend_ a/b$c", class::IDENTIFIER, |run| {
            seen.push((run.text, run.any & class::IDENTIFIER_MARK != 0))
        });
        assert_eq!(
            seen,
            [
                ("plain", false),
                ("x_y", true),
                ("9a.b", true),
                ("end_", true),
                ("a", false),
                ("b$c", true)
            ]
        );
        let mut none = Vec::new();
        runs("", class::PATH, |run| none.push(run.text));
        runs(" é, $", class::PATH, |run| none.push(run.text));
        assert!(none.is_empty());
    }

    #[test]
    fn one_scan_finds_what_each_lexicon_finds_alone() {
        let text = "see src/main.rs:12 and parseFoo@v1.2.3, ~/x/$HOME_DIR/a.py e2c70f2e+0x811c9dc5 \
                    019b7f94-51b4-7593-922e-ba12b5b73b52/README.md plain words";
        let (mut ids, mut paths) = (Vec::new(), Vec::new());
        tokens(text, |t| ids.push(t), |p| paths.push(p));
        let mut alone = Vec::new();
        identifiers::identifiers(text, |t| alone.push(t));
        assert_eq!(ids, alone);
        alone.clear();
        files::paths_in(text, |p| alone.push(p));
        assert_eq!(paths, alone);
        assert_eq!(
            ids,
            [
                "parseFoo",
                "v1.2.3",
                "$HOME_DIR",
                "e2c70f2e",
                "0x811c9dc5",
                "019b7f94-51b4-7593-922e-ba12b5b73b52"
            ]
        );
        assert_eq!(
            paths,
            [
                "src/main.rs",
                "~/x/",
                "HOME_DIR/a.py",
                "019b7f94-51b4-7593-922e-ba12b5b73b52/README.md"
            ]
        );
    }
}
