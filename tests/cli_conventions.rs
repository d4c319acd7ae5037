//! The command-line conventions: `--version` names the commit, completion
//! scripts and man pages are generated from the clap definitions (so they
//! list the commands and flags `--help` lists).

mod common;
use common::pacauc;

use std::process::Command;

fn stdout(args: &[&str]) -> String {
    let out = pacauc(args);
    assert!(
        out.status.success(),
        "pacauc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn version_names_the_commit_of_a_checkout() {
    let v = stdout(&["--version"]);
    assert!(
        v.starts_with(&format!("pacauc {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match head {
        Ok(o) if o.status.success() => {
            // Built from this checkout: the hash (of this commit or, when the
            // test binary is older than HEAD, at least a hash and a date).
            let hash = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let inner = v.split('(').nth(1).expect("(commit date)");
            assert!(
                inner.chars().take_while(|c| c.is_ascii_hexdigit()).count() >= 7,
                "{v} (HEAD is {hash})"
            );
        }
        _ => eprintln!("no git checkout: the bare version is right ({v})"),
    }
}

#[test]
fn completions_cover_commands_and_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = stdout(&["completions", shell]);
        for word in ["fit", "predict", "method", "gamma", "watch"] {
            assert!(s.contains(word), "{shell} completions lack {word}");
        }
    }
    let bad = pacauc(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bash"));
}

#[test]
fn man_pages_are_generated() {
    let page = stdout(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH pacauc 1"),
        "{page}"
    );
    assert!(page.contains(".TH pacauc 1"));
    assert!(
        page.contains("pacauc\\-fit(1)"),
        "the subcommands are listed"
    );
    let dir = std::env::temp_dir().join(format!("pacauc-man-{}", std::process::id()));
    let out = pacauc(&["man", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let fit = std::fs::read_to_string(dir.join("pacauc-fit.1")).expect("pacauc-fit.1");
    assert!(fit.contains("\\-\\-method"), "fit's page lists its flags");
    std::fs::remove_dir_all(&dir).ok();
}

/// A reader that stops early (`pacauc … | head`) ends the program quietly,
/// by SIGPIPE as other Unix tools end, not by a panic on the closed pipe.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // The read end is closed before the program starts: its first write
    // meets a closed pipe whatever the timing.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_pacauc"))
        .args(["man"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("pacauc runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(13), // SIGPIPE
        "{:?}",
        out.status
    );
}
