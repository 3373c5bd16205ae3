//! Numbers for people: byte sizes in binary units and ratios.

/// `1536` → `1.5 KiB`; below 1 KiB, plain bytes.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `a / b`, or 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// `  [2 generations]` after a session kept in earlier versions too; nothing when it has none.
pub fn generations(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "  [1 generation]".into(),
        n => format!("  [{n} generations]"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_well() {
        assert_eq!(super::bytes(0), "0 B");
        assert_eq!(super::bytes(1536), "1.5 KiB");
        assert_eq!(super::bytes(3 << 30), "3.0 GiB");
        assert_eq!(super::ratio(1, 0), 0.0);
    }
}
