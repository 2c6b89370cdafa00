//! Converters on real input — a Chromium recording of the demo target (fixtures/har/), the
//! Swagger Petstore (OpenAPI 3.0) and Bump.sh's Train Travel API (OpenAPI 3.1) from
//! fixtures/openapi/, curl command lines — each result loaded through volley-scenario's own
//! parser, as `volley check` loads it.

use std::path::{Path, PathBuf};

use volley_convert::{HarOptions, OpenApiOptions, curl, har, openapi};

fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Parses `yaml` as a scenario file; every environment variable it reads is set.
fn load(yaml: &str) -> volley_scenario::Scenario {
    volley_scenario::parse_scenario(&PathBuf::from("converted.yaml"), yaml, &|_| {
        Some("set".into())
    })
    .unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

fn steps_of(yaml: &str) -> Vec<String> {
    load(yaml)
        .step_info
        .iter()
        .map(|s| s.name.clone())
        .collect()
}

#[test]
fn the_recording_keeps_the_app_requests_and_carries_ids() {
    let c = har::convert(
        &fixture("har/chat.har"),
        &HarOptions {
            command: "test".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let y = &c.yaml;
    assert_eq!(
        steps_of(y),
        [
            "GET /app/",
            "GET /rooms",
            "POST /rooms",
            "POST /api-chat/chat",
            "POST /api-chat/chat (2)",
            "GET /rooms/{room_id}/messages",
            "POST /api/pair-room",
            "GET /api/pair-room/{access_code}",
            "POST /api/pair-room/{access_code}/todos",
            "GET /api/pair-room/{access_code}/todos",
            "PATCH /api/pair-room/{access_code}/timer/start",
            "PATCH /api/pair-room/{access_code}/status",
        ]
    );
    // Correlation: the ids come from the responses that created them...
    assert!(y.contains("room_id: $.id"), "{y}");
    assert!(y.contains("access_code: $.accessCode"), "{y}");
    assert!(y.contains("roomId: \"{{ room_id }}\""), "{y}");
    assert!(
        y.contains("request: GET /rooms/{{ room_id }}/messages?size=10&page=0"),
        "{y}"
    );
    // ... but a user's own input (userId 7, the 7th room of the list) is not tied to them.
    assert!(y.contains("userId: 7"), "{y}");
    // Static assets (css, js, svg) and the other host are left out, browser noise too.
    assert!(
        !y.contains("app.css") && !y.contains("logo.svg") && !y.contains("/health"),
        "{y}"
    );
    for noise in [
        "Sec-Fetch",
        "sec-ch-ua",
        "User-Agent",
        "Accept-Encoding",
        "Referer",
        "Accept-Language",
    ] {
        assert!(!y.contains(noise), "{noise} kept:\n{y}");
    }
    // No credential of the recording is written; environment variables stand for them.
    assert!(!y.contains("rec-SECRET"), "{y}");
    assert!(
        y.contains(
            "Authorization: Bearer {{ env.TOKEN }}  # credential from the recording; set env.TOKEN"
        ),
        "{y}"
    );
    assert!(y.contains("Cookie: session={{ env.SESSION }}  # cookie `session` came from the recording; set env.SESSION"), "{y}");
    assert!(y.contains("token={{ env.TOKEN | urlencode }}"), "{y}");
    assert_eq!(c.env, ["TOKEN", "SESSION"]);
    assert!(
        c.notes.iter().any(|n| n.contains("3 static assets")),
        "{:?}",
        c.notes
    );
    assert!(
        c.notes.iter().any(|n| n.contains("localhost:18080")),
        "{:?}",
        c.notes
    );
}

#[test]
fn recording_options_keep_static_assets_headers_and_pauses() {
    let opts = HarOptions {
        keep_static: true,
        think_times: true,
        keep_headers: vec!["user-agent".into()],
        command: "test".into(),
        ..Default::default()
    };
    let c = har::convert(&fixture("har/chat.har"), &opts).unwrap();
    let names = steps_of(&c.yaml);
    assert_eq!(names.len(), 15, "{names:?}");
    assert!(names.contains(&"GET /app/app.css".to_string()));
    assert!(c.yaml.contains("User-Agent: "), "{}", c.yaml);
    // The page waits 300 ms after listing rooms (crates/demo/assets/app.js).
    let pause: Vec<u64> = c
        .yaml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("think_time: "))
        .map(|t| t.trim_end_matches("ms").parse().unwrap())
        .collect();
    assert!(pause.iter().any(|p| (300..700).contains(p)), "{pause:?}");
    let other = har::convert(
        &fixture("har/chat.har"),
        &HarOptions {
            host: Some("localhost:18080".into()),
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(steps_of(&other.yaml), ["GET /health"]);
}

/// A small hand-written HAR: a login whose token, Location and cookie flow into later requests.
const SYNTHETIC: &str = r#"{"log": {"version": "1.2", "entries": [
 {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 5,
  "request": {"method": "POST", "url": "https://shop.test/api/login", "headers": [{"name": "Content-Type", "value": "application/json"}],
              "postData": {"mimeType": "application/json", "text": "{\"user\": \"ana\", \"password\": \"hunter2-pw\"}"}},
  "response": {"status": 200, "headers": [{"name": "Set-Cookie", "value": "sid=S3ss10nXYZ; Path=/; HttpOnly"}],
               "content": {"mimeType": "application/json", "text": "{\"token\": \"eyJhbGciOi.J9abc\", \"user\": {\"id\": 4242}}"}}},
 {"startedDateTime": "2026-01-01T00:00:01.000Z", "time": 5,
  "request": {"method": "POST", "url": "https://shop.test/api/carts", "headers": [{"name": "Authorization", "value": "Bearer eyJhbGciOi.J9abc"}, {"name": "Cookie", "value": "sid=S3ss10nXYZ"}]},
  "response": {"status": 201, "headers": [{"name": "Location", "value": "/api/carts/c-77"}], "content": {"mimeType": "text/plain", "text": ""}}},
 {"startedDateTime": "2026-01-01T00:00:02.000Z", "time": 5,
  "request": {"method": "PUT", "url": "https://shop.test/api/carts/c-77/items?userId=4242", "headers": [{"name": "Authorization", "value": "Bearer eyJhbGciOi.J9abc"}, {"name": "Cookie", "value": "sid=S3ss10nXYZ; theme=dark"}],
              "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "sku=A%2F1&qty=2"}},
  "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": "{}"}}}
]}}"#;

