//! HSDS's `query=` on compound datasets (what h5pyd's `Table.read_where`
//! sends): comparisons of fields with literals, combined with `&`, `|`, `~`
//! (or `AND`, `OR`, `NOT`) and parentheses, e.g.
//! `(temp > 32.5) & (station == b'KSEA')`.

use h5lake_types::{element_to_json, Datatype};
use serde_json::Value;

use crate::error::{Result, ServerError};

fn bad(msg: impl Into<String>) -> ServerError {
    ServerError::BadRequest(format!("invalid query: {}", msg.into()))
}

/// Deepest nesting accepted, so that a hostile query cannot exhaust the stack.
const MAX_DEPTH: usize = 64;
/// Most tokens in a query. A chain `a | b | c …` nests one level per
/// operator in the tree evaluation (and dropping) walks recursively, so
/// its length is bounded like explicit nesting is.
const MAX_TOKENS: usize = 1024;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(f64),
    Str(Vec<u8>),
    Bool(bool),
    Op(&'static str),
    LParen,
    RParen,
    And,
    Or,
    Not,
}

fn tokenize(q: &str) -> Result<Vec<Tok>> {
    let c: Vec<char> = q.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        let quoted = |start: usize| -> Result<(String, usize)> {
            let quote = c[start];
            let end = (start + 1..c.len())
                .find(|&j| c[j] == quote)
                .ok_or_else(|| bad("unterminated string"))?;
            Ok((c[start + 1..end].iter().collect(), end + 1))
        };
        if ch == 'b' && i + 1 < c.len() && (c[i + 1] == '\'' || c[i + 1] == '"') {
            let (s, next) = quoted(i + 1)?;
            out.push(Tok::Str(s.into_bytes()));
            i = next;
        } else if ch == '\'' || ch == '"' {
            let (s, next) = quoted(i)?;
            out.push(Tok::Str(s.into_bytes()));
            i = next;
        } else if ch.is_ascii_digit()
            || (ch == '.' && c.get(i + 1).is_some_and(char::is_ascii_digit))
            || ((ch == '-' || ch == '+')
                && c.get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.'))
        {
            let start = i;
            i += 1;
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '.'
                    || ((c[i] == '-' || c[i] == '+') && matches!(c[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let s: String = c[start..i].iter().collect();
            out.push(Tok::Num(
                s.parse().map_err(|_| bad(format!("bad number {s:?}")))?,
            ));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let w: String = c[start..i].iter().collect();
            out.push(match w.to_ascii_uppercase().as_str() {
                "AND" => Tok::And,
                "OR" => Tok::Or,
                "NOT" => Tok::Not,
                "TRUE" => Tok::Bool(true),
                "FALSE" => Tok::Bool(false),
                _ => Tok::Ident(w),
            });
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let (tok, n) = match two.as_str() {
                "==" => (Tok::Op("=="), 2),
                "!=" => (Tok::Op("!="), 2),
                "<=" => (Tok::Op("<="), 2),
                ">=" => (Tok::Op(">="), 2),
                _ => match ch {
                    '<' => (Tok::Op("<"), 1),
                    '>' => (Tok::Op(">"), 1),
                    '(' => (Tok::LParen, 1),
                    ')' => (Tok::RParen, 1),
                    '&' => (Tok::And, 1),
                    '|' => (Tok::Or, 1),
                    '~' => (Tok::Not, 1),
                    other => return Err(bad(format!("unexpected character {other:?}"))),
                },
            };
            out.push(tok);
            i += n;
        }
    }
    Ok(out)
}

/// A value in a comparison.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Num(f64),
    Str(Vec<u8>),
    Bool(bool),
}

#[derive(Clone, Debug)]
enum Operand {
    Field(usize),
    Lit(Val),
}

#[derive(Clone, Debug)]
enum Expr {
    Cmp(Operand, &'static str, Operand),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

/// A parsed query against one compound type.
#[derive(Debug)]
pub struct Query {
    expr: Expr,
    fields: Vec<h5lake_types::Field>,
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    fields: &'a [h5lake_types::Field],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn or(&mut self, depth: usize) -> Result<Expr> {
        let mut e = self.and(depth)?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and(depth)?));
        }
        Ok(e)
    }

    fn and(&mut self, depth: usize) -> Result<Expr> {
        let mut e = self.not(depth)?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            e = Expr::And(Box::new(e), Box::new(self.not(depth)?));
        }
        Ok(e)
    }

    fn not(&mut self, depth: usize) -> Result<Expr> {
        if depth > MAX_DEPTH {
            return Err(bad("nested too deeply"));
        }
        match self.peek() {
            Some(Tok::Not) => {
                self.pos += 1;
                Ok(Expr::Not(Box::new(self.not(depth + 1)?)))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let e = self.or(depth + 1)?;
                match self.next() {
                    Some(Tok::RParen) => Ok(e),
                    _ => Err(bad("missing ')'")),
                }
            }
            _ => {
                let a = self.operand()?;
                let op = match self.next() {
                    Some(Tok::Op(op)) => op,
                    _ => return Err(bad("expected a comparison (==, !=, <, <=, >, >=)")),
                };
                let b = self.operand()?;
                if matches!((&a, &b), (Operand::Lit(_), Operand::Lit(_))) {
                    return Err(bad("a comparison needs a field"));
                }
                Ok(Expr::Cmp(a, op, b))
            }
        }
    }

    fn operand(&mut self) -> Result<Operand> {
        match self.next() {
            Some(Tok::Ident(name)) => self
                .fields
                .iter()
                .position(|f| f.name == name)
                .map(Operand::Field)
                .ok_or_else(|| bad(format!("no field {name:?}"))),
            Some(Tok::Num(n)) => Ok(Operand::Lit(Val::Num(n))),
            Some(Tok::Str(s)) => Ok(Operand::Lit(Val::Str(s))),
            Some(Tok::Bool(b)) => Ok(Operand::Lit(Val::Bool(b))),
            _ => Err(bad("expected a field name or a value")),
        }
    }
}

