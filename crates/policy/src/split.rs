//! Split decisions: when some fields of a change set wait for a person (`revert`, `escalate`),
//! which of the others depend on them and wait too, and which are independent and are written.
//! The definition of "dependent" is in docs/policy.md ("Split decisions"); it uses facts only:
//! the path, the kind of change and the rules that decided.

use driftback_terraform::Address;

use crate::change::{ChangeKind, ignore_changes_attr};
use crate::decision::{DecisionKind, FieldDecision, Split, SplitField};
use crate::rule::Rule;

/// One field (or whole-resource change) of the change set, as the split sees it.
pub(crate) struct Unit<'a> {
    pub address: &'a Address,
    /// `None` for a resource created or deleted as a whole.
    pub path: Option<&'a str>,
    pub change: ChangeKind,
    /// An argument the calls unset (`Op::Remove`): how a recipe drops an argument that conflicts
    /// with one the call sets, so it stays with whatever is held on its resource.
    pub removal: bool,
    pub decision: &'a FieldDecision,
}

/// Which units are held (`true`) and the split, or `None` when the change set stays together:
/// nothing is held, everything is, the calls themselves are held (`calls_held`: a check on the
/// calls, such as a security weakening, is about all of them), or a resource is created or
/// deleted (adoption and deletion go with every field of the change set).
///
/// `covers(rule, i)`: whether `rule`'s matchers hold for unit `i`, whatever its value.
pub(crate) fn split(
    units: &[Unit<'_>],
    rules: &[Rule],
    calls_held: bool,
    covers: impl Fn(&Rule, usize) -> bool,
) -> Option<(Vec<bool>, Split)> {
    if calls_held {
        return None;
    }
    let mut why: Vec<Option<String>> = units
        .iter()
        .map(|u| {
            (u.decision.kind >= DecisionKind::Revert).then(|| {
                let reason = u.decision.matched.first().map(|m| m.reason.as_str()).unwrap_or_default();
                format!("{} by {}: {reason}", u.decision.kind.as_str(), u.decision.rule)
            })
        })
        .collect();
    if why.iter().all(Option::is_none) || units.iter().any(|u| u.change != ChangeKind::Update || u.path.is_none()) {
        return None;
    }
    // The rules that hold each seed: a field they also cover is related to it.
    let holding: Vec<Vec<&Rule>> = units
        .iter()
        .map(|u| {
            u.decision
                .matched
                .iter()
                .filter(|m| m.decision >= DecisionKind::Revert)
                .filter_map(|m| rules.iter().find(|r| r.name == m.rule))
                .collect()
        })
        .collect();
    let mut queue: Vec<usize> = (0..units.len()).filter(|i| why[*i].is_some()).collect();
    while let Some(i) = queue.pop() {
        let found: Vec<(usize, String)> = (0..units.len())
            .filter(|j| why[*j].is_none())
            .filter_map(|j| related(units, &holding[i], &covers, i, j).map(|relation| (j, relation)))
            .collect();
        for (j, relation) in found {
            why[j] = Some(format!("held with `{}`: {relation}", units[i].path.unwrap_or_default()));
            queue.push(j);
        }
    }
    if why.iter().all(Option::is_some) {
        return None;
    }
    // A field held only by its relation waits for the strictest decision among those held.
    let strictest = units
        .iter()
        .map(|u| u.decision.kind)
        .filter(|k| *k >= DecisionKind::Revert)
        .max()
        .unwrap_or(DecisionKind::Escalate);
    let mut split = Split { codified: vec![], held: vec![] };
    for (u, w) in units.iter().zip(&why) {
        let (side, kind, why) = match w {
            Some(w) if u.decision.kind >= DecisionKind::Revert => (&mut split.held, u.decision.kind, w.clone()),
            Some(w) => (&mut split.held, strictest, w.clone()),
            None => {
                (&mut split.codified, u.decision.kind, format!("{} by {}", u.decision.kind.as_str(), u.decision.rule))
            }
        };
        side.push(SplitField {
            address: u.address.to_string(),
            path: u.path.unwrap_or_default().to_string(),
            kind,
            rule: u.decision.rule.clone(),
            why,
        });
    }
    Some((why.iter().map(Option::is_some).collect(), split))
}

/// How unit `j` depends on the held unit `i`, if it does (both on one resource instance).
fn related(
    units: &[Unit<'_>],
    holding: &[&Rule],
    covers: &impl Fn(&Rule, usize) -> bool,
    i: usize,
    j: usize,
) -> Option<String> {
    let (a, b) = (&units[i], &units[j]);
    if a.address != b.address {
        return None;
    }
    let (pa, pb) = (a.path?, b.path?);
    let (na, nb) = (ignore_changes_attr(pa), ignore_changes_attr(pb));
    if na == nb {
        return Some(format!("the same argument or nested block `{na}` (Terraform writes and ignores it as a whole)"));
    }
    if let Some(rule) = holding.iter().find(|r| covers(r, j)) {
        return Some(format!("the rule {} that holds it applies to this field too", rule.name));
    }
    if a.removal || b.removal {
        return Some(
            "an argument the same calls unset on this resource (a conflicting argument goes with the one \
                     that replaces it)"
                .to_string(),
        );
    }
    None
}
