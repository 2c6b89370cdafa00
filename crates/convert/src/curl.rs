//! `volley convert curl`: one curl command line (as API docs and browsers' "Copy as cURL"
//! give it) as a one-step scenario: method, URL, headers, body (`-d`, `--data-raw`,
//! `--data-urlencode`, `--json`), `-u` and `-b` — credentials become environment variables.

use crate::secrets::Secrets;
use crate::step::{Body, Doc, Step};
use crate::text::literal;
use crate::{Converted, Error, Kind};

fn err(msg: String) -> Error {
    Error::new(Kind::Curl, msg)
}

/// Flags that change nothing volley sends (output, verbosity, TLS and redirect choices).
const IGNORED: [&str; 17] = [
    "-s",
    "--silent",
    "-S",
    "--show-error",
    "-L",
    "--location",
    "-k",
    "--insecure",
    "-v",
    "--verbose",
    "-i",
    "--include",
    "--compressed",
    "-f",
    "--fail",
    "--http1.1",
    "--http2",
];
const IGNORED_WITH_VALUE: [&str; 6] = [
    "-o",
    "--output",
    "-m",
    "--max-time",
    "--connect-timeout",
    "-w",
];

/// `text` with bash's ANSI-C quoting (`$'a\'b\n'`, which Chrome's "Copy as cURL (bash)"
/// writes for bodies with quotes or line ends) turned into plain single quotes around the
/// decoded text, which `shlex` reads; the rest is left as it is.
fn ansi_c_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '\'' if !double => {
                single = !single;
                out.push(c);
            }
            '"' if !single => {
                double = !double;
                out.push(c);
            }
            '$' if !single && !double && chars.peek() == Some(&'\'') => {
                chars.next();
                let mut decoded = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\'' => break,
                        '\\' => match chars.next() {
                            Some('n') => decoded.push('\n'),
                            Some('t') => decoded.push('\t'),
                            Some('r') => decoded.push('\r'),
                            Some('a') => decoded.push('\u{7}'),
                            Some('b') => decoded.push('\u{8}'),
                            Some('f') => decoded.push('\u{c}'),
                            Some('v') => decoded.push('\u{b}'),
                            Some('e' | 'E') => decoded.push('\u{1b}'),
                            // Octal, up to three digits (`\0` alone is NUL).
                            Some(d @ '0'..='7') => {
                                let mut n = d.to_digit(8).unwrap_or(0);
                                for _ in 0..2 {
                                    match chars.next_if(|c| ('0'..='7').contains(c)) {
                                        Some(c) => n = n * 8 + c.to_digit(8).unwrap_or(0),
                                        None => break,
                                    }
                                }
                                if let Some(ch) = char::from_u32(n) {
                                    decoded.push(ch);
                                }
                            }
                            Some('x') => {
                                let hex: String =
                                    std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_hexdigit()))
                                        .take(2)
                                        .collect();
                                if let Some(ch) =
                                    u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                                {
                                    decoded.push(ch);
                                }
                            }
                            Some(u @ ('u' | 'U')) => {
                                let n = if u == 'u' { 4 } else { 8 };
                                let hex: String =
                                    std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_hexdigit()))
                                        .take(n)
                                        .collect();
                                if let Some(ch) =
                                    u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                                {
                                    decoded.push(ch);
                                }
                            }
                            Some(other) => decoded.push(other),
                            None => {}
                        },
                        c => decoded.push(c),
                    }
                }
                out.push('\'');
                out.push_str(&decoded.replace('\'', "'\\''"));
                out.push('\'');
            }
            c => out.push(c),
        }
    }
    out
}

