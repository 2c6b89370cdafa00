//! A report as a document: its answer, then its sections. Every form a person reads — the
//! terminal, Markdown, HTML — is drawn from one [`Doc`] by the renderers here, so no form
//! can drop a section another shows (the section-walk tests hold each form to the model),
//! and each form escapes text from the target or a file its own way in one place.
//!
//! The answer comes first in every form: the verdict, the three or four figures people
//! quote, and what the findings say, one line each; Gatling's and k6's pages open that way.

use std::fmt::Write;

use minijinja::HtmlEscape;
use volley_stats::compare::Verdict;

use crate::escape::{md_text, terminal_safe};

/// A report: what it is, its answer, its sections.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// What it reports (`rooms`, `before → after`).
    pub title: String,
    /// Facts under the title, one line each (status, when, how long).
    pub meta: Vec<String>,
    /// What a reader needs first.
    pub answer: Answer,
    /// The detail, in order.
    pub sections: Vec<Section>,
}

/// The top of a report.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// A warning that changes how everything below reads (no request completed).
    pub banner: Option<String>,
    /// Passed or failed, and what: thresholds, a gate, a sweep's best value.
    pub verdict: Option<(bool, String)>,
    /// A verdict that judges nothing pass or fail (a comparison's marks counted).
    pub summary: Option<String>,
    /// The figures people quote: (label, value), each value with its unit.
    pub figures: Vec<Figure>,
    /// What the findings say, one line each.
    pub findings: Vec<String>,
}

/// A quoted figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What it is (`TPS avg`).
    pub label: String,
    /// Its value with its unit (`870.20`, `12.30 ms`).
    pub value: String,
    /// For a change: its mark and the change (`+5.40%`).
    pub change: Option<(Verdict, String)>,
}

/// One part of a report's detail.
#[derive(Debug, Clone)]
pub struct Section {
    /// A stable name: the `report.json` key it shows, where it has one (`levels`, `server`).
    pub id: String,
    /// Its heading.
    pub title: String,
    /// What its figures are (units, what a row stands for); may be empty.
    pub caption: String,
    /// What it holds.
    pub blocks: Vec<Block>,
}

/// What a section holds.
#[derive(Debug, Clone)]
pub enum Block {
    /// Rows under a header; the first column names the row.
    Table {
        /// Column heads.
        header: Vec<String>,
        /// Cells, as many per row as heads.
        rows: Vec<Vec<Cell>>,
    },
    /// (label, value) rows: the seeds' `| Metric | Value |`.
    Pairs(Vec<(String, String)>),
    /// Points, one line each.
    List(Vec<String>),
    /// Notes a reader must know; the terminal says `note:` before each.
    Notes(Vec<String>),
    /// Charts drawn to files: (alt text, relative path). Markdown links them; the HTML page
    /// draws its own charts, so the terminal and the page leave these out.
    Images(Vec<(String, String)>),
}

/// One table cell.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// Its text.
    pub text: String,
    /// A change's 🟢 / 🔴 / ⚪ after the text (drawn in HTML).
    pub mark: Option<Verdict>,
    /// Text after the mark (` (too few requests)`).
    pub after: String,
    /// Code: a series, an expression, a step's name (Markdown's backticks).
    pub code: bool,
    /// Emphasised (Markdown's bold): a change.
    pub strong: bool,
    /// Words, not a figure: a terminal keeps a column of them to the left (figures keep to
    /// the right, so that their digits line up).
    pub prose: bool,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell {
            text,
            ..Cell::default()
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_string())
    }
}

impl Cell {
    /// Words (a name, a reason) that a terminal keeps to the left of their column.
    pub fn prose(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            prose: true,
            ..Cell::default()
        }
    }

    /// Code text.
    pub fn code(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            code: true,
            ..Cell::default()
        }
    }

    /// Every word a reader sees in it, as plain text: the text, the mark's emoji, the rest.
    pub fn plain(&self) -> String {
        match self.mark {
            Some(m) => format!("{} {}{}", self.text, m.mark(), self.after),
            None => format!("{}{}", self.text, self.after),
        }
    }
}

/// Cells from strings.
pub fn cells(row: Vec<String>) -> Vec<Cell> {
    row.into_iter().map(Cell::from).collect()
}

impl Section {
    /// A section of one block.
    pub fn new(id: &str, title: &str, caption: &str, block: Block) -> Section {
        Section {
            id: id.to_string(),
            title: title.to_string(),
            caption: caption.to_string(),
            blocks: vec![block],
        }
    }
}

