//! A loaded policy (the file's rules, then the built-in defaults) and the decision it makes on a
//! change set.

use chrono::Duration;

use driftback_attribute::{ActorInfo, Attribution, NamedActor};
use driftback_events::ChangeSet;
use driftback_recipes::Plan;
use driftback_terraform::{Address, Op, Repo, State};

use crate::baseline::{Accept, weakenings};
use crate::change::{ChangeKind, FieldChange, field_changes, ignore_changes_attr, path_text};
use crate::decision::{Decision, DecisionKind, FieldDecision, RuleMatch, Split};
use crate::defaults;
use crate::file::{self, PolicyError};
use crate::ledger::{LedgerEntry, Oscillation, find_oscillation};
use crate::rule::{Example, Rule, Subject};
use crate::security::{iam_grant_to_existing_identity, security_weakening};
use crate::split::{Unit, split};

/// Two actors setting a field back and forth within this window is an oscillation, by default.
pub const DEFAULT_OSCILLATION_WINDOW_SECS: u64 = 48 * 3600;

/// The rules in force: the policy file's, then the built-in defaults it has not disabled.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Where the rules came from: a file path, or `built-in defaults`.
    pub origin: String,
    /// Rules in order: the file's first, then the built-in ones.
    pub rules: Vec<Rule>,
    /// How many of `rules` come from the file.
    pub file_rules: usize,
    /// The operator's named actors.
    pub actors: Vec<NamedActor>,
    pub oscillation_window_secs: u64,
    /// Controls the file accepts being weakened on some resources (`[[accept]]`).
    pub accepts: Vec<Accept>,
    security_weakening: bool,
    security_baseline: bool,
    oscillation: bool,
}

/// What to decide on.
#[derive(Debug, Clone, Copy)]
pub struct DecideInput<'a> {
    pub change_set: &'a ChangeSet,
    pub attribution: &'a Attribution,
    /// The plan, or why the change set could not be planned.
    pub plan: Result<&'a Plan, &'a str>,
    /// The repository, to check that `ignore_changes` lands in a block it owns. Without it
    /// (`policy explain` with no repository) that check is skipped.
    pub repo: Option<&'a Repo>,
    /// Earlier field changes (the ledger), for oscillation detection.
    pub history: &'a [LedgerEntry],
    /// The state: the values before the change, and what the calls do not carry, for the
    /// security baseline. Without it the baseline judges only what the plan says.
    pub state: Option<&'a State>,
}

/// A decision, the plan to apply (rewritten for `ignore_changes`; empty for revert and escalate
/// unless the decision is split), the plan held back from the code, and the ledger entries this
/// change set adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub decision: Decision,
    pub plan: Plan,
    /// For `revert` and `escalate` with a plan: the edit accepting would write (the plan, with the
    /// fields whose own decision is `ignore_changes` rewritten as `plan` would have them). It is
    /// shown to the person who decides and applied when they accept; never committed otherwise.
    /// Empty for `reconcile` and `ignore_changes` (`plan` is what is written) and without a plan.
    /// When the decision is split (`decision.split`), `plan` holds the independent fields, which
    /// are written, and `held` only the fields that wait.
    pub held: Plan,
    pub ledger: Vec<LedgerEntry>,
}

/// One example's outcome, for `policy check`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExampleResult {
    pub rule: String,
    pub index: usize,
    pub expected: String,
    pub got: String,
    pub pass: bool,
}

/// The rule used when a change set cannot be planned and no stricter rule applies.
pub const NO_PLAN: &str = "default:no-plan";

impl Policy {
    /// The safe defaults: what holds when the repository has no policy file.
    pub fn defaults() -> Policy {
        Policy {
            origin: "built-in defaults".into(),
            rules: defaults::rules(),
            file_rules: 0,
            actors: vec![],
            oscillation_window_secs: DEFAULT_OSCILLATION_WINDOW_SECS,
            accepts: vec![],
            security_weakening: true,
            security_baseline: true,
            oscillation: true,
        }
    }

