//! What a server sends a client connection with requests open; `weir_h2::fuzz::client` says what must hold.
//! Run with `cargo +nightly fuzz run client_input` from `crates/weir-h2`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_h2::fuzz::client(data);
});
