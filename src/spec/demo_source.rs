//! The demo inside the binary: the data source `demo` (the sparse linear demo)
//! or `demo:NAME` (any table `pacauc gen-demo` writes) is generated in memory
//! from the crate's own generator with the committed seed, so `pacauc` opens
//! its demo from any folder. A file of that name on disk wins (a user's
//! `./demo` is their data).

use std::path::Path;

use crate::engine::data::demo;

/// What `pacauc` opens with no arguments.
pub const DEFAULT: &str = "demo";

/// The demo table a data path names, when it names one and no such file exists.
pub fn bundled_demo(path: &Path) -> Option<&'static str> {
    let text = path.to_str()?;
    let name = match text.strip_prefix("demo:") {
        Some(name) => name,
        None if text == DEFAULT => demo::NAMES[0],
        None => return None,
    };
    let name = demo::NAMES.iter().find(|n| **n == name)?;
    (!path.exists()).then_some(*name)
}

/// The CSV text of the bundled demo `name` (as `gen-demo` writes it).
pub fn csv(name: &str) -> Option<String> {
    demo::by_name(name, demo::SEED).map(|t| t.to_csv())
}

/// What a session on the bundled demo `name` says it opened.
pub fn announce(name: &str) -> String {
    format!(
        "data: the demo built into pacauc ({name}, generated with seed {}; `pacauc gen-demo` writes it out as CSV)",
        demo::SEED
    )
}

/// Names the bundled demo tables (for error messages).
pub fn names() -> String {
    demo::NAMES
        .iter()
        .map(|n| format!("demo:{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_only_without_a_file_of_that_name() {
        assert_eq!(bundled_demo(Path::new("demo")), Some("sparse_linear"));
        assert_eq!(
            bundled_demo(Path::new("demo:messy_clinic")),
            Some("messy_clinic")
        );
        assert_eq!(bundled_demo(Path::new("demo:nope")), None);
        assert_eq!(bundled_demo(Path::new("data.csv")), None);
        // The crate's own folder has `demo-data/`, not `demo`: resolves.
        assert!(csv("sparse_linear").unwrap().starts_with("x01,"));
    }

    /// The binary's demo is the committed file, byte for byte.
    #[test]
    fn the_bundled_demo_is_the_committed_file() {
        for name in demo::NAMES {
            let path = format!("{}/demo-data/{name}.csv", env!("CARGO_MANIFEST_DIR"));
            let committed = std::fs::read_to_string(&path).unwrap();
            assert_eq!(csv(name).unwrap(), committed, "{path}");
        }
    }
}
