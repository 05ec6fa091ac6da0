//! The security baseline on what a patch writes: every resource instance whose effective
//! configuration differs between two versions of the code is judged before -> after by
//! `driftback_security`, whatever road the edit came by (a recipe, a learned recipe, the agent, an
//! origin other instances share). The driver runs it on every patch before it is written; `eval`
//! runs it on every branch. The policy judged the plan already; this judges the code.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use driftback_policy::Accept;
use driftback_security::{Baseline, FindingKind, names_resource, with_links};
use driftback_terraform::eval::Evaluator;
use driftback_terraform::patch::Reach;
use driftback_terraform::{Address, ModuleStep, Repo, Schema, State};

/// One control a version of the code weakens on one instance, said for the reviewer.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeWeakening {
    pub address: String,
    pub control: String,
    pub text: String,
}

impl std::fmt::Display for CodeWeakening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.address, self.text)
    }
}

/// The controls `after` weakens against `before`, instance by instance (the state's managed
/// instances and those `after` adds), less those the policy file accepts. Values the code leaves to
/// the provider (an optional, computed argument it does not set) are read from the state.
pub fn weakenings(
    before: &Repo,
    after: &Repo,
    state: &State,
    schema: &Schema,
    accepts: &[Accept],
) -> Vec<CodeWeakening> {
    let baseline = Baseline::builtin();
    let known = |module: &[ModuleStep]| state.known_values(module);
    let (was, now) = (Evaluator::with_known(before, &known), Evaluator::with_known(after, &known));
    // Only what the edit can reach is evaluated: an edit inside resource blocks reaches their
    // instances alone (the gate runs on every patch and must stay cheap).
    let changed: Vec<&Path> =
        after.files().filter(|(p, t)| before.text(p) != Some(*t)).map(|(p, _)| p.as_path()).collect();
    if changed.is_empty() {
        return Vec::new();
    }
    let reach = Reach::of(before, after, &changed);
    let reached = |a: &Address| reach.contains(after, a) || reach.contains(before, a);
    let mut addresses: BTreeSet<Address> = BTreeSet::new();
    addresses
        .extend(state.instances.iter().filter(|i| !i.address.data && reached(&i.address)).map(|i| i.address.clone()));
    addresses.extend(now.instances().into_iter().filter(|a| reached(a)));
    let mut out = Vec::new();
    // Instances the code no longer declares, with what the state knows of them (only asked when a
    // deletion weakens something).
    let gone = std::cell::OnceCell::new();
    let gone = || {
        gone.get_or_init(|| {
            state
                .instances
                .iter()
                .filter(|i| !i.address.data && reached(&i.address))
                .filter(|i| was.config(&i.address).is_some() && now.config(&i.address).is_none())
                .map(|i| (i.address.clone(), Value::Object(i.attributes.clone())))
                .collect::<Vec<(Address, Value)>>()
        })
    };
    for address in addresses {
        let rtype = address.rtype.as_str();
        if !baseline.covers(rtype) {
            continue;
        }
        let (b, a) = (was.config(&address), now.config(&address));
        if b == a {
            continue;
        }
        let from_state = state.get(&address).map(|i| &i.attributes);
        // Set by neither version: the provider keeps what the state has (where it computes it).
        let (b, a) = match (b, a) {
            (Some(b), Some(a)) => {
                let (b, a) = (b.as_object().cloned().unwrap_or_default(), a.as_object().cloned().unwrap_or_default());
                let kept = |key: &str| !b.contains_key(key) && !a.contains_key(key);
                (
                    Some(Value::Object(with_state(b.clone(), from_state, rtype, schema, &kept))),
                    Some(Value::Object(with_state(a.clone(), from_state, rtype, schema, &kept))),
                )
            }
            // A new instance of a fleet is judged against an instance the fleet already has.
            (None, Some(a)) => {
                let peer = driftback_policy::fleet_peer(state, &address).and_then(|i| was.config(&i.address));
                (peer, Some(a))
            }
            (b, a) => (b, a),
        };
        // What controls read from other resources (a CIS alarm's metric filter), from the state.
        let others = |t: &str| state.values_of_type(t);
        let (b, a) = (b.map(|b| with_links(rtype, &b, &others)), a.map(|a| with_links(rtype, &a, &others)));
        let shown = address.to_string();
        let goes_with_another = || {
            state.get(&address).is_some_and(|mine| {
                let mine = Value::Object(mine.attributes.clone());
                gone().iter().any(|(other, theirs)| *other != address && names_resource(&mine, theirs))
            })
        };
        for finding in baseline.judge(rtype, b.as_ref(), a.as_ref()) {
            if finding.kind == FindingKind::Deleted && goes_with_another() {
                continue;
            }
            let id = &finding.control.id;
            if accepts.iter().any(|x| x.covers_instance(id, &address)) {
                continue;
            }
            out.push(CodeWeakening { address: shown.clone(), control: id.clone(), text: finding.describe() });
        }
    }
    out
}