impl Query {
    /// Parses `q` against the compound type `t`.
    ///
    /// # Errors
    /// Syntax errors, unknown fields, a type that is not compound.
    pub fn parse(q: &str, t: &Datatype) -> Result<Self> {
        let Datatype::Compound { fields, .. } = t else {
            return Err(bad("queries need a compound (table) dataset"));
        };
        let toks = tokenize(q)?;
        if toks.len() > MAX_TOKENS {
            return Err(bad(format!(
                "query too long: at most {MAX_TOKENS} names, values and operators"
            )));
        }
        let mut p = Parser {
            toks: &toks,
            pos: 0,
            fields,
        };
        let expr = p.or(0)?;
        if p.pos != toks.len() {
            return Err(bad("unexpected text after the expression"));
        }
        Ok(Query {
            expr,
            fields: fields.clone(),
        })
    }

    /// Whether the element `row` (its stored bytes) matches.
    ///
    /// # Errors
    /// Fields of types that cannot be compared.
    pub fn matches(&self, row: &[u8]) -> Result<bool> {
        self.eval(&self.expr, row)
    }

    fn field(&self, i: usize, row: &[u8]) -> Result<Val> {
        let f = &self.fields[i];
        let size = f
            .dtype
            .fixed_size()
            .ok_or_else(|| bad(format!("field {:?} is variable-length", f.name)))?;
        let bytes = row
            .get(f.offset..f.offset + size)
            .ok_or_else(|| ServerError::Internal("element shorter than its type".into()))?;
        if let Datatype::String { .. } | Datatype::Opaque { .. } = f.dtype {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            return Ok(Val::Str(bytes[..end].to_vec()));
        }
        match element_to_json(&f.dtype, bytes).map_err(|e| ServerError::Internal(e.to_string()))? {
            Value::Number(n) => Ok(Val::Num(n.as_f64().unwrap_or(f64::NAN))),
            Value::Bool(b) => Ok(Val::Bool(b)),
            Value::String(s) => Ok(match s.as_str() {
                "NaN" => Val::Num(f64::NAN),
                "Infinity" => Val::Num(f64::INFINITY),
                "-Infinity" => Val::Num(f64::NEG_INFINITY),
                _ => Val::Str(s.into_bytes()),
            }),
            _ => Err(bad(format!("field {:?} cannot be compared", f.name))),
        }
    }

