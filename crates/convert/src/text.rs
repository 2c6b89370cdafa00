//! Text the converters write into scenario files: literal text made safe from template
//! syntax (every scenario string is a minijinja template), and names for variables and
//! environment variables derived from what a recording or a spec calls things.

/// `text` as a template that renders to exactly `text`: `{{`, `{%` and `{#` are written as
/// expressions that print them.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('{', Some(&n)) if n == '{' || n == '%' || n == '#' => {
                chars.next();
                out.push_str(&format!("{{{{ \"{{{n}\" }}}}"));
            }
            _ => out.push(c),
        }
    }
    out
}

/// `roomId`, `room-id`, `Room ID` → `room_id`; never empty, never starting with a digit.
pub(crate) fn snake(name: &str) -> String {
    let out = volley_scenario::secret::snake(name);
    match out.chars().next() {
        None => "value".into(),
        Some(c) if c.is_ascii_digit() => format!("v_{out}"),
        Some(_) => out,
    }
}

/// An environment variable name: `session` → `SESSION`.
pub(crate) fn env_name(name: &str) -> String {
    snake(name).to_ascii_uppercase()
}

/// `rooms` → `room`, `categories` → `category`, `pair-room` → `pair_room` (good enough for
/// naming variables; never used to decide anything).
pub(crate) fn singular(word: &str) -> String {
    let w = snake(word);
    if let Some(stem) = w.strip_suffix("ies") {
        format!("{stem}y")
    } else if w.ends_with("ss") || w.ends_with("us") {
        w
    } else if let Some(stem) = w.strip_suffix('s') {
        stem.to_string()
    } else {
        w
    }
}

/// Names already given, so that each new one is unique (`room_id`, `room_id_2`, …).
#[derive(Debug, Default)]
pub(crate) struct Names {
    taken: std::collections::HashSet<String>,
    /// The next suffix to try per base, so the thousandth `id` costs one try, not a thousand.
    next: std::collections::HashMap<String, usize>,
}

impl Names {
    pub(crate) fn unique(&mut self, base: &str) -> String {
        let n = self.next.entry(base.to_string()).or_insert(1);
        loop {
            let name = if *n == 1 {
                base.to_string()
            } else {
                format!("{base}_{n}")
            };
            *n += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_text_cannot_become_a_template() {
        assert_eq!(
            literal("a {{ b }} {% c %} {# d #} {x}"),
            "a {{ \"{{\" }} b }} {{ \"{%\" }} c %} {{ \"{#\" }} d #} {x}"
        );
        assert_eq!(literal("plain"), "plain");
    }

    #[test]
    fn names() {
        assert_eq!(snake("roomId"), "room_id");
        assert_eq!(snake("pair-room"), "pair_room");
        assert_eq!(snake("X-CSRF-Token"), "x_csrf_token");
        assert_eq!(snake("2fa"), "v_2fa");
        assert_eq!(snake("--"), "value");
        assert_eq!(env_name("session"), "SESSION");
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("rooms"), "room");
        assert_eq!(singular("status"), "status");
        let mut n = Names::default();
        assert_eq!(n.unique("id"), "id");
        assert_eq!(n.unique("id"), "id_2");
    }
}
