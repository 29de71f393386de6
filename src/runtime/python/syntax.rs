//! `runtime-syntax`: the earliest reason the script is not valid Python 3 on every image.
//!
//! tree-sitter-python reports ERROR and MISSING nodes, but its grammar also accepts Python 2
//! statements, ignores indentation mistakes and knows syntax newer than 3.9; the checks here
//! cover what it lets through. Each check offers a candidate; only the earliest is reported.

use std::cmp::Ordering;

use tree_sitter::{Node, Point};

use super::names::{child, kind};

use super::text::{short, string_prefix, string_quote, text};
use super::walk::{Ctx, Facts, Frame};
use super::{RULE_SYNTAX, ScriptFinding};

/// The oldest Python a credentials image may carry; newer syntax fails there.
const OLDEST: &str = "3.9";

/// Keeps whichever of `best` and `new` starts first.
fn offer(best: &mut Vec<ScriptFinding>, new: ScriptFinding) {
    let earlier = best.first().is_none_or(|old| {
        (new.start_line, new.start_byte_col) < (old.start_line, old.start_byte_col)
    });
    if earlier {
        best.clear();
        best.push(new);
    }
}

fn at(node: Node<'_>, message: String) -> ScriptFinding {
    super::finding_at(RULE_SYNTAX, message, node)
}

fn between(start: Point, end: Point, message: String) -> ScriptFinding {
    ScriptFinding {
        rule: RULE_SYNTAX,
        message,
        start_line: start.row,
        start_byte_col: start.column,
        end_line: end.row,
        end_byte_col: end.column,
    }
}

fn newer(what: &str, version: &str) -> String {
    format!("{what} needs Python {version}, and a credentials image may carry Python {OLDEST}")
}

/// The syntax finding for the whole script: at most one, the earliest.
pub(super) fn check(facts: &Facts<'_>, src: &str) -> Vec<ScriptFinding> {
    // On a tie the candidate offered first stays: the specific ones go before the parser's.
    let mut best = facts.syntax.certain.clone();
    // The tree is trustworthy up to the first place the parser had to recover.
    let recovered_at = [facts.first_error, facts.first_missing]
        .into_iter()
        .flatten()
        .map(|n| (n.start_position().row, n.start_position().column))
        .min();
    if let Some(shape) = facts.syntax.shape.first()
        && recovered_at.is_none_or(|at| (shape.start_line, shape.start_byte_col) < at)
    {
        offer(&mut best, shape.clone());
    }
    if let Some(nul) = src.find('\0') {
        let before = &src[..nul];
        let line = before.matches('\n').count();
        let col = nul - before.rfind('\n').map_or(0, |i| i + 1);
        offer(
            &mut best,
            between(
                Point::new(line, col),
                Point::new(line, col + 1),
                "the script contains a NUL byte, which Python source cannot contain".to_string(),
            ),
        );
    }
    let brackets = check_brackets(&facts.brackets, src);
    if let Some((bad, _)) = &brackets {
        offer(&mut best, bad.clone());
    }
    if let Some(error) = facts.first_error {
        // An unclosed bracket opened before the parser gave up is the cause, as CPython
        // reports it; the ERROR node is only where the damage showed.
        let caused_by_bracket = brackets.as_ref().is_some_and(|(finding, unclosed)| {
            *unclosed
                && (finding.start_line, finding.start_byte_col)
                    <= (error.end_position().row, error.end_position().column)
        });
        if !caused_by_bracket {
            offer(&mut best, describe_error(error, src));
        }
    }
    if let Some(missing) = facts.first_missing {
        offer(&mut best, describe_missing(missing));
    }
    best
}

/// How a token the parser wanted reads in a message.
fn expected_name(kind: &str) -> Option<String> {
    match kind {
        "identifier" => Some("a name".to_string()),
        "_newline" => Some("the end of the line".to_string()),
        "_indent" => Some("an indented block".to_string()),
        k if k.starts_with('_') || k.is_empty() => None,
        k => Some(format!("`{k}`")),
    }
}

