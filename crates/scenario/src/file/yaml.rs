//! YAML text into a tree of nodes, each with its line and column — the only code that knows
//! the YAML crate (granit-parser, the parser under serde-saphyr).
//!
//! The tree is built from the parser's events with an explicit stack (no recursion), so
//! nesting cannot overflow the stack, and within fixed limits: file size, nesting depth, and
//! values after aliases are expanded (so `&a [*b, *b, …]` bombs stop early). Problems the
//! tree itself shows — a key given twice, a tag, an alias to nothing, a second document —
//! are collected and the build goes on; a syntax error ends it, with its position and what
//! to write instead.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{ErrorKind, Event, Parser, ScalarStyle, ScanError, Span, Tag};

use super::At;

/// The largest scenario file read, in bytes.
pub const MAX_FILE_BYTES: usize = 8 << 20;
/// The deepest nesting of lists and mappings.
pub const MAX_DEPTH: usize = 64;
/// The most values (scalars, lists, mappings) a file may hold once aliases are expanded.
pub const MAX_NODES: usize = 1_000_000;
/// The most text a file may hold once aliases are expanded, in bytes.
pub const MAX_TEXT_BYTES: usize = 32 << 20;

/// One value of the file, where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub at: At,
    pub value: Value,
}

/// What a node holds.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// Text as written; `plain` when unquoted, so that `10` or `true` may be read as a
    /// number or a flag ([`Node::typed`]).
    Scalar { text: String, plain: bool },
    /// A list.
    Seq(Vec<Node>),
    /// A mapping, in file order; keys are unique.
    Map(Vec<(Key, Node)>),
}

/// A mapping key.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub text: String,
    pub at: At,
}

/// A scalar read by YAML's core schema.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Typed<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a str),
}

impl Node {
    /// The scalar's typed value; `None` for a list or a mapping.
    pub fn typed(&self) -> Option<Typed<'_>> {
        match &self.value {
            Value::Scalar { text, plain: true } => Some(resolve(text)),
            Value::Scalar { text, plain: false } => Some(Typed::Str(text)),
            _ => None,
        }
    }

    /// What kind of value this is, in words (`a list`, `a number`, `text`).
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
            Value::Scalar { .. } => match self.typed() {
                Some(Typed::Null) => "nothing",
                Some(Typed::Bool(_)) => "true/false",
                Some(Typed::Int(_) | Typed::UInt(_) | Typed::Float(_)) => "a number",
                _ => "text",
            },
        }
    }

    /// The value as JSON (a request body, a default, an expected value).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.text.clone(), v.to_json()))
                    .collect(),
            ),
            Value::Scalar { .. } => match self.typed() {
                Some(Typed::Null) | None => J::Null,
                Some(Typed::Bool(b)) => J::Bool(b),
                Some(Typed::Int(i)) => J::from(i),
                Some(Typed::UInt(u)) => J::from(u),
                Some(Typed::Float(f)) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
                Some(Typed::Str(s)) => J::String(s.to_string()),
            },
        }
    }
}

