use super::*;
use std::path::PathBuf;
use std::time::Duration;

use crate::scenario::{Body, Node, StepKind};

fn parse(text: &str) -> Result<Scenario, crate::Error> {
    parse_scenario(Path::new("s.yaml"), text, &|name| {
        (name == "TOKEN").then(|| "s3cret-token".to_string())
    })
}

const GOOD: &str = r#"
name: pair room
target: http://127.0.0.1:8080
headers:
  Authorization: "Bearer {{ env.TOKEN }}"
load:
  stages: "5s:10,10s:10"
  pacing: 1s
thresholds:
  - error_rate < 1%
  - create room: ttfb p99 < 300ms
steps:
  - name: create room
    request: POST /api/pair-rooms
    json: { name: "room {{ vu }}-{{ iteration }}", size: "{{ 2 + 1 }}" }
    extract:
      code: $.accessCode
      where: { header: Location }
    check:
      status: 201
      exists: [$.accessCode]
  - name: events
    sse: /api/pair-rooms/{{ code }}/events
    events: 3
    timeout: 5s
  - group: todos
    repeat: 10
    steps:
      - request: POST /api/pair-rooms/{{ code }}/todos
        json: { content: "todo {{ iteration }}" }
      - request: GET /api/pair-rooms/{{ code }}/todos
  - request: GET /api/pair-rooms/{{ code }}/todos
  - name: echo
    websocket: /ws/echo
    send: "hello {{ code }}"
    expect: "hello"
"#;

#[test]
fn a_full_scenario_compiles() {
    let s = parse(GOOD).unwrap();
    let names: Vec<&str> = s.step_info.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "create room",
            "events",
            "POST /api/pair-rooms/{{ code }}/todos",
            "GET /api/pair-rooms/{{ code }}/todos",
            "GET /api/pair-rooms/{{ code }}/todos #2",
            "echo"
        ]
    );
    assert_eq!(s.step_info[1].kind, StepKind::Sse);
    assert_eq!(
        s.settings.load.stages,
        Some(crate::parse_stages("5s:10,10s:10").unwrap())
    );
    assert_eq!(
        s.settings.thresholds[1].step.as_deref(),
        Some("create room")
    );
    assert_eq!(
        s.env,
        vec![("TOKEN".to_string(), "s3cret-token".to_string())]
    );
    assert_eq!(s.redact("Bearer s3cret-token failed"), "Bearer *** failed");
    // Every form a filter yields is masked too.
    for form in ["S3CRET-TOKEN", "S3cret-token", "nekot-terc3s"] {
        assert_eq!(s.redact(&format!("x {form} y")), "x *** y", "{form}");
    }
    let Node::Group(g) = &s.steps[2] else {
        panic!("group expected")
    };
    assert_eq!((g.repeat, g.steps.len()), (10, 2));
    let Node::Http(create) = &s.steps[0] else {
        panic!("request expected")
    };
    assert_eq!(create.extract.len(), 2);
    assert!(create.reads_body());
}