/// The earliest problems the walk found, in two kinds.
#[derive(Default)]
pub(super) struct Candidates {
    /// Problems in the text itself (a Python 2 form, a prefix, syntax newer than 3.9).
    certain: Vec<ScriptFinding>,
    /// Problems read from the shape of the tree (indentation, a `break` outside a loop). Past
    /// the first place the parser had to recover from an error that shape is a guess, so these
    /// only count before it.
    shape: Vec<ScriptFinding>,
}

/// Per-node checks, called by the walk with the node's context and ancestors.
pub(super) fn visit(
    node: Node<'_>,
    ctx: Ctx,
    stack: &[Frame<'_>],
    src: &str,
    found: &mut Candidates,
) {
    let Candidates {
        certain: best,
        shape,
    } = found;
    match kind(node) {
        "print_statement" => offer(
            best,
            at(
                node,
                "`print` without parentheses is Python 2 syntax; Python 3 needs `print(...)`"
                    .to_string(),
            ),
        ),
        "exec_statement" => offer(
            best,
            at(
                node,
                "`exec` as a statement is Python 2 syntax; Python 3 needs `exec(...)`".to_string(),
            ),
        ),
        "except_clause" => check_except(node, src, best),
        "raise_statement" => {
            let mut cursor = node.walk();
            let listed = node
                .named_children(&mut cursor)
                .find(|c| kind(c) == "expression_list");
            if let Some(list) = listed {
                offer(
                    best,
                    at(
                        list,
                        "`raise E, message` is Python 2 syntax; Python 3 needs `raise E(message)`"
                            .to_string(),
                    ),
                );
            }
        }
        "parameters" | "lambda_parameters" => {
            let mut cursor = node.walk();
            let tuple = node
                .named_children(&mut cursor)
                .find(|c| kind(c) == "tuple_pattern");
            if let Some(tuple) = tuple {
                offer(
                    best,
                    at(
                        tuple,
                        "a tuple parameter is Python 2 syntax; Python 3 unpacks inside the body"
                            .to_string(),
                    ),
                );
            }
        }
        "<>" if node.child_count() == 0 => offer(
            best,
            at(
                node,
                "`<>` is Python 2 syntax; Python 3 needs `!=`".to_string(),
            ),
        ),
        "string" => check_string(node, src, best),
        "integer" => {
            if let Some(problem) = integer_problem(text(node, src)) {
                offer(best, at(node, problem));
            }
        }
        "match_statement" => {
            let keyword = node.child(0).unwrap_or(node);
            offer(best, at(keyword, newer("a `match` statement", "3.10")));
        }
        "type_alias_statement" if is_type_alias(node, src) => {
            let keyword = node.child(0).unwrap_or(node);
            offer(best, at(keyword, newer("a `type` alias", "3.12")));
        }
        // The grammar also calls the subscript of an annotation (`Dict[str, int]`) a
        // type_parameter; only the list after a def or class name is the 3.12 syntax.
        "type_parameter"
            if stack.last().is_some_and(|parent| {
                parent.via == Some("type_parameters")
                    && matches!(
                        kind(parent.node),
                        "function_definition" | "class_definition"
                    )
            }) =>
        {
            offer(best, at(node, newer("a type parameter list", "3.12")));
        }
        "return_statement" if !ctx.in_func => {
            let keyword = node.child(0).unwrap_or(node);
            offer(
                shape,
                at(keyword, "`return` outside a function".to_string()),
            );
        }
        "break_statement" | "continue_statement" if !ctx.in_loop => {
            let word = if kind(node) == "break_statement" {
                "break"
            } else {
                "continue"
            };
            offer(shape, at(node, format!("`{word}` outside a loop")));
        }
        "argument_list" => check_arguments(node, best),
        "try_statement" => {
            let mut cursor = node.walk();
            let handled = node
                .children(&mut cursor)
                .any(|c| matches!(kind(c), "except_clause" | "finally_clause"));
            if !handled {
                let keyword = node.child(0).unwrap_or(node);
                offer(
                    shape,
                    at(
                        keyword,
                        "`try` needs an `except` or `finally` block".to_string(),
                    ),
                );
            }
        }
        "assignment"
            if child(node, "type").is_some()
                && stack.last().is_some_and(|p| kind(p.node) == "assignment") =>
        {
            offer(
                best,
                at(
                    node,
                    "invalid syntax: an annotated assignment cannot follow `=`".to_string(),
                ),
            );
        }
        "module" => check_statements(node, None, src, shape),
        "block" => {
            if let Some(parent) = stack.last() {
                check_statements(node, Some(parent.node), src, shape);
                check_indent_depth(node, parent.node, stack, shape);
            }
        }
        "elif_clause" | "else_clause" | "finally_clause" => {
            if let Some(parent) = stack.last() {
                check_clause_alignment(node, parent.node, src, shape);
            }
        }
        _ => {}
    }
    if kind(node) == "except_clause"
        && let Some(parent) = stack.last()
    {
        check_clause_alignment(node, parent.node, src, shape);
    }
}

/// `type X = ...` or `type X[T] = ...`. The grammar also reads `type(obj).attr = value` (a
/// call of the builtin `type`) as an alias; that is not one.
fn is_type_alias(node: Node<'_>, src: &str) -> bool {
    let Some(keyword) = node.child(0) else {
        return false;
    };
    let spaced = src
        .get(keyword.end_byte()..)
        .is_some_and(|rest| rest.starts_with([' ', '\t', '\\']));
    let name = child(node, "left")
        .and_then(|left| left.named_child(0))
        .map(|inner| match kind(inner) {
            "generic_type" => inner.named_child(0),
            _ => Some(inner),
        });
    spaced && matches!(name, Some(Some(n)) if kind(n) == "identifier")
}

fn check_except(node: Node<'_>, src: &str, best: &mut Vec<ScriptFinding>) {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    if let Some(star) = children.iter().find(|c| kind(**c) == "*") {
        let start = node.start_position();
        offer(
            best,
            between(start, star.end_position(), newer("`except*`", "3.11")),
        );
    }
    let values: Vec<Node<'_>> = {
        let mut c = node.walk();
        node.children_by_field_name("value", &mut c).collect()
    };
    if let (Some(first), Some(last)) = (values.first(), values.last())
        && values.len() > 1
    {
        let listed = short(
            src.get(first.start_byte()..last.end_byte()).unwrap_or(""),
            40,
        );
        offer(
            best,
            between(
                first.start_position(),
                last.end_position(),
                format!(
                    "`except {listed}:` is Python 2 syntax, and Python 3.9-3.13 reject exceptions listed without parentheses: write `except X as e:` or `except (X, Y):`"
                ),
            ),
        );
    }
}