/// YAML 1.2 core schema: `~`, `null`, `true`, `10`, `0x1f`, `1.5`, `.inf`; anything else is text.
fn resolve(text: &str) -> Typed<'_> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Typed::Null,
        "true" | "True" | "TRUE" => return Typed::Bool(true),
        "false" | "False" | "FALSE" => return Typed::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Typed::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Typed::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Typed::Float(f64::NAN),
        _ => {}
    }
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if let Some(hex) = text.strip_prefix("0x").filter(|h| digits(h, 16)) {
        return u64::from_str_radix(hex, 16).map_or(Typed::Str(text), Typed::UInt);
    }
    if let Some(oct) = text.strip_prefix("0o").filter(|o| digits(o, 8)) {
        return u64::from_str_radix(oct, 8).map_or(Typed::Str(text), Typed::UInt);
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned, 10) {
        if let Ok(i) = text.parse::<i64>() {
            return Typed::Int(i);
        }
        if let Ok(u) = text.trim_start_matches('+').parse::<u64>() {
            return Typed::UInt(u);
        }
        return Typed::Float(text.parse().unwrap_or(f64::NAN));
    }
    // A float needs a digit and only float characters: `1.5`, `.5`, `1e3`, `-2.0E-3`.
    let (mantissa, exponent) = unsigned.split_once(['e', 'E']).unwrap_or((unsigned, ""));
    let exponent_ok = exponent.is_empty() && !unsigned.contains(['e', 'E'])
        || digits(exponent.strip_prefix(['-', '+']).unwrap_or(exponent), 10);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mantissa_ok = (digits(int, 10) || int.is_empty())
        && (frac.is_empty() || digits(frac, 10))
        && (!int.is_empty() || !frac.is_empty());
    if mantissa_ok
        && exponent_ok
        && (mantissa.contains('.') || !exponent.is_empty())
        && let Ok(f) = text.parse::<f64>()
    {
        return Typed::Float(f);
    }
    Typed::Str(text)
}

/// The tree of `text`, or `None` when the YAML could not be read to its end; with every
/// problem found on the way.
pub(crate) fn parse(text: &str) -> (Option<Node>, Vec<(At, String)>) {
    let mut b = Builder {
        text,
        ..Builder::default()
    };
    if text.len() > MAX_FILE_BYTES {
        let message = format!(
            "the file is {} bytes; scenario files are limited to {} MiB — split it, or use `repeat` and groups instead of copies",
            text.len(),
            MAX_FILE_BYTES >> 20
        );
        b.problems.push((At(1, 1), message));
        return (None, b.problems);
    }
    let mut options = serde_saphyr::granit_parser::Options::default();
    options.set_emit_comments(false);
    options.emit_unresolved_aliases = true;
    options.block_nesting_limit = MAX_DEPTH;
    options.flow_nesting_limit = MAX_DEPTH;
    let parser = Parser::new_from_str_with_options(text, options);
    for event in parser {
        let (event, span) = match event {
            Ok(e) => e,
            Err(e) => {
                let (here, message) = syntax_error(&e, text);
                // What was found on the same line is the same mistake seen earlier.
                b.problems.retain(|(at, _)| at.0 != here.0);
                b.problems.push((here, message));
                return (None, b.problems);
            }
        };
        match b.event(event, span) {
            Ok(true) => break,
            Ok(false) => {}
            Err(stop) => {
                b.problems.push(stop);
                return (None, b.problems);
            }
        }
    }
    (b.root, b.problems)
}

#[derive(Default)]
struct Builder<'t> {
    text: &'t str,
    stack: Vec<Frame>,
    root: Option<Node>,
    documents: usize,
    /// Anchored values by id, with their size.
    anchors: HashMap<usize, (Node, Size)>,
    used: Size,
    problems: Vec<(At, String)>,
}

/// Values and text bytes, counted against the limits.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    bytes: usize,
}

enum Frame {
    Seq {
        at: At,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        at: At,
        anchor: usize,
        entries: Vec<(Key, Node)>,
        key: Option<KeySlot>,
        seen: HashMap<String, At>,
        merges: Vec<Node>,
    },
    /// `url: {{ base }}/x` unquoted: YAML reads a mapping, the author meant text. Read as
    /// the text it spans (from this byte offset), and reported once.
    Braces {
        at: At,
        anchor: usize,
        start: usize,
        depth: usize,
    },
}

/// The key whose value comes next; `None` inside when the key could not be used.
struct KeySlot(Option<Key>);

fn at(span: &Span) -> At {
    At(span.start.line() as u64, span.start.col() as u64 + 1)
}

