//! The 🟢 / 🔴 / ⚪ of the text reports, drawn for HTML as small inline SVG circles with a
//! title and an accessible label, better with a tick and worse with a cross so that they
//! differ in shape, not only in a red and a green that many readers cannot tell apart: pages must not depend on an emoji font (Debian's headless
//! Chromium has none and shows empty boxes). SVG rather than a CSS background, so the
//! marks also print.

use volley_stats::compare::Verdict;

const BETTER: &str = r##"<svg class="mark" width="12" height="12" viewBox="0 0 12 12" role="img" aria-label="better"><title>better beyond the noise</title><circle cx="6" cy="6" r="5.5" fill="#1a7f37"/><path d="M3.2 6.2l1.9 1.9 3.7-4" fill="none" stroke="#fff" stroke-width="1.6"/></svg>"##;
const WORSE: &str = r##"<svg class="mark" width="12" height="12" viewBox="0 0 12 12" role="img" aria-label="worse"><title>worse beyond the noise</title><circle cx="6" cy="6" r="5.5" fill="#cf222e"/><path d="M3.8 3.8l4.4 4.4M8.2 3.8l-4.4 4.4" stroke="#fff" stroke-width="1.6"/></svg>"##;
const NOISE: &str = r##"<svg class="mark" width="12" height="12" viewBox="0 0 12 12" role="img" aria-label="within the noise"><title>within the noise</title><circle cx="6" cy="6" r="5" fill="#fff" stroke="#8c959f"/></svg>"##;

/// The drawn mark of `v`.
pub(crate) fn svg(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => BETTER,
        Verdict::Worse => WORSE,
        Verdict::Noise => NOISE,
    }
}

/// `text` as HTML, each emoji mark in it drawn.
pub(crate) fn in_text(text: &str) -> String {
    let escaped = minijinja::HtmlEscape(&crate::escape::terminal_safe(text)).to_string();
    [Verdict::Better, Verdict::Worse, Verdict::Noise]
        .into_iter()
        .fold(escaped, |s, v| s.replace(v.mark(), svg(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_keeps_its_words_and_loses_its_emoji() {
        let html = in_text("a < b, otherwise ⚪; 🟢 or 🔴");
        assert!(html.starts_with("a &lt; b, otherwise <svg"), "{html}");
        for v in [Verdict::Better, Verdict::Worse, Verdict::Noise] {
            assert!(!html.contains(v.mark()) && html.contains(svg(v)), "{html}");
        }
    }
}