impl Figure {
    /// A figure without a change.
    pub fn new(label: &str, value: String) -> Figure {
        Figure {
            label: label.to_string(),
            value,
            change: None,
        }
    }
}

/// The columns `s` takes on a terminal (a mark such as 🟢 takes two): the one measure every
/// terminal table pads by.
pub(crate) fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Which side of its column a terminal cell keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text: padded on the right.
    Left,
    /// Figures: padded on the left.
    Right,
}

/// `s` padded with spaces to `w` terminal columns, on the side `align` says.
pub(crate) fn pad(s: &str, w: usize, align: Align) -> String {
    let fill = " ".repeat(w.saturating_sub(width(s)));
    match align {
        Align::Left => format!("{s}{fill}"),
        Align::Right => format!("{fill}{s}"),
    }
}

/// Cells laid out in columns under `header`, two spaces apart, each line opening with
/// `indent`, column `c` kept to the side `align(c)` says, every one padded by the columns it
/// takes on a terminal; a last column aligned left is padded only when `pad_last`.
pub(crate) fn aligned(
    out: &mut String,
    indent: &str,
    header: &[String],
    rows: &[Vec<String>],
    align: impl Fn(usize) -> Align,
    pad_last: bool,
) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| width(s))
                .chain([width(&header[c])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        out.push_str(indent);
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                out.push_str("  ");
            }
            let last = c + 1 == row.len();
            match align(c) {
                Align::Left if last && !pad_last => out.push_str(cell),
                a => out.push_str(&pad(cell, widths[c], a)),
            }
        }
        out.push('\n');
    }
}

/// How much of a report the terminal shows. The files (Markdown, HTML, JSON) always hold
/// everything; only the terminal is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// One line: the title, the verdict and the quoted figures, and a second with the top
    /// finding when there is one (a run inside a demo, a sweep or a group).
    Line,
    /// About one screen, the answer first: the verdict, the quoted figures, the first
    /// [`SUMMARY_FINDINGS`] findings, the tables a person reads first (latency, thresholds,
    /// levels, errors, steps; a comparison's last table; a sweep's values), at most
    /// [`SUMMARY_LINES`] lines, and a last line naming what was left out and where it is.
    #[default]
    Summary,
    /// Everything (`--verbose`).
    Verbose,
}

/// The most lines a [`Detail::Summary`] prints (lines written, before a terminal wraps them).
pub const SUMMARY_LINES: usize = 40;
/// The findings a [`Detail::Summary`] shows; the rest are counted.
pub const SUMMARY_FINDINGS: usize = 3;
/// The rows of a table a [`Detail::Summary`] shows; the rest are counted.
const SUMMARY_ROWS: usize = 20;

/// Whether a [`Detail::Summary`] shows section `s` (`last`: it is the last of its id).
fn leads(s: &Section, last: bool) -> bool {
    match s.id.as_str() {
        "per_request" | "thresholds" | "levels" | "errors" => true,
        // A sweep's table of values (and each level's); a group's figures across its runs.
        "rows" => true,
        // A scenario's steps table (not a test's own metric suite), the populations' table
        // (not each population's own report).
        "per_test" => s.blocks.iter().any(|b| matches!(b, Block::Table { .. })),
        "populations" => matches!(s.blocks.as_slice(), [Block::Table { .. }]),
        // A comparison's last table: the overall one, whose figures the answer quotes.
        "steps" => last,
        _ => false,
    }
}

impl Doc {
    /// For a terminal: text from outside has its control characters escaped. Everything,
    /// as [`Detail::Verbose`].
    pub fn terminal(&self) -> String {
        let mut out = self.head(usize::MAX, "");
        for s in &self.sections {
            section_terminal(&mut out, s, usize::MAX, "");
        }
        out
    }

    /// The terminal form at `detail`; `rest` names where the rest is (`runs/x/report.md`).
    pub fn terminal_as(&self, detail: Detail, rest: &str) -> String {
        match detail {
            Detail::Verbose => self.terminal(),
            Detail::Summary => self.summary(rest),
            Detail::Line => self.line(rest),
        }
    }