    /// Parse and check a policy file's text; `file` names it in errors. Every rule's examples are
    /// run: a failing example is an error.
    pub fn from_toml(text: &str, file: &str) -> Result<Policy, PolicyError> {
        let parsed = file::parse(text, file)?;
        let file_rules = parsed.rules.len();
        let mut rules = parsed.rules;
        rules.extend(defaults::rules().into_iter().filter(|r| !parsed.disabled.contains(&r.name)));
        let policy = Policy {
            origin: file.to_string(),
            rules,
            file_rules,
            actors: parsed.actors,
            oscillation_window_secs: parsed.oscillation_window_secs.unwrap_or(DEFAULT_OSCILLATION_WINDOW_SECS),
            accepts: parsed.accepts,
            security_weakening: !parsed.disabled.iter().any(|d| d == defaults::SECURITY_WEAKENING),
            security_baseline: !parsed.disabled.iter().any(|d| d == defaults::SECURITY_BASELINE),
            oscillation: !parsed.disabled.iter().any(|d| d == defaults::OSCILLATION),
        };
        if let Some(failed) = policy.run_examples().into_iter().find(|r| !r.pass) {
            return Err(PolicyError::Example {
                file: file.to_string(),
                rule: failed.rule,
                index: failed.index,
                expected: failed.expected,
                got: failed.got,
            });
        }
        Ok(policy)
    }

    /// Every example of every rule, run against its own rule.
    pub fn run_examples(&self) -> Vec<ExampleResult> {
        let mut out = Vec::new();
        for rule in &self.rules {
            for (i, example) in rule.examples.iter().enumerate() {
                let got = run_example(rule, example);
                let show = |d: Option<DecisionKind>| d.map(|d| d.as_str().to_string()).unwrap_or("no_match".into());
                out.push(ExampleResult {
                    rule: rule.name.clone(),
                    index: i + 1,
                    expected: show(example.expect),
                    got: show(got),
                    pass: got == example.expect,
                });
            }
        }
        out
    }

    /// Whether the security baseline judges changes (`default:security-baseline` not disabled).
    pub fn judges_security(&self) -> bool {
        self.security_baseline
    }

    /// Names of the built-in rules in force (including the checks that are not field rules).
    pub fn builtin_rules(&self) -> Vec<String> {
        let mut names: Vec<String> = self.rules[self.file_rules..].iter().map(|r| r.name.clone()).collect();
        if self.security_weakening {
            names.push(defaults::SECURITY_WEAKENING.into());
        }
        if self.security_baseline {
            names.push(defaults::SECURITY_BASELINE.into());
        }
        if self.oscillation {
            names.push(defaults::OSCILLATION.into());
        }
        names
    }