fn check_string(node: Node<'_>, src: &str, best: &mut Vec<ScriptFinding>) {
    let quote = string_quote(node, src);
    if quote.starts_with('`') {
        offer(
            best,
            at(
                node,
                "backquotes are Python 2 syntax; Python 3 needs `repr(...)`".to_string(),
            ),
        );
        return;
    }
    let prefix = string_prefix(node, src);
    let mut letters: Vec<char> = prefix.chars().map(|c| c.to_ascii_lowercase()).collect();
    letters.sort_unstable();
    let sorted: String = letters.into_iter().collect();
    match sorted.as_str() {
        "" | "r" | "u" | "b" | "br" | "f" | "fr" => {}
        "t" | "rt" => {
            offer(best, at(node, newer("a t-string", "3.14")));
            return;
        }
        _ => {
            offer(
                best,
                at(
                    node,
                    format!("`{prefix}` is not a valid string prefix in Python 3"),
                ),
            );
            return;
        }
    }
    if sorted.contains('f') {
        check_fstring(node, quote, src, best);
    }
    if quote.len() == 1 {
        check_single_line(node, src, best);
    }
}

/// A `'...'` or `"..."` string ends at its line; the grammar lets it run on.
fn check_single_line(node: Node<'_>, src: &str, best: &mut Vec<ScriptFinding>) {
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        if kind(part) != "string_content" {
            continue;
        }
        let content = text(part, src);
        let mut escaped = false;
        for c in content.chars() {
            if c == '\n' && !escaped {
                offer(best, at(node, "unterminated string literal".to_string()));
                return;
            }
            escaped = c == '\\' && !escaped;
        }
    }
}

