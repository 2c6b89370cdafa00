//! Words in messages: a count with its noun in the right number (`1 request`, `2 requests`),
//! so that no output says "1 requests".

use std::fmt::Display;

/// `n` and `noun` (singular), the noun with an `s` unless `n` is exactly 1.
pub fn counted(n: impl Display, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "request"), "1 request");
        assert_eq!(counted(0, "request"), "0 requests");
        assert_eq!(counted(2u64, "request"), "2 requests");
        assert_eq!(counted("1,001", "request"), "1,001 requests");
        assert_eq!(counted(format!("{:.1}", 1.0), "request"), "1.0 requests");
    }
}
