//! Small helpers for the text formats (OBJ, ASCII PLY and STL).

/// Whitespace-separated tokens of `line` with the byte offset where each ends.
pub(crate) fn tokens(line: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let rest = line.get(start..)?;
        let skip = rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let begin = start + skip;
        let len = line
            .get(begin..)?
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(line.len() - begin);
        start = begin + len;
        Some((start, line.get(begin..start)?))
    })
}

/// Parses a decimal number (`inf`, `-inf` and `nan` included); the error quotes the text.
pub(crate) fn parse_f64(token: &[u8]) -> Result<f64, String> {
    std::str::from_utf8(token)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("'{}' is not a number", quote(token)))
}

/// `token` for an error message: printable ASCII as is, other bytes escaped
/// (`\\xff`), so messages stay on one readable line.
pub(crate) fn quote(token: &[u8]) -> String {
    token.escape_ascii().to_string()
}
