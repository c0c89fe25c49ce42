//! A Rust tokenizer just good enough to find paths: it keeps identifiers,
//! `::` and single punctuation, and drops comments, string, byte and char
//! literals, lifetimes and numbers, so a path written in a comment or a
//! string never counts as an import.

/// One token the scanner cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword (`r#name` comes out as `name`).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other single punctuation character.
    Punct(char),
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its line in the file.
    pub line: usize,
}

fn ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer {
    s: Vec<char>,
    i: usize,
    line: usize,
    out: Vec<Token>,
}

impl Lexer {
    fn at(&self, k: usize) -> char {
        self.s.get(self.i + k).copied().unwrap_or('\0')
    }

    /// Steps over one character, counting lines.
    fn bump(&mut self) {
        if self.at(0) == '\n' {
            self.line += 1;
        }
        self.i += 1;
    }

    fn push(&mut self, tok: Tok, line: usize) {
        self.out.push(Token { tok, line });
    }

    fn ident(&mut self) -> String {
        let start = self.i;
        while self.i < self.s.len() && ident_char(self.at(0)) {
            self.i += 1;
        }
        self.s[start..self.i].iter().collect()
    }

    /// From just after an opening `"`, to just after its closing one.
    fn string(&mut self) {
        while self.i < self.s.len() {
            match self.at(0) {
                '\\' => {
                    self.bump();
                    self.bump();
                }
                '"' => {
                    self.bump();
                    return;
                }
                _ => self.bump(),
            }
        }
    }

    /// From the first `#` or `"` after `r`, to just after the closing
    /// quote and its hashes; false (nothing consumed) when no quote
    /// follows the hashes.
    fn raw_string(&mut self) -> bool {
        let mut hashes = 0;
        while self.at(hashes) == '#' {
            hashes += 1;
        }
        if self.at(hashes) != '"' {
            return false;
        }
        self.i += hashes + 1;
        while self.i < self.s.len() {
            if self.at(0) == '"' && (1..=hashes).all(|k| self.at(k) == '#') {
                self.i += hashes + 1;
                return true;
            }
            self.bump();
        }
        true
    }

    /// At a `'`: a char literal, or a lifetime or label.
    fn quote(&mut self) {
        if self.at(1) == '\\' {
            // The quote, the backslash and the escaped character, then on
            // to the closing quote (`'\u{..}'` has more before it).
            self.i += 3;
            while self.i < self.s.len() && self.at(0) != '\'' {
                self.bump();
            }
            self.i += 1;
        } else if self.at(2) == '\'' {
            self.i += 3;
        } else {
            self.i += 1;
            self.ident();
        }
    }

    /// At an identifier's first character: the identifier, or the string
    /// or char literal it prefixes (`b"…"`, `r#"…"#`, `b'x'`, `c"…"`).
    fn word(&mut self) {
        let line = self.line;
        let word = self.ident();
        match (word.as_str(), self.at(0)) {
            ("b" | "c", '"') => {
                self.i += 1;
                self.string();
            }
            ("b", '\'') => self.quote(),
            ("r" | "br" | "cr", '"' | '#') => {
                if !self.raw_string() {
                    // `r#name`: a raw identifier.
                    self.i += 1;
                    let name = self.ident();
                    self.push(Tok::Ident(name), line);
                }
            }
            _ => self.push(Tok::Ident(word), line),
        }
    }

    fn run(mut self) -> Vec<Token> {
        while self.i < self.s.len() {
            let (c, next) = (self.at(0), self.at(1));
            if c.is_whitespace() {
                self.bump();
            } else if c == '/' && next == '/' {
                while self.i < self.s.len() && self.at(0) != '\n' {
                    self.i += 1;
                }
            } else if c == '/' && next == '*' {
                self.i += 2;
                let mut depth = 1;
                while self.i < self.s.len() && depth > 0 {
                    if self.at(0) == '/' && self.at(1) == '*' {
                        depth += 1;
                        self.i += 2;
                    } else if self.at(0) == '*' && self.at(1) == '/' {
                        depth -= 1;
                        self.i += 2;
                    } else {
                        self.bump();
                    }
                }
            } else if c == '"' {
                self.i += 1;
                self.string();
            } else if c == '\'' {
                self.quote();
            } else if c.is_ascii_digit() {
                self.ident();
            } else if ident_start(c) {
                self.word();
            } else if c == ':' && next == ':' {
                self.push(Tok::PathSep, self.line);
                self.i += 2;
            } else {
                self.push(Tok::Punct(c), self.line);
                self.i += 1;
            }
        }
        self.out
    }
}

/// The tokens of a Rust source file.
pub fn lex(src: &str) -> Vec<Token> {
    Lexer {
        s: src.chars().collect(),
        i: 0,
        line: 1,
        out: Vec::new(),
    }
    .run()
}
