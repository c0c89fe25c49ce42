//! The file-level import graph of one crate's source tree, and its circles.
//!
//! A node is a `.rs` file. An edge A -> B means A's code names a path that
//! resolves into module file B: a path from `crate::`, `super::` or
//! `self::`, or from a name in scope that stands for something of this
//! crate (a child module, a `use`d name, a name a glob brings, a type the
//! module defines, which shadows a glob's). The path resolves to
//! the file of its longest prefix that is a module file (`x/y.rs` or
//! `x/y/mod.rs`), so `crate::x::Item` is an edge to `x.rs`. `use` and
//! `pub use` entries count, and so do paths written inline; `mod x;`
//! declarations do not. Each file under `bin/` belongs to its own binary
//! crate, where the library's paths (`room_core::…`) are external.

use std::collections::{BTreeMap, HashMap};

use super::scan::{scan, Binding, Module};

/// One source file of a crate.
pub struct Source {
    /// Its path below the crate's source folder, with `/` (`api/mod.rs`).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// The first place where one file names another.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The naming file's index.
    pub from: usize,
    /// The named file's index.
    pub to: usize,
    /// The line of `from` where it is first named.
    pub line: usize,
    /// The path written there.
    pub named: String,
}

/// A crate's files and the edges between them.
pub struct Graph {
    /// The files, as given.
    pub files: Vec<String>,
    /// One edge per pair of files, at its first naming.
    pub edges: Vec<Edge>,
}

/// A module's key: its crate target (`lib`, or a binary's name) and its
/// path from that target's root.
type Key = (String, Vec<String>);

/// Where a file sits: its target and module path.
fn place(path: &str) -> Key {
    let parts: Vec<&str> = path.split('/').collect();
    let (target, rest): (&str, &[&str]) = match parts.as_slice() {
        ["lib.rs"] => ("lib", &[]),
        ["main.rs"] => ("main", &[]),
        ["bin", file] => (file.trim_end_matches(".rs"), &[]),
        ["bin", name, "main.rs"] => (name, &[]),
        ["bin", name, rest @ ..] => (name, rest),
        _ => ("lib", &parts),
    };
    let mut module: Vec<String> = rest
        .iter()
        .map(|p| p.trim_end_matches(".rs").to_string())
        .collect();
    if module.last().is_some_and(|last| last == "mod") {
        module.pop();
    }
    (target.to_string(), module)
}

/// Recursion bound for names that lead through other names.
const MAX_DEPTH: usize = 8;

struct Resolver {
    places: Vec<Key>,
    scanned: Vec<Vec<Module>>,
    /// Every module, file-level and inline: (file, module index in it).
    modules: HashMap<Key, (usize, usize)>,
    /// Module files only.
    files: HashMap<Key, usize>,
}

impl Resolver {
    fn here(&self, file: usize, m: usize) -> Vec<String> {
        let mut here = self.places[file].1.clone();
        here.extend(self.scanned[file][m].inline.iter().cloned());
        here
    }

    /// The module path a path written in module `m` of `file` stands for,
    /// or None when it is not this crate's.
    fn resolve(&self, file: usize, m: usize, path: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > MAX_DEPTH || path.is_empty() {
            return None;
        }
        let here = self.here(file, m);
        let module = &self.scanned[file][m];
        let first = path[0].as_str();
        let (mut base, rest) = match first {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here, &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let keep = here.len().checked_sub(ups)?;
                (here[..keep].to_vec(), &path[ups..])
            }
            name if module.children.iter().any(|c| c == name) => {
                let mut base = here;
                base.push(name.to_string());
                (base, &path[1..])
            }
            name => {
                let named = module
                    .uses
                    .iter()
                    .find(|u| u.binding == Binding::Named(name.to_string()));
                let base = if let Some(u) = named {
                    self.resolve(file, m, &u.path, depth + 1)?
                } else if module.types.iter().any(|t| t == name) {
                    let mut base = here;
                    base.push(name.to_string());
                    base
                } else {
                    self.through_globs(file, m, name, depth)?
                };
                (base, &path[1..])
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// A name brought into module `m` by one of its glob imports.
    fn through_globs(
        &self,
        file: usize,
        m: usize,
        name: &str,
        depth: usize,
    ) -> Option<Vec<String>> {
        let target = &self.places[file].0;
        self.scanned[file][m]
            .uses
            .iter()
            .filter(|u| u.binding == Binding::Glob)
            .find_map(|u| {
                let from = self.resolve(file, m, &u.path, depth + 1)?;
                let &(f, fm) = self.modules.get(&(target.clone(), from))?;
                if (f, fm) == (file, m) {
                    return None;
                }
                self.resolve(f, fm, &[name.to_string()], depth + 1)
            })
    }

    /// The module file of a module path's longest prefix that has one.
    fn file_of(&self, target: &str, path: &[String]) -> Option<usize> {
        (0..=path.len())
            .rev()
            .find_map(|k| self.files.get(&(target.to_string(), path[..k].to_vec())))
            .copied()
    }
}

/// The graph of one crate's sources.
pub fn build(sources: &[Source]) -> Graph {
    let places: Vec<Key> = sources.iter().map(|s| place(&s.path)).collect();
    let scanned: Vec<Vec<Module>> = sources.iter().map(|s| scan(&s.text)).collect();
    let mut modules = HashMap::new();
    let mut files = HashMap::new();
    for (f, key) in places.iter().enumerate() {
        files.insert(key.clone(), f);
        for (m, module) in scanned[f].iter().enumerate() {
            let mut path = key.1.clone();
            path.extend(module.inline.iter().cloned());
            modules.insert((key.0.clone(), path), (f, m));
        }
    }
    let r = Resolver {
        places,
        scanned,
        modules,
        files,
    };
    let mut edges: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    for (from, file_modules) in r.scanned.iter().enumerate() {
        for (m, module) in file_modules.iter().enumerate() {
            for named in &module.refs {
                let Some(to) = r
                    .resolve(from, m, &named.path, 0)
                    .and_then(|path| r.file_of(&r.places[from].0, &path))
                else {
                    continue;
                };
                if to == from {
                    continue;
                }
                let edge = Edge {
                    from,
                    to,
                    line: named.line,
                    named: named.path.join("::"),
                };
                edges
                    .entry((from, to))
                    .and_modify(|e| {
                        if edge.line < e.line {
                            *e = edge.clone();
                        }
                    })
                    .or_insert(edge);
            }
        }
    }
    Graph {
        files: sources.iter().map(|s| s.path.clone()).collect(),
        edges: edges.into_values().collect(),
    }
}

/// The graph's circles: its strongly connected components of more than
/// one file, each as its sorted file indices, in order of their first file.
pub fn circles(graph: &Graph) -> Vec<Vec<usize>> {
    let n = graph.files.len();
    let mut out_edges = vec![Vec::new(); n];
    for e in &graph.edges {
        out_edges[e.from].push(e.to);
    }
    let mut t = Tarjan {
        out_edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut found: Vec<Vec<usize>> = t.found.into_iter().filter(|c| c.len() > 1).collect();
    for c in &mut found {
        c.sort_by(|a, b| graph.files[*a].cmp(&graph.files[*b]));
    }
    found.sort_by(|a, b| graph.files[a[0]].cmp(&graph.files[b[0]]));
    found
}

/// Tarjan's strongly connected components.
struct Tarjan {
    out_edges: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.out_edges[v].clone() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.found.push(component);
        }
    }
}