    /// Decide on a change set.
    pub fn decide(&self, input: &DecideInput<'_>) -> Decided {
        let actor = &input.attribution.actor;
        let apis: Vec<String> = input.change_set.events.iter().map(|e| format!("{}:{}", e.service(), e.name)).collect();
        // The security baseline on the plan's resulting values: a weakened field is held for a
        // person; the rest of the change set may still be written.
        let weakened = match (self.security_baseline, input.plan) {
            (true, Ok(plan)) => weakenings(plan, input.state, &self.accepts),
            _ => vec![],
        };
        let mut accepted: Vec<String> = weakened.iter().filter_map(|w| w.accepted_by.clone()).collect();
        accepted.dedup();
        let held: Vec<&crate::baseline::Weakening> = weakened.iter().filter(|w| w.accepted_by.is_none()).collect();
        // Checks on the calls themselves: where the baseline found nothing to hold, a call that
        // weakens by its own shape holds the whole change set.
        let mut set_matches: Vec<RuleMatch> = Vec::new();
        if self.security_weakening && weakened.is_empty() {
            if let Some(reason) = input.change_set.events.iter().find_map(security_weakening) {
                set_matches.push(RuleMatch {
                    rule: defaults::SECURITY_WEAKENING.into(),
                    decision: DecisionKind::Escalate,
                    reason: format!("{reason}: security-weakening changes need a person"),
                    owner: None,
                });
            }
        }
        if self.rules.iter().any(|r| r.name == defaults::IMMUTABLE_IAM) {
            if let Some(reason) = iam_grant_to_existing_identity(&input.change_set.events) {
                set_matches.push(RuleMatch {
                    rule: defaults::IMMUTABLE_IAM.into(),
                    decision: DecisionKind::Escalate,
                    reason: format!("{reason}: who may do what changes only through reviewed code"),
                    owner: None,
                });
            }
        }

        let fields = match input.plan {
            Ok(plan) => field_changes(plan),
            Err(_) => vec![],
        };
        let holds_field = |w: &crate::baseline::Weakening, f: &FieldChange| {
            w.address == f.address
                && f.path.as_deref().is_none_or(|p| w.attributes.iter().any(|a| a == ignore_changes_attr(p)))
        };
        // A weakening no field of the plan carries (it comes from a value the plan derives) holds
        // the whole change set.
        for w in held.iter().copied().filter(|w| !fields.iter().any(|f| holds_field(w, f))) {
            set_matches.push(baseline_match(w));
        }
        if fields.is_empty() {
            let s = make_subject(None, None, input.attribution, &apis);
            set_matches.extend(self.rules.iter().filter(|r| !r.matcher.needs_field()).filter_map(|r| r.evaluate(&s)));
        }
        if let Err(reason) = input.plan {
            let strictest = set_matches.iter().map(|m| m.decision).max();
            if strictest.is_none_or(|d| d < DecisionKind::Revert) {
                set_matches.push(RuleMatch {
                    rule: NO_PLAN.into(),
                    decision: DecisionKind::Escalate,
                    reason: reason.to_string(),
                    owner: None,
                });
            }
        }

        let mut decisions: Vec<FieldDecision> = Vec::new();
        let mut ledger: Vec<LedgerEntry> = Vec::new();
        let mut oscillations: Vec<Oscillation> = Vec::new();
        let window = Duration::seconds(i64::try_from(self.oscillation_window_secs).unwrap_or(i64::MAX / 1000));
        for field in &fields {
            let address = field.address.to_string();
            let bare = field.address.without_key().to_string();
            let s = make_subject(Some(field), Some((&address, &bare)), input.attribution, &apis);
            let mut matched: Vec<RuleMatch> = self.rules.iter().filter_map(|r| r.evaluate(&s)).collect();
            let owner = matched.iter().find_map(|m| m.owner.clone()).unwrap_or_else(|| "terraform".into());
            if strictest(&matched).is_some_and(|m| m.decision == DecisionKind::IgnoreChanges) {
                if let Some(reason) = outside_repository(input.repo, &field.address) {
                    matched.push(RuleMatch {
                        rule: defaults::OUTSIDE_REPOSITORY.into(),
                        decision: DecisionKind::Escalate,
                        reason,
                        owner: None,
                    });
                }
            }
            if let (Some(path), ChangeKind::Update) = (&field.path, field.change) {
                let entry = ledger_entry(input, actor, &address, path, field, &owner);
                if self.oscillation {
                    if let Some(o) = find_oscillation(input.history.iter().chain(&ledger), &entry, window) {
                        let reason = if o.first_report {
                            format!("oscillation: {}", o.describe())
                        } else {
                            format!("continues the oscillation already reported: {}", o.describe())
                        };
                        matched.push(RuleMatch {
                            rule: defaults::OSCILLATION.into(),
                            decision: DecisionKind::Escalate,
                            reason,
                            owner: None,
                        });
                        oscillations.push(o);
                    }
                }
                ledger.push(entry);
            }
            matched.extend(held.iter().copied().filter(|w| holds_field(w, field)).map(baseline_match));
            matched.sort_by_key(|m| std::cmp::Reverse(m.decision));
            let deciding = matched.first().cloned().unwrap_or_else(|| RuleMatch {
                rule: defaults::RECONCILE.into(),
                decision: DecisionKind::Reconcile,
                reason: "no rule matched".into(),
                owner: None,
            });
            decisions.push(FieldDecision {
                address: address.clone(),
                path: field.path.clone(),
                change: field.change,
                value: field.value.clone(),
                kind: deciding.decision,
                rule: deciding.rule.clone(),
                owner,
                matched,
            });
        }
        set_matches.sort_by_key(|m| std::cmp::Reverse(m.decision));
        // Fields whose value can never be written wait for a person, whatever else is decided.
        let secrets = input.plan.map(|p| p.secrets.as_slice()).unwrap_or_default();
        let secret_decisions: Vec<FieldDecision> = secrets
            .iter()
            .map(|secret| FieldDecision {
                address: secret.address.to_string(),
                path: Some(path_text(&secret.path)),
                change: ChangeKind::Update,
                value: None,
                kind: DecisionKind::Escalate,
                rule: defaults::SECRET_VALUE.into(),
                owner: "terraform".into(),
                matched: vec![RuleMatch {
                    rule: defaults::SECRET_VALUE.into(),
                    decision: DecisionKind::Escalate,
                    reason: format!(
                        "{}: a redacted value can never be written, so a person says where it lives (a secret store, \
                         a variable) or who owns it",
                        secret.reason
                    ),
                    owner: None,
                }],
            })
            .collect();

        // The strictest decision wins; between equals, the calls' own checks, then plan order.
        let candidates = set_matches.iter().map(|m| (m.decision, m.rule.clone(), m.reason.clone())).chain(
            decisions
                .iter()
                .chain(&secret_decisions)
                .map(|f| (f.kind, f.rule.clone(), f.matched.first().map(|m| m.reason.clone()).unwrap_or_default())),
        );
        let (kind, rule, reason) = candidates
            .fold(None::<(DecisionKind, String, String)>, |best, c| match best {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            })
            .unwrap_or((DecisionKind::Reconcile, defaults::RECONCILE.into(), "no rule matched".into()));

        let split = match input.plan {
            Ok(plan) if kind >= DecisionKind::Revert => {
                let units: Vec<Unit<'_>> = fields
                    .iter()
                    .zip(&decisions)
                    .map(|(f, d)| Unit {
                        address: &f.address,
                        path: f.path.as_deref(),
                        change: f.change,
                        removal: matches!(plan.changes[f.op.0].ops[f.op.1], Op::Remove { .. }),
                        decision: d,
                    })
                    .chain(secrets.iter().zip(&secret_decisions).map(|(secret, d)| Unit {
                        address: &secret.address,
                        path: d.path.as_deref(),
                        change: ChangeKind::Update,
                        removal: false,
                        decision: d,
                    }))
                    .collect();
                let calls_held = set_matches.iter().any(|m| m.decision >= DecisionKind::Revert);
                split(&units, &self.rules, calls_held, |rule, i| {
                    let unit = &units[i];
                    let (full, bare) = (unit.address.to_string(), unit.address.without_key().to_string());
                    let subject = Subject {
                        rtype: Some(&unit.address.rtype),
                        address: Some((&full, &bare)),
                        path: unit.path,
                        change: Some(unit.change),
                        value: None,
                        actor,
                        intent: input.attribution.intent.value,
                        motivation: input.attribution.motivation.value,
                        apis: &apis,
                    };
                    rule.covers(&subject)
                })
            }
            _ => None,
        };
        let held_field = |i: usize| split.as_ref().is_none_or(|(mask, _)| mask[i]);
        for entry in &mut ledger {
            entry.decision = decisions
                .iter()
                .position(|f| f.address == entry.address && f.path.as_deref() == Some(entry.path.as_str()))
                .map(|i| if kind >= DecisionKind::Revert && held_field(i) { kind } else { decisions[i].kind })
                .unwrap_or(kind);
        }

        let (plan, held) = match (kind, input.plan) {
            (DecisionKind::Reconcile | DecisionKind::IgnoreChanges, Ok(plan)) => {
                (rewrite(plan, &fields, &decisions, |_| true), Plan::default())
            }
            (DecisionKind::Revert | DecisionKind::Escalate, Ok(plan)) => match &split {
                Some((mask, _)) => {
                    let part = |keep: &dyn Fn(usize) -> bool| {
                        let mut part = rewrite(plan, &fields, &decisions, keep);
                        part.changes.retain(|c| !c.ops.is_empty());
                        part
                    };
                    let mut written = part(&|i| !mask[i]);
                    written.secrets.clear();
                    (written, part(&|i| mask[i]))
                }
                None => (Plan::default(), rewrite(plan, &fields, &decisions, |_| true)),
            },
            (_, Err(_)) => (Plan::default(), Plan::default()),
        };
        let split = split.map(|(_, split)| split);
        let mut rationale = rationale(kind, &reason, input.attribution, &decisions);
        if let Some(split) = &split {
            rationale.push_str(&split_sentence(split));
        }
        decisions.extend(secret_decisions);
        let mut evidence = vec![format!("actor: {}", actor.describe())];
        evidence.extend(actor.evidence.iter().map(|e| format!("actor: {e}")));
        evidence.extend(
            input
                .attribution
                .intent
                .evidence
                .iter()
                .map(|e| format!("intent {}: {e}", input.attribution.intent.value.as_str())),
        );
        evidence.extend(
            input
                .attribution
                .motivation
                .evidence
                .iter()
                .map(|e| format!("motivation {}: {e}", input.attribution.motivation.value.as_str())),
        );
        evidence.extend(accepted.into_iter().map(|a| format!("accepted by the policy file: {a}")));
        for m in set_matches.iter().chain(decisions.iter().filter_map(|f| f.matched.first())) {
            let line = format!("rule {}: {} ({})", m.rule, m.reason, m.decision.as_str());
            if !evidence.contains(&line) {
                evidence.push(line);
            }
        }
        let decision = Decision {
            kind,
            rule,
            rationale,
            evidence,
            attribution: Some(input.attribution.clone()),
            fields: decisions,
            matched: set_matches,
            oscillations,
            split,
        };
        Decided { decision, plan, held, ledger }
    }
}

