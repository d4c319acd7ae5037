#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pacauc::fuzzing::event_log(data));
