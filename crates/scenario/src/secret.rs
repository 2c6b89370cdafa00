//! What a credential looks like, decided once: by its name (`password`, `X-Api-Key`, Google's
//! `key=`, Azure's `code=` …) or by its shape (a JWT, a long random token). The converters
//! move such values out of the files they write, and every derived copy of a command or a
//! plan (run.json's `command` and request headers) shows them as `***`.

/// `roomId`, `room-id`, `Room ID` → `room_id`: the words of a name, lower case, joined by
/// `_` (empty for a name without letters or digits).
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    out.trim_end_matches('_').to_string()
}

/// Whether a header, parameter, field or cookie of this name holds a credential: a word of
/// it says so (`password`, `api_key`, `X-Auth-Token` …), or it is one of the short names
/// that are a credential when they are the whole name (`pin`, `pw`).
pub fn secret_name(name: &str) -> bool {
    let whole = snake(name);
    if matches!(whole.as_str(), "pin" | "pw") {
        return true;
    }
    let words: Vec<String> = whole.split('_').map(str::to_string).collect();
    let hit = |w: &str| {
        matches!(
            w,
            "password"
                | "passwd"
                | "pwd"
                | "secret"
                | "token"
                | "apikey"
                | "session"
                | "sessionid"
                | "sid"
                | "jwt"
                | "auth"
                | "authorization"
                | "signature"
                | "credential"
                | "credentials"
                | "csrf"
                | "xsrf"
                | "otp"
                | "pass"
                | "passcode"
                | "passphrase"
        )
    };
    words.iter().any(|w| {
        hit(w)
            || w.contains("session")
            || w.ends_with("token")
            || w.ends_with("password")
            || w.ends_with("secret")
    }) || words.windows(2).any(|p| {
        p[1] == "key"
            && matches!(
                p[0].as_str(),
                "api"
                    | "access"
                    | "private"
                    | "secret"
                    | "client"
                    | "subscription"
                    | "functions"
                    | "function"
                    | "master"
                    | "app"
                    | "license"
                    | "signing"
                    | "host"
            )
    })
}

/// Whether a value looks like a credential whatever its name: a JWT, or a long random
/// token (32 characters or more of letters, digits and `-_.+/=`, in at most three parts,
/// with upper case, lower case and digits mixed, as API keys and tokens are generated:
/// Google's 39, Stripe's and GitHub's 40 and more). A UUID or a hex id is not one, nor a
/// shorter random id (a KSUID's 27, a Stripe object id's 27).
pub fn secret_value(value: &str) -> bool {
    let v = value.trim();
    let jwt = v.starts_with("eyJ")
        && v.split('.').count() == 3
        && v.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
        });
    let token = v.len() >= 32
        && v.len() <= 4096
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.+/=".contains(&b))
        && v.bytes().any(|b| b.is_ascii_uppercase())
        && v.bytes().any(|b| b.is_ascii_lowercase())
        && v.bytes().any(|b| b.is_ascii_digit())
        // Words joined by dashes (`Room-2026-Kickoff-Meeting-Notes`) are text, not a key.
        && v.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()).count() <= 3;
    jwt || token
}

/// Whether the value under `name` (a body field: JSON, form, XML) is a credential, by its
/// name or by its shape.
pub fn secret(name: &str, value: &str) -> bool {
    !value.is_empty() && (secret_name(name) || secret_value(value))
}

/// Whether a query parameter or a header `name` holds a credential: as [`secret`], and also
/// the bare names cloud services put in URLs and headers — Google's `key=`, Azure Functions'
/// `code=`, a SAS `sig=` — which in a body are as often a country code or a setting's key.
pub fn secret_param(name: &str, value: &str) -> bool {
    secret(name, value)
        || (!value.is_empty() && matches!(snake(name).as_str(), "key" | "code" | "sig"))
}

/// `<name>value</name>` elements of an XML text whose name or value is a credential (the
/// name without a namespace prefix), in order, each once.
pub fn xml_secrets(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    // Each element's end is looked for in what follows it; past a few MiB that search
    // would cost more than the conversion (known values are still scrubbed everywhere).
    if text.len() > 4 << 20 {
        return out;
    }
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        if tag.starts_with(['/', '?', '!']) || tag.ends_with('/') {
            continue;
        }
        let name = tag.split_whitespace().next().unwrap_or("");
        let body = &rest[close + 1..];
        let end = format!("</{name}>");
        // A credential is short: its end tag is looked for within 4 KiB (as bytes, so no
        // character is cut), and the scan stays linear however many elements never close.
        let near = &body.as_bytes()[..body.len().min(4096)];
        let Some(stop) = near.windows(end.len()).position(|w| w == end.as_bytes()) else {
            continue;
        };
        let value = body[..stop].trim();
        let local = name.rsplit(':').next().unwrap_or(name);
        if !value.contains('<')
            && value.len() >= 3
            && secret(local, value)
            && !out.iter().any(|(_, v)| v == value)
        {
            out.push((local.to_string(), value.to_string()));
        }
    }
    out
}

/// A command line as a derived copy may keep it (run.json's `command`, a converted file's
/// header): a URL's password (`http://user:pass@host`, also after `--out kind=`) and its
/// credential query parameters (`?api_key=…`) become `***`, and so does the value of a
/// `--header`/`-H` (also `-HName: v`, `-H=…`, `--header=…`) whose name or value is a credential.
pub fn mask_args<I: IntoIterator<Item = String>>(args: I) -> Vec<String> {
    let mut out = Vec::new();
    let mut header_next = false;
    for a in args {
        let a = mask_url(&a);
        let masked = if header_next {
            header_next = false;
            mask_header(&a)
        } else if let Some(h) = a.strip_prefix("--header=") {
            format!("--header={}", mask_header(h))
        } else if let Some(h) = a.strip_prefix("-H").filter(|h| !h.is_empty()) {
            let (eq, h) = h.strip_prefix('=').map_or(("", h), |h| ("=", h));
            format!("-H{eq}{}", mask_header(h))
        } else {
            header_next = a == "--header" || a == "-H";
            a
        };
        out.push(masked);
    }
    out
}