/// The rule match that holds a weakened field.
fn baseline_match(w: &crate::baseline::Weakening) -> RuleMatch {
    RuleMatch {
        rule: defaults::SECURITY_BASELINE.into(),
        decision: DecisionKind::Escalate,
        reason: format!("{}: {}: a person decides whether the security floor is lowered", w.address, w.text),
        owner: None,
    }
}

fn make_subject<'a>(
    field: Option<&'a FieldChange>,
    address: Option<(&'a str, &'a str)>,
    attribution: &'a Attribution,
    apis: &'a [String],
) -> Subject<'a> {
    Subject {
        rtype: field.map(|f| f.address.rtype.as_str()),
        address,
        path: field.and_then(|f| f.path.as_deref()),
        change: field.map(|f| f.change),
        value: field.and_then(|f| f.value.as_ref()),
        actor: &attribution.actor,
        intent: attribution.intent.value,
        motivation: attribution.motivation.value,
        apis,
    }
}

fn strictest(matched: &[RuleMatch]) -> Option<&RuleMatch> {
    matched.iter().fold(None, |best: Option<&RuleMatch>, m| match best {
        Some(b) if b.decision >= m.decision => Some(b),
        _ => Some(m),
    })
}

fn ledger_entry(
    input: &DecideInput<'_>,
    actor: &ActorInfo,
    address: &str,
    path: &str,
    field: &FieldChange,
    owner: &str,
) -> LedgerEntry {
    let last = input.change_set.events.last();
    LedgerEntry {
        address: address.to_string(),
        path: path.to_string(),
        actor: actor.id.clone(),
        actor_kind: actor.kind.as_str().to_string(),
        value: field.value.clone(),
        time: input.change_set.last_time(),
        change_set: input.change_set.id.clone(),
        event_id: last.map(|e| e.id.clone()).unwrap_or_default(),
        decision: DecisionKind::Reconcile,
        owner: owner.to_string(),
    }
}