impl Builder<'_> {
    /// Takes one event; `Ok(true)` at the end of the stream, `Err` to stop with a problem.
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<bool, (At, String)> {
        let here = at(&span);
        let in_braces = matches!(self.stack.last(), Some(Frame::Braces { .. }));
        if in_braces
            && !matches!(
                event,
                Event::MappingStart(..) | Event::MappingEnd | Event::StreamEnd
            )
        {
            if let Event::SequenceStart(..) = event
                && let Some(Frame::Braces { depth, .. }) = self.stack.last_mut()
            {
                *depth += 1;
            }
            if let Event::SequenceEnd = event
                && let Some(Frame::Braces { depth, .. }) = self.stack.last_mut()
            {
                *depth = depth.saturating_sub(1);
            }
            return Ok(false);
        }
        match event {
            Event::StreamEnd => return Ok(true),
            Event::DocumentStart(..) => {
                self.documents += 1;
                if self.documents > 1 {
                    self.problems.push((here, "a scenario is one YAML document: remove this second `---` and what follows, or make it a file of its own".into()));
                    return Ok(true);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let plain = style == ScalarStyle::Plain
                    && !tag
                        .as_ref()
                        .is_some_and(|t| t.is_yaml_core_schema_tag("str"));
                if let Some(t) = &tag {
                    self.tag(t, here);
                }
                self.count(
                    Size {
                        nodes: 1,
                        bytes: text.len(),
                    },
                    here,
                )?;
                let node = Node {
                    at: here,
                    value: Value::Scalar {
                        text: text.into_owned(),
                        plain,
                    },
                };
                self.finish(node, anchor, here)?;
            }
            Event::SequenceStart(_, anchor, tag) => {
                if let Some(t) = &tag {
                    self.tag(t, here);
                }
                self.open(
                    Frame::Seq {
                        at: here,
                        anchor,
                        items: Vec::new(),
                    },
                    here,
                )?;
            }
            Event::MappingStart(_, anchor, tag) => {
                if let Some(Frame::Braces { depth, .. }) = self.stack.last_mut() {
                    *depth += 1;
                    return Ok(false);
                }
                if let Some(start) = span.start.byte_offset()
                    && self.text.get(start..).is_some_and(|t| t.starts_with("{{"))
                {
                    self.open(
                        Frame::Braces {
                            at: here,
                            anchor,
                            start,
                            depth: 0,
                        },
                        here,
                    )?;
                    return Ok(false);
                }
                if let Some(t) = &tag {
                    self.tag(t, here);
                }
                let frame = Frame::Map {
                    at: here,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                    seen: HashMap::new(),
                    merges: Vec::new(),
                };
                self.open(frame, here)?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(Frame::Braces { depth, .. }) = self.stack.last_mut()
                    && *depth > 0
                {
                    *depth -= 1;
                    return Ok(false);
                }
                let Some(frame) = self.stack.pop() else {
                    return Ok(false);
                };
                let (node, anchor) = match frame {
                    Frame::Braces {
                        at, anchor, start, ..
                    } => {
                        let end = span.end.byte_offset().unwrap_or(start).max(start);
                        let written = self.text.get(start..end).unwrap_or_default().to_string();
                        self.problems.push((at, format!("a value that starts with `{{{{` must be quoted, or YAML reads a mapping: write \"{written}\"")));
                        (
                            Node {
                                at,
                                value: Value::Scalar {
                                    text: written,
                                    plain: false,
                                },
                            },
                            anchor,
                        )
                    }
                    Frame::Seq { at, anchor, items } => (
                        Node {
                            at,
                            value: Value::Seq(items),
                        },
                        anchor,
                    ),
                    Frame::Map {
                        at,
                        anchor,
                        mut entries,
                        merges,
                        ..
                    } => {
                        self.merge(&mut entries, merges);
                        (
                            Node {
                                at,
                                value: Value::Map(entries),
                            },
                            anchor,
                        )
                    }
                };
                self.finish(node, anchor, here)?;
            }
            Event::Alias(id) => {
                let size = self.anchors.get(&id).map(|(_, size)| *size);
                let node = match size {
                    Some(size) => {
                        // Counted before it is copied: a bomb stops before it allocates.
                        self.count(size, here)?;
                        let mut node = self.anchors[&id].0.clone();
                        node.at = here;
                        node
                    }
                    None => Node {
                        at: here,
                        value: Value::Scalar {
                            text: String::new(),
                            plain: true,
                        },
                    },
                };
                self.finish(node, 0, here)?;
            }
            Event::UnresolvedAlias(name) => {
                self.problems.push((here, format!("`*{name}` refers to no anchor: define `&{name}` on a value above it, or write the value here")));
                self.finish(
                    Node {
                        at: here,
                        value: Value::Scalar {
                            text: String::new(),
                            plain: true,
                        },
                    },
                    0,
                    here,
                )?;
            }
            _ => {}
        }
        Ok(false)
    }

    fn tag(&mut self, tag: &Tag, here: At) {
        if tag.core_suffix().is_none() {
            self.problems.push((here, format!("tags such as `{}` are not supported in a scenario: remove it and write the value itself", tag.original())));
        }
    }

    fn count(&mut self, size: Size, here: At) -> Result<(), (At, String)> {
        self.used.nodes += size.nodes;
        self.used.bytes += size.bytes;
        if self.used.nodes > MAX_NODES {
            return Err((
                here,
                format!(
                    "the file holds more than {MAX_NODES} values once its aliases (`*name`) are expanded; a scenario is limited to that — use `repeat` and groups instead of copies"
                ),
            ));
        }
        if self.used.bytes > MAX_TEXT_BYTES {
            return Err((
                here,
                format!(
                    "the file holds more than {} MiB of text once its aliases (`*name`) are expanded; a scenario is limited to that",
                    MAX_TEXT_BYTES >> 20
                ),
            ));
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame, here: At) -> Result<(), (At, String)> {
        if self.stack.len() >= MAX_DEPTH {
            return Err((here, depth_message()));
        }
        self.count(Size { nodes: 1, bytes: 0 }, here)?;
        self.stack.push(frame);
        Ok(())
    }

    /// A complete value: remembered under its anchor, then placed in its parent.
    fn finish(&mut self, node: Node, anchor: usize, here: At) -> Result<(), (At, String)> {
        if anchor != 0 {
            // The copy kept for aliases counts too: an anchor costs its size twice.
            let size = size_of(&node);
            self.count(size, here)?;
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Braces { .. }) => {}
            Some(Frame::Map {
                entries,
                key,
                seen,
                merges,
                ..
            }) => match key.take() {
                None => {
                    let slot = match &node.value {
                        Value::Scalar { text, .. } => Some(Key {
                            text: text.clone(),
                            at: node.at,
                        }),
                        other => {
                            let what = if matches!(other, Value::Seq(_)) {
                                "a list"
                            } else {
                                "a mapping"
                            };
                            self.problems.push((node.at, format!("a key must be a word such as `name:`, not {what}; a value that starts with `{{` or `[` must be quoted, e.g. url: \"{{{{ base }}}}/path\"")));
                            None
                        }
                    };
                    *key = Some(KeySlot(slot));
                }
                Some(KeySlot(None)) => {}
                Some(KeySlot(Some(k))) if k.text == "<<" && is_plain_merge(&node) => {
                    merges.push(node)
                }
                Some(KeySlot(Some(k))) => {
                    if let Some(first) = seen.get(&k.text) {
                        self.problems.push((
                            k.at,
                            format!("`{}` is given twice in this mapping, first on line {}, column {}: keep one of them", k.text, first.0, first.1),
                        ));
                    } else {
                        seen.insert(k.text.clone(), k.at);
                        entries.push((k, node));
                    }
                }
            },
        }
        Ok(())
    }

    /// `<<: *defaults` (or a list of them): the merged mappings' entries, where the mapping
    /// does not give the key itself.
    fn merge(&mut self, entries: &mut Vec<(Key, Node)>, merges: Vec<Node>) {
        for m in merges {
            let sources = match m.value {
                Value::Seq(items) => items,
                other => vec![Node {
                    at: m.at,
                    value: other,
                }],
            };
            for source in sources {
                match source.value {
                    Value::Map(more) => {
                        for (k, v) in more {
                            if !entries.iter().any(|(e, _)| e.text == k.text) {
                                entries.push((k, v));
                            }
                        }
                    }
                    _ => self.problems.push((source.at, "`<<` merges mappings: give it an alias such as `<<: *defaults`, or a list of them".into())),
                }
            }
        }
    }
}

