//! No file imports, through any chain of files, a file that imports it, in
//! any of the workspace's crates, so each file can be read knowing only the
//! files below it.
//!
//! The graph (`import_graph_support::graph` says exactly what an edge is):
//! a node is a `.rs` file; an edge A -> B when A's code names a path of its
//! own crate that resolves into module file B, through `crate::`, `super::`,
//! `self::` or a name in scope that stands for one of those, in a `use`
//! (grouped trees included; `pub use` re-exports too) or inline. Comments,
//! string literals and `mod x;` declarations are not edges. A circle is
//! reported whole: every file of a strongly connected component, with the
//! edges between them and where each is named. A parent that only declares
//! `mod child;` is not named back by the child's `super::` paths; a parent
//! that re-exports the child's items (`pub use child::X`) names the child,
//! so its children must not name it: shared types go into a leaf file.
//!
//! Test modules in files of their own (`#[cfg(test)] mod tests;` in
//! `foo/tests.rs`) are ordinary nodes. They name the code they test, and
//! nothing names them (production code cannot), so they are in a circle
//! only with each other; an inline `#[cfg(test)] mod tests { … }` is part
//! of its file.

mod import_graph_support;

use std::collections::BTreeSet;
use std::path::Path;

use import_graph_support::{build, circles, sources};

/// Each crate's source folder, from the workspace root.
const CRATES: [&str; 4] = ["src", "machines/src", "reference/src", "tests/kit/src"];

/// One circle: its files (from the workspace root, sorted) and the edges
/// between them, one a line.
struct Circle {
    files: Vec<String>,
    because: Vec<String>,
}

/// Every circle of every crate.
fn find_circles() -> Vec<Circle> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in CRATES {
        let graph = build(&sources(&root.join(dir)));
        let name = |f: usize| format!("{dir}/{}", graph.files[f]);
        for circle in circles(&graph) {
            let mut edges: Vec<_> = graph
                .edges
                .iter()
                .filter(|e| circle.contains(&e.from) && circle.contains(&e.to))
                .collect();
            edges.sort_by_key(|e| (name(e.from), e.line));
            found.push(Circle {
                files: circle.iter().map(|&f| name(f)).collect(),
                because: edges
                    .iter()
                    .map(|e| {
                        format!(
                            "{}:{} names {} ({})",
                            name(e.from),
                            e.line,
                            name(e.to),
                            e.named
                        )
                    })
                    .collect(),
            });
        }
    }
    found
}

#[test]
fn no_file_is_in_an_import_circle() {
    let found = find_circles();
    let mut report = String::new();
    for c in &found {
        report.push_str(&format!(
            "circle of {} files (break it: shared items go into a leaf file):\n",
            c.files.len()
        ));
        for f in &c.files {
            report.push_str(&format!("    {f}\n"));
        }
        report.push_str("  because:\n");
        for b in &c.because {
            report.push_str(&format!("    {b}\n"));
        }
    }
    assert!(
        found.is_empty(),
        "{} import circles:\n{report}",
        found.len()
    );
}

/// The edges of a crate made of `files` (path, text), as (from, to).
fn edges(files: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    let graph = build(&sources_of(files));
    graph
        .edges
        .iter()
        .map(|e| (graph.files[e.from].clone(), graph.files[e.to].clone()))
        .collect()
}

