//! What a client sends a server connection; `weir_h2::fuzz::server` says what must hold.
//! Run with `cargo +nightly fuzz run server_input` from `crates/weir-h2`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weir_h2::fuzz::server(data);
});