    fn value(&self, o: &Operand, row: &[u8]) -> Result<Val> {
        match o {
            Operand::Field(i) => self.field(*i, row),
            Operand::Lit(v) => Ok(v.clone()),
        }
    }

    fn eval(&self, e: &Expr, row: &[u8]) -> Result<bool> {
        Ok(match e {
            Expr::And(a, b) => self.eval(a, row)? && self.eval(b, row)?,
            Expr::Or(a, b) => self.eval(a, row)? || self.eval(b, row)?,
            Expr::Not(a) => !self.eval(a, row)?,
            Expr::Cmp(a, op, b) => {
                let (a, b) = (self.value(a, row)?, self.value(b, row)?);
                let num = |v: &Val| match v {
                    Val::Num(x) => Some(*x),
                    Val::Bool(b) => Some(f64::from(u8::from(*b))),
                    Val::Str(_) => None,
                };
                let ord = match (&a, &b) {
                    (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
                    _ => match (num(&a), num(&b)) {
                        (Some(x), Some(y)) => x.partial_cmp(&y),
                        _ => return Err(bad("comparison of a number with a string")),
                    },
                };
                let Some(ord) = ord else {
                    return Ok(*op == "!=");
                };
                match *op {
                    "==" => ord.is_eq(),
                    "!=" => ord.is_ne(),
                    "<" => ord.is_lt(),
                    "<=" => ord.is_le(),
                    ">" => ord.is_gt(),
                    _ => ord.is_ge(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn table() -> Datatype {
        Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "temp", "type": "H5T_IEEE_F64LE"},
            {"name": "n", "type": "H5T_STD_I32LE"},
            {"name": "station", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                          "strPad": "H5T_STR_NULLPAD", "length": 4}}]}))
        .unwrap()
    }

    fn row(temp: f64, n: i32, station: &[u8]) -> Vec<u8> {
        let mut r = temp.to_le_bytes().to_vec();
        r.extend(n.to_le_bytes());
        let mut s = station.to_vec();
        s.resize(4, 0);
        r.extend(s);
        r
    }

    #[test]
    fn long_chains_are_refused_not_overflowing() {
        let t = table();
        let chain = vec!["n == 1"; 200_000].join(" | ");
        assert!(Query::parse(&chain, &t).is_err());
        let ok = vec!["n == 1"; 250].join(" | ");
        assert!(Query::parse(&ok, &t)
            .unwrap()
            .matches(&row(0.0, 1, b"ab"))
            .unwrap());
    }

    #[test]
    fn evaluates() {
        let t = table();
        let r = row(40.5, 3, b"KSEA");
        let yes = [
            "temp > 32",
            "(temp > 32) & (n == 3)",
            "station == b'KSEA'",
            "station == 'KSEA'",
            "n >= 3 AND NOT n > 3",
            "~(temp < 0) | n == 9",
            "3 == n",
            "temp != 1e9",
            "n > -1",
        ];
        for q in yes {
            assert!(Query::parse(q, &t).unwrap().matches(&r).unwrap(), "{q}");
        }
        let no = [
            "temp < 32",
            "(temp > 32) & (n != 3)",
            "station == b'KSE'",
            "NOT temp > 1",
        ];
        for q in no {
            assert!(!Query::parse(q, &t).unwrap().matches(&r).unwrap(), "{q}");
        }
        for q in [
            "",
            "temp >",
            "x > 1",
            "temp > 1 &",
            "(temp > 1",
            "1 < 2",
            "temp ? 1",
            "'abc",
            "temp > 1 )",
        ] {
            assert!(Query::parse(q, &t).is_err(), "{q}");
        }
        assert!(Query::parse(
            "temp > 1",
            &Datatype::from_json(&json!("H5T_STD_I8LE")).unwrap()
        )
        .is_err());
        assert!(Query::parse(&"(".repeat(1000), &t).is_err());
    }

    proptest! {
        #[test]
        fn parser_never_panics(q in ".{0,60}") {
            let t = table();
            if let Ok(query) = Query::parse(&q, &t) {
                let _ = query.matches(&row(1.0, 2, b"ab"));
            }
        }

        #[test]
        fn query_like_strings_never_panic(q in r"[a-z() &|~<>=!0-9.'b-]{0,40}") {
            let _ = Query::parse(&q, &table());
        }
    }
}
