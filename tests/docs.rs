//! Every shell example in README.md and docs/guide/*.md runs here, so a doc
//! cannot drift from the program.
//!
//! A ```` ```console ```` block is a transcript: `$ COMMAND` (a line ending in
//! `\` continues on the next), then what it prints, stdout and stderr merged.
//! In the expected text `[..]` matches anything within a line and a line
//! `...` any number of lines (timings, paths, figures that move with the
//! data); `? N` as the first line after the command expects exit status N
//! (0 otherwise). The commands of one file run in order, through bash with
//! `set -o pipefail`, in one fresh temporary folder holding a link to
//! `demo-data/`, with the built `pacauc` first on PATH. ```` ```console ignore ````
//! marks a block shown but not run (the explorer needs a terminal; set-up
//! commands that are the CI itself); other shell fences (`sh`, `bash`,
//! `shell`) are refused, so every example is one or the other.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Example {
    file: String,
    line: usize,
    command: String,
    status: i32,
    expected: Vec<String>,
}

/// The examples of one markdown file, and how many blocks are marked not run.
fn examples(file: &Path) -> (Vec<Example>, usize) {
    let text = std::fs::read_to_string(file).expect("readable doc");
    let name = file.display().to_string();
    let mut out = Vec::new();
    let mut ignored = 0;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        let info = fence.strip_prefix("```").map(str::trim);
        let Some(info) = info.filter(|s| !s.is_empty()) else {
            // A plain fence opens a block of no language: skip to its end.
            if info.is_some() {
                i += 1;
                while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                    i += 1;
                }
            }
            i += 1;
            continue;
        };
        let lang = info.split([' ', ',']).next().unwrap_or("");
        assert!(
            !matches!(lang, "sh" | "bash" | "shell" | "zsh"),
            "{name}:{}: a shell example must be ```console (run by tests/docs.rs) or ```console ignore",
            i + 1
        );
        let mut body = Vec::new();
        let start = i + 1;
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            body.push(lines[i]);
            i += 1;
        }
        i += 1;
        if lang != "console" {
            continue;
        }
        if info.contains("ignore") {
            ignored += 1;
            continue;
        }
        let mut j = 0;
        while j < body.len() {
            let Some(first) = body[j].strip_prefix("$ ") else {
                panic!(
                    "{name}:{}: expected a `$ command` line, found {:?}",
                    start + j + 1,
                    body[j]
                );
            };
            let line = start + j + 1;
            let mut command = first.to_string();
            while command.ends_with('\\') && j + 1 < body.len() {
                command.pop();
                j += 1;
                command.push(' ');
                command.push_str(body[j].trim_start().trim_start_matches("> "));
            }
            j += 1;
            let mut status = 0;
            if let Some(code) = body.get(j).and_then(|l| l.strip_prefix("? ")) {
                status = code.trim().parse().expect("`? N`: an exit status");
                j += 1;
            }
            let mut expected = Vec::new();
            while j < body.len() && !body[j].starts_with("$ ") {
                expected.push(body[j].trim_end().to_string());
                j += 1;
            }
            while expected.last().is_some_and(|l| l.is_empty()) {
                expected.pop();
            }
            out.push(Example {
                file: name.clone(),
                line,
                command,
                status,
                expected,
            });
        }
    }
    (out, ignored)
}

/// Does `line` match `pattern`, where `[..]` matches any run of characters?
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let Some(mut rest) = line.strip_prefix(parts[0]) else {
        return false;
    };
    for (k, part) in parts.iter().enumerate().skip(1) {
        if k == parts.len() - 1 {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Does the output match the expected lines (`...`: any number of lines)?
fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, tail)| line_matches(e, a) && output_matches(rest, tail)),
    }
}

const TIMEOUT: Duration = Duration::from_secs(180);

/// Runs one example in `dir`; the failure message, if any.
fn run(ex: &Example, dir: &Path, path_var: &str) -> Option<String> {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail\n{{\n{}\n}} 2>&1", ex.command))
        .current_dir(dir)
        .env("PATH", path_var)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > TIMEOUT {
            child.kill().ok();
            return Some(format!("timed out after {TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let actual: Vec<&str> = text.lines().map(str::trim_end).collect();
    let code = status.code().unwrap_or(-1);
    if code != ex.status {
        return Some(format!(
            "exit status {code}, expected {}; output:\n{text}",
            ex.status
        ));
    }
    (!output_matches(&ex.expected, &actual)).then(|| {
        format!(
            "output differs.\n--- expected\n{}\n--- actual\n{text}",
            ex.expected.join("\n")
        )
    })
}

fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs/guide")) {
        let mut guide: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        guide.sort();
        files.extend(guide);
    }
    files
}

#[test]
fn every_shell_example_in_the_docs_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_pacauc"));
    let path_var = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let (mut ran, mut ignored) = (0, 0);
    for file in doc_files(root) {
        let (exs, ign) = examples(&file);
        ignored += ign;
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        let dir = std::env::temp_dir().join(format!("pacauc-docs-{}-{stem}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(root.join("demo-data"), dir.join("demo-data")).unwrap();
        for ex in &exs {
            ran += 1;
            let t0 = Instant::now();
            let failure = run(ex, &dir, &path_var);
            eprintln!(
                "{}:{} {:.1}s  $ {}",
                ex.file,
                ex.line,
                t0.elapsed().as_secs_f64(),
                ex.command
            );
            if let Some(why) = failure {
                failures.push(format!("{}:{}: $ {}\n{why}", ex.file, ex.line, ex.command));
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
    eprintln!("{ran} examples run, {ignored} blocks marked `console ignore`");
    assert!(ran > 0, "no examples found");
    assert!(
        failures.is_empty(),
        "{} of {ran} doc examples failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_matcher_means_what_the_docs_say() {
    assert!(line_matches("time [..]s", "time 0.004s"));
    assert!(line_matches("a[..]b[..]c", "a12b34c"));
    assert!(!line_matches("a[..]b[..]c", "a12c34b"));
    assert!(!line_matches("AUC 0.8[..]", "AUC 0.7123"));
    assert!(line_matches("exact", "exact"));
    assert!(!line_matches("exact", "exact!"));
    let lines = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(output_matches(&lines("a\n...\nz"), &["a", "b", "c", "z"]));
    assert!(output_matches(&lines("a\n...\nz"), &["a", "z"]));
    assert!(!output_matches(&lines("a\n...\nz"), &["a", "b"]));
    assert!(!output_matches(&lines("a"), &["a", "b"]));
    assert!(output_matches(&lines("..."), &[]));
    assert!(output_matches(&[], &[]));
}

#[test]
fn transcripts_parse_as_documented() {
    let dir = std::env::temp_dir().join(format!("pacauc-docs-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let md = dir.join("t.md");
    std::fs::write(
        &md,
        "text\n```console\n$ a \\\n    --b\nout\n$ c\n? 2\n...\n```\n```console ignore\n$ x\n```\n```rust\nfn f() {}\n```\n",
    )
    .unwrap();
    let (exs, ignored) = examples(&md);
    assert_eq!(ignored, 1);
    assert_eq!(exs.len(), 2);
    assert_eq!(exs[0].command, "a  --b");
    assert_eq!(exs[0].expected, vec!["out"]);
    assert_eq!((exs[1].status, exs[1].expected.len()), (2, 1));
    std::fs::remove_dir_all(&dir).ok();
}