/// Replacement fields that Python 3.12 made legal: reusing the enclosing quote, a backslash or
/// a comment inside the expression.
fn check_fstring(node: Node<'_>, outer_quote: &str, src: &str, best: &mut Vec<ScriptFinding>) {
    let Some(outer) = outer_quote.chars().next() else {
        return;
    };
    let outer_triple = outer_quote.len() >= 3;
    let mut cursor = node.walk();
    for field in node.named_children(&mut cursor) {
        if kind(field) != "interpolation" {
            continue;
        }
        let Some(expression) = child(field, "expression") else {
            continue;
        };
        if text(expression, src).contains('\\') {
            offer(
                best,
                at(
                    expression,
                    newer("a backslash inside an f-string replacement field", "3.12"),
                ),
            );
        }
        // A replacement field is small; the budget only bounds hostile input.
        let mut budget = 2_000u32;
        let mut pending = vec![expression];
        while let Some(inner) = pending.pop() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                break;
            }
            match kind(inner) {
                "comment" => offer(
                    best,
                    at(
                        inner,
                        newer("a comment inside an f-string replacement field", "3.12"),
                    ),
                ),
                "string" => {
                    let quote = string_quote(inner, src);
                    let closes = if outer_triple {
                        quote == outer_quote
                    } else {
                        quote.starts_with(outer)
                    };
                    if closes {
                        offer(
                            best,
                            at(
                                inner,
                                newer(
                                    &format!(
                                        "reusing the quote {outer_quote} inside an f-string replacement field"
                                    ),
                                    "3.12",
                                ),
                            ),
                        );
                    }
                }
                _ => {}
            }
            let mut c = inner.walk();
            pending.extend(inner.children(&mut c));
        }
    }
}

/// What is wrong with an integer literal that tree-sitter accepts but Python 3 does not.
fn integer_problem(literal: &str) -> Option<String> {
    let lower = literal.to_ascii_lowercase();
    if lower.ends_with('l') {
        return Some(format!(
            "`{literal}`: the `L` suffix of long integers is Python 2 syntax"
        ));
    }
    let (body, decimal) = match lower.get(..2) {
        Some("0x" | "0o" | "0b") => (&lower[2..], false),
        _ => (lower.trim_end_matches('j'), true),
    };
    if body.is_empty() || body.ends_with('_') || body.contains("__") {
        return Some(format!("`{literal}` is not a valid integer literal"));
    }
    if decimal && body.starts_with('0') && body.chars().any(|c| c.is_ascii_digit() && c != '0') {
        return Some(format!(
            "`{literal}`: leading zeros are Python 2 octal syntax; Python 3 needs `0o`"
        ));
    }
    None
}

fn check_arguments(list: Node<'_>, best: &mut Vec<ScriptFinding>) {
    let mut seen_keyword = false;
    let mut seen_mapping = false;
    let mut cursor = list.walk();
    for argument in list.named_children(&mut cursor) {
        match kind(argument) {
            "keyword_argument" => seen_keyword = true,
            "dictionary_splat" => {
                seen_keyword = true;
                seen_mapping = true;
            }
            "list_splat" if seen_mapping => {
                offer(
                    best,
                    at(
                        argument,
                        "iterable argument unpacking follows keyword argument unpacking"
                            .to_string(),
                    ),
                );
            }
            "list_splat" | "comment" => {}
            _ if seen_keyword => {
                offer(
                    best,
                    at(
                        argument,
                        "positional argument follows keyword argument".to_string(),
                    ),
                );
            }
            _ => {}
        }
    }
}

/// Indentation as Python compares it: columns with tabs to multiples of 8 and with tabs as one
/// column; two indentations are comparable only when both measures agree.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Indent {
    tab8: usize,
    tab1: usize,
}

