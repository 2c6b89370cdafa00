//! A small YAML writer that keeps comments: the converters explain what they did next to
//! what they wrote ("cookie came from the recording; set env.SESSION"), which a serializer
//! cannot. Strings are written plain when YAML reads them back as the same text, else as
//! JSON-quoted strings (JSON's double-quoted form is valid YAML).

/// A YAML value with its comments.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// Already-rendered scalar text (`scalar`, `number`, `true`).
    Scalar(String),
    /// Entries in order.
    Map(Vec<Entry>),
    /// Items, each with comment lines written above it.
    Seq(Vec<(Vec<String>, Node)>),
}

/// One mapping entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Comment lines above the key.
    pub above: Vec<String>,
    pub key: String,
    pub value: Node,
    /// A comment at the end of the key's line.
    pub trailing: Option<String>,
}

impl Entry {
    pub(crate) fn new(key: &str, value: Node) -> Entry {
        Entry {
            above: Vec::new(),
            key: key.to_string(),
            value,
            trailing: None,
        }
    }

    pub(crate) fn text(key: &str, value: &str) -> Entry {
        Entry::new(key, Node::Scalar(scalar(value)))
    }

    pub(crate) fn trailing(mut self, comment: Option<String>) -> Entry {
        self.trailing = comment;
        self
    }

    pub(crate) fn above(mut self, lines: Vec<String>) -> Entry {
        self.above = lines;
        self
    }
}

/// A string as a YAML scalar that reads back as the same string.
pub(crate) fn scalar(s: &str) -> String {
    if plain_is_safe(s) {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serializes")
    }
}

fn plain_is_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let reserved = [
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~",
    ];
    (first.is_ascii_alphanumeric() || "/$_.".contains(first))
        && !s.ends_with(' ')
        && !s.contains("  ")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./$@-()[],'{}:#&*!?%=+~|\"<>^;".contains(c))
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !reserved.contains(&s.to_ascii_lowercase().as_str())
        && s.parse::<f64>().is_err()
        && !s.starts_with("0x")
        && !s.starts_with("0o")
}

/// A JSON value as a node; strings are written as they are (the caller has escaped or
/// templated them already).
pub(crate) fn json(v: &serde_json::Value) -> Node {
    use serde_json::Value as V;
    match v {
        V::Null => Node::Scalar("null".into()),
        V::Bool(b) => Node::Scalar(b.to_string()),
        V::Number(n) => Node::Scalar(n.to_string()),
        V::String(s) => Node::Scalar(scalar(s)),
        V::Array(items) => Node::Seq(items.iter().map(|i| (Vec::new(), json(i))).collect()),
        V::Object(map) => Node::Map(map.iter().map(|(k, v)| Entry::new(k, json(v))).collect()),
    }
}

/// The document: top-level comment lines, then the mapping.
pub(crate) fn render(header: &[String], root: &[Entry]) -> String {
    let mut out = String::new();
    for line in header {
        comment_line(&mut out, 0, line);
    }
    map(&mut out, 0, root);
    out
}

fn comment_line(out: &mut String, indent: usize, text: &str) {
    for line in text.lines() {
        out.push_str(&" ".repeat(indent));
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
    }
}

fn trailing(out: &mut String, comment: &Option<String>) {
    if let Some(c) = comment {
        out.push_str("  # ");
        out.push_str(&c.replace('\n', " "));
    }
    out.push('\n');
}

fn map(out: &mut String, indent: usize, entries: &[Entry]) {
    for (i, e) in entries.iter().enumerate() {
        for line in &e.above {
            comment_line(out, indent, line);
        }
        // The first entry of a list item follows its "- " (already written).
        if i > 0 || !out.ends_with("- ") {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&scalar(&e.key));
        out.push(':');
        match &e.value {
            Node::Scalar(s) => {
                out.push(' ');
                out.push_str(s);
                trailing(out, &e.trailing);
            }
            Node::Map(m) if m.is_empty() => {
                out.push_str(" {}");
                trailing(out, &e.trailing);
            }
            Node::Seq(s) if s.is_empty() => {
                out.push_str(" []");
                trailing(out, &e.trailing);
            }
            Node::Map(m) => {
                trailing(out, &e.trailing);
                map(out, indent + 2, m);
            }
            Node::Seq(s) => {
                trailing(out, &e.trailing);
                seq(out, indent + 2, s);
            }
        }
    }
}

fn seq(out: &mut String, indent: usize, items: &[(Vec<String>, Node)]) {
    for (above, item) in items {
        for line in above {
            comment_line(out, indent, line);
        }
        out.push_str(&" ".repeat(indent));
        match item {
            Node::Scalar(s) => {
                out.push_str("- ");
                out.push_str(s);
                out.push('\n');
            }
            Node::Map(m) if !m.is_empty() && m[0].above.is_empty() => {
                out.push_str("- ");
                map(out, indent + 2, m);
            }
            Node::Map(m) if m.is_empty() => out.push_str("- {}\n"),
            Node::Seq(s) if s.is_empty() => out.push_str("- []\n"),
            Node::Map(m) => {
                out.push_str("-\n");
                map(out, indent + 2, m);
            }
            Node::Seq(s) => {
                out.push_str("-\n");
                seq(out, indent + 2, s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_only_when_it_reads_back_the_same() {
        assert_eq!(scalar("POST /rooms"), "POST /rooms");
        assert_eq!(scalar("$.items[0].id"), "$.items[0].id");
        for quoted in [
            "",
            "true",
            "No",
            "12",
            "1.5",
            "a: b",
            "x #y",
            "{{ id }}",
            "-x",
            " lead",
            "tab\there",
            "0x1f",
            "*ref",
            "ünï",
        ] {
            assert!(scalar(quoted).starts_with('"'), "{quoted} must be quoted");
        }
    }

    #[test]
    fn nested_lists_and_maps_with_comments() {
        let step = Node::Map(vec![
            Entry::text("name", "create room"),
            Entry::new(
                "json",
                json(&serde_json::json!({"a": [1, {"b": "x"}], "e": {}})),
            )
            .trailing(Some("why".into())),
        ]);
        let root = vec![Entry::new(
            "steps",
            Node::Seq(vec![(vec!["first".into()], step)]),
        )];
        let text = render(&["head".into()], &root);
        assert_eq!(
            text,
            "# head\nsteps:\n  # first\n  - name: create room\n    json:  # why\n      a:\n        - 1\n        - b: x\n      e: {}\n"
        );
    }
}