/// `config` with the state's value of each optional, computed argument that `kept` says neither
/// version of the code sets.
fn with_state(
    mut config: Map<String, Value>,
    state: Option<&Map<String, Value>>,
    rtype: &str,
    schema: &Schema,
    kept: &dyn Fn(&str) -> bool,
) -> Map<String, Value> {
    let (Some(state), Some(body)) = (state, schema.resource(rtype)) else { return config };
    for (key, value) in state {
        if kept(key) && body.argument(key).is_some_and(|a| a.is_computed()) {
            config.insert(key.clone(), value.clone());
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    const MAIN: &str = r#"resource "aws_db_instance" "main" {
  identifier          = "orders"
  engine              = "postgres"
  instance_class      = var.class
  deletion_protection = var.protect
}

resource "aws_db_instance" "replica" {
  identifier          = "orders-replica"
  engine              = "postgres"
  instance_class      = "db.t3.micro"
  deletion_protection = var.protect
}

variable "class" {
  default = "db.t3.micro"
}

variable "protect" {
  default = true
}
"#;

    fn repo(text: &str) -> Repo {
        Repo::from_files([(PathBuf::from("main.tf"), text.to_string())].into_iter().collect())
    }

    fn state() -> State {
        let resource = |name: &str, id: &str| {
            json!({"mode": "managed", "type": "aws_db_instance", "name": name,
                   "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                   "instances": [{"schema_version": 2, "attributes": {"id": id, "identifier": id, "engine": "postgres",
                                  "deletion_protection": true, "backup_retention_period": 7}}]})
        };
        let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
            "resources": [resource("main", "orders"), resource("replica", "orders-replica")]});
        State::parse(&text.to_string(), "test").unwrap()
    }

    #[test]
    fn an_edit_at_a_shared_origin_is_judged_on_every_instance_it_reaches() {
        let schema = Schema::newest().unwrap();
        let before = repo(MAIN);
        let after = repo(&MAIN.replace("default = true", "default = false"));
        let found = weakenings(&before, &after, &state(), schema, &[]);
        let mut on: Vec<&str> = found.iter().filter(|w| w.control == "RDS.8").map(|w| w.address.as_str()).collect();
        on.sort();
        assert_eq!(on, ["aws_db_instance.main", "aws_db_instance.replica"], "{found:?}");
        // An ordinary change weakens nothing.
        let bigger = repo(&MAIN.replace("default = \"db.t3.micro\"", "default = \"db.t3.large\""));
        assert!(weakenings(&before, &bigger, &state(), schema, &[]).is_empty());
        // The policy file's accept lets one instance through, not the other.
        let accept = Accept {
            control: "RDS.8".into(),
            addresses: vec!["aws_db_instance.replica".into()],
            by: "dba".into(),
            reason: "a replica".into(),
        };
        let found = weakenings(&before, &after, &state(), schema, &[accept]);
        assert!(
            found.iter().filter(|w| w.control == "RDS.8").all(|w| w.address == "aws_db_instance.main"),
            "{found:?}"
        );
    }

    #[test]
    fn a_removed_argument_falls_back_to_what_the_provider_does() {
        let schema = Schema::newest().unwrap();
        let before = repo(MAIN);
        // Without the argument, deletion protection is off (the provider's default is false).
        let after = repo(&MAIN.replacen("  deletion_protection = var.protect\n", "", 1));
        let found = weakenings(&before, &after, &state(), schema, &[]);
        assert!(found.iter().any(|w| w.control == "RDS.8" && w.address == "aws_db_instance.main"), "{found:?}");
    }
}