impl Indent {
    fn of(whitespace: &str) -> Self {
        let mut indent = Indent { tab8: 0, tab1: 0 };
        for c in whitespace.chars() {
            match c {
                '\t' => {
                    indent.tab8 = (indent.tab8 / 8 + 1) * 8;
                    indent.tab1 += 1;
                }
                '\x0c' => indent = Indent { tab8: 0, tab1: 0 },
                _ => {
                    indent.tab8 += 1;
                    indent.tab1 += 1;
                }
            }
        }
        indent
    }

    /// `None` when the two measures disagree: tabs and spaces mixed inconsistently.
    fn compare(self, other: Self) -> Option<Ordering> {
        let a = self.tab8.cmp(&other.tab8);
        let b = self.tab1.cmp(&other.tab1);
        (a == b).then_some(a)
    }
}

/// The indentation of `node` when it is the first token on its line, else `None`.
fn leading_indent(node: Node<'_>, src: &str) -> Option<Indent> {
    let start = node.start_byte();
    let column = node.start_position().column;
    let before = src.get(start.checked_sub(column)?..start)?;
    let before = before.strip_prefix('\u{feff}').unwrap_or(before);
    before
        .chars()
        .all(|c| matches!(c, ' ' | '\t' | '\x0c'))
        .then(|| Indent::of(before))
}

/// The indentation of the line `node` starts on.
fn line_indent(node: Node<'_>, src: &str) -> Indent {
    let start = node.start_byte();
    let column = node.start_position().column;
    let line = src.get(start.saturating_sub(column)..start).unwrap_or("");
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    let end = line
        .find(|c: char| !matches!(c, ' ' | '\t' | '\x0c'))
        .unwrap_or(line.len());
    Indent::of(&line[..end])
}

fn is_statement(node: Node<'_>) -> bool {
    !matches!(kind(node), "comment" | "line_continuation") && !node.is_error()
}

/// The keyword a compound statement or clause starts with, for messages (`def`, `if`, ...).
fn header_word<'s>(header: Node<'_>, src: &'s str) -> &'s str {
    let first = header.child(0).map_or("", |c| text(c, src));
    if first == "async" {
        header.child(1).map_or(first, |c| text(c, src))
    } else {
        first
    }
}

/// Checks that the statements of a module or block line up, and that a block is indented
/// deeper than its header.
fn check_statements(
    body: Node<'_>,
    header: Option<Node<'_>>,
    src: &str,
    best: &mut Vec<ScriptFinding>,
) {
    let mut cursor = body.walk();
    let statements: Vec<Node<'_>> = body
        .named_children(&mut cursor)
        .filter(|n| is_statement(*n))
        .collect();
    let header_line = header.map(|h| h.start_position().row);
    let Some(first) = statements.first() else {
        if let Some(header) = header {
            offer(best, empty_block(body, header, src));
        }
        return;
    };
    let level = match header {
        None => Indent { tab8: 0, tab1: 0 },
        Some(header) => {
            // A body on the header's own line (`if x: y`) has no indentation to check.
            if Some(first.start_position().row) == header_line {
                return;
            }
            let Some(level) = leading_indent(*first, src) else {
                return;
            };
            match level.compare(line_indent(header, src)) {
                Some(Ordering::Greater) => level,
                Some(_) => {
                    let word = header_word(header, src);
                    let line = header.start_position().row + 1;
                    offer(
                        best,
                        at(
                            *first,
                            format!("expected an indented block after `{word}` on line {line}"),
                        ),
                    );
                    return;
                }
                None => {
                    offer(best, inconsistent(*first));
                    return;
                }
            }
        }
    };
    let mut previous: Option<Node<'_>> = None;
    for statement in &statements {
        if let Some(before) = previous
            && before.end_position().row == statement.start_position().row
            && !src
                .get(before.end_byte()..statement.start_byte())
                .unwrap_or(";")
                .contains(';')
        {
            offer(
                best,
                at(
                    *statement,
                    "invalid syntax: statements on one line need a `;` between them".to_string(),
                ),
            );
        }
        if let Some(indent) = leading_indent(*statement, src) {
            match indent.compare(level) {
                Some(Ordering::Equal) => {}
                Some(Ordering::Less) => offer(best, unindent(*statement)),
                Some(Ordering::Greater) => {
                    // Deeper than this block but shallower than the line before: a dedent to
                    // a level that never existed.
                    let dedent = previous
                        .map(|p| last_line_indent(p, src))
                        .and_then(|p| indent.compare(p))
                        == Some(Ordering::Less);
                    if dedent {
                        offer(best, unindent(*statement));
                    } else {
                        offer(best, at(*statement, "unexpected indent".to_string()));
                    }
                }
                None => offer(best, inconsistent(*statement)),
            }
        }
        previous = Some(*statement);
    }
}

