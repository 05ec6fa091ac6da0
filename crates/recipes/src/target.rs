//! Which resources a change set's calls change, as the catalog's recipes know them: the identity an
//! escalation is filed under when no plan names the resource.

use driftback_events::ChangeSet;
use driftback_terraform::{Address, State};

use crate::catalog::Catalog;
use crate::extract::event_value;

/// The managed instances the change set's calls change: for each call, those of the types its
/// recipes change (never `*`), found as the recipes find them (their `key`, else the change set's
/// resource, compared on their `lookup` attributes, narrowed by their `identity`). A namesake of
/// another type (a DB parameter group named as the instance whose `ModifyDBInstance` this is) is
/// never among them. `None` when no recipe of a definite type knows any of the calls: nothing then
/// says which types they change.
pub fn targets(catalog: &Catalog, change_set: &ChangeSet, state: &State) -> Option<Vec<Address>> {
    let mut known = false;
    let mut out: Vec<Address> = Vec::new();
    for event in &change_set.events {
        for recipe in catalog.for_event(&event.source, &event.name) {
            let typed = !recipe.types.is_empty() && recipe.types.iter().all(|t| t != "*");
            // Items or operations name their resources one by one, not the call as a whole.
            if !typed || recipe.each.is_some() || recipe.patch.is_some() {
                continue;
            }
            known = true;
            let Some(id) = recipe.identifier(event).or_else(|| change_set.resource_id.clone()) else { continue };
            let types: Vec<&str> = recipe.types.iter().map(String::as_str).collect();
            let lookup: Vec<&str> = recipe.lookup.iter().map(String::as_str).collect();
            for instance in state.find(&id, &types, &lookup) {
                let same = |rule: &crate::IdentityRule| match (
                    event_value(event, &rule.from),
                    instance.attributes.get(&rule.attr),
                ) {
                    (Some(want), Some(have)) => match (want.as_str(), have.as_str()) {
                        (Some(w), Some(h)) => w.trim_end_matches('.') == h.trim_end_matches('.'),
                        _ => driftback_terraform::patch::values_equal(&want, have),
                    },
                    _ => false,
                };
                if recipe.identity.iter().all(same) && !out.contains(&instance.address) {
                    out.push(instance.address.clone());
                }
            }
        }
    }
    known.then_some(out)
}