    /// The title, its meta and the answer, with at most `findings` findings.
    fn head(&self, findings: usize, rest: &str) -> String {
        let t = |s: &str| terminal_safe(s).into_owned();
        let mut out = String::new();
        let _ = writeln!(out, "{}", t(&self.title));
        for m in &self.meta {
            let _ = writeln!(out, "  {}", t(m));
        }
        let a = &self.answer;
        if let Some(b) = &a.banner {
            let _ = writeln!(out, "\n{}", t(b));
        }
        if let Some((passed, v)) = &a.verdict {
            let _ = writeln!(out, "\n{} {}", if *passed { "✓" } else { "✗" }, t(v));
        }
        if let Some(s) = &a.summary {
            let _ = writeln!(out, "\n{}", t(s));
        }
        if !a.figures.is_empty() {
            let figs: Vec<String> = a.figures.iter().map(figure_text).collect();
            let _ = writeln!(out, "\n{}", t(&figs.join(" · ")));
        }
        if !a.findings.is_empty() {
            let _ = writeln!(out, "\nFindings");
            for f in a.findings.iter().take(findings) {
                let _ = writeln!(out, "  - {}", t(f));
            }
            let more = a.findings.len().saturating_sub(findings);
            if more > 0 {
                let _ = writeln!(out, "  … and {more} more in {rest}");
            }
        }
        out
    }

    /// [`Detail::Summary`]: the answer and the leading tables within [`SUMMARY_LINES`].
    fn summary(&self, rest: &str) -> String {
        let mut out = self.head(SUMMARY_FINDINGS, rest);
        let mut left: Vec<String> = Vec::new();
        let mut notes = 0;
        for (i, s) in self.sections.iter().enumerate() {
            if s.blocks.iter().all(|b| matches!(b, Block::Images(_))) {
                continue;
            }
            let last = !self.sections[i + 1..].iter().any(|o| o.id == s.id);
            let shown = leads(s, last) && {
                let mut one = String::new();
                section_terminal(&mut one, s, SUMMARY_ROWS, rest);
                // Room is kept for the last line (a blank and the line itself).
                let fits = out.lines().count() + one.lines().count() + 2 <= SUMMARY_LINES;
                if fits {
                    out.push_str(&one);
                }
                fits
            };
            if shown {
                continue;
            }
            for b in &s.blocks {
                if let Block::Notes(n) = b {
                    notes += n.len();
                }
            }
            if !matches!(s.blocks.as_slice(), [Block::Notes(_)]) {
                let title = terminal_safe(&s.title).into_owned();
                if !left.contains(&title) {
                    left.push(title);
                }
            }
        }
        if notes > 0 {
            left.push(format!("{notes} note{}", if notes == 1 { "" } else { "s" }));
        }
        if left.is_empty() {
            let _ = writeln!(out, "\nAll of it is in {rest}.");
        } else {
            // Many small sections are counted rather than named, to keep this one line.
            let named = if left.len() > 6 {
                format!("{}, and {} more", left[..5].join(", "), left.len() - 5)
            } else {
                left.join(", ")
            };
            let _ = writeln!(out, "\nAlso in {rest}, or with --verbose: {named}.");
        }
        out
    }

    /// [`Detail::Line`]: `title: ✓ verdict · figures — rest`, then the top finding.
    fn line(&self, rest: &str) -> String {
        let a = &self.answer;
        let mut parts: Vec<String> = Vec::new();
        if let Some(b) = &a.banner {
            parts.push(b.clone());
        }
        if let Some((passed, v)) = &a.verdict {
            parts.push(format!("{} {v}", if *passed { "✓" } else { "✗" }));
        }
        if let Some(s) = &a.summary {
            parts.push(s.clone());
        }
        parts.extend(a.figures.iter().map(figure_text));
        let t = |s: &str| terminal_safe(s).into_owned();
        let mut text = format!(
            "{}\n",
            t(&format!("{}: {} — {rest}", self.title, parts.join(" · ")))
        );
        // The top finding says what the run found; the rest are counted.
        if let Some(f) = a.findings.first() {
            let more = match a.findings.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            text.push_str(&format!("  - {}{more}\n", t(f)));
        }
        text
    }
}

