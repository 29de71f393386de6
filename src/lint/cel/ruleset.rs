//! Object rules compiled together, so that each variable is evaluated once per object, as
//! Kubernetes and Kyverno evaluate variables, however many rules use it.
//!
//! Every variable of every rule is interned by its text (with the variables it uses written as
//! their identifiers), so `annotations` or `pod`, written the same way in several rules, is one
//! variable. `variables.x` in a validation becomes that identifier; an object binds the
//! variables its rules need, in order, in its own context. A variable that fails to evaluate is
//! left unbound, so what uses it fails, as a lazily evaluated variable would.

use super::reads::{self, Pattern};
use super::{Bound, Cel, Program, inline};
use std::collections::HashMap;

struct Variable {
    ident: String,
    program: Program,
}

/// The variables of all rules, indexed by id; ids grow in dependency order.
#[derive(Default)]
pub struct RuleSet {
    vars: Vec<Variable>,
    by_text: HashMap<String, usize>,
}

/// A validation ready to run: its program, the variables it uses (ascending ids, dependencies
/// included) and the part of the object it can observe.
pub struct Compiled {
    pub program: Program,
    pub needs: Vec<usize>,
    pub pattern: Pattern,
}

/// A rule's validations.
pub struct CompiledRule {
    pub validations: Vec<Compiled>,
}

impl RuleSet {
    /// Adds a rule: `constants` are fixed values the rule reads as variables (the configured
    /// credentials image), `variables` its own, in order.
    pub fn add(
        &mut self,
        cel: &Cel,
        variables: &[(String, String)],
        constants: &[(&str, &str)],
        validations: &[&str],
    ) -> Result<CompiledRule, String> {
        let mut local: Vec<(String, String)> = Vec::new();
        let definitions = constants
            .iter()
            .map(|(n, v)| (n.to_string(), super::literal(v)))
            .chain(variables.iter().cloned());
        for (name, text) in definitions {
            let expanded = inline::variables(&text, &local);
            let id = match self.by_text.get(&expanded) {
                Some(&id) => id,
                None => {
                    let id = self.vars.len();
                    let program = cel
                        .compile(&expanded)
                        .map_err(|e| format!("variable {name}: {e}"))?;
                    self.vars.push(Variable {
                        ident: format!("__credlint_var_{id}"),
                        program,
                    });
                    self.by_text.insert(expanded, id);
                    id
                }
            };
            local.push((name, self.vars[id].ident.clone()));
        }
        let validations = validations
            .iter()
            .map(|text| {
                let inlined = inline::variables(text, &local);
                let mut program = cel.compile(&inlined)?;
                program.text = text.to_string();
                Ok(self.prepare(program, &inlined))
            })
            .collect::<Result<_, String>>()?;
        Ok(CompiledRule { validations })
    }

    /// A program with its variables (found in its text, with theirs) and its read pattern.
    pub fn prepare(&self, program: Program, text: &str) -> Compiled {
        let mut needs = Vec::new();
        let mut pending = self.idents_in(text);
        while let Some(id) = pending.pop() {
            if !needs.contains(&id) {
                needs.push(id);
                pending.extend(self.idents_in(self.vars[id].program.text()));
            }
        }
        needs.sort_unstable();
        let pattern = reads::pattern(program.inner.expression(), &self.expressions());
        Compiled {
            program,
            needs,
            pattern,
        }
    }

    /// The variables a text names by identifier.
    fn idents_in(&self, text: &str) -> Vec<usize> {
        const PREFIX: &str = "__credlint_var_";
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find(PREFIX) {
            rest = &rest[at + PREFIX.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(id) = digits.parse::<usize>()
                && id < self.vars.len()
            {
                out.push(id);
            }
        }
        out
    }

    /// Binds the variables `ids` not yet bound in `bound`, in order.
    pub fn bind(&self, bound: &mut Bound, ids: &[usize]) {
        for &id in ids {
            if bound.evaluated.len() <= id {
                bound.evaluated.resize(self.vars.len(), false);
            }
            if std::mem::replace(&mut bound.evaluated[id], true) {
                continue;
            }
            let var = &self.vars[id];
            if let Ok(value) = var.program.execute(&bound.ctx) {
                bound.ctx.add_variable_from_value(var.ident.clone(), value);
            }
        }
    }

    /// The expressions behind the identifiers, for blame.
    pub fn expressions(&self) -> HashMap<&str, &cel::IdedExpr> {
        self.vars
            .iter()
            .map(|v| (v.ident.as_str(), v.program.inner.expression()))
            .collect()
    }
}