/// Each broken file: (text, line, column, part of the message).
const BROKEN: &[(&str, u64, u64, &str)] = &[
    // 1. unknown key in a step
    (
        "target: http://x\nsteps:\n  - request: GET /\n    bogus: 1\n",
        4,
        5,
        "unknown key `bogus` in a step",
    ),
    // 2. unknown top-level key
    (
        "target: http://x\nstep:\n  - request: GET /\n",
        2,
        1,
        "unknown key `step` in a scenario file; did you mean `steps`?",
    ),
    // 3. wrong type
    (
        "target: http://x\nsteps:\n  - request: GET /\n    repeat: lots\n",
        4,
        13,
        "expected a whole number",
    ),
    // 4. steps not a list
    ("target: http://x\nsteps: 3\n", 2, 8, "expected a list"),
    // 5. bad YAML
    (
        "target: http://x\nsteps:\n  - request: GET /\n   bad indent: x\n",
        4,
        4,
        "the indentation here does not line up",
    ),
    // 6. missing target
    ("steps:\n  - request: GET /\n", 1, 1, "`target` is missing"),
    // 7. variable used before it is extracted
    (
        "target: http://x\nsteps:\n  - request: GET /rooms/{{ code }}\n  - request: POST /rooms\n    extract: { code: $.code }\n",
        3,
        14,
        "variable `code` is used before any step defines it",
    ),
    // 8. bad JSONPath
    (
        "target: http://x\nsteps:\n  - request: POST /rooms\n    extract:\n      code: accessCode\n",
        5,
        13,
        "`accessCode` is not a JSONPath query",
    ),
    // 9. bad duration
    (
        "target: http://x\nload:\n  vus: 2\n  duration: soon\nsteps:\n  - request: GET /\n",
        4,
        13,
        "load `duration`: `soon` is not a duration",
    ),
    // 10. bad threshold
    (
        "target: http://x\nthresholds:\n  - latency p99 < 5ms\nsteps:\n  - request: GET /\n",
        3,
        5,
        "unknown figure `latency`",
    ),
    // 11. threshold for a step that does not exist
    (
        "target: http://x\nthresholds:\n  - login: ttfb p99 < 5ms\nsteps:\n  - request: GET /\n",
        3,
        5,
        "no step has that name",
    ),
    // 12. template syntax error
    (
        "target: http://x\nsteps:\n  - request: GET /{{ code\n",
        3,
        14,
        "template `/{{ code`",
    ),
    // 13. duplicate step names
    (
        "target: http://x\nsteps:\n  - name: a\n    request: GET /\n  - name: a\n    request: GET /x\n",
        5,
        11,
        "step name `a` is already used on line 4",
    ),
    // 14. two kinds in one step
    (
        "target: http://x\nsteps:\n  - request: GET /\n    sse: /events\n",
        3,
        5,
        "only one of",
    ),
    // 15. no kind
    (
        "target: http://x\nsteps:\n  - name: nothing\n",
        3,
        5,
        "needs one of `request`",
    ),
    // 16. bad status
    (
        "target: http://x\nsteps:\n  - request: GET /\n    check: { status: \"2xx\" }\n",
        4,
        22,
        "status `2xx`",
    ),
    // 17. request without a URL
    (
        "target: http://x\nsteps:\n  - request: GET\n",
        3,
        14,
        "should be a method and a URL",
    ),
    // 18. unset environment variable: where the file first reads it
    (
        "target: http://x\nsteps:\n  - request: GET /?k={{ env.NOPE }}\n",
        3,
        14,
        "environment variable `NOPE` is not set",
    ),
    // 19. bad target
    (
        "target: 127.0.0.1:8080\nsteps:\n  - request: GET /\n",
        1,
        9,
        "is not a base URL",
    ),
    // 20. missing data file
    (
        "target: http://x\ndata:\n  users: { file: nope.csv }\nsteps:\n  - request: GET /\n",
        3,
        10,
        "data `users`: cannot read",
    ),
    // 21. body field on an SSE step
    (
        "target: http://x\nsteps:\n  - name: ev\n    sse: /events\n    json: {}\n",
        3,
        11,
        "`json` does not apply to an `sse` step",
    ),
    // 22. bad regex
    (
        "target: http://x\nsteps:\n  - request: GET /\n    extract:\n      id: { regex: 'id=(' }\n",
        5,
        11,
        "bad regex",
    ),
    // 23. relative URL without a slash
    (
        "target: http://x\nsteps:\n  - request: GET rooms\n",
        3,
        14,
        "should start with /",
    ),
    // 24. repeat 0
    (
        "target: http://x\nsteps:\n  - group: g\n    repeat: 0\n    steps:\n      - request: GET /\n",
        4,
        13,
        "`repeat` must be at least 1",
    ),
    // 26. a random pause the wrong way round
    (
        "target: http://x\nsteps:\n  - request: GET /\n    think_time: 3s..1s\n",
        4,
        17,
        "the longer pause comes second",
    ),
    // 27. the whole flow's time under one step
    (
        "target: http://x\nthresholds:\n  - a: iteration p95 < 1s\nsteps:\n  - name: a\n    request: GET /\n",
        3,
        5,
        "`iteration` is the whole flow",
    ),
    // a zero timeout would fail every request
    (
        "target: http://x\ntimeout: 0s\nsteps:\n  - request: GET /\n",
        2,
        10,
        "`timeout`: `0s` is shorter than the 1 ms",
    ),
    // an unknown load key lists the keys
    (
        "target: http://x\nload:\n  users: 5\nsteps:\n  - request: GET /\n",
        3,
        10,
        "unknown load key `users`; the keys are vus, duration",
    ),
    // a zero rate sends nothing
    (
        "target: http://x\nload:\n  rate: 0\n  duration: 1m\nsteps:\n  - request: GET /\n",
        3,
        9,
        "load `rate`: `0` sends nothing",
    ),
    // 28. two load models at once
    (
        "target: http://x\nload:\n  vus: 10\n  rate: 100\n  duration: 1m\nsteps:\n  - request: GET /\n",
        3,
        8,
        "load `vus` cannot be combined with `rate`",
    ),
    // 29. stages and a duration
    (
        "target: http://x\nload:\n  stages: \"1m:10\"\n  duration: 1m\nsteps:\n  - request: GET /\n",
        4,
        13,
        "load `duration` cannot be combined with `stages`",
    ),
    // 30. a variable only one branch defines, used after the branches
    (
        "target: http://x\nsteps:\n  - one_of:\n      - steps:\n          - request: POST /a\n            extract: { a: $.id }\n      - steps:\n          - request: GET /b\n  - request: GET /{{ a }}\n",
        9,
        14,
        "variable `a` is used before any step defines it",
    ),
    // 31. a branch that weighs nothing
    (
        "target: http://x\nsteps:\n  - one_of:\n      - weight: 0\n        steps:\n          - request: GET /\n",
        4,
        17,
        "`weight` must be at least 1",
    ),
    // 32. nothing at all
    ("# just a comment\n\n", 1, 1, "the file is empty"),
    // 25. a threshold that is not a string
    (
        "target: http://x\nthresholds:\n  - [1, 2]\nsteps:\n  - request: GET /\n",
        3,
        5,
        "a threshold is an expression",
    ),
    // 33. durations and time limits without a unit: one rule, as on the command line
    (
        "target: http://x\nload: { vus: 1, duration: 5 }\nsteps:\n  - request: GET /\n",
        2,
        27,
        "`duration`: `5` has no unit: write 5s, 5ms or 5m",
    ),
    (
        "target: http://x\nload:\n  stages: \"0s:5,5:5\"\nsteps:\n  - request: GET /\n",
        3,
        11,
        "`5` has no unit: write 5s, 5ms or 5m",
    ),
    (
        "target: http://x\nthresholds:\n  - ttfb p99 < 500\nsteps:\n  - request: GET /\n",
        3,
        5,
        "`500` has no unit: write 500s, 500ms or 500m",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    think_time: 1\n",
        4,
        17,
        "`1` has no unit: write 1s, 1ms or 1m",
    ),
];

