#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pacauc::fuzzing::csv_dataset(data));
