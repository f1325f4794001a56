//! libFuzzer entry for `bridge_fuzz::stream::run`; the body and its input language are
//! documented there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    bridge_fuzz::quiet_expected_panics();
    bridge_fuzz::stream::run(data);
});