#[test]
fn broken_scenarios_name_line_column_and_problem() {
    assert!(BROKEN.len() >= 15);
    assert_table("BROKEN", BROKEN);
}

/// Checks every case of a table and reports all that fail at once.
fn assert_table(table: &str, cases: &[(&str, u64, u64, &str)]) {
    let mut failures = Vec::new();
    for (i, (text, line, column, needle)) in cases.iter().enumerate() {
        let errors = match parse(text) {
            Ok(_) => {
                failures.push(format!("{table} case {}: accepted:\n{text}", i + 1));
                continue;
            }
            Err(e) => e,
        };
        let Some(e) = errors
            .problems()
            .iter()
            .find(|e| e.message.contains(needle))
        else {
            failures.push(format!(
                "{table} case {}: no `{needle}` in\n{errors}",
                i + 1
            ));
            continue;
        };
        if (e.line, e.column) != (*line, *column)
            || !e
                .to_string()
                .starts_with(&format!("s.yaml:{line}:{column}: "))
        {
            failures.push(format!(
                "{table} case {}: expected {line}:{column}, got {e}",
                i + 1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_error_is_reported_not_only_the_first() {
    let text = "target: http://x\nload:\n  pacing: later\nsteps:\n  - request: GET /{{ a }}\n  - request: GET /{{ b }}\n";
    let errors = parse(text).unwrap_err();
    assert_eq!(errors.problems().len(), 3, "{errors}");
}

#[test]
fn data_columns_and_variables_are_defined() {
    let dir = std::env::temp_dir().join(format!("volley-scn-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), "email\na@x\n").unwrap();
    let text = "target: http://x\nvariables:\n  room: demo\ndata:\n  users: { file: users.csv, order: per_vu }\nsteps:\n  - request: GET /{{ room }}/{{ users.email }}\n";
    let s = parse_scenario(&dir.join("s.yaml"), text, &|_| None).unwrap();
    assert_eq!(s.data[0].rows.len(), 1);
    assert_eq!(s.variables.len(), 1);
}

#[test]
fn branches_define_what_all_of_them_define() {
    let text = "target: http://x\nsteps:\n  - one_of:\n      - weight: 3\n        name: browse\n        steps:\n          - request: POST /a\n            extract: { id: $.id }\n      - steps:\n          - request: POST /b\n            extract: { id: $.id }\n  - request: GET /{{ id }}\n";
    let s = parse(text).unwrap();
    let Node::OneOf(branches) = &s.steps[0] else {
        panic!("one_of expected")
    };
    assert_eq!(
        branches.iter().map(|b| b.weight).collect::<Vec<_>>(),
        [3, 1]
    );
    assert_eq!(branches[0].name.as_deref(), Some("browse"));
    // Rolls 0..3 pick the first branch, 3 the second.
    assert_eq!(
        (0..4)
            .map(|r| crate::scenario::pick_branch(branches, r))
            .collect::<Vec<_>>(),
        [0, 0, 0, 1]
    );
}

/// YAML the parser cannot read, in plain words; the tree's own problems.
const SYNTAX: &[(&str, u64, u64, &str)] = &[
    (
        "target: http://x\nsteps:\n\t- request: GET /\n",
        3,
        2,
        "indented with spaces, not tabs",
    ),
    (
        "target: http://x\nsteps:\n  - request: \"GET /\n",
        4,
        1,
        "a quoted value runs on to this line",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    check: { status: 201\n",
        4,
        12,
        "this `{` is not closed: add `}`",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    body: a: b\n",
        4,
        12,
        "quote the value, e.g. body: \"a: b\"",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    url: {{ base }}/x\n",
        4,
        20,
        "a value that starts with `{{` must be quoted",
    ),
    (
        "target: http://x\nvariables: { base: /a }\nsteps:\n  - url: {{ base }}\n",
        4,
        10,
        "must be quoted, or YAML reads a mapping: write \"{{ base }}\"",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n---\ntarget: http://y\n",
        4,
        1,
        "a scenario is one YAML document",
    ),
    (
        "target: !env TARGET\nsteps:\n  - request: GET /\n",
        1,
        14,
        "tags such as `!env` are not supported",
    ),
    (
        "target: http://x\nsteps:\n  - request: *get\n",
        3,
        14,
        "`*get` refers to no anchor",
    ),
    (
        "target: http://x\nsteps:\n  - [a, b]: 1\n",
        3,
        5,
        "a key must be a word such as `name:`",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    <<: x\n",
        4,
        9,
        "`<<` merges mappings",
    ),
];

/// Keys given twice, and files beyond the limits.
const DUPLICATES_AND_LIMITS: &[(&str, u64, u64, &str)] = &[
    (
        "target: http://x\nsteps:\n  - request: GET /\ntarget: http://y\n",
        4,
        1,
        "`target` is given twice in this mapping, first on line 1, column 1",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    headers: { A: 1, A: 2 }\n",
        4,
        22,
        "`A` is given twice in this mapping, first on line 4, column 16",
    ),
    (
        "target: http://x\nload:\n  vus: 1\n  duration: 1m\n  vus: 2\nsteps:\n  - request: GET /\n",
        5,
        3,
        "`vus` is given twice",
    ),
    (
        "target: http://x\nsteps:\n  - name: a\n    request: GET /\n    name: b\n",
        5,
        5,
        "`name` is given twice in this mapping, first on line 3, column 5",
    ),
];

/// Keys and values of the wrong kind: each says what to write instead.
const STRUCTURE: &[(&str, u64, u64, &str)] = &[
    (
        "target: http://x\nsteps:\n  - request:\n      method: POST\n      url: /login\n",
        4,
        7,
        "`request: POST /path`, not a mapping; or give the step `method: POST` and `url: /path`",
    ),
    (
        "name: [a]\ntarget: http://x\nsteps:\n  - request: GET /\n",
        1,
        7,
        "`name`: expected text, not a list",
    ),
    (
        "target: http://x\ntimeout: { s: 1 }\nsteps:\n  - request: GET /\n",
        2,
        10,
        "`timeout`: expected text, not a mapping; write it like `timeout: 10s`",
    ),
    (
        "target: http://x\nsteps:\n  - sse: /e\n    wait: maybe\n",
        4,
        11,
        "`wait`: expected true or false, not text (`maybe`)",
    ),
    (
        "target: http://x\nheaders: [a]\nsteps:\n  - request: GET /\n",
        2,
        10,
        "`headers`: expected a mapping of names to values",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    check: ok\n",
        4,
        12,
        "`check`: expected a mapping",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    check: { status: [200] }\n",
        4,
        22,
        "a status is a code such as 201",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    extract: [$.id]\n",
        4,
        14,
        "`extract`: expected a mapping of variable names to queries",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    extract: { id: { jsn: $.id } }\n",
        4,
        22,
        "unknown key `jsn` in extract `id`; did you mean `json`?",
    ),
    (
        "target: http://x\nsteps:\n  - sse: /e\n    events: many\n",
        4,
        13,
        "`events`: expected a whole number",
    ),
    (
        "target: http://x\nsteps:\n  - websocket: /ws\n    send: [hi, { a: 1 }]\n",
        4,
        16,
        "`send`: expected text, not a mapping",
    ),
    (
        "target: http://x\nthresholds: { error_rate: 1 }\nsteps:\n  - request: GET /\n",
        2,
        13,
        "`thresholds`: expected a list of expressions",
    ),
    (
        "target: http://x\nload: [vus, 1]\nsteps:\n  - request: GET /\n",
        2,
        7,
        "`load`: expected a mapping of load keys",
    ),
    (
        "target: http://x\nload:\n  vus:\nsteps:\n  - request: GET /\n",
        3,
        6,
        "load `vus` has no value",
    ),
    (
        "target: http://x\ndata:\n  users: { order: shared }\nsteps:\n  - request: GET /\n",
        3,
        10,
        "data `users`: `file` is missing",
    ),
    (
        "target: http://x\ndata:\n  users: { file: u.csv, ordr: shared }\nsteps:\n  - request: GET /\n",
        3,
        25,
        "unknown key `ordr` in data `users`; did you mean `order`?",
    ),
    (
        "target: http://x\nsteps:\n  - one_of:\n      - weight: 2\n",
        4,
        9,
        "a branch of `one_of` needs `steps`",
    ),
    (
        "target: http://x\nsteps:\n  - one_of: 3\n",
        3,
        13,
        "`one_of`: expected a list of branches",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    chek: { status: 200 }\n",
        4,
        5,
        "unknown key `chek` in a step; did you mean `check`?",
    ),
    (
        "target: http://x\nrequest: GET /\nsteps:\n  - request: GET /\n",
        2,
        1,
        "`request` belongs in a step, under `steps:`",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    thresholds: [error_rate < 1%]\n",
        4,
        5,
        "`thresholds` belongs at the top level of the file",
    ),
    ("target: http://x\n", 1, 1, "`steps` is missing"),
    (
        "target: http://x\nsteps:\n  - method: POST\n",
        3,
        13,
        "`method` needs a `url`",
    ),
    (
        "target: http://x\nsteps:\n  - request: /rooms\n",
        3,
        14,
        "should be a method and a URL; write it like `request: GET /rooms`",
    ),
];

/// Templates: what only rendering would have found.
const TEMPLATES: &[(&str, u64, u64, &str)] = &[
    (
        "target: http://x\nsteps:\n  - request: GET /{{ vu | upcase }}\n",
        3,
        14,
        "unknown filter `upcase`; did you mean `upper`?",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ vu is odd_number }}\n",
        3,
        14,
        "unknown test `is odd_number`",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ uuidd() }}\n",
        3,
        14,
        "`uuidd()` is not a function; did you mean `uuid`?",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ uuid(1) }}\n",
        3,
        14,
        "`uuid` takes no arguments, not 1: uuid()",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ random(1) }}\n",
        3,
        14,
        "`random` takes 2 arguments, not 1: random(lo, hi)",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ random_string() }}\n",
        3,
        14,
        "`random_string` takes 1 argument, not 0: random_string(n)",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ random(10, 1) }}\n",
        3,
        14,
        "`random(10, 1)`: the lower bound comes first, e.g. random(1, 10)",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ random_string(\"8\") }}\n",
        3,
        14,
        "`n` must be a whole number",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ random(lo=1, hi=2) }}\n",
        3,
        14,
        "`random` takes its arguments in order",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ range(1, 2, 3, 4) }}\n",
        3,
        14,
        "`range` takes 1 to 3 arguments, not 4",
    ),
    (
        "target: http://x\nvariables: { name: kim }\nsteps:\n  - request: GET /{{ name.upper() }}\n",
        4,
        14,
        "values have no methods",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{% include 'x' %}\n",
        3,
        14,
        "cannot load other templates",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /{{ vu.id }}\n",
        3,
        14,
        "`vu` is a number and has no `.id`",
    ),
    (
        "target: http://x\nsteps:\n  - request: POST /\n    json: { a: 1, b: [\"{{ iteration | nope }}\"] }\n",
        4,
        23,
        "unknown filter `nope`",
    ),
];