/// One section for a terminal, each table cut at `rows` rows (the rest counted, in `rest`).
fn section_terminal(out: &mut String, s: &Section, rows_max: usize, rest: &str) {
    let t = |s: &str| terminal_safe(s).into_owned();
    if s.blocks.iter().all(|b| matches!(b, Block::Images(_))) {
        return;
    }
    if matches!(s.blocks.as_slice(), [Block::Notes(_)]) {
        out.push('\n');
    } else if s.caption.is_empty() {
        let _ = writeln!(out, "\n{}", t(&s.title));
    } else {
        let _ = writeln!(out, "\n{} ({})", t(&s.title), t(&s.caption));
    }
    for b in &s.blocks {
        match b {
            Block::Table { header, rows } => {
                let shown: Vec<Vec<String>> = rows
                    .iter()
                    .take(rows_max)
                    .map(|r| r.iter().map(|c| t(&c.plain())).collect())
                    .collect();
                let header: Vec<String> = header.iter().map(|h| t(h)).collect();
                // The first column names the row; a column of words keeps to the left too.
                let prose = |c: usize| {
                    !rows.is_empty() && rows.iter().all(|r| r.get(c).is_some_and(|x| x.prose))
                };
                let align = |c: usize| match c == 0 || prose(c) {
                    true => Align::Left,
                    false => Align::Right,
                };
                let pad_last = !prose(header.len() - 1);
                aligned(out, "  ", &header, &shown, align, pad_last);
                let more = rows.len().saturating_sub(rows_max);
                if more > 0 {
                    let _ = writeln!(out, "  … and {more} more rows in {rest}");
                }
            }
            Block::Pairs(rows) => {
                let w = rows.iter().map(|(l, _)| width(&t(l))).max();
                for (l, v) in rows {
                    let _ = writeln!(
                        out,
                        "  {}  {}",
                        pad(&t(l), w.unwrap_or(0), Align::Left),
                        pad(&t(v), 14, Align::Right)
                    );
                }
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(out, "  - {}", t(i));
                }
            }
            Block::Notes(notes) => {
                for n in notes {
                    let _ = writeln!(out, "note: {}", t(n));
                }
            }
            Block::Images(_) => {}
        }
    }
}