/// The indentation of the line a statement ends on (its deepest body line, for a compound one).
fn last_line_indent(statement: Node<'_>, src: &str) -> Indent {
    let end = statement.end_byte();
    let line_start = src
        .get(..end)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line = src.get(line_start..end).unwrap_or("");
    let width = line
        .find(|c: char| !matches!(c, ' ' | '\t' | '\x0c'))
        .unwrap_or(line.len());
    Indent::of(&line[..width])
}

fn unindent(statement: Node<'_>) -> ScriptFinding {
    at(
        statement,
        "unindent does not match any outer indentation level".to_string(),
    )
}

fn inconsistent(statement: Node<'_>) -> ScriptFinding {
    at(
        statement,
        "inconsistent use of tabs and spaces in indentation".to_string(),
    )
}

/// A block tree-sitter left empty: Python wanted an indented statement. Points at the next
/// code after the header (or the end of the script), where Python reports it.
fn empty_block(block: Node<'_>, header: Node<'_>, src: &str) -> ScriptFinding {
    let word = header_word(header, src);
    let header_line = header.start_position().row + 1;
    let mut point = block.end_position();
    let mut in_comment = false;
    let mut found = false;
    for c in src.get(block.end_byte()..).unwrap_or("").chars() {
        match c {
            '\n' => {
                point = Point::new(point.row + 1, 0);
                in_comment = false;
                continue;
            }
            '#' => in_comment = true,
            c if in_comment || c.is_whitespace() => {}
            _ => {
                found = true;
                break;
            }
        }
        point.column += c.len_utf8();
    }
    let end = if found {
        Point::new(point.row, point.column + 1)
    } else {
        point
    };
    between(
        point,
        end,
        format!("expected an indented block after `{word}` on line {header_line}"),
    )
}

/// `else`, `elif`, `except` and `finally` must line up with the statement they belong to.
fn check_clause_alignment(
    clause: Node<'_>,
    statement: Node<'_>,
    src: &str,
    best: &mut Vec<ScriptFinding>,
) {
    if !matches!(
        kind(statement),
        "if_statement" | "for_statement" | "while_statement" | "try_statement"
    ) {
        return;
    }
    let Some(indent) = leading_indent(clause, src) else {
        return;
    };
    if indent.compare(line_indent(statement, src)) != Some(Ordering::Equal) {
        let word = clause.child(0).map_or("", |c| text(c, src));
        let owner = header_word(statement, src);
        let line = statement.start_position().row + 1;
        let keyword = clause.child(0).unwrap_or(clause);
        offer(
            best,
            at(
                keyword,
                format!("`{word}` does not line up with its `{owner}` on line {line}"),
            ),
        );
    }
}