/// URLs and headers that can never be sent.
const STATIC: &[(&str, u64, u64, &str)] = &[
    (
        "target: http://x\nsteps:\n  - sse: ws://x/events\n",
        3,
        10,
        "`ws://` is a WebSocket: make it a `websocket:` step",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET ftp://x/file\n",
        3,
        14,
        "`ftp://` URLs cannot be sent by a request step",
    ),
    (
        "target: http://127.0.0.1:8080\nsteps:\n  - request: GET http://example.org/a\n",
        3,
        14,
        "is on another host than the target (127.0.0.1:8080); one scenario loads one target: write the path, `/a`",
    ),
    (
        "target: http://127.0.0.1:8080\nsteps:\n  - websocket: ws://other:9/ws\n",
        3,
        16,
        "is on another host than the target",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /rooms/{{ vu }}/a b\n",
        3,
        14,
        "holds a space, which a URL cannot; write it as %20",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET api/{{ vu }}\n",
        3,
        14,
        "should start with / (relative to the target)",
    ),
    (
        "target: http://x\nheaders:\n  X-Id: \"a\\r\\nInjected: 1\"\nsteps:\n  - request: GET /\n",
        3,
        9,
        "a header value cannot hold a carriage return",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    headers:\n      X-Note: |\n        two\n        lines\n",
        6,
        9,
        "a header value cannot hold a line break",
    ),
    (
        "target: ws://x:80\nsteps:\n  - request: GET /\n",
        1,
        9,
        "is a `ws` URL; the target is where HTTP requests go",
    ),
    (
        "target: \"{{ env.TARGET }}\"\nsteps:\n  - request: GET /\n",
        1,
        9,
        "the target cannot be a template",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /2010-04-01/Accounts/{{ account_sid }}/Calls/{Sid}.json\n",
        3,
        14,
        "still holds `{Sid}`, a path parameter that would be sent as it is: write the value, or a variable (`{{ sid }}`)",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /Accounts/{AccountSid}/Calls.json?PageSize=5\n",
        3,
        14,
        "still holds `{AccountSid}`, a path parameter that would be sent as it is: write the value, or a variable (`{{ account_sid }}`)",
    ),
    (
        "target: http://x\nsteps:\n  - sse: /streams/{stream-id}/events\n",
        3,
        10,
        "still holds `{stream-id}`",
    ),
    (
        "target: http://x\nsteps:\n  - sse: /e\n    events: 0\n",
        4,
        13,
        "`events: 0` would close the stream",
    ),
    (
        "target: http://x\nsteps:\n  - request: GET /\n    extract: { loc: { header: \"Loc ation\" } }\n",
        4,
        21,
        "is not a header name",
    ),
];

