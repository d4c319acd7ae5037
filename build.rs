//! Stamps the commit into `pacauc --version` (`PACAUC_VERSION`): "0.1.0
//! (28c9401 2026-11-28)", "-dirty" after the hash when tracked files differ
//! from it. Outside a git checkout of this crate (a crates.io tarball, no git
//! installed, a vendored copy inside another repository) it is the bare
//! package version: never another repository's commit.
//!
//! It reruns only when HEAD, the branch it points to or the sources change
//! (any rerun rebuilds the package, so a commit does; a commit on another
//! branch or `git add` does not), and an edit after a commit is marked dirty.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    let stamp = commit_stamp(&manifest);
    let full = match stamp {
        Some(s) => format!("{version} ({s})"),
        None => version,
    };
    println!("cargo:rustc-env=PACAUC_VERSION={full}");
}

/// "28c9401 2026-11-28" (with "-dirty"), or None outside this crate's checkout.
fn commit_stamp(manifest: &Path) -> Option<String> {
    let top = git(manifest, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), manifest) {
        return None;
    }
    // Rerun when HEAD moves or its branch gets a commit (a worktree's HEAD
    // lives in its own git dir, the refs in the common one).
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { manifest.join(p) }
    };
    let git_dir = abs(git(manifest, &["rev-parse", "--git-dir"])?);
    let common = abs(git(manifest, &["rev-parse", "--git-common-dir"])?);
    // (A path that does not exist would rerun the script on every build.)
    // Not the index: a rerun rebuilds the whole package, and `git add` alone
    // changes nothing built (an edit is caught by the watch on src/).
    let mut watch = vec![git_dir.join("HEAD")];
    watch.push(common.join("packed-refs"));
    if let Some(r) = git(manifest, &["symbolic-ref", "-q", "HEAD"]) {
        watch.push(common.join(r));
    }
    for p in watch.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let hash = git(manifest, &["rev-parse", "--short", "HEAD"])?;
    let date = git(manifest, &["log", "-1", "--format=%cs"]).unwrap_or_default();
    let dirty = git(manifest, &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    let dirty = if dirty { "-dirty" } else { "" };
    Some(format!("{hash}{dirty} {date}").trim().to_string())
}
