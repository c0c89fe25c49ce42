//! The file-level import graph of a crate's source tree: a tokenizer that
//! drops comments and literals, a scanner of what each file names, and the
//! graph with its circles.

pub mod graph;
pub mod lex;
pub mod scan;

use std::fs;
use std::path::Path;

pub use graph::{build, circles, Source};

/// Every `.rs` file under `dir`, with its path below it, sorted.
pub fn sources(dir: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    collect(dir, dir, &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<Source>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).expect("below the root");
            let parts: Vec<_> = rel.iter().map(|p| p.to_string_lossy()).collect();
            out.push(Source {
                path: parts.join("/"),
                text: fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            });
        }
    }
}
