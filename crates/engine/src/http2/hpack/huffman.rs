//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B). The code is canonical — codes of
//! one length are consecutive, in symbol order — so the table below holds only each
//! symbol's code length, as Appendix B lists them; the codes follow from those. Decoding
//! runs nghttp2's way: a state machine over 4-bit nibbles, two lookups a byte, whose
//! table is built from the code at first use.

use std::sync::OnceLock;

/// The code length of each symbol 0-255 and of EOS (256), RFC 7541 Appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The symbol with EOS's code.
const EOS: usize = 256;

/// Each symbol's code, right-aligned, with its length.
fn codes() -> &'static [(u32, u8); 257] {
    static CODES: OnceLock<[(u32, u8); 257]> = OnceLock::new();
    CODES.get_or_init(|| {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (LENGTHS[s], s));
        let mut out = [(0u32, 0u8); 257];
        let (mut code, mut len) = (0u32, LENGTHS[order[0]]);
        for s in order {
            code <<= LENGTHS[s] - len;
            len = LENGTHS[s];
            out[s] = (code, len);
            code += 1;
        }
        out
    })
}

/// Appends the Huffman encoding of `src` to `out`, padded with the high bits of EOS (the
/// tests' servers write with it; our encoder sends raw strings).
#[cfg(test)]
pub(crate) fn encode(src: &[u8], out: &mut Vec<u8>) {
    let codes = codes();
    let (mut acc, mut bits) = (0u64, 0u32);
    for &b in src {
        let (code, len) = codes[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
    }
}

/// How many bytes [`encode`] writes for `src`.
#[cfg(test)]
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let codes = codes();
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(codes[usize::from(b)].1))
        .sum();
    bits.div_ceil(8)
}

/// A transition: the next state, the symbol emitted on the way (if `EMIT`), and flags.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    sym: u8,
    flags: u8,
}

const EMIT: u8 = 1;
const FAIL: u8 = 2;

/// The decoding machine: for each of the 256 internal nodes of the code's tree and each
/// nibble, where the nibble leads; and which states may end a string (the padding read so
/// far is all ones and at most 7 bits).
struct Machine {
    steps: Vec<[Step; 16]>,
    accept: [bool; 256],
}

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(build)
}

fn build() -> Machine {
    // The tree: internal nodes by number (the root is 0); a child is a node or a leaf.
    #[derive(Clone, Copy)]
    enum Child {
        None,
        Node(usize),
        Leaf(usize),
    }
    let mut nodes: Vec<[Child; 2]> = vec![[Child::None; 2]];
    for (sym, &(code, len)) in codes().iter().enumerate() {
        let mut at = 0;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                nodes[at][bit] = Child::Leaf(sym);
            } else {
                at = match nodes[at][bit] {
                    Child::Node(n) => n,
                    _ => {
                        nodes.push([Child::None; 2]);
                        let n = nodes.len() - 1;
                        nodes[at][bit] = Child::Node(n);
                        n
                    }
                };
            }
        }
    }
    assert_eq!(nodes.len(), 256, "a complete code of 257 symbols");
    let mut steps = vec![[Step::default(); 16]; 256];
    for (state, row) in steps.iter_mut().enumerate() {
        for (nibble, step) in row.iter_mut().enumerate() {
            let mut at = state;
            for i in (0..4).rev() {
                match nodes[at][(nibble >> i) & 1] {
                    Child::Node(n) => at = n,
                    Child::Leaf(EOS) | Child::None => {
                        step.flags |= FAIL;
                        break;
                    }
                    Child::Leaf(sym) => {
                        step.sym = sym as u8;
                        step.flags |= EMIT;
                        at = 0;
                    }
                }
            }
            step.next = at as u8;
        }
    }
    let mut accept = [false; 256];
    let mut at = 0;
    accept[0] = true;
    for _ in 0..7 {
        match nodes[at][1] {
            Child::Node(n) => at = n,
            _ => unreachable!("EOS is 30 ones"),
        }
        accept[at] = true;
    }
    Machine { steps, accept }
}

