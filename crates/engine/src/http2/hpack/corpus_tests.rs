//! The hpack-test-case corpus (tests/fixtures/hpack-test-case, MIT): every story's blocks
//! decoded in order on one decoder, each to its listed headers; then the same headers
//! encoded by our encoder and read back by our decoder.

use std::path::Path;

use super::decode::Decoder;
use super::encode::Encoder;

fn stories(dir: &str) -> Vec<(String, serde_json::Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpack-test-case");
    let mut out: Vec<_> = std::fs::read_dir(root.join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (
                p.display().to_string(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn expected(case: &serde_json::Value) -> Fields {
    case["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let (n, v) = h.as_object().unwrap().iter().next().unwrap();
            (
                n.as_bytes().to_vec(),
                v.as_str().unwrap().as_bytes().to_vec(),
            )
        })
        .collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Fields {
    let mut out = Vec::new();
    d.decode(block, &mut |n, v| out.push((n.to_vec(), v.to_vec())))
        .unwrap();
    out
}

fn run(dir: &str) -> usize {
    let mut blocks = 0;
    let stories = stories(dir);
    assert!(stories.len() >= 20, "{dir}: {} stories", stories.len());
    for (path, story) in stories {
        let mut theirs = Decoder::new(4096);
        let mut ours = Encoder::new();
        let mut back = Decoder::new(4096);
        for case in story["cases"].as_array().unwrap() {
            let want = expected(case);
            let wire = hex(case["wire"].as_str().unwrap());
            assert_eq!(
                decode(&mut theirs, &wire),
                want,
                "{path} #{}",
                case["seqno"]
            );
            if let Some(size) = case["header_table_size"].as_u64() {
                ours.set_peer_max(size as usize);
            }
            let mut block = Vec::new();
            ours.encode(want.iter().map(|(n, v)| (&n[..], &v[..])), &mut block);
            assert_eq!(
                decode(&mut back, &block),
                want,
                "{path} #{} re-encoded",
                case["seqno"]
            );
            blocks += 1;
        }
    }
    blocks
}

#[test]
fn nghttp2_stories_decode() {
    assert!(run("nghttp2") > 3000);
}

#[test]
fn stories_that_change_the_table_size_decode() {
    assert!(run("nghttp2-change-table-size") > 1000);
}