/// A `{name}` outside the path (a query value, a JSON-like literal) and `{{ }}` templates are
/// not path parameters; only the path's literal text is refused.
#[test]
fn braces_that_are_not_path_parameters_pass() {
    for url in [
        "/search?filter={status}",
        "/a/{{ vu }}/b",
        "/a/{{ '{' }}x{{ '}' }}",
        "/json/{\\\"a\\\":1}",
        "/a#{frag}",
    ] {
        let text = format!("target: http://x\nsteps:\n  - request: \"GET {url}\"\n");
        if let Err(e) = parse(&text) {
            panic!("{url}: {e}");
        }
    }
}

#[test]
fn new_bad_files_by_class() {
    assert!(
        SYNTAX.len()
            + DUPLICATES_AND_LIMITS.len()
            + STRUCTURE.len()
            + TEMPLATES.len()
            + STATIC.len()
            >= 30
    );
    assert_table("SYNTAX", SYNTAX);
    assert_table("DUPLICATES_AND_LIMITS", DUPLICATES_AND_LIMITS);
    assert_table("STRUCTURE", STRUCTURE);
    assert_table("TEMPLATES", TEMPLATES);
    assert_table("STATIC", STATIC);
}

/// A directory with `users.csv` (columns id, email) for feeder cases.
fn with_users(csv: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-scn-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), csv).unwrap();
    dir.join("s.yaml")
}

#[test]
fn feeder_columns_are_checked_where_they_are_used() {
    let file = with_users("id,email\n1,a@x\n");
    let text = "target: http://x\ndata:\n  users: { file: users.csv }\nsteps:\n  - request: GET /{{ users.id }}?m={{ users.emial }}\n";
    let errors = parse_scenario(&file, text, &|_| None).unwrap_err();
    assert_eq!(errors.problems().len(), 1, "{errors}");
    let e = &errors.problems()[0];
    assert_eq!((e.line, e.column), (5, 14));
    assert!(e.message.contains("data `users` has no column `emial`; did you mean `users.email`? its columns are id, email"), "{e}");
    let file = with_users("id,email,id\n1,a@x,2\n");
    let errors = parse_scenario(
        &file,
        "target: http://x\ndata:\n  users: { file: users.csv }\nsteps:\n  - request: GET /\n",
        &|_| None,
    )
    .unwrap_err();
    assert!(
        errors.problems()[0]
            .message
            .contains("names the column `id` twice"),
        "{errors}"
    );
}

