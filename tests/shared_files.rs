//! Files shared between writers: two processes writing one record, a record
//! rewritten by a run that is killed, many threads writing one file. Every file
//! a reader can see is whole — the old one or a new one — and no temporary
//! file is left behind.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::pacauc;
use pacauc::engine::record::{RunRecord, write_atomic};

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-shared-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn no_temporaries(dir: &std::path::Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn many_threads_writing_one_file_leave_one_whole_file() {
    let dir = temp_dir("threads");
    let path = dir.join("out.json");
    std::thread::scope(|s| {
        for i in 0..8 {
            let path = &path;
            s.spawn(move || {
                let body = format!("[{i}]").repeat(20_000);
                for _ in 0..5 {
                    write_atomic(path, body.as_bytes()).unwrap();
                }
            });
        }
    });
    let text = std::fs::read_to_string(&path).unwrap();
    let unit = &text[..3];
    assert_eq!(text, unit.repeat(20_000), "a mix of writers");
    no_temporaries(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_fits_writing_one_record_leave_a_whole_record() {
    let dir = temp_dir("fits");
    let out = dir.join("run.json");
    let spawn = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_pacauc"))
            .args([
                "fit",
                "demo-data/sparse_linear.csv",
                "--method",
                "ep",
                "--seed",
                seed,
            ])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("1"), spawn("2"));
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let text = std::fs::read_to_string(&out).unwrap();
    RunRecord::from_json(&text).expect("one writer's whole record");
    no_temporaries(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_killed_fit_leaves_the_old_record_whole() {
    let dir = temp_dir("killed");
    let out = dir.join("run.json");
    let first = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "logit",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(first.status.success());
    let before = std::fs::read(&out).unwrap();
    // Killed at different moments of a run that would rewrite the record.
    for wait_ms in [0u64, 50, 200, 600] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pacauc"))
            .args([
                "fit",
                "demo-data/sparse_linear.csv",
                "--method",
                "ep",
                "--out",
            ])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(wait_ms));
        let _ = child.kill(); // SIGKILL: no clean-up of any kind
        let _ = child.wait();
        let now = std::fs::read(&out).unwrap();
        let text = String::from_utf8(now.clone()).unwrap();
        RunRecord::from_json(&text).expect("a whole record after the kill");
        assert!(now == before || text.contains("\"method\": \"ep\""));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
