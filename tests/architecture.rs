//! The crate checks its own architecture (ARCHITECTURE.md, "Layers"): this
//! test reads the imports of every file in `src/` — `use` trees and inline
//! paths, `crate::`, `super::` and `self::` resolved to the module (file) they
//! name, re-exports followed — and fails on a broken rule:
//!
//! - the layers: engine never imports cli/tui/app/worker/spec; spec never
//!   imports cli/tui/app/worker; worker never cli/tui/app; app never cli/tui;
//!   tui never cli (the "never" rules of `../shared/tools/layers.py`);
//! - inside `engine/`: the methods (smc, ep, vb, gcs, baseline) never import
//!   each other; the core (interface, error, problem, fit, event, prior)
//!   reaches no method, not even through the modules it imports (so the core
//!   compiles and reads without them); the engine's other modules that are
//!   not methods (bounds, numerics, data, select, the checks…) import no
//!   method either (what two methods share goes below them, e.g. into
//!   `numerics/`); `numerics/` imports nothing of the engine outside itself;
//! - a fit's `details` JSON is indexed only by the methods that write it, the
//!   core's note writers and the record (`DETAILS_OWNERS`): everyone else
//!   reads typed values (`Fit::reports`, `Fit::cv`, `Fit::runs`).
//!
//! `gp/` (the GP prior, its factors and the score model) is a model module
//! below the methods, not a method: EP's GP flavour (`ep/gp/`) and SMC's
//! score-space sampler both build on it. `pairs`, `select/`, `bounds/`,
//! `data/` and the output modules are neither core nor methods.
//!
//! Unit-test code may reach across, as layers.py allows: files named
//! `tests.rs` or `*_tests.rs`, files declared under `#[cfg(test)]`, and inline
//! `#[cfg(test)]` items are skipped (a test that compares two methods lives
//! there or in `tests/`). Comments and string literals are not code.
//!
//! A rule that cannot hold yet goes into `ALLOWED` with its reason; an entry
//! that no longer matches a violation fails the test, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// Layer → top-level modules of the crate it must never import.
const NEVER: [(&str, &[&str]); 5] = [
    ("engine", &["cli", "tui", "app", "worker", "spec"]),
    ("spec", &["cli", "tui", "app", "worker"]),
    ("worker", &["cli", "tui", "app"]),
    ("app", &["cli", "tui"]),
    ("tui", &["cli"]),
];

const METHODS: [&str; 5] = ["smc", "ep", "vb", "gcs", "baseline"];
const CORE: [&str; 6] = ["interface", "error", "problem", "fit", "event", "prior"];

/// Violations accepted for now: (file under `src/`, the module it imports,
/// why). Each names the work that removes it.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Files (prefixes under `src/`) that may index a fit's or record's `details`
/// JSON: the methods that write it, the core's writers of its notes (the
/// certificate's `is_check`/`uncertified`, the row space's note) and the record.
const DETAILS_OWNERS: &[&str] = &[
    "engine/ep/",
    "engine/smc/",
    "engine/vb/",
    "engine/gcs/",
    "engine/baseline/",
    "engine/certify.rs",
    "engine/reduction.rs",
    "engine/record.rs",
    "engine/record_details.rs",
];

/// Whether `code` indexes a value named `details` (`details[…]`,
/// `details.get(…)`, `details.pointer(…)`, `details.as_…`).
fn reads_details(code: &str) -> bool {
    code.match_indices("details").any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let rest = code[i + "details".len()..].trim_start();
        !before.is_some_and(is_ident)
            && ["[", ".get(", ".pointer(", ".as_"]
                .iter()
                .any(|p| rest.starts_with(p))
    })
}

/// A module path inside the crate (`["engine", "ep", "driver"]`; `[]` is the root).
type Module = Vec<String>;

/// One source file: its module, whether it is test code, and its code with
/// comments, strings and `#[cfg(test)]` items blanked.
struct Source {
    rel: String,
    module: Module,
    is_test: bool,
    code: String,
}

/// A use declaration: the absolute path it names and the name it binds.
#[derive(Debug, Clone)]
struct UseItem {
    path: Vec<String>,
    name: Option<String>,
}