#[test]
fn tokens_locations_and_cookies_are_correlated() {
    let c = har::convert(
        SYNTHETIC,
        &HarOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let y = &c.yaml;
    load(y);
    assert!(y.contains("token: $.token"), "{y}");
    assert!(y.contains("Authorization: Bearer {{ token }}"), "{y}");
    assert!(
        y.contains("sid_cookie:  # sent back by POST /api/carts\n        header: Set-Cookie"),
        "{y}"
    );
    assert!(
        y.contains("{{ sid_cookie | split(';') | first }}; theme={{ env.THEME }}"),
        "{y}"
    );
    assert!(
        y.contains("location:  # followed by PUT /api/carts/c-77/items\n        header: Location"),
        "{y}"
    );
    assert!(
        y.contains("request: PUT {{ location }}/items?userId={{ user_id }}"),
        "{y}"
    );
    assert!(y.contains("password: \"{{ env.PASSWORD }}\""), "{y}");
    for secret in ["hunter2-pw", "S3ss10nXYZ", "eyJhbGciOi"] {
        assert!(!y.contains(secret), "{secret} written:\n{y}");
    }
    assert!(y.contains("sku: A/1"), "{y}");
}

#[test]
fn bad_recordings_say_what_is_wrong() {
    let e = har::convert("not json", &HarOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not a HAR file") && e.contains("Save all as HAR"),
        "{e}"
    );
    let e = har::convert(r#"{"log": {"entries": []}}"#, &HarOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no requests"), "{e}");
    let e = har::convert(
        &fixture("har/chat.har"),
        &HarOptions {
            host: Some("nowhere.test".into()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("127.0.0.1:18080") && e.contains("--host"), "{e}");
}

#[test]
fn petstore_3_0_converts_to_a_valid_scenario() {
    let c = openapi::convert(
        &fixture("openapi/petstore-3.0.yaml"),
        &OpenApiOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let names = steps_of(&c.yaml);
    // uploadFile's body is application/octet-stream: left out, and said so.
    assert!(
        !names.contains(&"uploadFile".to_string())
            && c.notes.iter().any(|n| n.contains("uploadFile")),
        "{:?}",
        c.notes
    );
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n} in {names:?}"))
    };
    assert!(pos("addPet") < pos("getPetById") && pos("getPetById") < pos("deletePet"));
    assert!(pos("placeOrder") < pos("getOrderById") && pos("deleteOrder") > pos("getOrderById"));
    let y = &c.yaml;
    assert!(y.contains("pet_id: $.id"), "{y}");
    assert!(y.contains("request: GET /api/v3/pet/{{ pet_id }}"), "{y}");
    assert!(
        y.contains("status: available"),
        "enum/example values in bodies:\n{y}"
    );
    assert!(
        y.contains("api_key: \"{{ env.API_KEY }}\"") || y.contains("env.API_KEY"),
        "{y}"
    );
    let only = openapi::convert(
        &fixture("openapi/petstore-3.0.yaml"),
        &OpenApiOptions {
            tags: vec!["store".into()],
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        steps_of(&only.yaml),
        ["placeOrder", "getInventory", "getOrderById", "deleteOrder"]
    );
    let e = openapi::convert(
        &fixture("openapi/petstore-3.0.yaml"),
        &OpenApiOptions {
            tags: vec!["cats".into()],
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pet, store, user"), "{e}");
}

#[test]
fn train_travel_3_1_converts_to_a_valid_scenario() {
    let c = openapi::convert(
        &fixture("openapi/train-travel-3.1.yaml"),
        &OpenApiOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let names = steps_of(&c.yaml);
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n} in {names:?}"))
    };
    assert!(
        pos("create-booking") < pos("get-booking") && pos("get-booking") < pos("delete-booking"),
        "{names:?}"
    );
    let y = &c.yaml;
    assert!(
        y.contains("target: https://try.microcks.io"),
        "the first server:\n{y}"
    );
    assert!(y.contains("booking_id: $.id"), "{y}");
    assert!(y.contains("/bookings/{{ booking_id }}"), "{y}");
    let one = openapi::convert(
        &fixture("openapi/train-travel-3.1.yaml"),
        &OpenApiOptions {
            operations: vec!["get-stations".into()],
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(steps_of(&one.yaml), ["get-stations"]);
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let e = openapi::convert("{\"swagger\": \"2.0\"}", &OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Swagger 2.0") && e.contains("swagger2openapi"),
        "{e}"
    );
    let e = openapi::convert(
        "openapi: 3.0.3\ninfo: {title: x}\n",
        &OpenApiOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`paths`"), "{e}");
    let e = openapi::convert("openapi: 2.5\npaths: {}\n", &OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("3.0 and 3.1"), "{e}");
    let e = openapi::convert("a: [", &OpenApiOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not YAML"), "{e}");
}

fn curl_yaml(cmd: &str) -> String {
    let c = curl::convert(&[cmd.to_string()], "t").unwrap();
    load(&c.yaml);
    c.yaml
}

#[test]
fn curl_flags_each_become_part_of_the_step() {
    let y = curl_yaml(
        "curl -X PUT 'http://127.0.0.1:8080/rooms/3?x=1' -H 'Accept: application/json' -H 'X-Trace: t1'",
    );
    assert!(
        y.contains("target: http://127.0.0.1:8080")
            && y.contains("request: PUT /rooms/3?x=1")
            && y.contains("X-Trace: t1"),
        "{y}"
    );
    // -d without a Content-Type: a urlencoded form, POST.
    let y = curl_yaml("curl http://h.test/login -d 'user=ana' -d 'remember=1'");
    assert!(
        y.contains("request: POST /login")
            && y.contains("form:\n      user: ana\n      remember: \"1\""),
        "{y}"
    );
    // --data-urlencode encodes its value.
    let y = curl_yaml("curl http://h.test/q --data-urlencode 'text=a b&c'");
    assert!(
        y.contains("text: a b&c") || y.contains("text: \"a b&c\""),
        "{y}"
    );
    // --json: JSON body, POST, Accept added.
    let y = curl_yaml(r#"curl --json '{"name": "r", "n": 2}' http://h.test/rooms"#);
    assert!(
        y.contains("json:\n      \"n\": 2\n      name: r")
            && y.contains("Accept: application/json"),
        "{y}"
    );
    // -H Content-Type: application/json with -d: JSON too.
    let y = curl_yaml(
        r#"curl http://h.test/rooms -H 'content-type: application/json' --data-raw '{"a": "{{x}}"}'"#,
    );
    assert!(
        y.contains("a: \"{{ \\\"{{\\\" }}x}}\""),
        "template syntax in the body stays literal:\n{y}"
    );
    // -u and -b: credentials become environment variables.
    let line = "curl -u ana:pw123 -b 'sid=abc123; lang=en' http://h.test/me";
    let c = curl::convert(&[line.to_string()], line).unwrap();
    assert!(
        !c.yaml.contains("pw123") && !c.yaml.contains("abc123"),
        "{}",
        c.yaml
    );
    assert!(
        c.yaml.contains("Basic {{ env.BASIC_AUTH }}")
            && c.yaml.contains("sid={{ env.SID }}; lang={{ env.LANG }}"),
        "{}",
        c.yaml
    );
    assert_eq!(c.env, ["BASIC_AUTH", "SID", "LANG"]);
    // -G puts the data in the query; -I is HEAD; -XDELETE is -X DELETE.
    assert!(curl_yaml("curl -G http://h.test/s -d q=1").contains("request: GET /s?q=1"));
    assert!(curl_yaml("curl -I http://h.test/").contains("request: HEAD /"));
    assert!(curl_yaml("curl -XDELETE http://h.test/r/1").contains("request: DELETE /r/1"));
    // Already split words work too.
    let c = curl::convert(
        &[
            "curl".into(),
            "-H".into(),
            "X-A: 1".into(),
            "http://h.test/".into(),
        ],
        "t",
    )
    .unwrap();
    assert!(c.yaml.contains("X-A: \"1\""), "{}", c.yaml);
}

#[test]
fn curl_refuses_what_a_scenario_cannot_hold() {
    let e = |cmd: &str| {
        curl::convert(&[cmd.to_string()], "t")
            .unwrap_err()
            .to_string()
    };
    assert!(e("curl -d @body.json http://h.test/").contains("paste the body inline"));
    assert!(e("curl --data-urlencode @f http://h.test/").contains("give the value inline"));
    assert!(e("curl -b cookies.txt http://h.test/").contains("cookie file"));
    assert!(e("curl -F a=@x http://h.test/").contains("multipart"));
    assert!(e("curl --proxy x http://h.test/").contains("not understood"));
    assert!(e("curl -H 'nocolon' http://h.test/").contains("no `:`"));
    assert!(e("curl 'http://h.test/").contains("unclosed quote"));
    assert!(e("curl -X POST").contains("no URL"));
    assert!(e("curl --json '{x' http://h.test/").contains("not JSON"));
}

/// One recorded request: method, URL, headers, and a body with its MIME type.
type Entry<'a> = (
    &'a str,
    &'a str,
    &'a [(&'a str, &'a str)],
    Option<(&'a str, &'a str)>,
);

/// A HAR of one entry per request, all on one host.
fn har_of(entries: &[Entry<'_>]) -> String {
    let list: Vec<serde_json::Value> = entries
        .iter()
        .enumerate()
        .map(|(i, (method, url, headers, body))| {
            let mut req = serde_json::json!({
                "method": method, "url": url, "httpVersion": "HTTP/1.1",
                "headers": headers.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
                "queryString": [], "cookies": []
            });
            if let Some((mime, text)) = body {
                req["postData"] = serde_json::json!({"mimeType": mime, "text": text});
            }
            serde_json::json!({
                "startedDateTime": format!("2026-01-01T00:00:{:02}.000Z", i % 60),
                "time": 1, "request": req,
                "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": "{}"}}
            })
        })
        .collect();
    serde_json::json!({"log": {"version": "1.2", "entries": list}}).to_string()
}

#[test]
fn credentials_under_common_names_and_shapes_never_reach_the_file() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let har = har_of(&[
        (
            "GET",
            "http://h.test/a?key=AIzaSyQ1&code=azfn-code-1&sig=sas-sig-1&pass=qpass-1",
            &[],
            None,
        ),
        (
            "GET",
            "http://h.test/b",
            &[
                ("Ocp-Apim-Subscription-Key", "apim-key-1"),
                ("x-functions-key", "fn-key-1"),
                ("X-Api-Pass", "api-pass-1"),
                ("X-Opaque", "AbCdEfGh1234567890XyZwQpLmNoPqRs12"),
                ("X-Jwt-Ish", jwt),
            ],
            None,
        ),
        (
            "POST",
            "http://h.test/c",
            &[],
            Some((
                "application/json",
                r#"{"user":"ann","pass":"json-pass-1","pin":"4321"}"#,
            )),
        ),
        (
            "POST",
            "http://h.test/d",
            &[],
            Some((
                "application/x-www-form-urlencoded",
                "user=ann&passcode=form-pc-1",
            )),
        ),
        (
            "POST",
            "http://h.test/e",
            &[],
            Some((
                "application/xml",
                "<login><user>ann</user><password>xml-pw-1</password></login>",
            )),
        ),
    ]);
    let c = har::convert(
        &har,
        &HarOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let y = &c.yaml;
    load(y);
    for secret in [
        "AIzaSyQ1",
        "azfn-code-1",
        "sas-sig-1",
        "qpass-1",
        "apim-key-1",
        "fn-key-1",
        "api-pass-1",
        "AbCdEfGh1234567890XyZwQpLmNoPqRs12",
        "eyJhbGciOi",
        "json-pass-1",
        "4321",
        "form-pc-1",
        "xml-pw-1",
    ] {
        assert!(!y.contains(secret), "{secret} written:\n{y}");
    }
    assert!(
        c.env.len() >= 13,
        "every credential is listed as an env variable: {:?}",
        c.env
    );
    assert!(
        y.contains("user: ann") && y.contains("<user>ann</user>"),
        "{y}"
    );
}

#[test]
fn a_secret_between_braces_stays_a_valid_template() {
    let har = har_of(&[(
        "POST",
        "http://h.test/x",
        &[("Authorization", "Bearer s3cr3t-token")],
        Some(("text/plain", "x{s3cr3t-token}y")),
    )]);
    let c = har::convert(
        &har,
        &HarOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!c.yaml.contains("s3cr3t-token"), "{}", c.yaml);
    // `volley check` compiles the file: `x{{{ env.TOKEN }}}y` would not.
    load(&c.yaml);
}

#[test]
fn a_large_recording_converts_in_time_linear_in_its_size() {
    // Every entry sends back an id an earlier response produced: the correlation's worst case.
    let har_of_n = |n: usize| {
        let entries: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                serde_json::json!({
                    "startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1,
                    "request": {"method": "GET", "url": format!("http://h.test/rooms/r{}x{}", i, i.max(1) - 1),
                        "httpVersion": "HTTP/1.1", "headers": [], "queryString": [], "cookies": []},
                    "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json",
                        "text": format!(r#"{{"id":"r{i}x{i}"}}"#)}}
                })
            })
            .collect();
        serde_json::json!({"log": {"version": "1.2", "entries": entries}}).to_string()
    };
    let time = |n: usize| {
        let har = har_of_n(n);
        let t = std::time::Instant::now();
        let c = har::convert(
            &har,
            &HarOptions {
                command: "t".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.yaml.matches("request: GET").count(), n);
        t.elapsed().as_secs_f64()
    };
    // Four times the entries: about four times the time when linear, sixteen when quadratic
    // (issue 37 measured 0.4 / 1.5 / 6.3 / 17.6 s for 5k / 10k / 15k / 20k before).
    let (small, large) = (time(5_000), time(20_000));
    assert!(
        large < 10.0 * small + 0.5,
        "5,000 entries: {small:.2} s, 20,000: {large:.2} s"
    );
}

#[test]
fn bash_ansi_c_quoting_as_chrome_copies_it() {
    let y = curl_yaml(
        r#"curl 'http://h.test/f' -H 'content-type: application/x-www-form-urlencoded' --data-raw $'a=it\'s&b=line\nend'"#,
    );
    assert!(y.contains("a: it's"), "{y}");
    assert!(!y.contains("$a"), "{y}");
    let y = curl_yaml(
        r#"curl 'http://h.test/j' -H 'content-type: application/json' --data-raw $'{"q":"it\'s","n":1}'"#,
    );
    assert!(y.contains("json:") && y.contains("q: it's"), "{y}");
}

#[test]
fn curl_body_credentials_become_environment_variables() {
    for line in [
        "curl -d 'username=bob&password=hunter2x' https://api.example.com/login",
        "curl --data-urlencode 'client_secret=hunter2x' https://api.example.com/oauth/token",
        r#"curl --json '{"user":{"password":"hunter2x"}}' https://api.example.com/login"#,
        r#"curl -d '{"password":"hunter2x"}' -H 'Content-Type: application/vnd.api+json' https://api.example.com/login"#,
    ] {
        let c = curl::convert(&[line.to_string()], "t").unwrap();
        assert!(!c.yaml.contains("hunter2x"), "{line}:\n{}", c.yaml);
        assert!(!c.env.is_empty(), "{line}: {:?}", c.env);
        load(&c.yaml);
    }
}

#[test]
fn url_credentials_and_long_pauses_are_not_written() {
    // `https://user:password@host` authenticates as `-u` does.
    let c = curl::convert(
        &["curl https://alice:hunter2x@api.example.com/rooms".to_string()],
        "t",
    )
    .unwrap();
    assert!(
        !c.yaml.contains("hunter2x") && !c.yaml.contains("alice:hunter2x"),
        "{}",
        c.yaml
    );
    assert!(c.yaml.contains("Basic {{ env.BASIC_AUTH }}"), "{}", c.yaml);
    // A pause of years in a recording is not a think time.
    let har = serde_json::json!({"log": {"version": "1.2", "entries": [
        {"startedDateTime": "2020-01-01T00:00:00.000Z", "time": 5, "request": {"method": "GET", "url": "http://h.test/a", "httpVersion": "HTTP/1.1", "headers": [], "queryString": [], "cookies": []}, "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": "{}"}}},
        {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 5, "request": {"method": "GET", "url": "http://h.test/b", "httpVersion": "HTTP/1.1", "headers": [], "queryString": [], "cookies": []}, "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": "{}"}}}
    ]}}).to_string();
    let c = har::convert(
        &har,
        &HarOptions {
            command: "t".into(),
            think_times: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!c.yaml.contains("think_time"), "{}", c.yaml);
    assert!(c.yaml.contains("pause is left out"), "{}", c.yaml);
    load(&c.yaml);
}

fn openapi_yaml(doc: &str) -> String {
    openapi::convert(
        doc,
        &OpenApiOptions {
            command: "t".into(),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{doc}"))
    .yaml
}

/// The step named `name` of a converted scenario, as text.
fn step_text<'a>(yaml: &'a str, name: &str) -> &'a str {
    yaml.split("  - name: ")
        .find(|s| s.starts_with(&format!("{name}\n")))
        .unwrap_or_else(|| panic!("no step {name}:\n{yaml}"))
}

/// Twilio's layout (issue 53 §4): a parameter that is part of a segment (`{Sid}.json`) is
/// replaced like a whole-segment one, and the collection that creates it is `Calls.json`.
#[test]
fn parameters_inside_a_path_segment_are_replaced() {
    let y = openapi_yaml(
        r#"{"openapi": "3.0.1", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://{region}.example.com/{base}", "variables": {"region": {"default": "eu"}, "base": {"default": "v2"}}}],
        "paths": {
          "/Accounts/{AccountSid}/Calls.json": {"post": {"operationId": "CreateCall",
             "parameters": [{"name": "AccountSid", "in": "path", "required": true, "schema": {"type": "string", "example": "AC123"}}],
             "responses": {"201": {"description": "", "content": {"application/json": {"schema": {"type": "object", "properties": {"sid": {"type": "string"}}}}}}}}},
          "/Accounts/{AccountSid}/Calls/{Sid}.json": {"get": {"operationId": "FetchCall", "responses": {"200": {"description": ""}}}},
          "/Accounts/{AccountSid}/Calls/{CallSid}/Notifications.json": {"get": {"operationId": "ListNotifications", "responses": {"200": {"description": ""}}}},
          "/files/{name}.{ext}": {"get": {"operationId": "GetFile", "responses": {"200": {"description": ""}}}}
        }}"#,
    );
    load(&y);
    assert!(y.contains("target: https://eu.example.com"), "{y}");
    assert!(y.contains("account_sid: AC123"), "{y}");
    assert!(y.contains("call_sid: $.sid"), "{y}");
    assert!(
        y.contains("request: GET /v2/Accounts/{{ account_sid }}/Calls/{{ call_sid }}.json"),
        "{y}"
    );
    assert!(
        y.contains(
            "request: GET /v2/Accounts/{{ account_sid }}/Calls/{{ call_sid }}/Notifications.json"
        ),
        "{y}"
    );
    assert!(
        y.contains("request: GET /v2/files/{{ name }}.{{ ext }}"),
        "{y}"
    );
}

/// An event stream (issue 53 §4): an `sse:` step is a GET without a body, so only a GET that
/// answers with nothing but `text/event-stream` becomes one; a POST with a JSON body whose
/// answer may also be JSON (OpenAI's chat completions) is a request for the JSON, keeping its
/// body, check and extract; a POST that only streams is a request that reads the stream.
#[test]
fn event_stream_responses_become_sse_steps_only_where_an_sse_step_can_send_them() {
    let y = openapi_yaml(
        r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {
          "/chats": {"post": {"operationId": "createChat",
             "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"model": {"type": "string", "example": "m1"}}}}}},
             "responses": {"200": {"description": "", "content": {
                "application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}},
                "text/event-stream": {"schema": {"type": "string"}}}}}}},
          "/chats/{chat_id}": {"get": {"operationId": "getChat", "responses": {"200": {"description": ""}}}},
          "/events": {"get": {"operationId": "events", "responses": {"200": {"description": "", "content": {"text/event-stream": {}}}}}},
          "/speak": {"post": {"operationId": "speak",
             "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}},
             "responses": {"200": {"description": "", "content": {"text/event-stream": {}}}}}}
        }}"#,
    );
    load(&y);
    let chat = step_text(&y, "createChat");
    assert!(
        chat.contains("request: POST /chats")
            && chat.contains("Accept: application/json")
            && chat.contains("model: m1")
            && chat.contains("chat_id: $.id")
            && chat.contains("status: 200")
            && !chat.contains("\n    sse:"),
        "{chat}"
    );
    assert!(y.contains("request: GET /chats/{{ chat_id }}"), "{y}");
    let events = step_text(&y, "events");
    assert!(
        events.contains("sse: /events") && !events.contains("check:"),
        "{events}"
    );
    let speak = step_text(&y, "speak");
    assert!(
        speak.contains("request: POST /speak")
            && speak.contains("json:")
            && !speak.contains("\n    sse:"),
        "{speak}"
    );
    assert!(
        y.contains("# the response is an event stream (text/event-stream): this request reads it to its end"),
        "{y}"
    );
}
