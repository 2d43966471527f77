//! Request framing on arbitrary bytes: never a panic, and the same result
//! whether the bytes arrive whole or split (see
//! `weir_h1::fuzz`). Run with
//! `cargo +nightly fuzz run request_framing` from `crates/weir-h1`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_h1::fuzz::check(data);
});