/// A `<<` value that is to be merged (not quoted text).
fn is_plain_merge(node: &Node) -> bool {
    !matches!(&node.value, Value::Scalar { plain: false, .. })
}

fn size_of(node: &Node) -> Size {
    let mut size = Size::default();
    let mut todo = vec![node];
    while let Some(n) = todo.pop() {
        size.nodes += 1;
        match &n.value {
            Value::Scalar { text, .. } => size.bytes += text.len(),
            Value::Seq(items) => todo.extend(items),
            Value::Map(entries) => {
                for (k, v) in entries {
                    size.bytes += k.text.len();
                    todo.push(v);
                }
            }
        }
    }
    size
}

fn depth_message() -> String {
    format!(
        "lists and mappings are nested more than {MAX_DEPTH} deep here; a scenario is limited to that — flatten it (groups can follow each other instead of nesting)"
    )
}

/// A syntax error in plain words, at its position.
fn syntax_error(e: &ScanError, text: &str) -> (At, String) {
    let m = e.marker();
    let here = At(m.line() as u64, m.col() as u64 + 1);
    let line = text
        .lines()
        .nth(m.line().saturating_sub(1))
        .unwrap_or_default();
    let braces = line.contains("{{") && !line.contains("\"{{") && !line.contains("'{{");
    let quote_hint = "a value that starts with `{{` must be quoted: url: \"{{ base }}/path\"";
    let message = match e.kind() {
        _ if braces => format!("this line is not valid YAML: {quote_hint}"),
        ErrorKind::ExpectedBlockSequenceEntry | ErrorKind::ExpectedBlockMappingKey | ErrorKind::InvalidIndentation => {
            "the indentation here does not line up: every key of a mapping starts in the same column, and every item of a list starts with `- ` in the same column".into()
        }
        ErrorKind::TabNotAllowed | ErrorKind::TabInBlockIndentation | ErrorKind::TabInIndentation | ErrorKind::TabAtBlockScalarStart => {
            "YAML is indented with spaces, not tabs: replace the tab with spaces".into()
        }
        ErrorKind::UnclosedQuotedScalar => "this quoted text is not closed: add the closing quote".into(),
        ErrorKind::UnclosedFlowCollection { open } => {
            let close = if *open == '[' { ']' } else { '}' };
            format!("this `{open}` is not closed: add `{close}`, or quote the value if it is text")
        }
        ErrorKind::MismatchedFlowCollectionEnd { open, close } => format!("`{open}` is closed by `{close}`: close it with `{}`", if *open == '[' { ']' } else { '}' }),
        ErrorKind::MisplacedFlowCollectionEnd => "this closing bracket has no opening one: remove it, or quote the value".into(),
        ErrorKind::ExpectedFlowMappingSeparator => "in `{ key: value, … }` entries are separated by `,` and the mapping ends with `}`".into(),
        ErrorKind::ExpectedFlowSequenceSeparator => "in `[a, b, …]` items are separated by `,` and the list ends with `]`".into(),
        ErrorKind::RecursionLimitExceeded => depth_message(),
        ErrorKind::SimpleKeyExpected | ErrorKind::InvalidSimpleKey => {
            "a key is missing its `:` here, or a value holds `: ` — quote such a value: body: \"a: b\"".into()
        }
        ErrorKind::UnexpectedCharacter { character } => {
            format!("`{character}` cannot start a value here: quote the value, e.g. \"{character}…\"")
        }
        ErrorKind::ExpectedNodeContent => "a value is missing here, or it starts with a character YAML reserves (`@`, `` ` ``, `%`): quote it".into(),
        ErrorKind::UnknownQuotedScalarEscape | ErrorKind::InvalidQuotedScalarHexEscape => {
            "this escape (`\\…`) is not one YAML knows in double quotes: write `\\\\` for a backslash, or use single quotes".into()
        }
        ErrorKind::InvalidTrailingSingleQuotedScalar | ErrorKind::InvalidTrailingDoubleQuotedScalar => {
            "text follows the closing quote: put all of the value inside the quotes".into()
        }
        ErrorKind::MappingValueNotAllowed | ErrorKind::InvalidColonPlacement => {
            "`: ` inside a value reads as a second key: quote the value, e.g. body: \"a: b\" (or the indentation is off)".into()
        }
        ErrorKind::InvalidQuotedScalarIndent | ErrorKind::InvalidFlowScalarIndent => {
            "a quoted value runs on to this line: close the quote on the line where it starts, or indent the rest of it".into()
        }
        ErrorKind::BlockEntryInFlowCollection | ErrorKind::BlockSequenceEntryNotAllowed => {
            "`- ` starts a list item only on a line of its own, not inside `[ ]` or `{ }` or after a key on the same line".into()
        }
        ErrorKind::CommentNotSeparated => "a `#` comment needs a space before it; in a value, quote the text that holds `#`".into(),
        ErrorKind::UnexpectedEof
        | ErrorKind::UnexpectedEofBlockMapping
        | ErrorKind::UnexpectedEofBlockSequence
        | ErrorKind::UnexpectedEofFlowMapping
        | ErrorKind::UnexpectedEofFlowSequence
        | ErrorKind::UnexpectedEofImplicitFlowMapping => "the file ends in the middle of a value: close its brackets or quotes".into(),
        ErrorKind::InputDecoding { .. } => "the file is not UTF-8 text".into(),
        other => format!("this is not valid YAML ({other}); check the indentation and quote values that hold `: `, `#`, `{{` or `[`"),
    };
    (here, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_resolve_by_the_core_schema() {
        for (text, want) in [
            ("~", Typed::Null),
            ("", Typed::Null),
            ("true", Typed::Bool(true)),
            ("10", Typed::Int(10)),
            ("-3", Typed::Int(-3)),
            ("0x1f", Typed::UInt(31)),
            ("18446744073709551615", Typed::UInt(u64::MAX)),
            ("1.5", Typed::Float(1.5)),
            (".5", Typed::Float(0.5)),
            ("1e3", Typed::Float(1000.0)),
            ("1s", Typed::Str("1s")),
            ("1.2.3", Typed::Str("1.2.3")),
            ("e3", Typed::Str("e3")),
            ("yes", Typed::Str("yes")),
            ("200-299", Typed::Str("200-299")),
        ] {
            assert_eq!(resolve(text), want, "{text}");
        }
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let (root, problems) = parse("base: &b { a: 1, b: 2 }\nuse:\n  <<: *b\n  b: 3\n");
        assert!(problems.is_empty(), "{problems:?}");
        let Value::Map(top) = root.unwrap().value else {
            panic!()
        };
        let json = top[1].1.to_json();
        assert_eq!(json, serde_json::json!({ "b": 3, "a": 1 }));
    }

    #[test]
    fn an_alias_bomb_stops_at_the_limit() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let (root, problems) = parse(&text);
        assert!(root.is_none());
        assert!(
            problems[0].1.contains("more than 1000000 values"),
            "{problems:?}"
        );
    }
}
