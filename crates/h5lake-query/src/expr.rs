//! The expression language of queries and chunk functions: numbers,
//! field names (dotted for nested compounds), `+ - * / % **`, comparisons
//! (chained as in Python: `0 < x <= 5`), `& | ~` (also `and or not`),
//! `abs sqrt log exp`. Comparisons bind tighter than `&` and `|`, so
//! `x > 0 & y < 1` means what it reads as; the parenthesised form numexpr
//! and PyTables need means the same. HSDS's forms read as HSDS reads them:
//! `field('odd name')`, `x.isin(a, b)` and `x IN (a, b)`, `_` for the
//! element of a dataset that is not a table, and a bare word compared with
//! a text field (`symbol == AAPL`) as that text.

use crate::error::{QueryError, Result};
use crate::leaf::{Kind, Leaf};
use crate::stats::Num;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Int,
    Float,
    /// Fixed-length text or bytes: compared, never computed with.
    Text,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Sqrt,
    Log,
    Exp,
}

/// The reductions a chunk function ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    Min,
    Max,
    Sum,
    Mean,
    Count,
    Any,
    All,
}

/// A checked expression tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Lit(Num),
    BoolLit(bool),
    /// A text literal (`b'KSEA'`, `'KSEA'`), as bytes.
    Text(Vec<u8>),
    /// A leaf, by index into the dataset's leaves.
    Leaf(usize, Ty),
    Neg(Box<Node>),
    Not(Box<Node>),
    Arith(ArOp, Box<Node>, Box<Node>, Ty),
    Cmp(CmpOp, Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Func(Func, Box<Node>),
}

impl Node {
    pub fn ty(&self) -> Ty {
        match self {
            Node::Lit(Num::Int(_)) => Ty::Int,
            Node::Lit(Num::Float(_)) => Ty::Float,
            Node::Text(_) => Ty::Text,
            Node::BoolLit(_) | Node::Not(_) | Node::Cmp(..) | Node::And(..) | Node::Or(..) => {
                Ty::Bool
            }
            Node::Leaf(_, t) | Node::Arith(.., t) => *t,
            Node::Neg(a) => match a.ty() {
                Ty::Float => Ty::Float,
                _ => Ty::Int,
            },
            Node::Func(Func::Abs, a) => match a.ty() {
                Ty::Float => Ty::Float,
                _ => Ty::Int,
            },
            Node::Func(..) => Ty::Float,
        }
    }