/// Why `lifecycle { ignore_changes }` cannot be added for this address in this repository.
fn outside_repository(repo: Option<&Repo>, address: &Address) -> Option<String> {
    let repo = repo?;
    if repo.find_resource(address).is_some() {
        return None;
    }
    let module = address.module_path();
    Some(if !module.is_empty() && repo.module_dir(&module).is_none() {
        format!(
            "{address} is declared in {module}, a module this repository does not own; its `lifecycle {{ ignore_changes }}` cannot be changed here"
        )
    } else {
        format!("{address} has no resource block in this repository to add `lifecycle {{ ignore_changes }}` to")
    })
}

/// The plan with `ignore_changes` fields turned into `lifecycle { ignore_changes }` entries,
/// keeping only the fields (by their index in `fields`) that `keep` says.
fn rewrite(plan: &Plan, fields: &[FieldChange], decisions: &[FieldDecision], keep: impl Fn(usize) -> bool) -> Plan {
    let mut out = plan.clone();
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for (i, (field, decision)) in fields.iter().zip(decisions).enumerate() {
        if !keep(i) {
            drop.push(field.op);
            continue;
        }
        if decision.kind != DecisionKind::IgnoreChanges {
            continue;
        }
        let (ci, oi) = field.op;
        match &field.path {
            Some(path) if field.change == ChangeKind::Update => {
                out.changes[ci].ops[oi] = Op::IgnoreChanges { attr: ignore_changes_attr(path).to_string() };
            }
            // A resource created or deleted by its owner: nothing to write.
            _ => drop.push((ci, oi)),
        }
    }
    for (ci, change) in out.changes.iter_mut().enumerate() {
        let mut kept: Vec<Op> = Vec::new();
        for (oi, op) in change.ops.drain(..).enumerate() {
            if !drop.contains(&(ci, oi)) && !kept.contains(&op) {
                kept.push(op);
            }
        }
        change.ops = kept;
    }
    out
}