#[test]
fn every_problem_of_a_file_comes_in_one_pass() {
    // The nine problems that took seven runs before: types and structure no longer stop at the first.
    let text = "name: [pair]\ntarget: http://x\ntimeout: { s: 1 }\nload:\n  vus: ten\nsteps:\n  - request:\n      method: POST\n      url: /rooms\n    extract:\n      code: $.code\n  - request: GET /rooms/{{ code }}\n    repeat: lots\n    check: { status: [200] }\n    chek: {}\n  - sse: ws://x/events\n    wait: maybe\n  - request: GET /{{ uuid(1) }}/{{ code | upcase }}\n";
    let errors = parse(text).unwrap_err();
    let lines: Vec<u64> = errors.problems().iter().map(|e| e.line).collect();
    assert_eq!(lines, [1, 3, 5, 8, 13, 14, 15, 16, 17, 18, 18], "{errors}");
    // `code` is still defined by the step whose `request` is unusable: no cascade.
    assert!(!errors.to_string().contains("variable `code`"), "{errors}");
}

#[test]
fn limits_have_clear_messages() {
    let huge = format!(
        "target: http://x\nsteps:\n  - request: GET /\n#{}\n",
        "x".repeat(MAX_FILE_BYTES)
    );
    let e = parse(&huge).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("scenario files are limited to 8 MiB"),
        "{e}"
    );
    let deep = format!(
        "target: http://x\nsteps: {}{}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = parse(&deep).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains(&format!("nested more than {MAX_DEPTH} deep")),
        "{e}"
    );
    let mut bomb = String::from(
        "target: http://x\nsteps:\n  - request: GET /\nx0: &a0 [a, a, a, a, a, a, a, a, a, a]\n",
    );
    for i in 1..10 {
        bomb.push_str(&format!(
            "x{i}: &a{i} [{}]\n",
            vec![format!("*a{}", i - 1); 10].join(", ")
        ));
    }
    let e = parse(&bomb).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains("more than 1000000 values once its aliases"),
        "{e}"
    );
    let mut many = String::from("target: http://x\nsteps:\n");
    for i in 0..=MAX_STEPS {
        many.push_str(&format!("  - request: GET /{i}\n"));
    }
    let e = parse(&many).unwrap_err();
    assert!(
        e.problems()[0]
            .message
            .contains(&format!("a scenario is limited to {MAX_STEPS}")),
        "{e}"
    );
}

#[test]
fn the_examples_compile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for name in ["pair-room.yaml", "chat.yaml", "grpc-chat.yaml"] {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let s = parse_scenario(&path, &text, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.step_info.is_empty());
    }
}

#[test]
fn what_serde_saphyr_accepted_is_still_accepted() {
    let text = "target: http://x\nsteps:\n  - sse: /e\n    wait: yes\n    events: 1_000\n  - request: GET /\n    repeat: \"3\"\n";
    let s = parse(text).unwrap();
    let Node::Sse(sse) = &s.steps[0] else {
        panic!("sse expected")
    };
    assert_eq!((sse.wait, sse.events), (true, Some(1000)));
    // Sections left empty are empty.
    let s = parse("target: http://x\nheaders:\nvariables:\nthresholds:\nsteps:\n  - request: GET /\n    extract:\n    json:\n").unwrap();
    assert!(s.headers.is_empty() && s.variables.is_empty() && s.settings.thresholds.is_empty());
    let Node::Http(h) = &s.steps[0] else {
        panic!("request expected")
    };
    assert!(h.extract.is_empty() && matches!(h.body, Body::Empty));
}

#[test]
fn a_file_that_is_not_utf8_says_where() {
    let file = with_users("id\n1\n").with_file_name("latin1.yaml");
    std::fs::write(
        &file,
        b"target: http://x\nname: caf\xe9\nsteps:\n  - request: GET /\n",
    )
    .unwrap();
    let e = load_scenario(&file).unwrap_err();
    assert_eq!((e.problems()[0].line, e.problems()[0].column), (2, 1));
    assert!(e.problems()[0].message.contains("not UTF-8"), "{e}");
}

#[test]
fn aliases_and_merge_keys_build_steps() {
    let text = "target: http://x\nx-common: &common { timeout: 5s, headers: { Accept: application/json } }\nsteps:\n  - <<: *common\n    request: GET /a\n";
    let errors = parse(text).unwrap_err();
    // `x-common` is not a key of the file; the merge itself works.
    assert_eq!(errors.problems().len(), 1, "{errors}");
    assert!(
        errors.problems()[0]
            .message
            .contains("unknown key `x-common`"),
        "{errors}"
    );
}

const POPULATIONS: &str = r#"
name: chat mix
target: http://127.0.0.1:8080
headers: { Accept: application/json }
variables: { room: lobby }
load: { max_vus: 40 }
warmup: 2s
thresholds:
  - error_rate < 1%
  - writers.ttfb p99 < 200ms
  - readers/read messages: ttfb p99 < 300ms