/// Python's tokenizer matches brackets across the whole file; so does this. The flag is true
/// for a bracket never closed.
fn check_brackets(brackets: &[Node<'_>], src: &str) -> Option<(ScriptFinding, bool)> {
    let mut open: Vec<Node<'_>> = Vec::new();
    for bracket in brackets {
        let shut = kind(bracket);
        let closer_of = match shut {
            ")" => "(",
            "]" => "[",
            "}" => "{",
            _ if open.len() >= MAX_BRACKETS => {
                let message = format!(
                    "too many nested parentheses: Python allows {MAX_BRACKETS} brackets open at once"
                );
                // Like an unclosed bracket, the cause of an ERROR the parser shows later.
                return Some((at(*bracket, message), true));
            }
            _ => {
                open.push(*bracket);
                continue;
            }
        };
        match open.pop() {
            Some(opener) if kind(opener) == closer_of => {}
            Some(opener) => {
                let line = opener.start_position().row + 1;
                let opened = text(opener, src);
                let message = format!(
                    "closing `{shut}` does not match the opening `{opened}` on line {line}"
                );
                return Some((at(*bracket, message), false));
            }
            None => return Some((at(*bracket, format!("unmatched `{shut}`")), false)),
        }
    }
    open.first().map(|opener| {
        let message = format!("`{}` is never closed", kind(opener));
        (at(*opener, message), true)
    })
}

/// How many brackets CPython's tokenizer lets be open at once (`MAXLEVEL`): one more is "too
/// many nested parentheses", a SyntaxError, whatever the grammar accepts.
const MAX_BRACKETS: usize = 200;
/// How many indentation levels CPython's tokenizer holds (`MAXINDENT`, the first level
/// included): the block that would be the 100th indented one is "too many levels of
/// indentation".
const MAX_INDENTS: usize = 100;

/// Whether `block` is indented under `parent` (on a line of its own), not a one-line suite
/// (`if x: pass`).
fn indented(block: Node<'_>, parent: Node<'_>) -> bool {
    block.start_position().row > parent.start_position().row
}

/// An indented block nested [`MAX_INDENTS`] deep: refused as CPython refuses it.
fn check_indent_depth(
    node: Node<'_>,
    parent: Node<'_>,
    stack: &[Frame<'_>],
    shape: &mut Vec<ScriptFinding>,
) {
    if !indented(node, parent) {
        return;
    }
    let outer = stack
        .windows(2)
        .filter(|w| kind(w[1].node) == "block" && indented(w[1].node, w[0].node))
        .count();
    if outer + 1 == MAX_INDENTS {
        let first = node.named_child(0).unwrap_or(node);
        let line = first.start_position();
        let end = Point::new(line.row, line.column + 1);
        offer(
            shape,
            between(
                line,
                end,
                format!(
                    "too many levels of indentation: Python allows {} indented blocks inside \
                     each other",
                    MAX_INDENTS - 1
                ),
            ),
        );
    }
}

/// Describes an ERROR node: the first token the parser could not take, and what it wanted.
fn describe_error(error: Node<'_>, src: &str) -> ScriptFinding {
    let (error, from) = match narrow(error) {
        Narrowed::Missing(missing) => return describe_missing(missing),
        Narrowed::Tokens(error, from) => (error, from),
    };
    let leaves: Vec<Node<'_>> = leaves(error, 200_000)
        .into_iter()
        .filter(|leaf| leaf.start_byte() >= from)
        .collect();
    let Some(first) = leaves.first().copied() else {
        return at(error, "invalid syntax".to_string());
    };
    let first_text = text(first, src);
    let quote_like = kind(first) == "string_start"
        || first_text
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .starts_with(['"', '\'']);
    // A string_start inside a whole `string` node is a string that did end; one on its own is
    // an opening quote the scanner never closed.
    let closed = first.parent().is_some_and(|p| {
        let mut cursor = p.walk();
        kind(p) == "string"
            && p.children(&mut cursor)
                .any(|c| kind(c) == "string_end" && !c.is_missing())
    });
    if quote_like && !closed {
        return at(first, "unterminated string literal".to_string());
    }
    let language = error.language();
    for pair in leaves.windows(2) {
        let [previous, token] = pair else { continue };
        let state = previous.next_parse_state();
        if state == 0 {
            continue;
        }
        let Some(mut lookahead) = language.lookahead_iterator(state) else {
            continue;
        };
        let symbol = token.grammar_id();
        let next_line = token.start_position().row > previous.end_position().row;
        let mut valid = false;
        let mut wanted: Vec<String> = Vec::new();
        let mut wants_name = false;
        for candidate in lookahead.by_ref() {
            let name = language.node_kind_for_id(candidate).unwrap_or("");
            // Line ends and indentation are tokens the tree does not keep: across lines, the
            // question is whether the line could end there.
            let line_break = matches!(name, "_newline" | "_indent" | "_dedent");
            if candidate == symbol || candidate == token.kind_id() || (next_line && line_break) {
                valid = true;
                break;
            }
            if name == "identifier" {
                wants_name = true;
            } else if !language.node_kind_is_named(candidate)
                && language.node_kind_is_visible(candidate)
                && !name.is_empty()
                && wanted.len() < 5
            {
                wanted.push(format!("`{name}`"));
            }
        }
        if valid {
            continue;
        }
        if wants_name {
            wanted.push("a name".to_string());
        }
        let expected = match wanted.as_slice() {
            [] => String::new(),
            [one] => format!("; expected {one}"),
            [init @ .., last] => format!("; expected {} or {last}", init.join(", ")),
        };
        if next_line {
            let after = short(text(*previous, src), 30);
            let point = previous.end_position();
            return between(
                point,
                point,
                format!("invalid syntax: the line ends after `{after}`{expected}"),
            );
        }
        let unexpected = short(text(*token, src), 30);
        return at(
            *token,
            format!("invalid syntax: unexpected `{unexpected}`{expected}"),
        );
    }
    let near = short(first_text, 30);
    at(first, format!("invalid syntax at `{near}`"))
}

enum Narrowed<'t> {
    /// The problem is a token the parser inserted.
    Missing(Node<'t>),
    /// The problem is among the tokens of this ERROR node from this byte on.
    Tokens(Node<'t>, usize),
}

/// Error recovery can wrap whole statements that parsed fine in one ERROR node (a broken
/// function can swallow a module). Skips those and goes down to the part that did not parse.
fn narrow(mut error: Node<'_>) -> Narrowed<'_> {
    loop {
        let mut cursor = error.walk();
        let broken = error.children(&mut cursor).find(|child| {
            let complete = child.is_named()
                && !child.has_error()
                && (kind(child).ends_with("_statement")
                    || kind(child).ends_with("_definition")
                    || kind(child) == "decorated_definition");
            !complete && !child.is_extra()
        });
        let Some(broken) = broken else {
            return Narrowed::Tokens(error, error.start_byte());
        };
        if broken.is_missing() {
            return Narrowed::Missing(broken);
        }
        if broken.is_error() {
            error = broken;
            continue;
        }
        if !broken.has_error() {
            return Narrowed::Tokens(error, broken.start_byte());
        }
        match first_error_below(broken) {
            Some(inner) if inner.is_missing() => return Narrowed::Missing(inner),
            Some(inner) => error = inner,
            None => return Narrowed::Tokens(error, broken.start_byte()),
        }
    }
}

/// The first ERROR or MISSING node under `node`, in document order.
fn first_error_below(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let mut depth = 0usize;
    loop {
        let current = cursor.node();
        if depth > 0 && (current.is_error() || current.is_missing()) {
            return Some(current);
        }
        // Only subtrees that contain an error are worth entering.
        if current.has_error() && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return None;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}

fn describe_missing(missing: Node<'_>) -> ScriptFinding {
    let message = match expected_name(kind(missing)) {
        Some(name) => format!("invalid syntax: expected {name}"),
        None => "invalid syntax: the statement is incomplete".to_string(),
    };
    at(missing, message)
}

/// The first `limit` tokens under `node`, in order, without MISSING ones.
fn leaves<'t>(node: Node<'t>, limit: usize) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    let mut depth = 0usize;
    loop {
        let current = cursor.node();
        if current.child_count() == 0 {
            // Comments are extras: the parse states around them say nothing.
            if !current.is_missing()
                && !current.is_extra()
                && current.end_byte() > current.start_byte()
            {
                out.push(current);
                if out.len() >= limit {
                    return out;
                }
            }
        } else if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return out;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return out;
            }
            depth -= 1;
        }
    }
}
