//! HPACK (RFC 7541): header blocks decoded with a dynamic table, encoded without one.

mod decode;
pub mod encode;
mod huffman;
mod huffman_codes;
mod table;

pub use decode::{DecodeError, Decoder};
pub use huffman::HuffmanError;
pub use table::{Parsed, STATIC};