/// The Huffman string was not valid: it holds EOS, or its padding is longer than 7 bits
/// or not all ones (RFC 7541 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadHuffman;

/// Appends the decoding of `src` to `out`.
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), BadHuffman> {
    let m = machine();
    let mut state = 0usize;
    out.reserve(src.len() + src.len() / 2);
    for &b in src {
        for nibble in [b >> 4, b & 0xf] {
            let step = m.steps[state][usize::from(nibble)];
            if step.flags & FAIL != 0 {
                return Err(BadHuffman);
            }
            if step.flags & EMIT != 0 {
                out.push(step.sym);
            }
            state = usize::from(step.next);
        }
    }
    if m.accept[state] {
        Ok(())
    } else {
        Err(BadHuffman)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_canonical_codes_are_appendix_b_s() {
        let c = codes();
        // Spot checks from RFC 7541 Appendix B.
        assert_eq!(c[0], (0x1ff8, 13));
        assert_eq!(c[usize::from(b' ')], (0x14, 6));
        assert_eq!(c[usize::from(b'0')], (0x0, 5));
        assert_eq!(c[usize::from(b'a')], (0x3, 5));
        assert_eq!(c[usize::from(b'z')], (0x7b, 7));
        assert_eq!(c[usize::from(b'~')], (0x1ffd, 13));
        assert_eq!(c[10], (0x3ffffffc, 30));
        assert_eq!(c[255], (0x3ffffee, 26));
        assert_eq!(c[EOS], (0x3fffffff, 30));
    }

    /// The strings of RFC 7541 Appendix C.4 and C.6.
    const VECTORS: [(&str, &str); 8] = [
        ("www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"),
        ("no-cache", "a8eb10649cbf"),
        ("custom-key", "25a849e95ba97d7f"),
        ("custom-value", "25a849e95bb8e8b4bf"),
        ("302", "6402"),
        ("private", "aec3771a4b"),
        (
            "Mon, 21 Oct 2013 20:13:21 GMT",
            "d07abe941054d444a8200595040b8166e082a62d1bff",
        ),
        (
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
        ),
    ];

    #[test]
    fn the_rfc_vectors_encode_and_decode() {
        for (plain, wire) in VECTORS {
            let mut out = Vec::new();
            encode(plain.as_bytes(), &mut out);
            assert_eq!(out, hex(wire), "{plain}");
            assert_eq!(encoded_len(plain.as_bytes()), out.len());
            let mut back = Vec::new();
            decode(&out, &mut back).unwrap();
            assert_eq!(back, plain.as_bytes());
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).chain((0..=255).rev()).collect();
        let mut out = Vec::new();
        encode(&all, &mut out);
        let mut back = Vec::new();
        decode(&out, &mut back).unwrap();
        assert_eq!(back, all);
        let mut empty = Vec::new();
        decode(&[], &mut empty).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn eos_and_bad_padding_are_refused() {
        let mut out = Vec::new();
        // EOS in full (30 ones, then 2 padding ones).
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut out), Err(BadHuffman));
        // 'a' (00011) then padding of 8 or more ones: a whole padding byte.
        assert_eq!(decode(&[0x1f, 0xff], &mut out), Err(BadHuffman));
        // 'a' then padding that is not all ones (golang's corrupt-padding case).
        assert_eq!(decode(&[0x18], &mut out), Err(BadHuffman));
        // A valid 'a' with 3 padding ones.
        out.clear();
        decode(&[0x1f], &mut out).unwrap();
        assert_eq!(out, b"a");
        // golang/net's excess-padding cases: a whole byte of padding, alone or after 'a'.
        assert_eq!(decode(&[0xff], &mut out), Err(BadHuffman));
        assert_eq!(decode(&[0x1f, 0xff, 0xff], &mut out), Err(BadHuffman));
    }
}