    /// The leaves the expression reads, each once, in index order.
    pub fn leaves_used(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |n| {
            if let Node::Leaf(i, _) = n {
                out.push(*i);
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    fn visit(&self, f: &mut impl FnMut(&Node)) {
        f(self);
        match self {
            Node::Neg(a) | Node::Not(a) | Node::Func(_, a) => a.visit(f),
            Node::Arith(_, a, b, _) | Node::Cmp(_, a, b) | Node::And(a, b) | Node::Or(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            _ => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i128),
    Float(f64),
    Text(Vec<u8>),
    Name(String),
    Op(&'static str),
    End,
}

/// Most tokens in an expression, and deepest nesting (parentheses,
/// function calls, unary operators): parsing, evaluating and dropping a
/// tree recurse, so a hostile expression must not be able to exhaust the
/// stack.
pub const MAX_TOKENS: usize = 1024;
pub const MAX_DEPTH: usize = 64;

fn lex(text: &str) -> Result<Vec<(Tok, usize)>> {
    const OPS: [&str; 19] = [
        "**", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "&", "|", "~", "(", ")",
        ",", "!",
    ];
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let mut float = false;
            while i < chars.len()
                && (chars[i].is_ascii_digit() || chars[i] == '.' || chars[i] == '_')
            {
                float |= chars[i] == '.';
                i += 1;
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    float = true;
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s: String = chars[start..i].iter().filter(|&&c| c != '_').collect();
            let bad = || QueryError::Syntax {
                pos: start,
                msg: format!("{s:?} is not a number"),
            };
            out.push((
                if float {
                    Tok::Float(s.parse().map_err(|_| bad())?)
                } else {
                    Tok::Int(s.parse().map_err(|_| bad())?)
                },
                start,
            ));
            continue;
        }
        let quoted_at = match (c, chars.get(i + 1)) {
            ('b' | 'B', Some('\'' | '"')) => Some(i + 1),
            ('\'' | '"', _) => Some(i),
            _ => None,
        };
        if let Some(q) = quoted_at {
            // A text literal: b'…', '…' (or with double quotes), with
            // Python's escapes for quotes, backslashes, NUL, \n, \r, \t and
            // any byte (`\xNN`); text is stored as UTF-8.
            let quote = chars[q];
            // (In b'…' an escape is a byte; in '…' a character, stored as
            // its UTF-8, as Python reads '\xe9' as "é".)
            let bytes = q != i;
            let mut text = Vec::new();
            let mut j = q + 1;
            loop {
                let Some(&c) = chars.get(j) else {
                    return Err(QueryError::Syntax {
                        pos: start,
                        msg: "unclosed text literal".into(),
                    });
                };
                j += 1;
                if c == quote {
                    break;
                }
                if c != '\\' {
                    let mut utf8 = [0u8; 4];
                    text.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    continue;
                }
                let escaped = chars.get(j).copied();
                j += 1;
                match escaped {
                    Some(e @ ('\\' | '\'' | '"')) => text.push(e as u8),
                    Some('0') => text.push(0),
                    Some('n') => text.push(b'\n'),
                    Some('r') => text.push(b'\r'),
                    Some('t') => text.push(b'\t'),
                    Some('x') => {
                        let hex: String = chars.get(j..j + 2).unwrap_or_default().iter().collect();
                        let byte = u8::from_str_radix(&hex, 16).ok().filter(|_| hex.len() == 2);
                        let Some(byte) = byte else {
                            return Err(QueryError::Syntax {
                                pos: j - 2,
                                msg: "\\x must be followed by two hexadecimal digits".into(),
                            });
                        };
                        if bytes {
                            text.push(byte);
                        } else {
                            let mut utf8 = [0u8; 4];
                            text.extend_from_slice(
                                char::from(byte).encode_utf8(&mut utf8).as_bytes(),
                            );
                        }
                        j += 2;
                    }
                    // (Not an escape: the backslash stays, as in Python.)
                    Some(other) => {
                        text.push(b'\\');
                        let mut utf8 = [0u8; 4];
                        text.extend_from_slice(other.encode_utf8(&mut utf8).as_bytes());
                    }
                    None => text.push(b'\\'),
                }
            }
            out.push((Tok::Text(text), start));
            i = j;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            out.push((Tok::Name(chars[start..i].iter().collect()), start));
            continue;
        }
        if c == '`' {
            // `odd name` quotes a field whose name is not an identifier.
            let close =
                chars[i + 1..]
                    .iter()
                    .position(|&c| c == '`')
                    .ok_or(QueryError::Syntax {
                        pos: start,
                        msg: "unclosed ` quote".into(),
                    })?;
            out.push((
                Tok::Name(chars[i + 1..i + 1 + close].iter().collect()),
                start,
            ));
            i += close + 2;
            continue;
        }
        let rest: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) else {
            return Err(QueryError::Syntax {
                pos: start,
                msg: format!("unexpected character {c:?}"),
            });
        };
        i += op.chars().count();
        out.push((Tok::Op(op), start));
    }
    if out.len() > MAX_TOKENS {
        return Err(QueryError::Syntax {
            pos: out[MAX_TOKENS].1,
            msg: format!("expression too long: at most {MAX_TOKENS} names, numbers and operators"),
        });
    }
    out.push((Tok::End, chars.len()));
    Ok(out)
}

/// A parse in progress over a token list, resolving names against the
/// dataset's leaves.
struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    at: usize,
    leaves: &'a [Leaf],
    /// Whether a reduction may start here (the top of a chunk function).
    reduction: Option<(Reduction, usize)>,
    depth: usize,
    /// Whether a name that is no field stands for its own text (a value
    /// compared with a text field: HSDS's `symbol == AAPL`).
    bare_text: bool,
    /// Whether any name stands for a number (a check of the syntax alone).
    free_names: bool,
}

/// Parses a condition (a query): an expression that is true or false.
///
/// # Errors
/// [`QueryError::Syntax`] or [`QueryError::Invalid`], with the position.
pub fn parse_condition(text: &str, leaves: &[Leaf]) -> Result<Node> {
    let node = parse_expr(text, leaves)?;
    if node.ty() != Ty::Bool {
        return Err(QueryError::Invalid {
            pos: 0,
            msg: format!("{text:?} is a number, not a condition (write, say, `{text} > 0`)"),
        });
    }
    Ok(node)
}

/// Checks that `text` reads as an expression, whatever fields it names
/// (what a query over several tables, each with its own fields, can check
/// once).
///
/// # Errors
/// [`QueryError::Syntax`], with the position.
pub fn check_syntax(text: &str) -> Result<()> {
    let mut p = Parser::new(text, &[])?;
    // Every name reads as a number here: names and types are each table's
    // (so a type error may hide a later syntax error; each table's parse
    // finds that one).
    p.free_names = true;
    match p.or().and_then(|_| p.expect_end()) {
        Err(e @ QueryError::Syntax { .. }) => Err(e),
        _ => Ok(()),
    }
}

/// Parses an expression of any type.
///
/// # Errors
/// As [`parse_condition`].
pub fn parse_expr(text: &str, leaves: &[Leaf]) -> Result<Node> {
    let mut p = Parser::new(text, leaves)?;
    let node = p.or()?;
    p.expect_end()?;
    Ok(node)
}

/// Parses `reduction(expression)`, the form of a chunk function.
///
/// # Errors
/// As [`parse_condition`]; an expression that is not one reduction.
pub fn parse_reduction(text: &str, leaves: &[Leaf]) -> Result<(Reduction, Node)> {
    let mut p = Parser::new(text, leaves)?;
    let pos = p.pos();
    let red = match p.toks.first().map(|t| &t.0) {
        Some(Tok::Name(n)) => reduction_named(n),
        _ => None,
    };
    let (Some(red), Some(Tok::Op("("))) = (red, p.toks.get(1).map(|t| &t.0)) else {
        return Err(QueryError::Syntax {
            pos,
            msg: "a chunk function is one of min, max, sum, mean, count, any, all applied to an \
                  expression, e.g. max(abs(height))"
                .into(),
        });
    };
    p.reduction = Some((red, pos));
    p.at = 2;
    let inner = p.or()?;
    p.expect(")")?;
    p.expect_end()?;
    no_text(&inner, p.toks[2].1)?;
    let want_bool = matches!(red, Reduction::Any | Reduction::All);
    if want_bool && inner.ty() != Ty::Bool {
        return Err(QueryError::Invalid {
            pos: p.toks[2].1,
            msg: "any() and all() take a condition".into(),
        });
    }
    Ok((red, inner))
}

fn reduction_named(n: &str) -> Option<Reduction> {
    Some(match n {
        "min" => Reduction::Min,
        "max" => Reduction::Max,
        "sum" => Reduction::Sum,
        "mean" => Reduction::Mean,
        "count" => Reduction::Count,
        "any" => Reduction::Any,
        "all" => Reduction::All,
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    fn new(text: &str, leaves: &'a [Leaf]) -> Result<Self> {
        Ok(Self {
            toks: lex(text)?,
            at: 0,
            leaves,
            reduction: None,
            depth: 0,
            bare_text: false,
            free_names: false,
        })
    }

    /// Enters one more level of nesting.
    fn deeper(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(QueryError::Syntax {
                pos: self.pos(),
                msg: format!("expression nested too deeply (at most {MAX_DEPTH} levels)"),
            });
        }
        Ok(())
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }

    fn pos(&self) -> usize {
        self.toks[self.at].1
    }

    fn eat(&mut self, op: &str) -> bool {
        let hit = match self.peek() {
            Tok::Op(o) => *o == op,
            // (The word operators in any case: HSDS's queries write AND.)
            Tok::Name(n) => n.eq_ignore_ascii_case(op),
            _ => false,
        };
        if hit {
            self.at += 1;
        }
        hit
    }

    fn expect(&mut self, op: &str) -> Result<()> {
        if self.eat(op) {
            return Ok(());
        }
        Err(QueryError::Syntax {
            pos: self.pos(),
            msg: format!("expected {op:?}"),
        })
    }

    fn expect_end(&self) -> Result<()> {
        match self.peek() {
            Tok::End => Ok(()),
            _ => Err(QueryError::Syntax {
                pos: self.pos(),
                msg: "unexpected text after the end of the expression".into(),
            }),
        }
    }

    fn want_bool(&self, n: &Node, pos: usize, what: &str) -> Result<()> {
        if n.ty() == Ty::Bool || self.free_names {
            return Ok(());
        }
        Err(QueryError::Invalid {
            pos,
            msg: format!("{what} takes conditions (comparisons), not numbers"),
        })
    }

    fn or(&mut self) -> Result<Node> {
        self.chain(["|", "or"], Self::and, Node::Or)
    }

    fn and(&mut self) -> Result<Node> {
        self.chain(["&", "and"], Self::not, Node::And)
    }

    /// Operands of `next` joined by either spelling of a logical operator
    /// (left-associative); both sides must be conditions.
    fn chain(
        &mut self,
        ops: [&str; 2],
        next: fn(&mut Self) -> Result<Node>,
        join: fn(Box<Node>, Box<Node>) -> Node,
    ) -> Result<Node> {
        let pos = self.pos();
        let mut a = next(self)?;
        loop {
            if !(self.eat(ops[0]) || self.eat(ops[1])) {
                return Ok(a);
            }
            self.want_bool(&a, pos, ops[0])?;
            let p = self.pos();
            let b = next(self)?;
            self.want_bool(&b, p, ops[0])?;
            a = join(Box::new(a), Box::new(b));
        }
    }

    /// `not` (and `!`) binds as Python's `not`: looser than comparisons,
    /// `not x > 1` is `not (x > 1)`. (`~` binds tighter: see `unary`.)
    fn not(&mut self) -> Result<Node> {
        let pos = self.pos();
        if self.eat("not") || self.eat("!") {
            self.deeper()?;
            let a = self.not()?;
            self.depth -= 1;
            self.want_bool(&a, pos, "not")?;
            return Ok(Node::Not(Box::new(a)));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Node> {
        let mut left = self.sum()?;
        if self.eat("in") {
            // `x IN (a, b)`, as HSDS's queries write `x.isin(a, b)`.
            self.expect("(")?;
            return self.one_of(left);
        }
        let mut out: Option<Node> = None;
        loop {
            let op = match self.peek() {
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::Le,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::Ge,
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::Ne,
                _ => return Ok(out.unwrap_or(left)),
            };
            let pos = self.pos();
            self.at += 1;
            let right = self.operand_against(&left)?;
            if (left.ty() == Ty::Text) != (right.ty() == Ty::Text) && !self.free_names {
                return Err(QueryError::Invalid {
                    pos,
                    msg: "compares text with a number".into(),
                });
            }
            let c = Node::Cmp(op, Box::new(left), Box::new(right.clone()));
            out = Some(match out {
                None => c,
                Some(prev) => Node::And(Box::new(prev), Box::new(c)),
            });
            left = right;
        }
    }

    /// What `left` is compared with: a name that is no field is its own
    /// text when `left` is text.
    fn operand_against(&mut self, left: &Node) -> Result<Node> {
        let was = std::mem::replace(&mut self.bare_text, left.ty() == Ty::Text);
        let right = self.sum();
        self.bare_text = was;
        right
    }

    /// The rest of `x.isin(a, b, ...)` or `x IN (a, b, ...)` after its `(`:
    /// whether `x` equals any of the values.
    fn one_of(&mut self, x: Node) -> Result<Node> {
        let mut out: Option<Node> = None;
        if !self.eat(")") {
            loop {
                let pos = self.pos();
                let v = self.operand_against(&x)?;
                if (x.ty() == Ty::Text) != (v.ty() == Ty::Text) && !self.free_names {
                    return Err(QueryError::Invalid {
                        pos,
                        msg: "compares text with a number".into(),
                    });
                }
                let eq = Node::Cmp(CmpOp::Eq, Box::new(x.clone()), Box::new(v));
                out = Some(match out {
                    None => eq,
                    Some(o) => Node::Or(Box::new(o), Box::new(eq)),
                });
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(out.unwrap_or(Node::BoolLit(false)))
    }

    fn sum(&mut self) -> Result<Node> {
        self.arithmetic(&[("+", ArOp::Add), ("-", ArOp::Sub)], Self::prod)
    }

    fn prod(&mut self) -> Result<Node> {
        self.arithmetic(
            &[("*", ArOp::Mul), ("/", ArOp::Div), ("%", ArOp::Mod)],
            Self::unary,
        )
    }

    /// Operands of `next` joined by the operators `ops`, left-associative.
    fn arithmetic(
        &mut self,
        ops: &[(&str, ArOp)],
        next: fn(&mut Self) -> Result<Node>,
    ) -> Result<Node> {
        let mut a = next(self)?;
        loop {
            let op = match self.peek() {
                Tok::Op(o) => ops.iter().find(|(name, _)| name == o).map(|(_, op)| *op),
                _ => None,
            };
            let Some(op) = op else {
                return Ok(a);
            };
            let pos = self.pos();
            self.at += 1;
            let b = next(self)?;
            a = arith(op, a, b, pos, self.leaves)?;
        }
    }

    fn unary(&mut self) -> Result<Node> {
        let pos = self.pos();
        if self.eat("~") {
            // As numexpr and numpy: before any comparison (`~n > 0` is
            // `(~n) > 0`); a condition's negation, an integer's bitwise NOT.
            self.deeper()?;
            let a = self.unary()?;
            self.depth -= 1;
            return self.invert(a, pos);
        }
        if self.eat("-") {
            self.deeper()?;
            let a = self.unary()?;
            self.depth -= 1;
            self.no_text(&a, pos)?;
            return Ok(match a {
                Node::Lit(Num::Int(i)) => Node::Lit(Num::Int(
                    i.checked_neg().ok_or_else(|| too_big_literal(pos))?,
                )),
                Node::Lit(Num::Float(f)) => Node::Lit(Num::Float(-f)),
                a => Node::Neg(Box::new(a)),
            });
        }
        if self.eat("+") {
            self.deeper()?;
            let a = self.unary()?;
            self.depth -= 1;
            self.no_text(&a, pos)?;
            return Ok(a);
        }
        self.power()
    }

    /// `~a`: of a condition, its negation; of an integer, numpy's bitwise
    /// NOT in two's complement (`-a - 1`; of an unsigned member, its type's
    /// largest value less `a`, as numpy keeps the type).
    fn invert(&self, a: Node, pos: usize) -> Result<Node> {
        match a.ty() {
            Ty::Bool => Ok(Node::Not(Box::new(a))),
            Ty::Int => {
                let unsigned_top = match &a {
                    Node::Leaf(i, _) => match self.leaves[*i].kind {
                        Kind::Int {
                            size,
                            signed: false,
                            ..
                        } => Some((1i128 << (8 * size)) - 1),
                        _ => None,
                    },
                    _ => None,
                };
                match (unsigned_top, a) {
                    // (`-i - 1`, which never leaves i128.)
                    (_, Node::Lit(Num::Int(i))) => Ok(Node::Lit(Num::Int(!i))),
                    (Some(top), a) => {
                        arith(ArOp::Sub, Node::Lit(Num::Int(top)), a, pos, self.leaves)
                    }
                    (None, a) => arith(
                        ArOp::Sub,
                        Node::Neg(Box::new(a)),
                        Node::Lit(Num::Int(1)),
                        pos,
                        self.leaves,
                    ),
                }
            }
            _ => Err(QueryError::Invalid {
                pos,
                msg: "~ takes conditions or integers (a bitwise NOT), not floats or text".into(),
            }),
        }
    }

    fn power(&mut self) -> Result<Node> {
        let a = self.primary()?;
        let pos = self.pos();
        if self.eat("**") {
            // (Right-nested: `a ** a ** …` is as deep as its operators, and
            // each level holds a column while the next is evaluated.)
            self.deeper()?;
            let b = self.unary()?;
            self.depth -= 1;
            return arith(ArOp::Pow, a, b, pos, self.leaves);
        }
        Ok(a)
    }

    fn primary(&mut self) -> Result<Node> {
        let pos = self.pos();
        let tok = self.peek().clone();
        self.at += 1;
        match tok {
            Tok::Int(i) => Ok(Node::Lit(Num::Int(i))),
            // (Trailing NULs are padding, dropped as numpy drops them.)
            Tok::Text(mut t) => {
                while t.last() == Some(&0) {
                    t.pop();
                }
                Ok(Node::Text(t))
            }
            Tok::Float(f) => Ok(Node::Lit(Num::Float(f))),
            Tok::Op("(") => {
                self.deeper()?;
                let e = self.or()?;
                self.expect(")")?;
                self.depth -= 1;
                Ok(e)
            }
            // HSDS's forms: `field('odd name')`, `x.isin(a, b)`.
            Tok::Name(n) if n == "field" && self.eat("(") => {
                let Tok::Text(name) = self.peek().clone() else {
                    return Err(QueryError::Syntax {
                        pos: self.pos(),
                        msg: "field() takes a field's name in quotes".into(),
                    });
                };
                self.at += 1;
                self.expect(")")?;
                self.leaf_node(&String::from_utf8_lossy(&name), pos)
            }
            Tok::Name(n) if n.ends_with(".isin") && self.eat("(") => {
                let x = if self.free_names {
                    Node::Lit(Num::Int(0))
                } else {
                    self.leaf_node(&n[..n.len() - ".isin".len()], pos)?
                };
                self.deeper()?;
                let e = self.one_of(x);
                self.depth -= 1;
                e
            }
            Tok::Name(n) if self.eat("(") => {
                let f = match n.as_str() {
                    "abs" => Func::Abs,
                    "sqrt" => Func::Sqrt,
                    "log" => Func::Log,
                    "exp" => Func::Exp,
                    other if reduction_named(other).is_some() => {
                        return Err(QueryError::Invalid {
                            pos,
                            msg: match self.reduction {
                                Some(_) => format!("{other}() inside another reduction"),
                                None => format!(
                                    "{other}() reduces a chunk; conditions compare single \
                                     elements (reductions belong in chunk functions)"
                                ),
                            },
                        })
                    }
                    other => {
                        return Err(QueryError::Invalid {
                            pos,
                            msg: format!(
                                "unknown function {other:?} (there are abs, sqrt, log, exp)"
                            ),
                        })
                    }
                };
                self.deeper()?;
                let a = self.or()?;
                self.expect(")")?;
                self.depth -= 1;
                self.no_text(&a, pos)?;
                Ok(Node::Func(f, Box::new(a)))
            }
            Tok::Name(n) => match n.to_ascii_lowercase().as_str() {
                "true" => Ok(Node::BoolLit(true)),
                "false" => Ok(Node::BoolLit(false)),
                "inf" => Ok(Node::Lit(Num::Float(f64::INFINITY))),
                "nan" => Ok(Node::Lit(Num::Float(f64::NAN))),
                _ if self.bare_text && !self.is_leaf(&n) => Ok(Node::Text(n.into_bytes())),
                // (An integer: `~`, `&` and comparisons all take one here.)
                _ if self.free_names => Ok(Node::Lit(Num::Int(0))),
                _ => self.leaf_node(&n, pos),
            },
            Tok::End => Err(QueryError::Syntax {
                pos,
                msg: "the expression ends too soon".into(),
            }),
            Tok::Op(o) => Err(QueryError::Syntax {
                pos,
                msg: format!("unexpected {o:?}"),
            }),
        }
    }

    /// [`no_text`], but for a check of the syntax alone.
    fn no_text(&self, n: &Node, pos: usize) -> Result<()> {
        if self.free_names {
            return Ok(());
        }
        no_text(n, pos)
    }

    fn is_leaf(&self, n: &str) -> bool {
        self.leaf_index(n).is_some()
    }

    /// The leaf named `n`; `_` is the element of a dataset that is not a
    /// table (as HSDS names it; h5lake's name for it is `value`).
    fn leaf_index(&self, n: &str) -> Option<usize> {
        self.leaves.iter().position(|l| l.name == n).or_else(|| {
            let element = matches!(self.leaves, [l] if l.name == crate::leaf::VALUE_NAME);
            (n == "_" && element).then_some(0)
        })
    }

    /// The leaf named `n` (see [`Parser::leaf_index`]) as a node.
    fn leaf_node(&self, n: &str, pos: usize) -> Result<Node> {
        let i = self.leaf_index(n).ok_or_else(|| {
            let names: Vec<&str> = self.leaves.iter().map(|l| l.name.as_str()).collect();
            QueryError::Invalid {
                pos,
                msg: if names.is_empty() {
                    format!("no field {n:?}: this dataset has no numeric fields")
                } else if n.contains('.') {
                    format!(
                        "no field {n:?} (or more than one: a member whose name \
                                         holds a dot and a nested member of that path); the \
                                         fields are {}",
                        names.join(", ")
                    )
                } else {
                    // (A variable-length or array member is a field of the
                    // table, but no value a condition can compare.)
                    format!(
                        "no field {n:?} a condition can use (numbers, booleans, enums and \
                         fixed-length text: not variable-length strings, sequences or arrays); \
                         the fields are {}",
                        names.join(", ")
                    )
                },
            }
        })?;
        let ty = match self.leaves[i].kind {
            Kind::Bool => Ty::Bool,
            Kind::Int { .. } => Ty::Int,
            Kind::Float { .. } => Ty::Float,
            Kind::Text { .. } => Ty::Text,
        };
        Ok(Node::Leaf(i, ty))
    }
}

/// An integer literal's negation past what the engine computes in.
fn too_big_literal(pos: usize) -> QueryError {
    QueryError::Invalid {
        pos,
        msg: "integer literal out of range (at most 128-bit signed integers)".into(),
    }
}

fn no_text(n: &Node, pos: usize) -> Result<()> {
    if n.ty() == Ty::Text {
        return Err(QueryError::Invalid {
            pos,
            msg: "text cannot be computed with, only compared".into(),
        });
    }
    Ok(())
}

/// Booleans (numpy bool fields, comparisons) count as 0 and 1 in
/// arithmetic and comparisons, as in numpy.
fn arith(op: ArOp, a: Node, b: Node, pos: usize, leaves: &[Leaf]) -> Result<Node> {
    if a.ty() == Ty::Text || b.ty() == Ty::Text {
        return Err(QueryError::Invalid {
            pos,
            msg: "text cannot be computed with, only compared".into(),
        });
    }
    // Booleans with booleans as numpy and numexpr take them: + is or,
    // * is and, - is refused.
    if a.ty() == Ty::Bool && b.ty() == Ty::Bool {
        match op {
            ArOp::Add => return Ok(Node::Or(Box::new(a), Box::new(b))),
            ArOp::Mul => return Ok(Node::And(Box::new(a), Box::new(b))),
            ArOp::Sub => {
                return Err(QueryError::Invalid {
                    pos,
                    msg: "- of two booleans is refused, as numpy refuses it".into(),
                })
            }
            _ => {}
        }
    }
    // An integer to an integer power is exact only when the power cannot
    // be negative (a literal of 0 or more); else it is computed as Python
    // computes `2 ** -1`, as a float, never as a silent 0.
    let exact_power = matches!(b, Node::Lit(Num::Int(p)) if p >= 0);
    let float = a.ty() == Ty::Float
        || b.ty() == Ty::Float
        || op == ArOp::Div
        || (op == ArOp::Pow && !exact_power);
    let exact = Node::Arith(op, Box::new(a), Box::new(b), Ty::Int);
    // Integers are computed exactly in i128 where the members' types and
    // the literals keep every value inside it; an expression that could
    // leave it for some values is computed in floats for every value, so
    // that an element's answer never depends on the others beside it.
    let fits = !float && magnitude(&exact, leaves).is_some_and(|m| m <= i128::MAX as u128);
    let Node::Arith(op, a, b, _) = exact else {
        unreachable!("made just above")
    };
    Ok(Node::Arith(
        op,
        a,
        b,
        if fits { Ty::Int } else { Ty::Float },
    ))
}

/// The largest magnitude an integer expression can take given its
/// members' types and literals; `None` if unbounded past u128 (or not an
/// integer expression).
fn magnitude(n: &Node, leaves: &[Leaf]) -> Option<u128> {
    match n {
        Node::Lit(Num::Int(v)) => Some(v.unsigned_abs()),
        Node::Lit(Num::Float(_)) | Node::Text(_) => None,
        Node::BoolLit(_) | Node::Not(_) | Node::Cmp(..) | Node::And(..) | Node::Or(..) => Some(1),
        Node::Leaf(i, _) => match leaves.get(*i)?.kind {
            Kind::Int { size, signed, .. } => {
                let bits = u32::try_from(size * 8).ok()?;
                1u128
                    .checked_shl(bits - u32::from(signed))
                    .or(Some(u128::MAX))
            }
            Kind::Bool => Some(1),
            _ => None,
        },
        Node::Neg(a) | Node::Func(Func::Abs, a) => magnitude(a, leaves),
        Node::Func(..) => None,
        Node::Arith(op, a, b, Ty::Int) => {
            let (ma, mb) = (magnitude(a, leaves)?, magnitude(b, leaves)?);
            match op {
                ArOp::Add | ArOp::Sub => ma.checked_add(mb),
                ArOp::Mul => ma.checked_mul(mb),
                // (A remainder is smaller than its divisor.)
                ArOp::Mod => Some(mb),
                ArOp::Pow => match b.as_ref() {
                    Node::Lit(Num::Int(p)) => ma.checked_pow(u32::try_from(*p).ok()?),
                    _ => None,
                },
                ArOp::Div => None,
            }
        }
        Node::Arith(..) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaf::leaves;
    use h5lake_types::Datatype;
    use serde_json::json;

    pub(crate) fn table() -> Vec<Leaf> {
        let t = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "t", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
            {"name": "x", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}},
        ]});
        leaves(&Datatype::from_json(&t).unwrap())
    }

    #[test]
    fn errors_say_where() {
        let l = table();
        let e = parse_condition("(x > 1) & (y < 2)", &l).unwrap_err();
        assert!(matches!(e, QueryError::Invalid { pos: 11, .. }), "{e}");
        assert!(e.to_string().contains("t, x"), "{e}");
        let e = parse_condition("x > ", &l).unwrap_err();
        assert!(matches!(e, QueryError::Syntax { pos: 4, .. }), "{e}");
        let e = parse_condition("x + 1", &l).unwrap_err();
        assert!(matches!(e, QueryError::Invalid { .. }), "{e}");
        let e = parse_condition("x > 1 & t", &l).unwrap_err();
        assert!(matches!(e, QueryError::Invalid { pos: 8, .. }), "{e}");
        let e = parse_condition("x $ 1", &l).unwrap_err();
        assert!(matches!(e, QueryError::Syntax { pos: 2, .. }), "{e}");
    }

    #[test]
    fn power_chains_count_as_nesting_and_literals_never_wrap() {
        let l = table();
        // `t ** t ** …` nests to the right: each level holds a column while
        // the next is evaluated (500 levels held a server past its budget).
        let chain = |n: usize| format!("t < {}", vec!["t"; n].join(" ** "));
        assert!(parse_condition(&chain(MAX_DEPTH + 1), &l).is_ok());
        let e = parse_condition(&chain(MAX_DEPTH + 2), &l).unwrap_err();
        assert!(e.to_string().contains("nested too deeply"), "{e}");
        // `-~MAX` is 2**127: past i128, refused (it wrapped to -2**127, and
        // `t < -~MAX` matched nothing).
        let max = i128::MAX;
        for text in [format!("t < - ~{max}"), format!("t < -(-~{max})")] {
            let e = parse_condition(&text, &l).unwrap_err();
            assert!(e.to_string().contains("out of range"), "{text}: {e}");
        }
        assert_eq!(
            parse_condition(&format!("t < ~~{max}"), &l).unwrap(),
            parse_condition(&format!("t < {max}"), &l).unwrap()
        );
    }

    #[test]
    fn hsds_query_forms_mean_what_hsds_reads_them_as() {
        let t = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "symbol", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                         "strPad": "H5T_STR_NULLPAD", "length": 4}},
            {"name": "open price", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}},
            {"name": "date", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}},
        ]});
        let l = leaves(&Datatype::from_json(&t).unwrap());
        let same = |hsds: &str, ours: &str| {
            assert_eq!(
                parse_condition(hsds, &l).unwrap(),
                parse_condition(ours, &l).unwrap(),
                "{hsds}"
            );
        };
        same("field('open price') > 1", "`open price` > 1");
        same("symbol == AAPL", "symbol == 'AAPL'");
        same(
            "symbol.isin('AAPL', b'EBAY')",
            "(symbol == 'AAPL') | (symbol == 'EBAY')",
        );
        same(
            "symbol IN (AAPL, EBAY)",
            "(symbol == 'AAPL') | (symbol == 'EBAY')",
        );
        same(
            "date in (1, 2) & (field('date') > 0)",
            "((date == 1) | (date == 2)) & (date > 0)",
        );
        same(
            "~(symbol.isin('AAPL')) & (date > 20170102)",
            "~(symbol == 'AAPL') & (date > 20170102)",
        );
        assert_eq!(
            parse_condition("date in ()", &l).unwrap(),
            Node::BoolLit(false)
        );
        // A bare word is text only against text; elsewhere a missing field.
        let e = parse_condition("date == AAPL", &l).unwrap_err();
        assert!(e.to_string().contains("no field \"AAPL\""), "{e}");
        let e = parse_condition("date.isin('x')", &l).unwrap_err();
        assert!(e.to_string().contains("text with a number"), "{e}");
        assert!(parse_condition("field(date) > 1", &l).is_err());
        assert!(parse_condition("symbol in (AAPL", &l).is_err());
        // `_` is the element of a dataset that is not a table.
        let one = leaves(&Datatype::from_json(&json!("H5T_IEEE_F64LE")).unwrap());
        assert_eq!(
            parse_condition("_ > 1.0", &one).unwrap(),
            parse_condition("value > 1.0", &one).unwrap()
        );
        assert!(parse_condition("_ > 1.0", &l).is_err());
        // `_` is the element wherever it stands, also against text; a table
        // of one field is a table.
        let text = leaves(
            &Datatype::from_json(&json!({"class": "H5T_STRING",
            "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 4}))
            .unwrap(),
        );
        assert_eq!(
            parse_condition("value == _", &text).unwrap(),
            parse_condition("value == value", &text).unwrap()
        );
        let one = json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "x", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}}]});
        assert!(parse_condition("_ > 1", &leaves(&Datatype::from_json(&one).unwrap())).is_err());
        // What reads as an expression whatever its fields are.
        assert!(check_syntax("attr1 > 2 AND attr2 != 'A0000004'").is_ok());
        assert!(check_syntax("nosuch.isin(1, 2) | (x > 2)").is_ok());
        assert!(matches!(
            check_syntax("attr1 >"),
            Err(QueryError::Syntax { pos: 7, .. })
        ));
        assert!(matches!(
            check_syntax("(a > 1"),
            Err(QueryError::Syntax { .. })
        ));
        // A type error does not hide a syntax error after it.
        for bad in ["pin == 'x' & ) (", "~a & -'x' | b.isin('y', 2) ("] {
            assert!(
                matches!(check_syntax(bad), Err(QueryError::Syntax { .. })),
                "{bad}"
            );
        }
        assert!(check_syntax("~a & (b == 'x') | c.isin('y', 2)").is_ok());
    }

    #[test]
    fn comparisons_chain_and_bind_tighter_than_and() {
        let l = table();
        let a = parse_condition("0 < x <= 5 & t == 3", &l).unwrap();
        let b = parse_condition("((0 < x) & (x <= 5)) & (t == 3)", &l).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            parse_condition("(x > 1) and not (t < 0)", &l)
                .unwrap()
                .leaves_used(),
            vec![0, 1]
        );
    }

    #[test]
    fn hostile_expressions_are_refused_not_recursed_into() {
        let l = table();
        let deep = format!("{}x > 1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse_condition(&deep, &l).is_err());
        let nots = format!("{}(x > 1)", "~".repeat(100_000));
        assert!(parse_condition(&nots, &l).is_err());
        let long = vec!["x > 1"; 2000].join(" | ");
        assert!(parse_condition(&long, &l).is_err());
        let ok = vec!["x > 1"; 200].join(" | ");
        assert!(parse_condition(&ok, &l).is_ok());
    }

    #[test]
    fn reductions_only_at_the_top_of_a_function() {
        let l = table();
        let (r, n) = parse_reduction("max(abs(x))", &l).unwrap();
        assert_eq!(r, Reduction::Max);
        assert_eq!(n.ty(), Ty::Float);
        assert!(parse_reduction("max(x) + 1", &l).is_err());
        assert!(parse_reduction("max(min(x))", &l).is_err());
        assert!(parse_condition("max(x) > 1", &l).is_err());
        assert!(parse_reduction("any(x)", &l).is_err());
    }
}
