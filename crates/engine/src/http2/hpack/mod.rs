//! HPACK (RFC 7541): the decoder for response heads, the encoder for request heads.

#[cfg(test)]
mod corpus_tests;
mod decode;
mod encode;
mod huffman;
mod static_table;
mod table;
#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use decode::{DecodeError, Decoder};
#[allow(unused_imports)]
pub(crate) use encode::Encoder;
