//! The small CSV dialect every text input shares: comma-separated fields, blank lines and
//! lines starting with `#` skipped, and an optional header on the first other line. A UTF-8
//! byte-order mark at the start (as spreadsheets write it) is ignored.

/// A CSV header: every field a name (a letter first, then letters, digits or underscores) that
/// does not parse as a number (`inf`, `nan`). `0x1p3` or `1O` are malformed numbers, not names.
pub(crate) fn is_header(fields: &[&str]) -> bool {
    fields.iter().all(|f| {
        f.starts_with(|c: char| c.is_ascii_alphabetic())
            && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && f.parse::<f32>().is_err()
    })
}

/// The data lines of `text`: (1-based line number, trimmed fields), without a leading
/// byte-order mark, blank lines, comments and a leading header.
pub(crate) fn records(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut first = true;
    text.lines().enumerate().filter_map(move |(k, line)| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        (!(std::mem::take(&mut first) && is_header(&fields))).then_some((k + 1, fields))
    })
}

/// `n` finite numbers, or what was wrong with them.
pub(crate) fn numbers<const N: usize>(fields: &[&str]) -> Result<[f32; N], String> {
    if fields.len() != N {
        return Err(format!(
            "expected {N} numbers, found {} fields",
            fields.len()
        ));
    }
    let mut v = [0.0f32; N];
    for (slot, f) in v.iter_mut().zip(fields) {
        *slot = f
            .parse::<f32>()
            .ok()
            .filter(|x| x.is_finite() && x.abs() <= crate::limits::MAX_COORDINATE)
            .ok_or_else(|| {
                format!(
                    "`{f}` is not a finite number within {:e}",
                    crate::limits::MAX_COORDINATE
                )
            })?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_names_and_malformed_numbers_are_not() {
        assert!(is_header(&["x0", "y0", "z_0"]));
        for bad in ["0x1p3", "1O", "inf", "nan", "1e5", "-x", ""] {
            assert!(!is_header(&["x", bad]), "{bad}");
        }
        let r: Vec<_> = records("# c\nx,y\n\n1,2\n3,4\n").collect();
        assert_eq!(r, vec![(4, vec!["1", "2"]), (5, vec!["3", "4"])]);
        let r: Vec<_> = records("1O,2\n").collect();
        assert_eq!(r, vec![(1, vec!["1O", "2"])]);
        assert!(numbers::<2>(&["1", "2e1"]).is_ok());
        assert!(numbers::<2>(&["1", "1e30"]).is_err());
        assert!(numbers::<2>(&["1"]).is_err());
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_ignored() {
        let r: Vec<_> = records("\u{feff}x,y\r\n1,2\r\n").collect();
        assert_eq!(r, vec![(2, vec!["1", "2"])]);
        let r: Vec<_> = records("\u{feff}1,2\n").collect();
        assert_eq!(r, vec![(1, vec!["1", "2"])]);
        // Only at the very start: elsewhere it is data, and a bad number.
        let r: Vec<_> = records("x,y\n\u{feff}1,2\n").collect();
        assert!(numbers::<2>(&r[0].1).is_err());
    }
}