impl Doc {
    /// As Markdown: `# title`, the answer, then `## section`s in the seeds' table layout.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", md_text(&self.title));
        for m in &self.meta {
            let _ = writeln!(out, "{}  ", md_prose(m));
        }
        let a = &self.answer;
        if let Some(b) = &a.banner {
            let _ = writeln!(out, "\n**{}**", md_prose(b));
        }
        if let Some((passed, v)) = &a.verdict {
            let _ = writeln!(
                out,
                "\n**{} {}**",
                if *passed { "🟢" } else { "🔴" },
                md_prose(v)
            );
        }
        if let Some(s) = &a.summary {
            let _ = writeln!(out, "\n{}", md_prose(s));
        }
        if !a.figures.is_empty() {
            let heads: Vec<String> = a.figures.iter().map(|f| md_text(&f.label)).collect();
            let vals: Vec<String> = a
                .figures
                .iter()
                .map(|f| format!("**{}**", md_text(&figure_value(f))))
                .collect();
            let _ = writeln!(
                out,
                "\n| {} |\n|{}\n| {} |",
                heads.join(" | "),
                "---|".repeat(heads.len()),
                vals.join(" | ")
            );
        }
        if !a.findings.is_empty() {
            let _ = writeln!(out, "\n## Findings\n");
            for f in &a.findings {
                let _ = writeln!(out, "- {}", md_prose(f));
            }
        }
        for s in &self.sections {
            let _ = writeln!(out, "\n## {}\n", md_text(&s.title));
            if !s.caption.is_empty() {
                let _ = writeln!(out, "{}\n", md_prose(&s.caption));
            }
            for b in &s.blocks {
                match b {
                    Block::Table { header, rows } => {
                        let heads: Vec<String> = header.iter().map(|h| md_text(h)).collect();
                        let _ = writeln!(
                            out,
                            "| {} |\n|{}",
                            heads.join(" | "),
                            "---|".repeat(heads.len())
                        );
                        for r in rows {
                            let cells: Vec<String> = r.iter().map(md_cell).collect();
                            let _ = writeln!(out, "| {} |", cells.join(" | "));
                        }
                        out.push('\n');
                    }
                    Block::Pairs(rows) => {
                        let _ = writeln!(out, "| Metric | Value |\n|---|---|");
                        for (l, v) in rows {
                            let _ = writeln!(out, "| {} | {} |", md_text(l), md_text(v));
                        }
                        out.push('\n');
                    }
                    Block::List(items) | Block::Notes(items) => {
                        for i in items {
                            let _ = writeln!(out, "- {}", md_prose(i));
                        }
                        out.push('\n');
                    }
                    Block::Images(images) => {
                        for (alt, path) in images {
                            let _ = writeln!(out, "![{}]({path})", md_text(alt));
                        }
                        out.push('\n');
                    }
                }
            }
        }
        out
    }

    /// As HTML, the body's part for this report: the answer in a box, figures in large
    /// type, then the sections. Text is escaped; marks are drawn ([`crate::marks`]).
    pub fn html(&self) -> String {
        // Outside text keeps no control character on the page either (an escape sequence
        // shows as `\u{1b}`, as on the terminal).
        let e = |s: &str| HtmlEscape(&terminal_safe(s)).to_string();
        let mut out = String::new();
        let _ = writeln!(out, "<section class=\"report\">");
        let _ = writeln!(out, "<h2 class=\"title\">{}</h2>", e(&self.title));
        for m in &self.meta {
            let _ = writeln!(out, "<p class=\"meta\">{}</p>", e(m));
        }
        let a = &self.answer;
        let _ = writeln!(out, "<div class=\"answer\">");
        if let Some(b) = &a.banner {
            let _ = writeln!(out, "<p class=\"banner\">{}</p>", e(b));
        }
        if let Some((passed, v)) = &a.verdict {
            let _ = writeln!(
                out,
                "<p class=\"verdict {}\"><b>{}</b> {}</p>",
                if *passed { "pass" } else { "fail" },
                if *passed { "PASS" } else { "FAIL" },
                e(v)
            );
        }
        if let Some(s) = &a.summary {
            let _ = writeln!(out, "<p class=\"summary\">{}</p>", crate::marks::in_text(s));
        }
        if !a.figures.is_empty() {
            let _ = write!(out, "<div class=\"figures\">");
            for f in &a.figures {
                let change = f.change.as_ref().map_or(String::new(), |(v, c)| {
                    format!(
                        "<span class=\"change\">{} {}</span>",
                        e(c),
                        crate::marks::svg(*v)
                    )
                });
                let _ = write!(
                    out,
                    "<div class=\"figure\"><span class=\"value\">{}</span>{change}<span class=\"label\">{}</span></div>",
                    e(&f.value),
                    e(&f.label)
                );
            }
            let _ = writeln!(out, "</div>");
        }
        if !a.findings.is_empty() {
            let _ = writeln!(out, "<h3>Findings</h3><ul class=\"findings\">");
            for f in &a.findings {
                let _ = writeln!(out, "<li>{}</li>", e(f));
            }
            let _ = writeln!(out, "</ul>");
        }
        let _ = writeln!(out, "</div>");
        for s in &self.sections {
            if s.blocks.iter().all(|b| matches!(b, Block::Images(_))) {
                continue;
            }
            let _ = writeln!(
                out,
                "<h3 id=\"{}\">{}</h3>",
                e(&s.id.replace(' ', "-")),
                e(&s.title)
            );
            if !s.caption.is_empty() {
                let _ = writeln!(out, "<p class=\"caption\">{}</p>", e(&s.caption));
            }
            for b in &s.blocks {
                match b {
                    Block::Table { header, rows } => {
                        let _ = write!(out, "<table><tr>");
                        for h in header {
                            let _ = write!(out, "<th>{}</th>", e(h));
                        }
                        let _ = writeln!(out, "</tr>");
                        for r in rows {
                            let _ = write!(out, "<tr>");
                            for c in r {
                                let class = match c.mark {
                                    Some(Verdict::Better) => " class=\"better\"",
                                    Some(Verdict::Worse) => " class=\"worse\"",
                                    // Words keep to the left, as on the terminal.
                                    _ if c.prose => " style=\"text-align:left\"",
                                    _ => "",
                                };
                                let mark = c.mark.map_or("", crate::marks::svg);
                                let text = if c.code {
                                    format!("<code>{}</code>", e(&c.text))
                                } else {
                                    e(&c.text)
                                };
                                let sep = if c.mark.is_some() { " " } else { "" };
                                let _ =
                                    write!(out, "<td{class}>{text}{sep}{mark}{}</td>", e(&c.after));
                            }
                            let _ = writeln!(out, "</tr>");
                        }
                        let _ = writeln!(out, "</table>");
                    }
                    Block::Pairs(rows) => {
                        let _ = writeln!(out, "<table><tr><th>Metric</th><th>Value</th></tr>");
                        for (l, v) in rows {
                            let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", e(l), e(v));
                        }
                        let _ = writeln!(out, "</table>");
                    }
                    Block::List(items) => {
                        let _ = writeln!(out, "<ul>");
                        for i in items {
                            let _ = writeln!(out, "<li>{}</li>", crate::marks::in_text(i));
                        }
                        let _ = writeln!(out, "</ul>");
                    }
                    Block::Notes(notes) => {
                        for n in notes {
                            let _ =
                                writeln!(out, "<p class=\"note\">{}</p>", crate::marks::in_text(n));
                        }
                    }
                    Block::Images(_) => {}
                }
            }
        }
        let _ = writeln!(out, "</section>");
        out
    }
}