fn sources_of(files: &[(&str, &str)]) -> Vec<import_graph_support::Source> {
    files
        .iter()
        .map(|(path, text)| import_graph_support::Source {
            path: path.to_string(),
            text: text.to_string(),
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn uses_inline_paths_and_re_exports_are_edges_and_comments_strings_and_mod_are_not() {
    let found = edges(&[
        ("lib.rs", "pub mod a; pub mod b; mod c; pub mod d;"),
        (
            "a/mod.rs",
            "mod inner; pub use inner::Thing; // crate::b::Y\n\
             /* crate::c::g /* nested */ crate::d */\n\
             const S: &str = \"crate::c::g\"; const R: &str = r#\"crate::c::\"g\"#;\n\
             fn f<'a>(x: &'a str) -> char { let _ = b'c'; '\\'' }",
        ),
        (
            "a/inner.rs",
            "use crate::{b::{self, Y}, d::*}; pub struct Thing;",
        ),
        (
            "b.rs",
            "pub struct Y;\n#[cfg(test)]\nmod tests { use super::*; use super::super::c; }",
        ),
        (
            "c.rs",
            "pub fn g() { crate::d::h(); let v = Vec::<u8>::new(); }",
        ),
        ("d.rs", "pub fn h() {}"),
        (
            "bin/tool.rs",
            "use room_core::a; fn main() { crate::helper(); } fn helper() {}",
        ),
    ]);
    let want = pairs(&[
        ("a/mod.rs", "a/inner.rs"),
        ("a/inner.rs", "b.rs"),
        ("a/inner.rs", "d.rs"),
        ("b.rs", "c.rs"),
        ("c.rs", "d.rs"),
    ]);
    assert_eq!(found, want);
}

#[test]
fn names_through_use_aliases_and_globs_resolve_to_the_deepest_module_file() {
    let found = edges(&[
        ("lib.rs", "pub mod m; pub mod p;"),
        ("m/mod.rs", "pub mod sub;"),
        ("m/sub.rs", "pub fn g() {}"),
        ("p/mod.rs", "mod child; mod sib; use crate::m;"),
        ("p/sib.rs", "pub fn f() {}"),
        (
            "p/child.rs",
            "use super::*; fn k() { sib::f(); m::sub::g(); }",
        ),
    ]);
    let want = pairs(&[
        ("p/mod.rs", "m/mod.rs"),
        ("p/child.rs", "p/mod.rs"),
        ("p/child.rs", "p/sib.rs"),
        ("p/child.rs", "m/sub.rs"),
    ]);
    assert_eq!(found, want);
}

#[test]
fn a_parent_that_names_its_childs_items_is_in_a_circle_with_a_child_that_names_its() {
    let child = ("p/child.rs", "use super::N; pub struct X;");
    let thin = [
        ("lib.rs", "mod p;"),
        ("p/mod.rs", "mod child; pub const N: u8 = 1;"),
        child,
    ];
    assert!(circles(&build(&sources_of(&thin))).is_empty());
    let thick = [
        ("lib.rs", "mod p;"),
        (
            "p/mod.rs",
            "mod child; pub use child::X; pub const N: u8 = 1;",
        ),
        child,
    ];
    let graph = build(&sources_of(&thick));
    let found: Vec<Vec<&str>> = circles(&graph)
        .iter()
        .map(|c| c.iter().map(|&f| graph.files[f].as_str()).collect())
        .collect();
    assert_eq!(found, vec![vec!["p/child.rs", "p/mod.rs"]]);
}

#[test]
fn the_lexer_keeps_paths_and_drops_literals_comments_and_lifetimes() {
    use import_graph_support::lex::{lex, Tok};
    let src = r##"let q = '\''; let u = '\u{7FFF}'; crate::a::b();
        let s = "crate::x \" crate::y"; let r = r#"crate::z"#; let b = b"crate::w";
        /* crate::v /* crate::t */ crate::s */ // crate::p
        'outer: loop { break 'outer; } fn f<'a>(x: &'a str) {} r#type::c"##;
    let idents: Vec<String> = lex(src)
        .into_iter()
        .filter_map(|t| match t.tok {
            Tok::Ident(i) => Some(i),
            _ => None,
        })
        .collect();
    let want = [
        "let", "q", "let", "u", "crate", "a", "b", "let", "s", "let", "r", "let", "b", "loop",
        "break", "fn", "f", "x", "str", "type", "c",
    ];
    assert_eq!(idents, want);
}
