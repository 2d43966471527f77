//! Response framing on arbitrary bytes (the first byte picks the request's method and
//! whether it offered an upgrade): never a panic, and the same result whether the bytes
//! arrive whole or split (see `weir_h1::fuzz::response`). Run with
//! `cargo +nightly fuzz run response_framing` from `crates/weir-h1`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_h1::fuzz::response::check(data);
});
