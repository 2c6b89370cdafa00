use super::*;

fn parse(text: &str) -> Result<Scenario, ScenarioErrors> {
    parse_scenario(Path::new("s.yaml"), text, &|name| (name == "TOKEN").then(|| "s3cret-token".to_string()))
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
    assert_eq!(s.settings.load.stages, Some(crate::parse_stages("5s:10,10s:10").unwrap()));
    assert_eq!(s.settings.thresholds[1].step.as_deref(), Some("create room"));
    assert_eq!(s.env, vec![("TOKEN".to_string(), "s3cret-token".to_string())]);
    assert_eq!(s.redact("Bearer s3cret-token failed"), "Bearer *** failed");
    // Every form a filter yields is masked too.
    for form in ["S3CRET-TOKEN", "S3cret-token", "nekot-terc3s", "s3cret-token".replace('-', "-").as_str()] {
        assert_eq!(s.redact(&format!("x {form} y")), "x *** y", "{form}");
    }
    let Node::Group(g) = &s.steps[2] else { panic!("group expected") };
    assert_eq!((g.repeat, g.steps.len()), (10, 2));
    let Node::Http(create) = &s.steps[0] else { panic!("request expected") };
    assert_eq!(create.extract.len(), 2);
    assert!(create.reads_body());
}

/// Each broken file: (text, line, column, part of the message).
const BROKEN: &[(&str, u64, u64, &str)] = &[
    // 1. unknown key in a step
    ("target: http://x\nsteps:\n  - request: GET /\n    bogus: 1\n", 4, 5, "unknown field `bogus`"),
    // 2. unknown top-level key
    ("target: http://x\nstep:\n  - request: GET /\n", 2, 1, "unknown field `step`"),
    // 3. wrong type
    ("target: http://x\nsteps:\n  - request: GET /\n    repeat: lots\n", 4, 13, "expected a whole number"),
    // 4. steps not a list
    ("target: http://x\nsteps: 3\n", 2, 8, "expected a list"),
    // 5. bad YAML
    ("target: http://x\nsteps:\n  - request: GET /\n   bad indent: x\n", 4, 4, "did not find expected '-'"),
    // 6. missing target
    ("steps:\n  - request: GET /\n", 1, 1, "missing field `target`"),
    // 7. variable used before it is extracted
    ("target: http://x\nsteps:\n  - request: GET /rooms/{{ code }}\n  - request: POST /rooms\n    extract: { code: $.code }\n", 3, 14, "variable `code` is used before any step defines it"),
    // 8. bad JSONPath
    ("target: http://x\nsteps:\n  - request: POST /rooms\n    extract:\n      code: accessCode\n", 5, 13, "`accessCode` is not a JSONPath query"),
    // 9. bad duration
    ("target: http://x\nload:\n  vus: 2\n  duration: soon\nsteps:\n  - request: GET /\n", 4, 13, "load `duration`: `soon` is not a duration"),
    // 10. bad threshold
    ("target: http://x\nthresholds:\n  - latency p99 < 5ms\nsteps:\n  - request: GET /\n", 3, 5, "unknown figure `latency`"),
    // 11. threshold for a step that does not exist
    ("target: http://x\nthresholds:\n  - login: ttfb p99 < 5ms\nsteps:\n  - request: GET /\n", 3, 5, "no step has that name"),
    // 12. template syntax error
    ("target: http://x\nsteps:\n  - request: GET /{{ code\n", 3, 14, "template `/{{ code`"),
    // 13. duplicate step names
    ("target: http://x\nsteps:\n  - name: a\n    request: GET /\n  - name: a\n    request: GET /x\n", 5, 11, "step name `a` is already used on line 4"),
    // 14. two kinds in one step
    ("target: http://x\nsteps:\n  - request: GET /\n    sse: /events\n", 3, 5, "only one of"),
    // 15. no kind
    ("target: http://x\nsteps:\n  - name: nothing\n", 3, 5, "needs one of `request`"),
    // 16. bad status
    ("target: http://x\nsteps:\n  - request: GET /\n    check: { status: \"2xx\" }\n", 4, 22, "status `2xx`"),
    // 17. request without a URL
    ("target: http://x\nsteps:\n  - request: GET\n", 3, 14, "should be a method and a URL"),
    // 18. unset environment variable
    ("target: http://x\nsteps:\n  - request: GET /?k={{ env.NOPE }}\n", 0, 0, "environment variable `NOPE` is not set"),
    // 19. bad target
    ("target: 127.0.0.1:8080\nsteps:\n  - request: GET /\n", 1, 9, "is not a base URL"),
    // 20. missing data file
    ("target: http://x\ndata:\n  users: { file: nope.csv }\nsteps:\n  - request: GET /\n", 3, 10, "data `users`: cannot read"),
    // 21. body field on an SSE step
    ("target: http://x\nsteps:\n  - name: ev\n    sse: /events\n    json: {}\n", 3, 11, "`json` does not apply to an `sse` step"),
    // 22. bad regex
    ("target: http://x\nsteps:\n  - request: GET /\n    extract:\n      id: { regex: 'id=(' }\n", 5, 11, "bad regex"),
    // 23. relative URL without a slash
    ("target: http://x\nsteps:\n  - request: GET rooms\n", 3, 14, "should start with /"),
    // 24. repeat 0
    ("target: http://x\nsteps:\n  - group: g\n    repeat: 0\n    steps:\n      - request: GET /\n", 4, 13, "`repeat` must be at least 1"),
    // 26. a random pause the wrong way round
    ("target: http://x\nsteps:\n  - request: GET /\n    think_time: 3s..1s\n", 4, 17, "the longer pause comes second"),
    // 27. the whole flow's time under one step
    ("target: http://x\nthresholds:\n  - a: iteration p95 < 1s\nsteps:\n  - name: a\n    request: GET /\n", 3, 5, "`iteration` is the whole flow"),
    // a zero timeout would fail every request
    ("target: http://x\ntimeout: 0s\nsteps:\n  - request: GET /\n", 2, 10, "`timeout`: `0s` would fail every request"),
    // an unknown load key lists the keys
    ("target: http://x\nload:\n  users: 5\nsteps:\n  - request: GET /\n", 3, 10, "unknown load key `users`; the keys are vus, duration"),
    // a zero rate sends nothing
    ("target: http://x\nload:\n  rate: 0\n  duration: 1m\nsteps:\n  - request: GET /\n", 3, 9, "load `rate`: `0` sends nothing"),
    // 28. two load models at once
    ("target: http://x\nload:\n  vus: 10\n  rate: 100\n  duration: 1m\nsteps:\n  - request: GET /\n", 3, 8, "load `vus` cannot be combined with `rate`"),
    // 29. stages and a duration
    ("target: http://x\nload:\n  stages: \"1m:10\"\n  duration: 1m\nsteps:\n  - request: GET /\n", 4, 13, "load `duration` cannot be combined with `stages`"),
    // 30. a variable only one branch defines, used after the branches
    ("target: http://x\nsteps:\n  - one_of:\n      - steps:\n          - request: POST /a\n            extract: { a: $.id }\n      - steps:\n          - request: GET /b\n  - request: GET /{{ a }}\n", 9, 14, "variable `a` is used before any step defines it"),
    // 31. a branch that weighs nothing
    ("target: http://x\nsteps:\n  - one_of:\n      - weight: 0\n        steps:\n          - request: GET /\n", 4, 17, "`weight` must be at least 1"),
    // 32. nothing at all
    ("# just a comment\n\n", 1, 1, "the file is empty"),
    // 25. a threshold that is not a string
    ("target: http://x\nthresholds:\n  - [1, 2]\nsteps:\n  - request: GET /\n", 3, 5, "a threshold is an expression"),
];