/// `text` with every URL's password and credential query parameters shown as `***`
/// (run.json's recorded request URL, an argument).
pub fn mask_url(text: &str) -> String {
    let text = mask_url_passwords(text);
    if !text.contains("://") {
        return text;
    }
    let Some(q) = text.find('?') else {
        return text;
    };
    let (head, query) = text.split_at(q + 1);
    let (query, fragment) = match query.find(['#', ' ']) {
        Some(i) => query.split_at(i),
        None => (query, ""),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, v)) if secret_param(k, v) => format!("{k}=***"),
            _ => p.to_string(),
        })
        .collect();
    format!("{head}{}{fragment}", pairs.join("&"))
}

fn mask_header(h: &str) -> String {
    match h.split_once(':') {
        Some((n, v)) => match masked_header_value(n, v) {
            m if m == v => h.to_string(),
            m => format!("{n}: {m}"),
        },
        None => h.to_string(),
    }
}

/// Every `scheme://user:password@` in `text` with the password as `***`.
pub fn mask_url_passwords(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail.find(['/', '?', '#', ' ']).unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(atsign) => match authority[..atsign].split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***");
                    out.push_str(&authority[atsign..]);
                }
                None => out.push_str(authority),
            },
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// The value of header `name` as a derived copy keeps it: `***` for a credential (by name
/// or shape, `Authorization` and `Cookie` always).
pub fn masked_header_value(name: &str, value: &str) -> String {
    let n = name.trim();
    if secret_param(n, value.trim())
        || n.eq_ignore_ascii_case("cookie")
        || n.eq_ignore_ascii_case("authorization")
    {
        "***".to_string()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for n in [
            "Authorization",
            "X-Api-Key",
            "api_key",
            "access_token",
            "password",
            "JSESSIONID",
            "session",
            "X-CSRF-Token",
            "sid",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in ["size", "page", "roomId", "keyboard", "Accept", "side"] {
            assert!(!secret_name(n), "{n}");
        }
    }

    #[test]
    fn credentials_under_common_names_and_shapes() {
        for n in [
            "pass",
            "pin",
            "passcode",
            "Ocp-Apim-Subscription-Key",
            "x-functions-key",
            "X-Api-Pass",
        ] {
            assert!(secret_name(n), "{n}");
        }
        // Bare `key`, `code`, `sig` are credentials in a URL or a header, not in a body.
        for n in ["key", "code", "sig"] {
            assert!(secret_param(n, "v1") && !secret(n, "US"), "{n}");
        }
        for n in [
            "country_code",
            "status_code",
            "sort_key",
            "pinned",
            "passenger",
            "zipcode",
        ] {
            assert!(!secret_name(n), "{n}");
        }
        for v in [
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "AIzaSyD3k9XvQ7mN2pL8rT4wB6yH1jF5cE0uZ",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dcX9Yz",
        ] {
            assert!(secret_value(v), "{v}");
        }
        for v in [
            "3fa85f64-5717-4562-b3fc-2c963f66afa6",
            "d41d8cd98f00b204e9800998ecf8427e",
            "Room-2026-Kickoff-Meeting-Notes",
            "2NUKMTuPRgHcFgvoLuyqKPAPbtY",
            "pi_3MtwBwLkdIwHu7ix28a3tqPa",
            "HelloWorldApplication2024",
            "short1A",
            "application/json",
        ] {
            assert!(!secret_value(v), "{v}");
        }
    }

    #[test]
    fn xml_credentials_are_found() {
        let x = "<?xml version=\"1.0\"?><login><user>ann</user><password>hunter22</password><ns:token a=\"1\">tok-123</ns:token></login>";
        assert_eq!(
            xml_secrets(x),
            vec![
                ("password".to_string(), "hunter22".to_string()),
                ("token".to_string(), "tok-123".to_string())
            ]
        );
    }

    #[test]
    fn command_lines_are_masked() {
        let args = [
            "volley",
            "run",
            "--out",
            "prometheus=http://u:hunter2@127.0.0.1:9090/api/v1/write",
            "--header",
            "Authorization: Bearer abc",
            "-H",
            "Accept: text/plain",
            "--header=X-Api-Key: k123",
            "--url",
            "http://a:b@h/x?y=1",
        ]
        .map(String::from);
        let m = mask_args(args).join(" ");
        assert!(
            !m.contains("hunter2")
                && !m.contains("abc")
                && !m.contains("k123")
                && !m.contains(":b@"),
            "{m}"
        );
        assert!(
            m.contains("prometheus=http://u:***@127.0.0.1:9090/api/v1/write"),
            "{m}"
        );
        assert!(
            m.contains("Accept: text/plain") && m.contains("Authorization: ***"),
            "{m}"
        );
        assert!(m.contains("http://a:***@h/x?y=1"), "{m}");
        let m = mask_args(
            [
                "-HAuthorization: Bearer abc",
                "-H=X-Api-Key: k1",
                "--url",
                "http://h/x?page=2&api_key=SEKRET1&key=k2",
            ]
            .map(String::from),
        )
        .join(" ");
        assert!(
            !m.contains("abc") && !m.contains("k1") && !m.contains("SEKRET1") && !m.contains("k2"),
            "{m}"
        );
        assert!(m.contains("page=2&api_key=***&key=***"), "{m}");
    }
}
