//! HPACK (RFC 7541): the decoder for response heads, the encoder for request heads.

#[cfg(test)]
mod corpus_tests;
mod decode;
mod encode;
pub(crate) mod huffman;
pub(crate) mod static_table;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use decode::Decoder;
pub(crate) use encode::Encoder;
#[cfg(test)]
pub(crate) use encode::put_integer;