#[test]
fn broken_scenarios_name_line_column_and_problem() {
    assert!(BROKEN.len() >= 15);
    for (i, (text, line, column, needle)) in BROKEN.iter().enumerate() {
        let errors = match parse(text) {
            Ok(_) => panic!("case {}: accepted", i + 1),
            Err(e) => e,
        };
        let e = errors.0.iter().find(|e| e.message.contains(needle)).unwrap_or_else(|| panic!("case {}: no `{needle}` in {errors}", i + 1));
        assert_eq!((e.line, e.column), (*line, *column), "case {}: {e}", i + 1);
        assert!(e.to_string().starts_with(&format!("s.yaml:{line}:{column}: ")), "case {}: {e}", i + 1);
    }
}

#[test]
fn every_error_is_reported_not_only_the_first() {
    let text = "target: http://x\nload:\n  pacing: later\nsteps:\n  - request: GET /{{ a }}\n  - request: GET /{{ b }}\n";
    let errors = parse(text).unwrap_err();
    assert_eq!(errors.0.len(), 3, "{errors}");
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
    let Node::OneOf(branches) = &s.steps[0] else { panic!("one_of expected") };
    assert_eq!(branches.iter().map(|b| b.weight).collect::<Vec<_>>(), [3, 1]);
    assert_eq!(branches[0].name.as_deref(), Some("browse"));
    // Rolls 0..3 pick the first branch, 3 the second.
    assert_eq!((0..4).map(|r| crate::scenario::pick_branch(branches, r)).collect::<Vec<_>>(), [0, 0, 0, 1]);
}