/// Prose for Markdown (notes, findings, captions): the characters that would end a table
/// row or open an HTML element escaped; backticks kept, as the prose marks code with them.
pub(crate) fn md_prose(s: &str) -> String {
    terminal_safe(s)
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A figure's value with its change: `870.20 (+5.40% 🟢)`.
fn figure_value(f: &Figure) -> String {
    match &f.change {
        Some((v, c)) => format!("{} ({c} {})", f.value, v.mark()),
        None => f.value.clone(),
    }
}

/// `TPS avg 870.20`.
fn figure_text(f: &Figure) -> String {
    format!("{} {}", f.label, figure_value(f))
}

/// A Markdown table cell.
fn md_cell(c: &Cell) -> String {
    let text = if c.code {
        format!(
            "`{}`",
            terminal_safe(&c.text).replace('`', "'").replace('|', "\\|")
        )
    } else {
        md_text(&c.text)
    };
    let body = match c.mark {
        Some(m) => format!("{text} {}{}", m.mark(), md_text(&c.after)),
        None => format!("{text}{}", md_text(&c.after)),
    };
    if c.strong {
        format!("**{body}**")
    } else {
        body
    }
}

/// Everything a reader must find of `doc` in each form: its title, each section's title,
/// every cell, pair, point and note (Images only in Markdown), and the answer's parts.
#[cfg(test)]
pub(crate) fn words(doc: &Doc) -> Vec<String> {
    let mut w = vec![doc.title.clone()];
    w.extend(doc.meta.iter().cloned());
    let a = &doc.answer;
    w.extend(a.banner.iter().cloned());
    w.extend(a.verdict.iter().map(|(_, v)| v.clone()));
    w.extend(
        a.figures
            .iter()
            .flat_map(|f| [f.label.clone(), f.value.clone()]),
    );
    w.extend(a.findings.iter().cloned());
    for s in &doc.sections {
        if s.blocks.iter().all(|b| matches!(b, Block::Images(_))) {
            continue;
        }
        if !matches!(s.blocks.as_slice(), [Block::Notes(_)]) {
            w.push(s.title.clone());
        }
        for b in &s.blocks {
            match b {
                Block::Table { header, rows } => {
                    w.extend(header.iter().cloned());
                    w.extend(rows.iter().flatten().map(|c| c.text.clone()));
                }
                Block::Pairs(rows) => {
                    w.extend(rows.iter().flat_map(|(l, v)| [l.clone(), v.clone()]))
                }
                Block::List(items) | Block::Notes(items) => w.extend(items.iter().cloned()),
                Block::Images(_) => {}
            }
        }
    }
    w.retain(|s| !s.is_empty());
    w
}

#[cfg(test)]
mod tests {

    #[test]
    fn columns_line_up_on_a_terminal_with_marks_in_them() {
        use unicode_width::UnicodeWidthStr;
        let mut out = String::new();
        let header = ["figure".to_string(), "change".to_string(), "n".to_string()];
        let rows = [
            vec!["TPS".to_string(), "+3.0 % 🟢".to_string(), "1".to_string()],
            vec![
                "TTFB p99".to_string(),
                "−1.0 % ⚪".to_string(),
                "22".to_string(),
            ],
            vec!["errors".to_string(), "0.0 %".to_string(), "333".to_string()],
        ];
        let align = |c: usize| if c == 0 { Align::Left } else { Align::Right };
        aligned(&mut out, "  ", &header, &rows, align, true);
        let widths: Vec<usize> = out.lines().map(|l| l.width()).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{widths:?}\n{out}");
    }

    /// The history's layout: text left, figures right, by display width (a CJK name takes
    /// two columns a character), the last column unpadded.
    #[test]
    fn aligned_columns_pad_by_display_width_and_leave_the_last_unpadded() {
        let header = ["name".to_string(), "TPS".to_string(), "dir".to_string()];
        let rows = vec![
            vec!["部屋".to_string(), "1.00".to_string(), "runs/a".to_string()],
            vec!["rooms-x".to_string(), "120.50".to_string(), "r".to_string()],
        ];
        let mut out = String::new();
        let align = |c: usize| if c == 1 { Align::Right } else { Align::Left };
        aligned(&mut out, "", &header, &rows, align, false);
        assert_eq!(
            out,
            "name        TPS  dir\n部屋       1.00  runs/a\nrooms-x  120.50  r\n"
        );
    }
    use super::*;

    fn sample() -> Doc {
        Doc {
            title: "rooms <b>".into(),
            meta: vec!["complete · 10.00 s measured".into()],
            answer: Answer {
                banner: Some("NO REQUEST COMPLETED".into()),
                verdict: Some((false, "1 of 2 thresholds failed".into())),
                summary: None,
                figures: vec![Figure::new("TPS avg", "870.20".into())],
                findings: vec!["the pool waits".into()],
            },
            sections: vec![
                Section::new(
                    "server",
                    "Server",
                    "peaks",
                    Block::Table {
                        header: vec!["Series".into(), "Peak".into()],
                        rows: vec![vec![Cell::code("hikaricp_pending|x"), "3.000".into()]],
                    },
                ),
                Section::new("notes", "Notes", "", Block::Notes(vec!["a note".into()])),
            ],
        }
    }

    /// Each form holds every word of the model, its outside text made safe its own way.
    #[test]
    fn every_form_holds_every_part_of_the_model() {
        let d = sample();
        let (t, m, h) = (d.terminal(), d.markdown(), d.html());
        for w in words(&d) {
            assert!(
                t.contains(&*terminal_safe(&w)),
                "terminal lacks {w:?}:\n{t}"
            );
            let in_md = m.contains(&md_text(&w)) || m.contains(&md_prose(&w));
            assert!(in_md, "markdown lacks {w:?}:\n{m}");
            assert!(
                h.contains(&HtmlEscape(&w).to_string()),
                "html lacks {w:?}:\n{h}"
            );
        }
        assert!(h.contains("rooms &lt;b&gt;") && !h.contains("<b>\n"), "{h}");
        assert!(m.contains("`hikaricp_pending\\|x`"), "{m}");
        // The answer comes before any table.
        for form in [&t, &m, &h] {
            let answer = form.find("870.20").unwrap();
            let first_table = form.find("Series").unwrap();
            assert!(answer < first_table, "{form}");
        }
    }

    /// The summary: the answer first, three findings and a count of the rest, the leading
    /// tables cut to fit, and a last line naming what was left out and where it is.
    #[test]
    fn the_summary_leads_with_the_answer_and_fits_its_budget() {
        let mut d = sample();
        d.answer.findings = (1..=7).map(|i| format!("finding {i}")).collect();
        d.sections.insert(
            0,
            Section::new(
                "levels",
                "Levels",
                "",
                Block::Table {
                    header: vec!["VUs".into(), "TPS".into()],
                    rows: (0..60)
                        .map(|i| cells(vec![i.to_string(), "1".into()]))
                        .collect(),
                },
            ),
        );
        let s = d.terminal_as(Detail::Summary, "runs/x/report.md");
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.len() <= SUMMARY_LINES, "{} lines:\n{s}", lines.len());
        assert!(
            lines[..6]
                .iter()
                .any(|l| l.contains("1 of 2 thresholds failed")),
            "{s}"
        );
        assert!(s.contains("finding 3") && !s.contains("finding 4"), "{s}");
        assert!(s.contains("… and 4 more in runs/x/report.md"), "{s}");
        assert!(s.contains("… and 40 more rows in runs/x/report.md"), "{s}");
        let last = lines.last().unwrap();
        assert!(
            last.contains("runs/x/report.md") && last.contains("Server") && last.contains("1 note"),
            "{s}"
        );
        // Verbose is every word; a line is one line.
        assert_eq!(d.terminal_as(Detail::Verbose, ""), d.terminal());
        let line = d.terminal_as(Detail::Line, "runs/x");
        assert_eq!(line.lines().count(), 2, "{line}");
        assert!(line.ends_with("  - finding 1 (and 6 more)\n"), "{line}");
        assert!(
            line.contains("TPS avg 870.20") && line.contains("runs/x"),
            "{line}"
        );
    }
}