struct Crate {
    files: Vec<Source>,
    by_module: BTreeMap<Module, usize>,
    uses: Vec<Vec<UseItem>>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    target: String,
    rule: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "src/{}: imports {}: {}",
            self.file, self.target, self.rule
        )
    }
}

// ---------------------------------------------------------------- lexing

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The text with comments blanked and, unless `keep_strings`, string and
/// character literals emptied (newlines kept, so lines still count).
fn strip(src: &str, keep_strings: bool) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or('\0');
        let prev = if i > 0 { b[i - 1] } else { ' ' };
        if c == '/' && next == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && (next == '"' || next == '#') && !is_ident(prev) {
            // A raw string r#"…"#: find its closing quote and hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let start = i;
            j += 1;
            while j < b.len()
                && !(b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')))
            {
                j += 1;
            }
            let end = (j + 1 + hashes).min(b.len());
            for &ch in &b[start..end] {
                if keep_strings {
                    out.push(ch);
                } else {
                    blank(&mut out, ch);
                }
            }
            i = end;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            let end = (i + 1).min(b.len());
            for (k, &ch) in b[start..end].iter().enumerate() {
                if keep_strings || k == 0 || k + 1 == end - start {
                    out.push(ch);
                } else {
                    blank(&mut out, ch);
                }
            }
            i = end;
        } else if c == '\'' {
            // A character literal ('x', '\n', '"'), not a lifetime ('a).
            let close = if next == '\\' {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(k) if keep_strings => {
                    out.extend(&b[i..=k]);
                    i = k + 1;
                }
                Some(k) => {
                    out.push_str("' '");
                    i = k + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index just past the item that starts at `i` (after its attributes):
/// past its `;`, or past its balanced `{…}` block.
fn item_end(b: &[char], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => return i + 1,
            '{' if depth == 0 => {
                let mut braces = 0usize;
                while i < b.len() {
                    match b[i] {
                        '{' => braces += 1,
                        '}' => {
                            braces -= 1;
                            if braces == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Skips whitespace and attributes `#[…]` from `i`; returns where the item
/// starts and the attributes' text.
fn skip_attributes(b: &[char], mut i: usize) -> (usize, String) {
    let mut attrs = String::new();
    loop {
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        if b.get(i) == Some(&'#') && b.get(i + 1) == Some(&'[') {
            let mut depth = 0;
            let start = i;
            while i < b.len() {
                match b[i] {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            attrs.extend(&b[start..i]);
        } else {
            return (i, attrs);
        }
    }
}

/// The `mod name;` declarations of a file (comments stripped, strings kept):
/// (name, `#[path]` value, under `#[cfg(test)]`).
fn mod_declarations(text: &str) -> Vec<(String, Option<String>, bool)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for i in 0..b.len().saturating_sub(4) {
        let word = (i == 0 || !is_ident(b[i - 1])) && b[i..i + 3] == ['m', 'o', 'd'];
        if !word || !b[i + 3].is_whitespace() {
            continue;
        }
        let mut j = i + 3;
        while j < b.len() && b[j].is_whitespace() {
            j += 1;
        }
        let s = j;
        while j < b.len() && is_ident(b[j]) {
            j += 1;
        }
        let name: String = b[s..j].iter().collect();
        while j < b.len() && b[j].is_whitespace() {
            j += 1;
        }
        if name.is_empty() || b.get(j) != Some(&';') {
            continue;
        }
        // Back over `pub(…)` or `pub`, then the attributes before it.
        let back_ws = |k: &mut usize| {
            while *k > 0 && b[*k - 1].is_whitespace() {
                *k -= 1;
            }
        };
        let mut k = i;
        back_ws(&mut k);
        if k > 0 && b[k - 1] == ')' {
            while k > 0 && b[k - 1] != '(' {
                k -= 1;
            }
            k = k.saturating_sub(1);
        }
        if k >= 3 && b[k - 3..k] == ['p', 'u', 'b'] {
            k -= 3;
        }
        let mut attrs = String::new();
        loop {
            back_ws(&mut k);
            if k == 0 || b[k - 1] != ']' {
                break;
            }
            let end = k;
            let mut depth = 0;
            while k > 0 {
                k -= 1;
                match b[k] {
                    ']' => depth += 1,
                    '[' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if k == 0 || b[k - 1] != '#' {
                break;
            }
            k -= 1;
            attrs.extend(&b[k..end]);
        }
        let compact: String = attrs.chars().filter(|c| !c.is_whitespace()).collect();
        let path = compact
            .split("#[path=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .map(str::to_string);
        out.push((name, path, compact.contains("#[cfg(test)]")));
    }
    out
}

/// The code without its `#[cfg(test)]` items (blanked, newlines kept).
fn without_test_items(code: &str) -> String {
    let b: Vec<char> = code.chars().collect();
    let mut keep = vec![true; b.len()];
    let pattern: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + pattern.len() <= b.len() {
        if b[i..i + pattern.len()] == pattern[..] {
            let (start, _) = skip_attributes(&b, i);
            let end = item_end(&b, start);
            keep[i..end].iter_mut().for_each(|k| *k = false);
            i = end;
        } else {
            i += 1;
        }
    }
    b.iter()
        .zip(keep)
        .map(|(&c, k)| if k || c == '\n' { c } else { ' ' })
        .collect()
}

// ---------------------------------------------------------------- paths

/// The paths of a use tree, each with the name it binds (None for `*`).
fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<UseItem>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = segments(tree[..open].trim().trim_end_matches("::"));
        let close = tree.rfind('}').unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let mut base = prefix.to_vec();
        base.extend(head);
        let (mut depth, mut start) = (0, 0);
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..k], &base, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut path_segs = prefix.to_vec();
    let segs = segments(path);
    let glob = segs.last().is_some_and(|s| s == "*");
    for s in segs {
        if s != "self" || path_segs.is_empty() {
            path_segs.push(s);
        }
    }
    if glob {
        path_segs.pop();
    }
    let name = if glob {
        None
    } else {
        alias.or_else(|| path_segs.last().cloned())
    };
    out.push(UseItem {
        path: path_segs,
        name,
    });
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The `use` declarations of `code` (their text is blanked in `code`).
fn take_uses(code: &mut String) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut keep = vec![true; b.len()];
    let mut trees = Vec::new();
    let mut i = 0;
    while i + 4 <= b.len() {
        let at_word = (i == 0 || !is_ident(b[i - 1])) && b[i..i + 3] == ['u', 's', 'e'];
        if at_word && b[i + 3].is_whitespace() {
            let end = (i..b.len()).find(|&k| b[k] == ';').unwrap_or(b.len());
            trees.push(b[i + 3..end].iter().collect());
            keep[i..end].iter_mut().for_each(|k| *k = false);
            i = end;
        } else {
            i += 1;
        }
    }
    *code = b
        .iter()
        .zip(keep)
        .map(|(&c, k)| if k || c == '\n' { c } else { ' ' })
        .collect();
    trees
}

/// Paths written inline in code: `a::b::c` runs of identifiers.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = is_ident(b[i])
            && !b[i].is_ascii_digit()
            && (i == 0 || (!is_ident(b[i - 1]) && b[i - 1] != ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        loop {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            segs.push(b[s..i].iter().collect::<String>());
            if b.get(i) == Some(&':')
                && b.get(i + 1) == Some(&':')
                && b.get(i + 2).is_some_and(|&c| is_ident(c))
            {
                i += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(segs);
        }
    }
    out
}

impl Crate {
    /// Reads `files` (path under `src/` → text).
    fn new(files: &BTreeMap<String, String>) -> Crate {
        // Modules from file paths, then `#[path]` and `#[cfg(test)]` declarations.
        let module_of = |rel: &str| -> Module {
            let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
            let last = parts.pop().unwrap_or_default();
            match last.as_str() {
                "lib.rs" => {}
                "main.rs" if parts.is_empty() => parts.push("<main>".into()),
                "mod.rs" => {}
                f => parts.push(f.trim_end_matches(".rs").to_string()),
            }
            parts
        };
        let mut modules: BTreeMap<String, Module> =
            files.keys().map(|r| (r.clone(), module_of(r))).collect();
        let mut test_files: HashSet<String> = files
            .keys()
            .filter(|r| {
                let name = r.rsplit('/').next().unwrap_or("");
                name == "tests.rs" || name.ends_with("_tests.rs")
            })
            .cloned()
            .collect();
        for (rel, text) in files {
            let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
            let owner = module_of(rel);
            let own_dir = if rel.ends_with("mod.rs") || rel.ends_with("lib.rs") {
                dir.to_string()
            } else {
                format!("{dir}/{}", owner.last().map_or("", String::as_str))
            };
            for (name, path, test) in mod_declarations(&strip(text, true)) {
                let file = match &path {
                    Some(p) => format!("{dir}/{p}").trim_start_matches('/').to_string(),
                    None => {
                        let a = format!("{own_dir}/{name}.rs");
                        let a = a.trim_start_matches('/').to_string();
                        if files.contains_key(&a) {
                            a
                        } else {
                            format!("{own_dir}/{name}/mod.rs")
                                .trim_start_matches('/')
                                .to_string()
                        }
                    }
                };
                if test {
                    test_files.insert(file.clone());
                }
                if path.is_some() {
                    let mut m = owner.clone();
                    m.push(name);
                    modules.insert(file, m);
                }
            }
        }
        let mut out = Crate {
            files: Vec::new(),
            by_module: BTreeMap::new(),
            uses: Vec::new(),
        };
        for (rel, text) in files {
            let module = modules[rel].clone();
            let code = without_test_items(&strip(text, false));
            out.by_module.insert(module.clone(), out.files.len());
            out.files.push(Source {
                rel: rel.clone(),
                module,
                is_test: test_files.contains(rel),
                code,
            });
        }
        for k in 0..out.files.len() {
            let mut code = out.files[k].code.clone();
            let mut items = Vec::new();
            for tree in take_uses(&mut code) {
                let mut raw = Vec::new();
                expand_use(&tree, &[], &mut raw);
                items.extend(raw.into_iter().filter_map(|u| {
                    Some(UseItem {
                        path: out.absolute(k, &u.path)?,
                        name: u.name,
                    })
                }));
            }
            for p in inline_paths(&code) {
                if let Some(path) = out.absolute(k, &p) {
                    items.push(UseItem { path, name: None });
                }
            }
            out.uses.push(items);
        }
        out
    }

    /// `path` written in file `k` as a path from the crate root; None for
    /// paths into other crates (std, nalgebra, …) or local names.
    fn absolute(&self, k: usize, path: &[String]) -> Option<Vec<String>> {
        let here = &self.files[k].module;
        let (mut base, mut rest) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here.clone(), &path[1..]),
            "super" => (here.clone(), path),
            child => {
                let mut m = here.clone();
                m.push(child.to_string());
                if !self.by_module.contains_key(&m) {
                    return None;
                }
                (here.clone(), path)
            }
        };
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module whose file defines what `path` names (re-exports followed).
    fn resolve(&self, path: &[String], depth: usize) -> Module {
        let mut cur: Module = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.by_module.contains_key(&next) {
                cur = next;
                continue;
            }
            if depth < 8
                && let Some(&k) = self.by_module.get(&cur)
                && let Some(u) = self.uses[k].iter().find(|u| u.name.as_ref() == Some(seg))
            {
                let mut target = u.path.clone();
                target.extend(path[i + 1..].iter().cloned());
                return self.resolve(&target, depth + 1);
            }
            break;
        }
        cur
    }

    /// The modules file `k` imports (resolved), outside test code.
    fn imports(&self, k: usize) -> BTreeSet<Module> {
        self.uses[k]
            .iter()
            .map(|u| self.resolve(&u.path, 0))
            .filter(|m| !m.is_empty() && *m != self.files[k].module)
            .collect()
    }

    fn check(&self) -> Vec<Violation> {
        let mut out = BTreeSet::new();
        let name = |m: &Module| m.join("::");
        let engine_unit = |m: &Module| {
            (m.first()? == "engine")
                .then(|| m.get(1).cloned())
                .flatten()
        };
        for (k, f) in self.files.iter().enumerate() {
            if f.is_test {
                continue;
            }
            if reads_details(&f.code) && !DETAILS_OWNERS.iter().any(|o| f.rel.starts_with(o)) {
                out.insert(Violation {
                    file: f.rel.clone(),
                    target: "details".into(),
                    rule:
                        "only the methods (which write it) and the record read a fit's `details` \
                           JSON: typed values cross seams (Fit::reports, Fit::cv, Fit::runs)"
                            .into(),
                });
            }
            let imports = self.imports(k);
            let top = f.module.first().map(String::as_str).unwrap_or("");
            if let Some((_, never)) = NEVER.iter().find(|(l, _)| *l == top) {
                for m in imports.iter().filter(|m| never.contains(&m[0].as_str())) {
                    out.insert(Violation {
                        file: f.rel.clone(),
                        target: name(m),
                        rule: format!("{top}/ never imports {}/", m[0]),
                    });
                }
            }
            let Some(unit) = engine_unit(&f.module) else {
                continue;
            };
            for m in &imports {
                let Some(to) = engine_unit(m) else { continue };
                if METHODS.contains(&unit.as_str()) && METHODS.contains(&to.as_str()) && to != unit
                {
                    out.insert(Violation {
                        file: f.rel.clone(),
                        target: name(m),
                        rule: format!("the methods never import each other ({unit} → {to})"),
                    });
                }
                // (The core's own rule below also covers what it reaches.)
                if !METHODS.contains(&unit.as_str())
                    && !CORE.contains(&unit.as_str())
                    && METHODS.contains(&to.as_str())
                {
                    out.insert(Violation {
                        file: f.rel.clone(),
                        target: name(m),
                        rule: format!("an engine module that is not a method imports no method ({unit} → {to})"),
                    });
                }
                if unit == "numerics" && to != "numerics" {
                    out.insert(Violation {
                        file: f.rel.clone(),
                        target: name(m),
                        rule: "numerics/ imports nothing of the engine above it".into(),
                    });
                }
            }
            if CORE.contains(&unit.as_str())
                && let Some(chain) = self.reaches_method(k)
            {
                out.insert(Violation {
                    file: f.rel.clone(),
                    target: name(chain.last().expect("a chain")),
                    rule: format!(
                        "the core reaches no method ({})",
                        chain.iter().map(name).collect::<Vec<_>>().join(" → ")
                    ),
                });
            }
        }
        out.into_iter().collect()
    }

    /// A chain of imports from file `k` to a method's module, if any.
    fn reaches_method(&self, k: usize) -> Option<Vec<Module>> {
        let is_method = |m: &Module| {
            m.first().is_some_and(|s| s == "engine")
                && m.get(1).is_some_and(|u| METHODS.contains(&u.as_str()))
        };
        let mut seen = HashSet::new();
        let mut stack = vec![vec![self.files[k].module.clone()]];
        while let Some(chain) = stack.pop() {
            let last = chain.last().expect("non-empty");
            if is_method(last) {
                return Some(chain);
            }
            if !seen.insert(last.clone()) {
                continue;
            }
            let Some(&j) = self.by_module.get(last) else {
                continue;
            };
            for m in self.imports(j) {
                if m.first().is_some_and(|s| s == "engine") && !seen.contains(&m) {
                    let mut next = chain.clone();
                    next.push(m);
                    stack.push(next);
                }
            }
        }
        None
    }
}

/// The violations of `files` not in `allowed`, and the allowed entries that
/// match none (stale).
fn judge(
    files: &BTreeMap<String, String>,
    allowed: &[(&str, &str, &str)],
) -> (Vec<Violation>, Vec<String>) {
    let found = Crate::new(files).check();
    let matches =
        |v: &Violation, a: &(&str, &str, &str)| v.file == a.0 && v.target.starts_with(a.1);
    let bad = found
        .iter()
        .filter(|v| !allowed.iter().any(|a| matches(v, a)))
        .cloned()
        .collect();
    let stale = allowed
        .iter()
        .filter(|a| !found.iter().any(|v| matches(v, a)))
        .map(|a| format!("{} → {} ({})", a.0, a.1, a.2))
        .collect();
    (bad, stale)
}

fn read_src(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let p = entry.expect("a directory entry").path();
        if p.is_dir() {
            read_src(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src/");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&p).expect("UTF-8 source"));
        }
    }
}

#[test]
fn the_crate_keeps_its_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_src(&root, &root, &mut files);
    assert!(files.len() > 100, "read {} files", files.len());
    let (bad, stale) = judge(&files, ALLOWED);
    let text: Vec<String> = bad.iter().map(|v| v.to_string()).collect();
    assert!(
        bad.is_empty(),
        "{} violation(s):\n{}",
        bad.len(),
        text.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allow-list entries that match nothing any more (delete them):\n{}",
        stale.join("\n")
    );
}

// ------------------------------------------------- the checker's own tests

fn crate_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> = [
        ("lib.rs", "pub mod engine;\npub mod cli;\npub mod spec;\n"),
        (
            "engine/mod.rs",
            "pub mod ep;\npub mod smc;\npub mod fit;\npub mod numerics;\npub mod bounds;\n\
             pub use fit::Fit;\n",
        ),
        ("engine/ep/mod.rs", "pub mod site;\n"),
        ("engine/ep/site.rs", "pub fn tilt() {}\n"),
        ("engine/smc/mod.rs", "pub struct Runs;\n"),
        ("engine/fit.rs", "pub struct Fit;\n"),
        ("engine/numerics/mod.rs", "pub mod normal;\n"),
        ("engine/numerics/normal.rs", "pub fn phi() {}\n"),
        (
            "engine/bounds/mod.rs",
            "pub mod leaf;\npub use leaf::Bound;\n",
        ),
        ("engine/bounds/leaf.rs", "pub struct Bound;\n"),
        ("cli/mod.rs", "pub fn main() {}\n"),
        ("spec/mod.rs", "pub struct RunSpec;\n"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    for (rel, text) in files {
        all.insert(rel.to_string(), text.to_string());
    }
    all
}

fn violations(files: &[(&str, &str)]) -> Vec<String> {
    Crate::new(&crate_of(files))
        .check()
        .iter()
        .map(|v| format!("{} {}", v.file, v.target))
        .collect()
}

#[test]
fn a_clean_crate_passes() {
    assert_eq!(violations(&[]), Vec::<String>::new());
    // Methods may use numerics and the core; the core may name a leaf.
    let ok = violations(&[
        (
            "engine/smc/mod.rs",
            "use crate::engine::numerics::normal::phi;\nuse super::fit::Fit;\n",
        ),
        (
            "engine/fit.rs",
            "pub struct Fit { b: crate::engine::bounds::Bound }\n",
        ),
    ]);
    assert_eq!(ok, Vec::<String>::new());
}

/// Reading `details` outside its writers and the record fails, however it
/// is indexed; the methods themselves, comments, strings and test code pass.
#[test]
fn details_are_read_only_by_their_writers() {
    for read in [
        "fn f(fit: &Fit) -> f64 { fit.details[\"tol\"].as_f64().unwrap() }",
        "fn f(details: &Value) -> bool { details [\"model\"] == \"gp\" }",
        "fn f(r: &Record) -> bool { r.details.get(\"cv\").is_some() }",
        "fn f(r: &Record) -> bool { r.details.pointer(\"/a/b\").is_some() }",
    ] {
        let v = violations(&[("cli/mod.rs", read)]);
        assert_eq!(v, ["cli/mod.rs details"], "{read}");
    }
    for fine in [
        "// fit.details[\"tol\"]\nfn f() {}",
        "fn f() -> &'static str { \"details.get(x)\" }",
        "fn f(gp_details: &[f64]) -> f64 { gp_details[0] }",
        "fn f(fit: &Fit) -> bool { fit.details.is_null() }",
        "#[cfg(test)]\nmod tests { fn f(fit: &Fit) -> f64 { fit.details[\"tol\"].as_f64().unwrap() } }",
    ] {
        assert_eq!(
            violations(&[("cli/mod.rs", fine)]),
            Vec::<String>::new(),
            "{fine}"
        );
    }
    let writer = "fn f(fit: &mut Fit) { fit.details[\"sweeps\"] = 3.into(); }";
    assert_eq!(
        violations(&[("engine/smc/mod.rs", writer)]),
        Vec::<String>::new()
    );
}

#[test]
fn a_method_importing_another_fails_however_it_is_written() {
    for smc in [
        "use crate::engine::ep::site::tilt;",
        "use super::ep::site;",
        "use crate::engine::{fit::Fit, ep::site};",
        "use crate::engine::{ep::{self}, fit};",
        "fn f() { crate::engine::ep::site::tilt() }",
        "fn f() { super::super::engine::ep::site::tilt() }",
    ] {
        let v = violations(&[("engine/smc/mod.rs", smc)]);
        assert!(
            v.len() == 1 && v[0].starts_with("engine/smc/mod.rs engine::ep"),
            "{smc}: {v:?}"
        );
    }
    // Nested deeper: `super::super` from a method's sub-module.
    let v = violations(&[
        ("engine/smc/mod.rs", "pub mod moves;"),
        ("engine/smc/moves.rs", "use super::super::ep::site::tilt;"),
    ]);
    assert_eq!(v, ["engine/smc/moves.rs engine::ep::site"]);
}

#[test]
fn comments_strings_and_test_code_do_not_count() {
    let v = violations(&[
        (
            "engine/smc/mod.rs",
            "// use crate::engine::ep::site;\n/* crate::engine::ep */\n\
             const S: &str = \"crate::engine::ep::site\";\nconst C: char = '\"';\n\
             #[cfg(test)]\nmod tests { use crate::engine::ep::site; }\n\
             #[cfg(test)]\n#[path = \"agree.rs\"]\nmod agree;\n",
        ),
        ("engine/smc/agree.rs", "use crate::engine::ep::site;"),
        ("engine/smc/tests.rs", "use crate::engine::ep::site;"),
        ("engine/smc/moves_tests.rs", "use crate::engine::ep::site;"),
    ]);
    assert_eq!(v, Vec::<String>::new());
}

#[test]
fn the_core_may_not_reach_a_method_even_through_a_leaf() {
    let direct = violations(&[("engine/fit.rs", "pub struct Fit(crate::engine::smc::Runs);")]);
    assert_eq!(direct, ["engine/fit.rs engine::smc"]);
    // fit → bounds (re-exported Bound) → leaf → smc: the leaf breaks its own
    // rule, and the core is told what it reaches.
    let v = violations(&[
        ("engine/fit.rs", "use crate::engine::bounds::Bound;"),
        (
            "engine/bounds/leaf.rs",
            "use crate::engine::smc::Runs;\npub struct Bound;",
        ),
    ]);
    assert_eq!(
        v,
        [
            "engine/bounds/leaf.rs engine::smc",
            "engine/fit.rs engine::smc"
        ]
    );
    // Through engine/mod.rs's re-export of the core: still resolved.
    let v = violations(&[
        (
            "engine/bounds/leaf.rs",
            "use crate::engine::Fit;\npub struct Bound;",
        ),
        (
            "engine/fit.rs",
            "pub struct Fit;\nuse crate::engine::ep::site;",
        ),
    ]);
    assert_eq!(v, ["engine/fit.rs engine::ep::site"]);
}

#[test]
fn modules_that_are_not_methods_import_no_method() {
    let v = violations(&[(
        "engine/bounds/leaf.rs",
        "use crate::engine::ep::site::tilt;\npub struct Bound;",
    )]);
    assert_eq!(v, ["engine/bounds/leaf.rs engine::ep::site"]);
    let v = violations(&[(
        "engine/bounds/mod.rs",
        "pub mod leaf;\nuse super::smc::Runs;",
    )]);
    assert_eq!(v, ["engine/bounds/mod.rs engine::smc"]);
}

#[test]
fn numerics_import_nothing_above_and_layers_hold() {
    let v = violations(&[("engine/numerics/normal.rs", "use crate::engine::fit::Fit;")]);
    assert_eq!(v, ["engine/numerics/normal.rs engine::fit"]);
    let v = violations(&[(
        "engine/fit.rs",
        "use crate::spec::RunSpec;\npub struct Fit;",
    )]);
    assert_eq!(v, ["engine/fit.rs spec"]);
    let v = violations(&[("spec/mod.rs", "use crate::cli;")]);
    assert_eq!(v, ["spec/mod.rs cli"]);
    // cli may use everything.
    assert!(
        violations(&[(
            "cli/mod.rs",
            "use crate::engine::ep::site;\nuse crate::spec;"
        )])
        .is_empty()
    );
}

#[test]
fn the_allow_list_is_used_and_cannot_go_stale() {
    let files = crate_of(&[("engine/smc/mod.rs", "use crate::engine::ep::site;")]);
    let why = "the agreement check moves to tests/";
    let (bad, stale) = judge(&files, &[("engine/smc/mod.rs", "engine::ep", why)]);
    assert!(bad.is_empty() && stale.is_empty());
    let (bad, stale) = judge(&crate_of(&[]), &[("engine/smc/mod.rs", "engine::ep", why)]);
    assert!(bad.is_empty());
    assert_eq!(stale.len(), 1);
}
