//! RFC 7541 Appendix C: every example, with the dynamic table's entries and size after
//! each block (transcribed from the RFC and cross-checked against golang/net's
//! `http2/hpack/hpack_test.go`); then the encoder against the decoder.

use super::decode::{DecodeError, Decoder, integer};
use super::encode::{Encoder, put_integer};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

type Fields = Vec<(String, String)>;

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Fields, DecodeError> {
    let mut out = Vec::new();
    d.decode(block, &mut |n, v| {
        out.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ));
    })?;
    Ok(out)
}

fn table(d: &Decoder) -> Fields {
    (0..d.table().len())
        .map(|i| {
            let (n, v) = d.table().get(i).unwrap();
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn f(pairs: &[(&str, &str)]) -> Fields {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// One block of a series: its bytes, the fields, the table after it (newest first) and
/// the table's size.
struct Step<'a> {
    wire: &'a str,
    fields: &'a [(&'a str, &'a str)],
    table: &'a [(&'a str, &'a str)],
    size: usize,
}

fn series(max: usize, steps: &[Step<'_>]) {
    let mut d = Decoder::new(max);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(
            decode(&mut d, &hex(s.wire)).unwrap(),
            f(s.fields),
            "block {i}"
        );
        assert_eq!(table(&d), f(s.table), "table after block {i}");
        assert_eq!(d.table().size(), s.size, "size after block {i}");
    }
}

#[test]
fn c1_integers() {
    // C.1.1 10 in a 5-bit prefix; C.1.2 1337 in a 5-bit prefix; C.1.3 42 at an octet.
    for (v, n, wire) in [(10, 5, "0a"), (1337, 5, "1f9a0a"), (42, 8, "2a")] {
        let mut out = Vec::new();
        put_integer(&mut out, v, n, 0);
        assert_eq!(out, hex(wire));
        let mut at = 0;
        assert_eq!(integer(&out, &mut at, n), Ok(v));
        assert_eq!(at, out.len());
    }
    let mut at = 0;
    assert_eq!(
        integer(&hex("1fff"), &mut at, 5),
        Err(DecodeError::Truncated)
    );
    let mut at = 0;
    assert_eq!(
        integer(&hex("1fffffffff0f"), &mut at, 5),
        Err(DecodeError::Overflow)
    );
}

/// Name-value pairs as the tests write them.
type Pairs<'a> = &'a [(&'a str, &'a str)];

#[test]
fn c2_single_fields() {
    let cases: [(&str, Pairs<'_>, Pairs<'_>); 4] = [
        (
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            &[("custom-key", "custom-header")],
            &[("custom-key", "custom-header")],
        ),
        (
            "040c 2f73 616d 706c 652f 7061 7468",
            &[(":path", "/sample/path")],
            &[],
        ),
        (
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            &[("password", "secret")],
            &[],
        ),
        ("82", &[(":method", "GET")], &[]),
    ];
    for (wire, fields, tab) in cases {
        let mut d = Decoder::new(4096);
        assert_eq!(decode(&mut d, &hex(wire)).unwrap(), f(fields), "{wire}");
        assert_eq!(table(&d), f(tab));
    }
}

const AUTH: (&str, &str) = (":authority", "www.example.com");
const NO_CACHE: (&str, &str) = ("cache-control", "no-cache");
const CUSTOM: (&str, &str) = ("custom-key", "custom-value");

fn requests(wires: [&str; 3]) {
    series(
        4096,
        &[
            Step {
                wire: wires[0],
                fields: &[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    AUTH,
                ],
                table: &[AUTH],
                size: 57,
            },
            Step {
                wire: wires[1],
                fields: &[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    AUTH,
                    NO_CACHE,
                ],
                table: &[NO_CACHE, AUTH],
                size: 110,
            },
            Step {
                wire: wires[2],
                fields: &[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    AUTH,
                    CUSTOM,
                ],
                table: &[CUSTOM, NO_CACHE, AUTH],
                size: 164,
            },
        ],
    );
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

const LOCATION: (&str, &str) = ("location", "https://www.example.com");
const DATE1: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
const DATE2: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
const PRIVATE: (&str, &str) = ("cache-control", "private");
const COOKIE: (&str, &str) = (
    "set-cookie",
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
);
const GZIP: (&str, &str) = ("content-encoding", "gzip");

fn responses(wires: [&str; 3]) {
    series(
        256,
        &[
            Step {
                wire: wires[0],
                fields: &[(":status", "302"), PRIVATE, DATE1, LOCATION],
                table: &[LOCATION, DATE1, PRIVATE, (":status", "302")],
                size: 222,
            },
            Step {
                wire: wires[1],
                fields: &[(":status", "307"), PRIVATE, DATE1, LOCATION],
                table: &[(":status", "307"), LOCATION, DATE1, PRIVATE],
                size: 222,
            },
            Step {
                wire: wires[2],
                fields: &[(":status", "200"), PRIVATE, DATE2, LOCATION, GZIP, COOKIE],
                table: &[COOKIE, GZIP, DATE2],
                size: 215,
            },
        ],
    );
}

#[test]
fn c5_responses_without_huffman_evicting() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d
         4d6f 6e2c 2032 3120 4f63 7420 3230 3133
         2032 303a 3133 3a32 3120 474d 546e 1768
         7474 7073 3a2f 2f77 7777 2e65 7861 6d70
         6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420
         3230 3133 2032 303a 3133 3a32 3220 474d
         54c0 5a04 677a 6970 7738 666f 6f3d 4153
         444a 4b48 514b 425a 584f 5157 454f 5049
         5541 5851 5745 4f49 553b 206d 6178 2d61
         6765 3d33 3630 303b 2076 6572 7369 6f6e
         3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman_evicting() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe
         9410 54d4 44a8 2005 9504 0b81 66e0 82a6
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8
         e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595
         040b 8166 e084 a62d 1bff c05a 839b d9ab
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b
         3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
         9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ]);
}

#[test]
fn bad_blocks_are_refused() {
    let mut d = Decoder::new(4096);
    // Index 0, an index past the tables, a truncated literal, a size update above our
    // maximum, and one after a field.
    assert_eq!(decode(&mut d, &hex("80")), Err(DecodeError::BadIndex(0)));
    assert_eq!(decode(&mut d, &hex("be")), Err(DecodeError::BadIndex(62)));
    assert_eq!(
        decode(&mut d, &hex("400a 6375")),
        Err(DecodeError::Truncated)
    );
    assert_eq!(
        decode(&mut d, &hex("3fe2 1f")),
        Err(DecodeError::BadSizeUpdate(4097))
    );
    assert_eq!(
        decode(&mut d, &hex("82 20")),
        Err(DecodeError::BadSizeUpdate(0))
    );
    // A Huffman literal holding EOS.
    assert_eq!(
        decode(&mut d, &hex("0085 ffff ffff fc")),
        Err(DecodeError::Huffman)
    );
    // Size updates at the start are allowed, and shrink the table.
    let mut d = Decoder::new(4096);
    decode(
        &mut d,
        &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
    )
    .unwrap();
    assert_eq!(d.table().len(), 1);
    assert_eq!(
        decode(&mut d, &hex("20 3fe1 1f 82")).unwrap(),
        f(&[(":method", "GET")])
    );
    assert_eq!(d.table().len(), 0);
}

fn request(path: &str, extra: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "127.0.0.1:8080"),
        (":path", path),
        ("user-agent", "volley/test"),
    ]
    .iter()
    .chain(extra)
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect();
    v.shrink_to_fit();
    v
}

