//! Request framing on arbitrary bytes: never a panic, and the same result
//! whether the bytes arrive whole or split (see
//! `weir_proxy::codec::h1::server::fuzz`). Run with
//! `cargo +nightly fuzz run request_framing` from `crates/weir-proxy`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_proxy::codec::h1::server::fuzz::check(data);
});
