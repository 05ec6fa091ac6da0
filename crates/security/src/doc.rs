//! `docs/security.md`, generated from the table: every control by id, the resource and attribute
//! it judges, and what is held. The crate's table test checks the committed page against it, and
//! `DRIFTBACK_BLESS=1 cargo test -p driftback-security --test table` writes it again.

use std::collections::BTreeMap;

use crate::table::{Baseline, ChangeTest, Control, Missing};

/// The page's text.
pub fn markdown(baseline: &Baseline) -> String {
    let ids = baseline.ids();
    // By service, whatever the case of its prefix (the reference writes `AutoScaling.1` and
    // `Autoscaling.5`).
    let mut by_service: BTreeMap<String, Vec<&Control>> = BTreeMap::new();
    for c in &baseline.controls {
        by_service.entry(service(&c.id).to_ascii_lowercase()).or_default().push(c);
    }
    let with_checkov = baseline.controls.iter().filter(|c| !c.checkov.is_empty()).count();
    let mut out = String::new();
    out.push_str(HEADER);
    out.push_str(&format!(
        "\n{} controls over {} services, in {} entries ({} with a checkov check that judges the same).\n",
        ids.len(),
        by_service.len(),
        baseline.controls.len(),
        with_checkov
    ));
    for controls in by_service.into_values() {
        out.push_str(&format!("\n## {}\n\n", service(&controls[0].id)));
        out.push_str("| control | severity | standards | resource | attribute | what is held | checkov |\n");
        out.push_str("|---|---|---|---|---|---|---|\n");
        let mut controls = controls;
        controls.sort_by(|a, b| natural(&a.id).cmp(&natural(&b.id)).then(a.resources.cmp(&b.resources)));
        for c in controls {
            let checkov = if c.checkov.is_empty() {
                "—".to_string()
            } else if c.checkov_note.is_empty() {
                c.checkov.join(", ")
            } else {
                format!("{} (differs: {})", c.checkov.join(", "), cell(&c.checkov_note))
            };
            out.push_str(&format!(
                "| {} {} | {} | {} | {} | {} | {} | {} |\n",
                c.id,
                cell(&c.title),
                c.severity.as_str(),
                c.standards.join(", "),
                c.resources.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", "),
                if c.path.is_empty() { "(the resource)".into() } else { format!("`{}`", c.path) },
                cell(&held(c)),
                checkov,
            ));
        }
    }
    out
}

const HEADER: &str = "# The security baseline

Generated from `crates/security/data/controls/*.toml` (format: `crates/security/data/FORMAT.md`) by
`DRIFTBACK_BLESS=1 cargo test -p driftback-security --test table`; the same test fails when this page
and the table disagree. Do not edit it by hand.

Each row is a control of AWS Security Hub's control reference (the Foundational Security Best
Practices standard, `fsbp`, and the CIS AWS Foundations Benchmark, `cis-*`) that a Terraform
attribute expresses, and a few AWS Config managed rules (`config`, named by the rule's identifier)
where no Security Hub control judges a resource type the same way another type is judged. driftback judges the value a change results in, whatever call, console form,
whole document or creation set it: a change whose value fails a control the value before passed is
held for a person with the control's id and what it protects (docs/policy.md, \"Security
baseline\"); a tightening is reconciled as any change is. The policy judges each plan, the driver
judges the code of every patch before it is written, and `driftback eval` counts a branch that
writes a weakening as dangerous. `checkov` names the checkov checks that judge the same thing; CI
runs them over fixture pairs and over every corpus branch as an independent oracle.
";

/// What a passing value satisfies, in words, with how a missing value and `when` count.
fn held(c: &Control) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &c.holds {
        parts.push(p.describe());
    }
    match c.change {
        Some(ChangeTest::PolicyNotWidened) => {
            parts.push("no wider than before: no new grant (a `*` pinned to its own accounts, organisation or network is none), no Deny or condition dropped".into())
        }
        Some(ChangeTest::CidrsNotWidened) => parts.push("no address range let in that was not before".into()),
        Some(ChangeTest::TlsMinimumNotLowered) => parts.push("no older TLS version accepted than before".into()),
        Some(ChangeTest::ManagementEventsNotReduced) => {
            parts.push("no fewer kinds of management event recorded than before".into())
        }
        None => {}
    }
    match c.missing {
        Missing::Fails => parts.push("unset fails".into()),
        Missing::Passes => parts.push("unset passes".into()),
        Missing::Unknown => {}
    }
    if c.on_delete {
        parts.push("deleting it weakens".into());
    }
    let mut text = parts.join("; ");
    if !c.when.is_empty() {
        let when: Vec<String> = c.when.iter().map(|w| w.describe()).collect();
        text = format!("{text} (when {})", when.join(" and "));
    }
    text
}

fn service(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// `EC2.2` before `EC2.10`.
fn natural(id: &str) -> (String, u32) {
    let (service, number) = id.split_once('.').unwrap_or((id, ""));
    (service.to_ascii_lowercase(), number.parse().unwrap_or(u32::MAX))
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
