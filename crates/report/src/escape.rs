//! Outside text (names, labels, messages from a target or an imported file) made safe for
//! each place it is written: a terminal or a Markdown table. The leaf every writer of text
//! escapes through, so the model and the renderers import it, never each other.

/// Text from a target or an imported file (names, labels, messages) made safe for a line or
/// a table cell of Markdown: its control characters shown as escapes (a line break cannot
/// end a table row), Markdown's own characters escaped (no code span, link or emphasis
/// opens), and no HTML element can open.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Text from a target or an imported file made safe for a terminal: control characters
/// (escape sequences, carriage returns, bells) are shown as escapes, never sent raw.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_cannot_break_a_terminal_or_a_markdown_table() {
        assert_eq!(terminal_safe("ok"), "ok");
        assert_eq!(terminal_safe("a\x1b[2Jb\r\n"), "a\\u{1b}[2Jb\\r\\n");
        assert_eq!(
            md_text("a|b\n<img src=x>`c`"),
            "a\\|b\\n&lt;img src=x&gt;\\`c\\`"
        );
        assert_eq!(md_text("[x](y)"), "\\[x\\](y)");
    }
}
