//! From a change set to operations on resource addresses, by recipe.
//!
//! One file per kind of action: `planner` (each call to its recipe and resource, settled against
//! the state and the code), `ops` (the dispatch over a recipe's rule families), `documents` (JSON
//! documents and references), `create` (resources made outside Terraform, adopted or imported),
//! `secret` (values never written), over `model` (the plan and its error) and `convert` (values
//! from records).

mod convert;
mod create;
mod documents;
mod model;
mod ops;
mod planner;
mod secret;

use std::collections::BTreeMap;

use driftback_events::ChangeSet;
use driftback_terraform::{Address, Repo, State};

use crate::catalog::Catalog;

pub(crate) use convert::convert;
pub use model::{Plan, PlanError, ResourceChange, SecretField};

use planner::Planner;

/// Plan a change set with the catalog's recipes.
pub fn plan(catalog: &Catalog, change_set: &ChangeSet, state: &State, repo: &Repo) -> Result<Plan, PlanError> {
    let mut planner =
        Planner { catalog, state, repo, events: &change_set.events, plan: Plan::default(), created: BTreeMap::new() };
    for event in &change_set.events {
        match planner.event(event, change_set.resource_id.as_deref()) {
            Ok(()) => {}
            // A resource adopted by import shows any remaining difference in `terraform plan`;
            // calls after its creation that no recipe knows are noted, not fatal.
            Err(PlanError::NoRecipe { service, name }) if !planner.created.is_empty() => {
                planner
                    .plan
                    .notes
                    .push(format!("{service} {name} is not codified; review `terraform plan` after the import"));
            }
            Err(e) => return Err(e),
        }
        // The other resources the call names, planned the same way, apart.
        let others: Vec<String> = driftback_events::resource_ids(event)
            .into_iter()
            .filter(|id| Some(id.as_str()) != change_set.resource_id.as_deref())
            .collect();
        for other in others {
            let mut apart = Planner {
                catalog,
                state,
                repo,
                events: &change_set.events,
                plan: Plan::default(),
                created: BTreeMap::new(),
            };
            if apart.event(event, Some(&other)).is_ok() {
                let own: Vec<&Address> = planner.plan.changes.iter().map(|c| &c.address).collect();
                let extra: Vec<ResourceChange> =
                    apart.plan.changes.into_iter().filter(|c| !own.contains(&&c.address)).collect();
                planner.plan.alongside.extend(extra);
            }
        }
    }
    planner.settle_set_backs();
    // Only secrets: nothing could be written, and the change set is refused as before.
    if planner.plan.is_empty() {
        if let Some(secret) = planner.plan.secrets.first() {
            return Err(PlanError::Secret { path: secret.path.to_string() });
        }
    }
    Ok(planner.plan)
}
