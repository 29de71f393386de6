//! Object rules compiled together, so that each variable is evaluated once per object, as
//! Kubernetes and Kyverno evaluate variables, however many rules use it.
//!
//! Every variable of every rule is interned by its text (with the variables it uses written as
//! their identifiers), so `annotations` or `pod`, written the same way in several rules, is one
//! variable. `variables.x` in a validation becomes that identifier; an object binds the
//! variables its rules need, in order, in its own context. A variable that fails to evaluate is
//! left unbound, so what uses it fails, as a lazily evaluated variable would.

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

/// A rule's validations, and the variables they need.
pub struct CompiledRule {
    pub validations: Vec<Program>,
    /// Ids of the variables to bind first, ascending.
    pub needs: Vec<usize>,
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
        let mut needs = Vec::new();
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
            needs.push(id);
            local.push((name, self.vars[id].ident.clone()));
        }
        needs.sort_unstable();
        needs.dedup();
        let validations = validations
            .iter()
            .map(|text| {
                let mut program = cel.compile(&inline::variables(text, &local))?;
                program.text = text.to_string();
                Ok(program)
            })
            .collect::<Result<_, String>>()?;
        Ok(CompiledRule { validations, needs })
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
            if let Ok(value) = var.program.inner.execute(&bound.ctx) {
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