scenarios:
  readers:
    load: { rate: 300, duration: 10s }
    steps:
      - name: read messages
        request: GET /api/rooms/{{ room }}/messages
  writers:
    start: 5s
    headers: { X-Role: writer }
    load: { stages: "5s:50,5s:50" }
    thresholds:
      - error_rate < 2%
      - post: ttfb p95 < 400ms
    steps:
      - name: post
        request: POST /api/rooms/{{ room }}/messages
        json: { text: "hi from {{ vu }}" }
      - name: read messages
        request: GET /api/rooms/{{ room }}/messages
"#;

#[test]
fn populations_compile_each_with_its_load_start_and_flow() {
    let s = parse(POPULATIONS).unwrap();
    assert!(s.steps.is_empty());
    let names: Vec<&str> = s.populations.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["readers", "writers"]);
    let (r, w) = (&s.populations[0], &s.populations[1]);
    assert_eq!((r.start, w.start), (Duration::ZERO, Duration::from_secs(5)));
    let rl = r.scenario.settings.load.resolve().unwrap();
    assert!(rl.is_open());
    assert_eq!(rl.max_vus(), 40, "the file's load defaults apply");
    assert_eq!(w.scenario.settings.load.resolve().unwrap().max_vus(), 50);
    // Step names are each population's own; the run lists them qualified.
    assert_eq!(
        w.scenario
            .step_info
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        ["post", "read messages"]
    );
    let all: Vec<&str> = s.step_info.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        all,
        [
            "readers/read messages",
            "writers/post",
            "writers/read messages"
        ]
    );
    // Shared headers and variables, with the population's own added.
    assert_eq!(r.scenario.headers.len(), 1);
    assert_eq!(w.scenario.headers.len(), 2);
    assert_eq!(w.scenario.variables.len(), 1);
    // Thresholds: the total's, one population's from the top, a population's own.
    let top: Vec<(Option<&str>, Option<&str>, &str)> = s
        .settings
        .thresholds
        .iter()
        .map(|t| (t.population.as_deref(), t.step.as_deref(), t.expr.as_str()))
        .collect();
    assert_eq!(
        top,
        [
            (None, None, "error_rate < 1%"),
            (Some("writers"), None, "writers.ttfb p99 < 200ms"),
            (None, Some("readers/read messages"), "ttfb p99 < 300ms")
        ]
    );
    let own: Vec<(Option<&str>, Option<&str>, &str)> = w
        .scenario
        .settings
        .thresholds
        .iter()
        .map(|t| (t.population.as_deref(), t.step.as_deref(), t.expr.as_str()))
        .collect();
    assert_eq!(
        own,
        [
            (Some("writers"), None, "writers.error_rate < 2%"),
            (Some("writers"), Some("post"), "writers.ttfb p95 < 400ms")
        ]
    );
    assert_eq!(
        s.settings.warmup,
        Some(crate::Warmup::Time(Duration::from_secs(2)))
    );
}

#[test]
fn population_mistakes_say_what_to_write() {
    let cases: &[(&str, &str)] = &[
        // No load anywhere.
        (
            "scenarios:\n  readers:\n    steps: [ { request: GET / } ]\n",
            "scenario `readers` has no load: give it `load:`",
        ),
        // Steps both at the top and in scenarios.
        (
            "steps: [ { request: GET / } ]\nscenarios:\n  readers:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "`steps` at the top level and `scenarios` do not go together",
        ),
        // A typo in a scenario's key.
        (
            "scenarios:\n  readers:\n    laod: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "did you mean `load`?",
        ),
        // A run-wide key inside a scenario.
        (
            "scenarios:\n  readers:\n    load: { vus: 1, duration: 1s }\n    warmup: 5s\n    steps: [ { request: GET / } ]\n",
            "`warmup` is set once for the whole run",
        ),
        // A step key inside a scenario.
        (
            "scenarios:\n  readers:\n    load: { vus: 1, duration: 1s }\n    request: GET /\n",
            "belongs in a step, under the scenario's `steps:`",
        ),
        // No steps.
        (
            "scenarios:\n  readers:\n    load: { vus: 1, duration: 1s }\n",
            "scenario `readers`: `steps` is missing",
        ),
        // A name that cannot be a directory or a threshold prefix.
        (
            "scenarios:\n  chat readers:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "use letters, digits, `_` and `-` only",
        ),
        // A threshold for a population that does not exist.
        (
            "thresholds: [ \"wirters.ttfb p99 < 1s\" ]\nscenarios:\n  writers:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "no scenario is named `wirters`; did you mean `writers`?",
        ),
        // A step threshold at the top that forgot the population.
        (
            "thresholds: [ { home: ttfb p99 < 1s } ]\nscenarios:\n  writers:\n    load: { vus: 1, duration: 1s }\n    steps: [ { name: home, request: GET / } ]\n",
            "a population's step is named `scenario/step`",
        ),
        // A prefixed threshold without scenarios.
        (
            "thresholds: [ \"writers.ttfb p99 < 1s\" ]\nload: { vus: 1, duration: 1s }\nsteps: [ { request: GET / } ]\n",
            "this file has no `scenarios:`",
        ),
        // A bad start offset.
        (
            "scenarios:\n  readers:\n    start: soon\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "`start`",
        ),
        // Repeat belongs to the run.
        (
            "scenarios:\n  readers:\n    load: { vus: 1, duration: 1s, repeat: 2 }\n    steps: [ { request: GET / } ]\n",
            "`repeat` repeats the whole run",
        ),
        // Duplicate names are duplicate keys.
        (
            "scenarios:\n  a:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n  a:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n",
            "a",
        ),
    ];
    for (body, needle) in cases {
        let text = format!("target: http://127.0.0.1:8080\n{body}");
        let e = parse(&text)
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{text}"))
            .to_string();
        assert!(e.contains(needle), "{body}\n→ {e}");
    }
    // A problem in the shared part is said once, not once per population.
    let text = "target: http://127.0.0.1:8080\nheaders: { X-A: \"{{ nope }}\" }\nscenarios:\n  a:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n  b:\n    load: { vus: 1, duration: 1s }\n    steps: [ { request: GET / } ]\n";
    let e = parse(text).unwrap_err();
    assert_eq!(
        e.problems()
            .iter()
            .filter(|x| x.message.contains("`nope`"))
            .count(),
        1,
        "{e}"
    );
}

