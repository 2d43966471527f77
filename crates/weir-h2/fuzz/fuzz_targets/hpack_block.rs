//! One HPACK header block; `weir_h2::fuzz::hpack` says what must hold.
//! Run with `cargo +nightly fuzz run hpack_block` from `crates/weir-h2`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_h2::fuzz::hpack(data);
});
