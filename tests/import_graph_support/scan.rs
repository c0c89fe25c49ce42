//! What one file names: its modules (the file itself and each inline
//! `mod x { … }` in it), each module's child modules, its `use` items
//! (grouped trees flattened) and every path written in its code.

use super::lex::{lex, Tok, Token};

/// What a `use` entry brings into scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// A name (the last segment, or the `as` name).
    Named(String),
    /// Everything public in the module (`::*`).
    Glob,
    /// Nothing nameable (`as _`).
    Anon,
}

/// One flattened `use` entry, as written.
#[derive(Debug, Clone)]
pub struct Use {
    /// Its path (for a glob, the module's; `a::{self}` is `a`).
    pub path: Vec<String>,
    /// What it binds.
    pub binding: Binding,
}

/// A path named somewhere in a module's code, as written.
#[derive(Debug, Clone)]
pub struct Ref {
    /// Its segments (`crate::a::B` is `["crate", "a", "B"]`).
    pub path: Vec<String>,
    /// Where it is named.
    pub line: usize,
}

/// One module of a file: the file itself, or an inline `mod` block in it.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// Names of the inline modules from the file's module down to this one.
    pub inline: Vec<String>,
    /// Its child modules, `mod x;` and `mod x { … }` alike.
    pub children: Vec<String>,
    /// The types and traits it defines, which shadow glob imports.
    pub types: Vec<String>,
    /// Its `use` entries, including those inside its functions.
    pub uses: Vec<Use>,
    /// Every path named in it (each `use` entry's path, too).
    pub refs: Vec<Ref>,
}

/// The keywords that define a type or trait by the name after them.
const TYPE_KEYWORDS: [&str; 5] = ["struct", "enum", "union", "trait", "type"];

/// The modules of one file; the first is the file's own.
pub fn scan(src: &str) -> Vec<Module> {
    let toks = lex(src);
    let mut modules = vec![Module::default()];
    // (module, brace depth outside its block)
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let cur = open.last().map_or(0, |o| o.0);
        match &toks[i].tok {
            Tok::Ident(kw) if kw == "mod" => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1).map(|t| &t.tok) {
                    let name = name.clone();
                    modules[cur].children.push(name.clone());
                    if toks.get(i + 2).map(|t| &t.tok) == Some(&Tok::Punct('{')) {
                        let mut inline = modules[cur].inline.clone();
                        inline.push(name);
                        modules.push(Module {
                            inline,
                            ..Module::default()
                        });
                        open.push((modules.len() - 1, depth));
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
                i += 1;
            }
            Tok::Ident(kw) if TYPE_KEYWORDS.contains(&kw.as_str()) => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1).map(|t| &t.tok) {
                    modules[cur].types.push(name.clone());
                }
                i += 1;
            }
            Tok::Ident(kw) if kw == "use" => {
                let line = toks[i].line;
                let mut uses = Vec::new();
                i = use_tree(&toks, i + 1, Vec::new(), &mut uses);
                while i < toks.len() && toks[i].tok != Tok::Punct(';') {
                    i += 1;
                }
                for u in uses {
                    modules[cur].refs.push(Ref {
                        path: u.path.clone(),
                        line,
                    });
                    modules[cur].uses.push(u);
                }
            }
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if open.last().is_some_and(|o| o.1 == depth) {
                    open.pop();
                }
                i += 1;
            }
            Tok::Ident(first) if starts_path(&toks, i) => {
                let line = toks[i].line;
                let mut path = vec![first.clone()];
                i += 1;
                while toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    match toks.get(i + 1).map(|t| &t.tok) {
                        Some(Tok::Ident(seg)) => {
                            path.push(seg.clone());
                            i += 2;
                        }
                        _ => break,
                    }
                }
                modules[cur].refs.push(Ref { path, line });
            }
            _ => i += 1,
        }
    }
    modules
}

/// An identifier followed by `::` and not itself after `::` or `.`.
fn starts_path(toks: &[Token], i: usize) -> bool {
    let after = toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::PathSep);
    let before = i.checked_sub(1).map(|k| &toks[k].tok);
    after && !matches!(before, Some(Tok::PathSep | Tok::Punct('.')))
}

/// Flattens the use tree at `i` under `prefix` into `out`; returns the
/// index after it.
fn use_tree(toks: &[Token], mut i: usize, prefix: Vec<String>, out: &mut Vec<Use>) -> usize {
    let mut path = prefix;
    if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
        // `::name`: an external crate, never this one.
        path.push("::".into());
        i += 1;
    }
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(seg)) => {
                path.push(seg.clone());
                i += 1;
                if toks.get(i).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                if path.last().is_some_and(|s| s == "self") {
                    path.pop();
                }
                let binding = match (toks.get(i).map(|t| &t.tok), toks.get(i + 1)) {
                    (
                        Some(Tok::Ident(kw)),
                        Some(Token {
                            tok: Tok::Ident(name),
                            ..
                        }),
                    ) if kw == "as" => {
                        i += 2;
                        if name == "_" {
                            Binding::Anon
                        } else {
                            Binding::Named(name.clone())
                        }
                    }
                    _ => match path.last() {
                        Some(last) => Binding::Named(last.clone()),
                        None => Binding::Anon,
                    },
                };
                out.push(Use { path, binding });
                return i;
            }
            Some(Tok::Punct('*')) => {
                out.push(Use {
                    path,
                    binding: Binding::Glob,
                });
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.tok) {
                        None => return i,
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        Some(_) => {
                            let next = use_tree(toks, i, path.clone(), out);
                            i = next.max(i + 1);
                        }
                    }
                }
            }
            _ => return i,
        }
    }
}