#[test]
fn grpc_steps_load_their_proto_and_check_the_message() {
    let proto = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../demo/proto/chat.proto")
        .canonicalize()
        .unwrap();
    let p = proto.display();
    let text = format!(
        "target: http://x\nsteps:\n  - name: make\n    grpc: volley.chat.v1.Chat/CreateRoom\n    proto: {p}\n    message: {{ name: \"r {{{{ vu }}}}\" }}\n    extract: {{ room: $.id }}\n    connections: 2\n  - grpc: /volley.chat.v1.Chat/StreamMessages\n    proto: [{p}]\n    message: {{ roomId: \"{{{{ room }}}}\", recent: 3 }}\n    messages: 3\n"
    );
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let Node::Grpc(make) = &s.steps[0] else {
        panic!("grpc expected")
    };
    assert_eq!(
        (make.full_method(), make.connections),
        ("volley.chat.v1.Chat/CreateRoom".to_string(), Some(2))
    );
    assert!(!make.schema.get().unwrap().is_server_streaming());
    assert_eq!(make.call.url.source(), "/volley.chat.v1.Chat/CreateRoom");
    let Node::Grpc(stream) = &s.steps[1] else {
        panic!("grpc expected")
    };
    assert!(stream.schema.get().unwrap().is_server_streaming());
    assert_eq!(
        s.step_info[1].name,
        "GRPC volley.chat.v1.Chat/StreamMessages"
    );
    assert_eq!(s.step_info[1].kind, StepKind::Grpc);
    // HTTP keys, a field the request lacks, `messages` on a unary call: each said where.
    let bad = format!(
        "target: http://x\nsteps:\n  - grpc: volley.chat.v1.Chat/CreateRoom\n    proto: {p}\n    json: {{ name: x }}\n    message: {{ nam: x, inner: {{ a: 1 }} }}\n    messages: 2\n"
    );
    let e = parse(&bad).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("`json` does not apply to a `grpc` step"),
        "{text}"
    );
    assert!(
        text.contains("has no field `nam`; did you mean `name`?"),
        "{text}"
    );
    assert!(text.contains("has no field `inner`"), "{text}");
    assert!(
        text.contains(":7:15: `messages` counts a server stream's messages"),
        "{text}"
    );
    // Without `proto`, the schema waits for reflection at run time.
    let s =
        parse("target: http://x\nsteps:\n  - grpc: a.B/C\n    message: { anything: 1 }\n").unwrap();
    let Node::Grpc(g) = &s.steps[0] else {
        panic!("grpc expected")
    };
    assert!(g.schema.get().is_none() && g.protos.is_empty());
}

#[test]
fn a_files_slo_is_read_like_its_thresholds() {
    let s = parse(
        "target: http://x\nslo:\n  - ttfb p99 < 250ms\n  - error_rate < 1%\nsteps:\n  - request: GET /\n",
    )
    .unwrap();
    let exprs: Vec<&str> = s.slo.iter().map(|t| t.expr.as_str()).collect();
    assert_eq!(exprs, ["ttfb p99 < 250ms", "error_rate < 1%"]);
    assert!(s.settings.thresholds.is_empty(), "the SLO is kept apart");
    let e = parse("target: http://x\nslo:\n  - latency p99 < 5ms\nsteps:\n  - request: GET /\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("latency"), "{e}");
}

#[test]
fn a_files_kube_key_takes_one_workload_or_a_list() {
    let s = parse("target: http://x\nkube: shop/deployment/chat\nkube_context: prod\nsteps:\n  - request: GET /\n")
        .unwrap();
    assert_eq!(s.kube, ["shop/deployment/chat"]);
    assert_eq!(s.kube_context.as_deref(), Some("prod"));
    let s = parse(
        "target: http://x\nkube: [deployment/chat, pods/app=cart]\nsteps:\n  - request: GET /\n",
    )
    .unwrap();
    assert_eq!(s.kube, ["deployment/chat", "pods/app=cart"]);
    assert_eq!(s.kube_context, None);
    let s = parse("target: http://x\nsteps:\n  - request: GET /\n").unwrap();
    assert!(s.kube.is_empty());
    let e = parse("target: http://x\nkube: {deployment: chat}\nsteps:\n  - request: GET /\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`kube`: expected text or a list of texts")
            && e.contains("kube: [deployment/chat"),
        "{e}"
    );
}

#[test]
fn a_problem_without_a_place_names_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let e = crate::load_scenario(&missing).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: no such file: give the path of a scenario file (examples/ has some)",
            missing.display()
        )
    );
    let e = crate::load_scenario(dir.path()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{0}: {0} is a directory", dir.path().display())),
        "{e}"
    );
}