fn encode(e: &mut Encoder, fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    e.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut out);
    out
}

#[test]
fn the_encoder_indexes_a_repeated_head_and_the_decoder_reads_it_back() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let head = request("/a?b=1", &[("authorization", "Bearer x"), ("x-long", "v")]);
    let want: Fields = head
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8(n.clone()).unwrap(),
                String::from_utf8(v.clone()).unwrap(),
            )
        })
        .collect();
    let first = encode(&mut e, &head);
    assert_eq!(decode(&mut d, &first).unwrap(), want);
    let epoch = e.epoch();
    let second = encode(&mut e, &head);
    assert_eq!(decode(&mut d, &second).unwrap(), want);
    // All indexed but the never-indexed credential; the table did not change.
    assert_eq!(e.epoch(), epoch);
    assert!(second.len() < 20, "{second:02x?}");
    assert_eq!(second[0], 0x82, "GET from the static table");
    // The credential went as never indexed (0001xxxx), name from the static table (23).
    assert!(first.windows(2).any(|w| w == [0x1f, 0x08]), "{first:02x?}");
}

#[test]
fn the_encoder_keeps_to_the_servers_table_size_and_says_so() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let head = request("/x", &[]);
    decode(&mut d, &encode(&mut e, &head)).unwrap();
    // The server allows no table: the next block opens with a size update to 0, and no
    // field is indexed in the table after it.
    e.set_peer_max(0);
    let block = encode(&mut e, &head);
    assert_eq!(block[0], 0x20);
    decode(&mut d, &block).unwrap();
    assert_eq!(d.table().len(), 0);
    // Back up from an empty table: only the new size is signalled.
    e.set_peer_max(4096);
    e.set_peer_max(100);
    e.set_peer_max(4096);
    let block = encode(&mut e, &head);
    assert_eq!(&block[..3], &hex("3fe1 1f")[..], "{block:02x?}");
    decode(&mut d, &block).unwrap();
    decode(&mut d, &encode(&mut e, &head)).unwrap();
    assert!(d.table().len() > 0);
    // Down to 100 and back up between two blocks: both are signalled, smallest first, and
    // the decoder evicts to 100 on the way.
    e.set_peer_max(100);
    e.set_peer_max(4096);
    let block = encode(&mut e, &head);
    assert_eq!(&block[..5], &hex("3f45 3fe1 1f")[..], "{block:02x?}");
    assert_eq!(decode(&mut d, &block).unwrap().len(), head.len());
    // A setting that changes nothing signals nothing.
    e.set_peer_max(4096);
    assert_eq!(encode(&mut e, &head)[0], 0x82);
}

#[test]
fn many_varied_heads_round_trip_through_evictions() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let mut rng = fastrand::Rng::with_seed(7);
    for i in 0..2000 {
        let path = format!("/item/{}", rng.u32(..50));
        let value = "v".repeat(rng.usize(0..300));
        let name = format!("x-h{}", rng.u8(..20));
        let head = request(&path, &[(&name, &value), ("cookie", "a=b")]);
        let got = decode(&mut d, &encode(&mut e, &head)).unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = got
            .into_iter()
            .map(|(n, v)| (n.into_bytes(), v.into_bytes()))
            .collect();
        assert_eq!(got, head, "head {i}");
        assert!(e.epoch() > 0);
    }
}
