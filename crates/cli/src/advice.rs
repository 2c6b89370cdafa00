//! What to do about a fatal error, in the binary's terms: the library crates say what went
//! wrong (an `Error` with a `Kind`); which flag changes it is said here, and only here.

use volley_engine::Kind as Engine;

/// The advice for `e`, when one of its causes is of a kind that has one: a line naming the
/// flags that change it.
pub(crate) fn advice(e: &anyhow::Error) -> Option<&'static str> {
    e.chain().find_map(of)
}

/// The advice for `cause` alone (not its sources).
pub(crate) fn of(cause: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    if let Some(e) = cause.downcast_ref::<volley_engine::Error>() {
        return engine(e);
    }
    if let Some(e) = cause.downcast_ref::<volley_record::Error>() {
        return e.engine().and_then(engine);
    }
    if let Some(e) = cause.downcast_ref::<volley_merge::Error>() {
        return merge(e);
    }
    if let Some(e) = cause.downcast_ref::<volley_report::Error>() {
        return e.is_warmup().then_some(
            "the warm-up is --warmup (or `warmup:` in a scenario): seconds, like --warmup 60s, or whole stages, like --warmup stage:1",
        );
    }
    if let Some(e) = cause.downcast_ref::<volley_stats::Error>() {
        return e.is_too_few_points().then_some(
            "more levels: a capacity search over users (volley capacity --vus …), or a step-up run with more --stages",
        );
    }
    None
}

fn engine(e: &volley_engine::Error) -> Option<&'static str> {
    Some(match e.kind() {
        Engine::TlsHandshake => {
            "if the server's certificate is the trouble, give --cacert with its CA (PEM), or --insecure to skip verification"
        }
        Engine::CaCert => "--cacert takes a PEM file of the CA certificates to trust",
        Engine::SourceAddrs => {
            "--source-addrs takes addresses of this machine, such as 127.0.0.1,127.0.0.2 or a range 127.0.0.1-127.0.0.4"
        }
        Engine::UserInfo => {
            "send the credentials as a header: -H 'Authorization: Basic …', or `headers:` in a scenario"
        }
        _ => return None,
    })
}

fn merge(e: &volley_merge::Error) -> Option<&'static str> {
    Some(match e.kind() {
        volley_merge::Kind::StartsApart => {
            "start the segments with one --start-at, or widen volley merge's --start-tolerance"
        }
        volley_merge::Kind::NotASegment => {
            "merge the run directories written by `volley run --segment i/N`"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{Read, Write};
    use std::time::Duration;

    use volley_engine::{Target, TlsOptions};

    /// A real TLS handshake that fails: the server answers the ClientHello with plain HTTP.
    fn tls_failure() -> volley_engine::Error {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut hello = [0u8; 512];
            let _ = s.read(&mut hello);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        });
        let target = Target::resolve(&format!("https://127.0.0.1:{port}/")).unwrap();
        let e = volley_engine::preflight(&target, &TlsOptions::default(), Duration::from_secs(5))
            .unwrap_err();
        server.join().unwrap();
        e
    }

    #[test]
    fn a_failed_tls_handshake_is_advised_the_tls_flags() {
        let e = tls_failure();
        assert!(e.is_tls_handshake(), "{:?}: {e}", e.kind());
        assert!(
            !e.to_string().contains("--"),
            "the engine names no flag: {e}"
        );
        let hint = advice(&anyhow::Error::new(e).context("the pre-flight check")).unwrap();
        assert!(
            hint.contains("--cacert") && hint.contains("--insecure"),
            "{hint}"
        );
    }

    #[test]
    fn an_error_of_no_advised_kind_has_none() {
        let e = Target::resolve("ftp://example.com/").unwrap_err();
        assert!(e.is_url(), "{:?}", e.kind());
        assert_eq!(advice(&e.into()), None);
    }
}