/// Converts one curl command: `args` is the command line as one string (split as a shell
/// would) or already split; a leading `curl` is skipped.
pub fn convert(args: &[String], command: &str) -> Result<Converted, Error> {
    let words: Vec<String> = if args.len() == 1 {
        shlex::split(&ansi_c_quotes(&args[0])).ok_or_else(|| err("the command line has an unclosed quote: close it, or pass the curl arguments after `--` one by one".into()))?
    } else {
        args.to_vec()
    };
    let mut words = words
        .into_iter()
        .filter(|w| w != "\\" && w != "\n")
        .peekable();
    if words.peek().is_some_and(|w| w == "curl") {
        words.next();
    }
    let (mut method, mut url, mut headers, mut data, mut json, mut user, mut cookies, mut get) = (
        None::<String>,
        None::<String>,
        Vec::<(String, String)>::new(),
        Vec::<String>::new(),
        false,
        None::<String>,
        Vec::<String>::new(),
        false,
    );
    let mut head = false;
    while let Some(w) = words.next() {
        // `-XPOST`, `--request=POST`.
        let (flag, inline) =
            if let Some((f, v)) = w.split_once('=').filter(|(f, _)| f.starts_with("--")) {
                (f.to_string(), Some(v.to_string()))
            } else if w.len() > 2
                && w.starts_with('-')
                && !w.starts_with("--")
                && "XHduAbe".contains(&w[1..2])
            {
                (w[..2].to_string(), Some(w[2..].to_string()))
            } else {
                (w.clone(), None)
            };
        let mut value = |what: &str| -> Result<String, Error> {
            inline
                .clone()
                .or_else(|| words.next())
                .ok_or_else(|| err(format!("`{flag}` needs {what} after it")))
        };
        match flag.as_str() {
            "-X" | "--request" => method = Some(value("a method")?),
            "-H" | "--header" => {
                let h = value("a header, `Name: value`")?;
                let (n, v) = h.split_once(':').ok_or_else(|| err(format!("header `{h}` has no `:`; write it as -H 'Name: value'")))?;
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
            "-d" | "--data" | "--data-ascii" | "--data-binary" => {
                let d = value("the body")?;
                if let Some(file) = d.strip_prefix('@') {
                    return Err(err(format!(
                        "`{flag} @{file}` reads the body from a file, which a scenario cannot refer to: paste the body inline (--data-raw '...'), or put it in the scenario's `json:`/`body:` by hand"
                    )));
                }
                data.push(d);
            }
            "--data-raw" => data.push(value("the body")?),
            "--data-urlencode" => {
                let d = value("`name=value`")?;
                let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
                if d.contains('@') && !d.contains('=') {
                    return Err(err(format!("`--data-urlencode {d}` reads a file, which a scenario cannot refer to: give the value inline, `name=value`")));
                }
                data.push(match d.split_once('=') {
                    Some(("", v)) => encode(v),
                    Some((n, v)) => format!("{n}={}", encode(v)),
                    None => encode(&d),
                });
            }
            "--json" => {
                let d = value("a JSON body")?;
                if d.starts_with('@') {
                    return Err(err(format!("`--json {d}` reads the body from a file, which a scenario cannot refer to: paste the JSON inline")));
                }
                data.push(d);
                json = true;
            }
            "-u" | "--user" => user = Some(value("`user:password`")?),
            "-b" | "--cookie" => {
                let c = value("cookies, `name=value; name2=value2`")?;
                if !c.contains('=') {
                    return Err(err(format!("`-b {c}` names a cookie file, which a scenario cannot refer to: give the cookies inline, -b 'name=value'")));
                }
                cookies.push(c);
            }
            "-A" | "--user-agent" => headers.push(("User-Agent".into(), value("a user agent")?)),
            "-e" | "--referer" => headers.push(("Referer".into(), value("a URL")?)),
            "-G" | "--get" => get = true,
            "-I" | "--head" => head = true,
            "--url" => url = Some(value("a URL")?),
            "-F" | "--form" => return Err(err("`-F` sends a multipart form, which volley does not send: use -d 'a=1&b=2' (a urlencoded form) or --json".into())),
            f if IGNORED.contains(&f) => {}
            f if IGNORED_WITH_VALUE.contains(&f) => {
                value("a value")?;
            }
            f if f.starts_with('-') && f.len() > 1 => {
                return Err(err(format!(
                    "curl option `{f}` is not understood here; volley converts -X, -H, -d/--data/--data-raw/--data-binary, --data-urlencode, --json, -u, -b, -A, -e, -G, -I and --url"
                )));
            }
            _ if url.is_none() => url = Some(w),
            _ => return Err(err(format!("a second URL `{w}`: convert one request at a time"))),
        }
    }
    let url = url.ok_or_else(|| err("no URL: write it like `volley convert curl 'curl https://api.example.com/items -H \"Accept: application/json\"'`".into()))?;
    let parsed = url::Url::parse(&url)
        .or_else(|_| url::Url::parse(&format!("http://{url}")))
        .map_err(|e| {
            err(format!(
                "`{url}` is not a URL ({e}): write it like http://127.0.0.1:8080/rooms"
            ))
        })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(err(format!(
            "`{url}`: volley requests http:// and https:// URLs"
        )));
    }
    // `https://user:password@host/…` authenticates as `-u user:password` does: the same
    // Authorization header from an environment variable, never the URL's credentials.
    if user.is_none() && !parsed.username().is_empty() {
        let decode = |t: &str| {
            percent_encoding::percent_decode_str(t)
                .decode_utf8_lossy()
                .into_owned()
        };
        user = Some(format!(
            "{}:{}",
            decode(parsed.username()),
            decode(parsed.password().unwrap_or(""))
        ));
    }
    let mut body = data.join("&");
    let mut query = parsed.query().map(str::to_string);
    if get && !body.is_empty() {
        query = Some(match query {
            Some(q) => format!("{q}&{body}"),
            None => body.clone(),
        });
        body.clear();
    }
    let method = method.unwrap_or_else(|| {
        if head {
            "HEAD".into()
        } else if !body.is_empty() {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    let mut secrets = Secrets::default();
    let mut comments = Vec::new();
    let mut path = literal(parsed.path());
    if let Some(q) = &query {
        let parts: Vec<String> = q
            .split('&')
            .map(|p| {
                let (n, v) = p.split_once('=').unwrap_or((p, ""));
                let name = crate::exchange::decode_query(n);
                match secrets.query_param(&name, v, &mut comments, "the command") {
                    Some(e) => format!("{}={e}", literal(n)),
                    None => literal(p),
                }
            })
            .collect();
        path = format!("{path}?{}", parts.join("&"));
    }
    let mut step = Step::new(&method, path);
    step.name = format!("{method} {}", parsed.path());
    let content_type = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.to_ascii_lowercase());
    let is_json = json || content_type.as_deref().is_some_and(|c| c.contains("json"));
    let is_form = !is_json
        && content_type
            .as_deref()
            .is_none_or(|c| c.contains("x-www-form-urlencoded"));
    if !body.is_empty() {
        step.body = if is_json {
            match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(v) => {
                    let mut subs = Default::default();
                    secrets.json_fields(&v, &mut subs, &mut comments, "the command");
                    Body::Json(crate::exchange::template_json(&v, "", &subs, &literal))
                }
                Err(e) => {
                    return Err(err(format!(
                        "the body is sent as JSON but is not JSON ({e}): fix it, or send it with --data-raw and a Content-Type of your choice"
                    )));
                }
            }
        } else if is_form && body.split('&').all(|p| p.contains('=')) {
            Body::Form(
                form_urlencoded::parse(body.as_bytes())
                    .map(|(k, v)| {
                        let value = secrets
                            .form_field(&k, &v, &mut comments, "the command")
                            .unwrap_or_else(|| literal(&v));
                        (literal(&k), value)
                    })
                    .collect(),
            )
        } else {
            if content_type.is_none() {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
            }
            Body::Text(literal(&body))
        };
    }
    for (n, v) in &headers {
        let lower = n.to_ascii_lowercase();
        if lower == "content-type" && matches!(step.body, Body::Json(_) | Body::Form(_)) {
            continue;
        }
        if lower == "cookie" {
            cookies.push(v.clone());
            continue;
        }
        if lower == "authorization" {
            let (t, c) = secrets.authorization(v);
            step.headers.push((n.clone(), t, Some(c)));
        } else if let Some((t, c)) = secrets.header_value(n, v, "the command") {
            step.headers.push((n.clone(), t, Some(c)));
        } else {
            step.headers.push((n.clone(), literal(v), None));
        }
    }
    if json
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("accept"))
    {
        step.headers
            .push(("Accept".into(), "application/json".into(), None));
    }
    if let Some(u) = &user {
        let (name, _) = u.split_once(':').unwrap_or((u, ""));
        let var = secrets.var("basic_auth", u, "base64 of user:password");
        step.headers.push((
            "Authorization".into(),
            format!("Basic {{{{ env.{var} }}}}"),
            Some(format!("-u {name}:…; set env.{var} to the base64 of user:password (printf %s 'user:password' | base64)")),
        ));
    }
    if !cookies.is_empty() {
        let mut notes = Vec::new();
        let parts: Vec<String> = cookies
            .iter()
            .flat_map(|c| {
                c.split(';')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .map(|p| {
                let (n, v) = p.split_once('=').unwrap_or((&p, ""));
                let var = secrets.var(n, v, &format!("cookie `{n}`"));
                notes.push(format!("cookie `{n}` came from the command; set env.{var}"));
                format!("{}={{{{ env.{var} }}}}", literal(n))
            })
            .collect();
        step.headers
            .push(("Cookie".into(), parts.join("; "), Some(notes.join("; "))));
    }
    step.comments = comments;
    // The command line itself may hold the credentials just replaced: never repeat it then.
    let shown = if secrets
        .values()
        .any(|(v, _)| !v.is_empty() && command.contains(v))
    {
        "volley convert curl"
    } else {
        command
    };
    let mut header = vec![format!("Converted by `{shown}`.")];
    header.extend(secrets.header());
    let target = format!(
        "{}://{}",
        parsed.scheme(),
        match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or("")),
            None => parsed.host_str().unwrap_or("").to_string(),
        }
    );
    let doc = Doc {
        header,
        name: "curl".into(),
        target,
        variables: Vec::new(),
        steps: vec![step],
    };
    let env: Vec<String> = secrets.needed.iter().map(|(n, _)| n.clone()).collect();
    let notes = if env.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "set these environment variables: {}",
            env.join(", ")
        )]
    };
    Ok(Converted {
        yaml: doc.render(),
        notes,
        env,
    })
}