/// What a split decision adds to the rationale: which fields wait, and that the rest is written.
fn split_sentence(split: &Split) -> String {
    let list = |fields: &[crate::decision::SplitField]| {
        fields.iter().map(|f| format!("`{}`", f.path)).collect::<Vec<_>>().join(", ")
    };
    format!(
        " Only {} of the change waits for a person; {} does not depend on it and is written into the code (split).",
        list(&split.held),
        list(&split.codified)
    )
}

fn rationale(kind: DecisionKind, reason: &str, attribution: &Attribution, fields: &[FieldDecision]) -> String {
    let actor = attribution.actor.describe();
    let why = match (attribution.intent.value.as_str(), attribution.motivation.value.as_str()) {
        ("unknown", "unknown") => String::new(),
        (intent, "unknown") => format!(" for {intent}"),
        ("unknown", motivation) => format!(" ({motivation})"),
        (intent, motivation) => format!(" for {intent} ({motivation})"),
    };
    match kind {
        DecisionKind::Reconcile => {
            format!("{actor} changed the resource outside Terraform{why}; the code is updated to match the cloud.")
        }
        DecisionKind::IgnoreChanges => {
            let attrs: Vec<String> = fields
                .iter()
                .filter(|f| f.kind == DecisionKind::IgnoreChanges)
                .filter_map(|f| f.path.as_deref().map(|p| format!("{}.{}", f.address, ignore_changes_attr(p))))
                .collect();
            format!(
                "{reason}. Terraform is told to ignore {} (lifecycle ignore_changes) so the next apply does not fight the owner.",
                if attrs.is_empty() { "the field".to_string() } else { attrs.join(", ") }
            )
        }
        DecisionKind::Revert => format!(
            "{reason}. The change by {actor}{why} is not written into the code; the next terraform apply will revert it."
        ),
        DecisionKind::Escalate => format!("{reason}. Change by {actor}{why}; a person must decide."),
    }
}

fn run_example(rule: &Rule, example: &Example) -> Option<DecisionKind> {
    let address = Address::parse(&example.address).ok()?;
    let full = address.to_string();
    let bare = address.without_key().to_string();
    let actor = ActorInfo {
        kind: example.actor_kind,
        id: example.actor.clone(),
        role: None,
        session: None,
        via: driftback_events::CallVia::Unknown,
        names: vec![example.actor.clone()],
        evidence: vec![],
    };
    let apis: Vec<String> = example.api.iter().cloned().collect();
    let subject = Subject {
        rtype: Some(&address.rtype),
        address: Some((&full, &bare)),
        path: example.attribute.as_deref(),
        change: Some(example.change),
        value: example.value.as_ref(),
        actor: &actor,
        intent: example.intent,
        motivation: example.motivation,
        apis: &apis,
    };
    rule.evaluate(&subject).map(|m| m.decision)
}
