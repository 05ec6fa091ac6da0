//! Events on the same resource by the same actor session, close together in time, become one change set.
//!
//! The joining rules are defined once, in [`Grouper`]: the file path ([`group`]) feeds it a whole
//! batch; the daemon seeds it with the change sets already pending and feeds it each intake.

use std::collections::HashMap;
use std::fmt;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{Actor, ApiEvent};
use crate::resource::resource_ids;

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Events further apart than this (by event time) start a new change set.
    pub quiet_window_secs: u64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self { quiet_window_secs: 120 }
    }
}

impl GroupConfig {
    /// The window [`group`] joins events by: the quiet window, no maximum age.
    pub fn window(&self) -> JoinWindow {
        JoinWindow { quiet: secs(self.quiet_window_secs), max_age: None }
    }
}

fn secs(n: u64) -> Duration {
    Duration::try_seconds(i64::try_from(n).unwrap_or(i64::MAX)).unwrap_or(Duration::MAX)
}

/// When an event joins a change set (same resource, same actor session), by event time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinWindow {
    /// An event at most this far before the change set's first event or after its last joins it.
    pub quiet: Duration,
    /// When set, nothing joins a change set later than this after its first event (so a resource
    /// touched every minute is still reconciled): the daemon's maximum age.
    pub max_age: Option<Duration>,
}

impl JoinWindow {
    /// Whether an event at `time` joins a change set spanning `first..=last` (events may arrive out
    /// of order, so it may also come before `first`).
    pub fn joins(&self, first: DateTime<Utc>, last: DateTime<Utc>, time: DateTime<Utc>) -> bool {
        first - time <= self.quiet && time - last <= self.quiet && self.max_age.is_none_or(|age| time - first <= age)
    }

    /// Whether nothing at `time` or later can join a change set spanning `first..=last`.
    fn closed(&self, first: DateTime<Utc>, last: DateTime<Utc>, time: DateTime<Utc>) -> bool {
        time - last > self.quiet || self.max_age.is_some_and(|age| time - first > age)
    }
}

/// What a change set is grouped on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKey {
    /// The cloud identifier of a resource the event names (`i-0abc`, a bucket name, a queue URL).
    Resource(String),
    /// The id of an event that names no resource we can recognise: a change set of its own, which
    /// nothing joins.
    Event(String),
}

impl ResourceKey {
    /// The text of a [`ResourceKey::Event`] key starts with this (so a resource id that itself
    /// starts with it reads back as an event key, as the stored keys always have).
    pub const NO_RESOURCE_PREFIX: &'static str = "event:";

    /// The keys `event` groups on: one per resource it names, in order, or its own
    /// [`ResourceKey::Event`] when it names none. An event naming several resources goes to each.
    pub fn of(event: &ApiEvent) -> Vec<ResourceKey> {
        let ids = resource_ids(event);
        if ids.is_empty() {
            vec![ResourceKey::Event(event.id.clone())]
        } else {
            ids.into_iter().map(ResourceKey::Resource).collect()
        }
    }

    /// The key whose text ([`fmt::Display`]) is `text`, as stored.
    pub fn parse(text: &str) -> ResourceKey {
        match text.strip_prefix(Self::NO_RESOURCE_PREFIX) {
            Some(event) => ResourceKey::Event(event.to_string()),
            None => ResourceKey::Resource(text.to_string()),
        }
    }

    /// The resource's cloud identifier, for a [`ResourceKey::Resource`].
    pub fn resource_id(&self) -> Option<&str> {
        match self {
            ResourceKey::Resource(id) => Some(id),
            ResourceKey::Event(_) => None,
        }
    }
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceKey::Resource(id) => f.write_str(id),
            ResourceKey::Event(id) => write!(f, "{}{id}", Self::NO_RESOURCE_PREFIX),
        }
    }
}

/// The id of the change set that `first_event` starts on `resource` (`None`: it names none).
/// Stable across platforms, releases, runs and replicas: change sets are stored and named in
/// commit trailers by it.
pub fn change_set_id(resource: Option<&str>, first_event: &str) -> String {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in resource.unwrap_or("").bytes().chain([0]).chain(first_event.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("cs-{hash:016x}")
}

/// A change set as the [`Grouper`] sees it: what it groups on and which events it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// [`change_set_id`] of its key and first event, or whatever id it was seeded with.
    pub id: String,
    pub key: ResourceKey,
    /// [`Actor::session_key`] of its events.
    pub actor_session: String,
    pub first_time: DateTime<Utc>,
    pub last_time: DateTime<Utc>,
    /// In the order placed.
    pub event_ids: Vec<String>,
}

/// Where [`Grouper::place`] put an event on one of its keys; each names a group by its index in
/// [`Grouper::groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The event started this group.
    Started(usize),
    /// The event joined this group.
    Joined(usize),
    /// This group already holds the event (a redelivery, a duplicate): nothing changed.
    Held(usize),
}

impl Placement {
    pub fn group(self) -> usize {
        match self {
            Placement::Started(g) | Placement::Joined(g) | Placement::Held(g) => g,
        }
    }
}

/// The groups of one resource key and actor session that events may still join.
#[derive(Debug, Default)]
struct Slot {
    /// Every such group.
    all: Vec<usize>,
    /// Those not closed at the grouper's watermark.
    live: Vec<usize>,
}

/// Groups events into change sets incrementally: events on the same resource by the same actor
/// session within the [`JoinWindow`] of a group join it; an event naming no resource is a group of
/// its own; an event naming several resources goes to a group on each; an event a group of its key
/// and session already holds is not placed again. When several groups could take an event, the
/// earliest (seeded first, then started) does.
///
/// Open groups from elsewhere (the daemon's pending change sets) are [`Grouper::seed`]ed. Events
/// are best placed in [`time_order`], as [`group`] does: a group that can no longer be
/// joined is then set aside. An event earlier than one placed before is still placed by the same
/// rules, looking at every group of its key and session.
/// The grouper's maps: keyed by ids from events, hashed fast with a seed of each map's own.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The groups holding one event: almost always one, so that case allocates nothing more.
#[derive(Debug)]
enum Holding {
    One(usize),
    Many(Vec<usize>),
}

impl Holding {
    fn add(&mut self, g: usize) {
        match self {
            Holding::One(first) => *self = Holding::Many(vec![*first, g]),
            Holding::Many(groups) => groups.push(g),
        }
    }

    fn groups(&self) -> &[usize] {
        match self {
            Holding::One(g) => std::slice::from_ref(g),
            Holding::Many(groups) => groups,
        }
    }
}

/// Record that group `g` holds event `id`.
fn hold(holding: &mut FastMap<String, Holding>, id: &str, g: usize) {
    match holding.get_mut(id) {
        Some(held) => held.add(g),
        None => {
            holding.insert(id.to_string(), Holding::One(g));
        }
    }
}

#[derive(Debug)]
pub struct Grouper {
    window: JoinWindow,
    groups: Vec<Group>,
    /// Groups by the hash of their (resource, session); a slot's groups are checked for both, so
    /// a collision only costs a comparison.
    slots: FastMap<u64, Slot>,
    /// Hashes slot keys.
    slot_hasher: foldhash::fast::RandomState,
    /// Event id -> the groups holding it.
    holding: FastMap<String, Holding>,
    /// The latest event time placed.
    watermark: Option<DateTime<Utc>>,
    /// Whether placed events' ids are kept, so a repeat is reported as held.
    remember_placed: bool,
}

impl Grouper {
    pub fn new(window: JoinWindow) -> Grouper {
        Grouper {
            window,
            groups: Vec::new(),
            slots: FastMap::default(),
            slot_hasher: Default::default(),
            holding: FastMap::default(),
            watermark: None,
            remember_placed: true,
        }
    }

    /// A grouper for events whose ids are unique (the caller dropped repeats): it does not keep
    /// the id of every event it places, only those of seeded groups. A repeated id would be placed
    /// again.
    pub fn for_unique_events(window: JoinWindow) -> Grouper {
        Grouper { remember_placed: false, ..Grouper::new(window) }
    }

    /// Adds an open group, which events may join (or already hold); returns its index.
    pub fn seed(&mut self, group: Group) -> usize {
        self.start(group, true)
    }

    fn start(&mut self, group: Group, remember: bool) -> usize {
        let g = self.groups.len();
        if remember {
            for id in &group.event_ids {
                hold(&mut self.holding, id, g);
            }
        }
        if matches!(group.key, ResourceKey::Resource(_)) {
            let open = !self.watermark.is_some_and(|w| self.window.closed(group.first_time, group.last_time, w));
            let slot = self.slots.entry(self.slot_of(&group.key, &group.actor_session)).or_default();
            slot.all.push(g);
            if open {
                slot.live.push(g);
            }
        }
        self.groups.push(group);
        g
    }

    /// Places `event` on each of its [`ResourceKey`]s (in the order of [`ResourceKey::of`]).
    pub fn place(&mut self, event: &ApiEvent) -> Vec<Placement> {
        let session = event.actor.session_key();
        let time = event.time;
        let in_order = self.watermark.is_none_or(|w| time >= w);
        if in_order {
            self.watermark = Some(time);
        }
        let mut placements = Vec::new();
        for key in ResourceKey::of(event) {
            let held = self.holding.get(&event.id).and_then(|held| {
                held.groups()
                    .iter()
                    .copied()
                    .filter(|&g| self.groups[g].key == key && self.groups[g].actor_session == session)
                    .min()
            });
            let joins = match self.slots.get_mut(&self.slot_of(&key, &session)) {
                Some(slot) => {
                    let (window, groups) = (&self.window, &self.groups);
                    if in_order {
                        slot.live.retain(|&g| !window.closed(groups[g].first_time, groups[g].last_time, time));
                    }
                    let candidates = if in_order { &slot.live } else { &slot.all };
                    candidates
                        .iter()
                        .copied()
                        .filter(|&g| groups[g].key == key && groups[g].actor_session == session)
                        .filter(|&g| window.joins(groups[g].first_time, groups[g].last_time, time))
                        .min()
                }
                None => None,
            };
            let placement = match (held, joins) {
                (Some(h), Some(j)) if j < h => self.join(j, event, &key, &session),
                (Some(h), _) => Placement::Held(h),
                (None, Some(j)) => self.join(j, event, &key, &session),
                (None, None) => {
                    let remember = self.remember_placed;
                    Placement::Started(self.start(
                        Group {
                            id: change_set_id(key.resource_id(), &event.id),
                            key,
                            actor_session: session.clone(),
                            first_time: time,
                            last_time: time,
                            event_ids: vec![event.id.clone()],
                        },
                        remember,
                    ))
                }
            };
            placements.push(placement);
        }
        placements
    }

    fn join(&mut self, g: usize, event: &ApiEvent, key: &ResourceKey, session: &str) -> Placement {
        let group = &mut self.groups[g];
        group.event_ids.push(event.id.clone());
        group.first_time = group.first_time.min(event.time);
        group.last_time = group.last_time.max(event.time);
        if self.remember_placed {
            hold(&mut self.holding, &event.id, g);
        }
        // An event earlier than the watermark may reopen a group set aside.
        let open = !self.watermark.is_some_and(|w| self.window.closed(group.first_time, group.last_time, w));
        if let Some(slot) = self.slots.get_mut(&self.slot_of(key, session)) {
            if open && !slot.live.contains(&g) {
                slot.live.push(g);
            }
        }
        Placement::Joined(g)
    }

    /// The slot of a (resource, session) pair.
    fn slot_of(&self, key: &ResourceKey, session: &str) -> u64 {
        use std::hash::BuildHasher;
        self.slot_hasher.hash_one((key, session))
    }

    /// Every group, seeded then started, in that order (indices of [`Placement`]).
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub fn into_groups(self) -> Vec<Group> {
        self.groups
    }
}

/// Out-of-band events that belong together: one resource, one actor session, one burst of activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// Stable across runs: derived from the resource and the first event ([`change_set_id`]).
    pub id: String,
    /// The cloud identifier of the resource (`i-0abc`, a bucket name, a queue URL), or `None` when the
    /// events name no resource we can recognise.
    pub resource_id: Option<String>,
    pub actor: Actor,
    /// Time-ordered.
    pub events: Vec<ApiEvent>,
}

impl ChangeSet {
    pub fn first_time(&self) -> DateTime<Utc> {
        self.events.first().map(|e| e.time).unwrap_or_default()
    }
    pub fn last_time(&self) -> DateTime<Utc> {
        self.events.last().map(|e| e.time).unwrap_or_default()
    }
}

/// The order events are grouped in and a change set lists them in: by event time, then by id.
pub fn time_order(a: &ApiEvent, b: &ApiEvent) -> std::cmp::Ordering {
    a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id))
}

/// Group events (already filtered) into change sets, ordered by their first event's time, with a
/// [`Grouper`] fed them in [`time_order`]. A repeated event (the same id) is not added again.
pub fn group(events: Vec<ApiEvent>, config: &GroupConfig) -> Vec<ChangeSet> {
    // Sort positions, not events: an event is hundreds of bytes, and a sort moves each one many times.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| time_order(&events[a], &events[b]));
    // A repeated event is placed once: its first occurrence in time order.
    let mut seen: std::collections::HashSet<&str, foldhash::fast::RandomState> = Default::default();
    order.retain(|&i| seen.insert(events[i].id.as_str()));
    drop(seen);
    let mut slots: Vec<Option<ApiEvent>> = events.into_iter().map(Some).collect();
    let events = order.into_iter().map(|i| slots[i].take().expect("each position once"));
    let mut grouper = Grouper::for_unique_events(config.window());
    // Indexed like the grouper's groups: none is seeded.
    let mut sets: Vec<ChangeSet> = Vec::new();
    for event in events {
        let placements: Vec<Placement> =
            grouper.place(&event).into_iter().filter(|p| !matches!(p, Placement::Held(_))).collect();
        let Some(last) = placements.len().checked_sub(1) else { continue };
        let mut event = Some(event);
        for (i, placement) in placements.into_iter().enumerate() {
            // The event itself goes to its last change set, copies to the others.
            let event = if i == last { event.take() } else { event.clone() }.expect("taken only at the last target");
            match placement {
                Placement::Joined(g) => sets[g].events.push(event),
                _ => {
                    debug_assert_eq!(placement.group(), sets.len());
                    // The id and resource come from the group, once placing is done.
                    sets.push(ChangeSet {
                        id: String::new(),
                        resource_id: None,
                        actor: event.actor.clone(),
                        events: vec![event],
                    });
                }
            }
        }
    }
    for (set, group) in sets.iter_mut().zip(grouper.into_groups()) {
        set.id = group.id;
        set.resource_id = match group.key {
            ResourceKey::Resource(id) => Some(id),
            ResourceKey::Event(_) => None,
        };
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::normalize;
    use serde_json::json;

    fn ev(id: &str, time: &str, user: &str, name: &str, request: serde_json::Value) -> ApiEvent {
        normalize(&json!({
            "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com", "eventName": name,
            "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::1:user/{user}"), "userName": user},
            "requestParameters": request
        }))
        .unwrap()
    }

    fn shape(sets: &[ChangeSet]) -> Vec<(Option<&str>, Vec<&str>)> {
        sets.iter().map(|s| (s.resource_id.as_deref(), s.events.iter().map(|e| e.id.as_str()).collect())).collect()
    }

    #[test]
    fn grouping_by_resource_session_and_quiet_window() {
        let tags = |r: &str| json!({"resourcesSet": {"items": [{"resourceId": r}]}, "tagSet": {"items": []}});
        let events = vec![
            ev("3", "2024-03-01T10:01:00Z", "alice", "CreateTags", tags("i-1")),
            ev("1", "2024-03-01T10:00:00Z", "alice", "ModifyInstanceAttribute", json!({"instanceId": "i-1"})),
            ev("2", "2024-03-01T10:00:30Z", "bob", "ModifyInstanceAttribute", json!({"instanceId": "i-1"})),
            ev("4", "2024-03-01T10:30:00Z", "alice", "CreateTags", tags("i-1")),
            ev("5", "2024-03-01T10:30:05Z", "alice", "Mystery", json!({})),
        ];
        let sets = group(events, &GroupConfig::default());
        assert_eq!(
            shape(&sets),
            [(Some("i-1"), vec!["1", "3"]), (Some("i-1"), vec!["2"]), (Some("i-1"), vec!["4"]), (None, vec!["5"]),]
        );
        let again = group(sets.iter().flat_map(|s| s.events.clone()).collect(), &GroupConfig::default());
        assert_eq!(sets.iter().map(|s| &s.id).collect::<Vec<_>>(), again.iter().map(|s| &s.id).collect::<Vec<_>>());
    }

    #[test]
    fn one_event_on_two_resources_joins_both() {
        let request = json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]}});
        let sets =
            group(vec![ev("1", "2024-03-01T10:00:00Z", "alice", "CreateTags", request)], &GroupConfig::default());
        assert_eq!(shape(&sets), [(Some("i-1"), vec!["1"]), (Some("i-2"), vec!["1"])]);
        assert_ne!(sets[0].id, sets[1].id);
    }
    /// The grouping as written before the [`Grouper`]: the reference the file path must still match.
    fn reference_group(events: Vec<ApiEvent>, config: &GroupConfig) -> Vec<ChangeSet> {
        fn id(resource: Option<&str>, first_event: &str) -> String {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in resource.unwrap_or("").bytes().chain([0]).chain(first_event.bytes()) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            format!("cs-{hash:016x}")
        }
        let mut events = events;
        events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
        let window = Duration::seconds(i64::try_from(config.quiet_window_secs).unwrap());
        let mut sets: Vec<ChangeSet> = Vec::new();
        let mut open: HashMap<(Option<String>, String), usize> = HashMap::new();
        for event in events {
            let ids = resource_ids(&event);
            let targets: Vec<Option<String>> =
                if ids.is_empty() { vec![None] } else { ids.into_iter().map(Some).collect() };
            for resource_id in targets {
                let key = (resource_id, event.actor.session_key());
                let joinable =
                    key.0.is_some() && open.get(&key).is_some_and(|&i| event.time - sets[i].last_time() <= window);
                if joinable {
                    sets[open[&key]].events.push(event.clone());
                } else {
                    sets.push(ChangeSet {
                        id: id(key.0.as_deref(), &event.id),
                        resource_id: key.0.clone(),
                        actor: event.actor.clone(),
                        events: vec![event.clone()],
                    });
                    open.insert(key, sets.len() - 1);
                }
            }
        }
        sets
    }

    /// A small deterministic generator (no dependency for randomness).
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    /// `n` events with unique ids on a few resources (some naming two, some none) by two users,
    /// in bursts and gaps around the quiet window, in no particular order.
    fn random_events(rng: &mut Lcg, n: usize) -> Vec<ApiEvent> {
        let base = DateTime::parse_from_rfc3339("2024-03-01T10:00:00Z").unwrap().with_timezone(&Utc);
        let mut t = 0i64;
        (0..n)
            .map(|i| {
                t += [0, 5, 30, 90, 119, 120, 121, 200, 900][rng.below(9) as usize];
                let time = (base + Duration::seconds(t)).to_rfc3339();
                let user = ["alice", "bob"][rng.below(2) as usize];
                let (name, request) = match rng.below(6) {
                    0 => ("Mystery", json!({})),
                    1 => (
                        "CreateTags",
                        json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]}}),
                    ),
                    r => ("ModifyInstanceAttribute", json!({"instanceId": format!("i-{}", r % 3)})),
                };
                ev(&format!("e{i:03}"), &time, user, name, request)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }

    #[test]
    fn the_grouper_groups_as_the_algorithm_it_replaced_with_the_same_ids() {
        let mut rng = Lcg(13);
        for round in 0..200 {
            let events = random_events(&mut rng, 1 + round % 40);
            for quiet_window_secs in [0, 120, 600] {
                let config = GroupConfig { quiet_window_secs };
                assert_eq!(group(events.clone(), &config), reference_group(events.clone(), &config), "round {round}");
            }
        }
    }

    #[test]
    fn change_set_ids_are_pinned() {
        // Stored in the knowledge base and written in commit trailers: they never change (FNV-1a of
        // resource, NUL, first event id, as computed independently of this code).
        assert_eq!(change_set_id(Some("i-1"), "1"), "cs-8b0e8c720b324fc1");
        assert_eq!(change_set_id(None, "5"), "cs-08329307b4eb829e");
    }

    #[test]
    fn resource_keys_read_back_from_their_text() {
        let tags = json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]}});
        let keys = ResourceKey::of(&ev("1", "2024-03-01T10:00:00Z", "alice", "CreateTags", tags));
        assert_eq!(keys, [ResourceKey::Resource("i-1".into()), ResourceKey::Resource("i-2".into())]);
        let none = ResourceKey::of(&ev("7", "2024-03-01T10:00:00Z", "alice", "Mystery", json!({})));
        assert_eq!(none, [ResourceKey::Event("7".into())]);
        assert_eq!(none[0].to_string(), "event:7");
        for key in keys.iter().chain(&none) {
            assert_eq!(&ResourceKey::parse(&key.to_string()), key);
        }
        assert_eq!(none[0].resource_id(), None);
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn modify(id: &str, time: &str, user: &str, instance: &str) -> ApiEvent {
        ev(id, time, user, "ModifyInstanceAttribute", json!({"instanceId": instance}))
    }

    #[test]
    fn a_seeded_grouper_joins_open_groups_holds_redeliveries_and_closes_at_the_maximum_age() {
        let window = JoinWindow { quiet: Duration::seconds(120), max_age: Some(Duration::seconds(600)) };
        let alice = modify("x", "2024-03-01T10:00:00Z", "alice", "i-1").actor.session_key();
        let mut grouper = Grouper::new(window);
        let seeded = grouper.seed(Group {
            id: "cs-stored".into(),
            key: ResourceKey::Resource("i-1".into()),
            actor_session: alice.clone(),
            first_time: at("2024-03-01T10:00:00Z"),
            last_time: at("2024-03-01T10:08:00Z"),
            event_ids: vec!["1".into(), "2".into()],
        });
        // Held: the group names it already (a redelivery), whatever its time.
        assert_eq!(grouper.place(&modify("2", "2024-03-01T10:08:00Z", "alice", "i-1")), [Placement::Held(seeded)]);
        // Out of order, just before the first event: joins.
        assert_eq!(grouper.place(&modify("0", "2024-03-01T09:58:30Z", "alice", "i-1")), [Placement::Joined(seeded)]);
        // Another session, another resource: groups of their own.
        let bob = grouper.place(&modify("3", "2024-03-01T10:08:30Z", "bob", "i-1"));
        assert_eq!(bob, [Placement::Started(1)]);
        assert_eq!(grouper.place(&modify("4", "2024-03-01T10:08:40Z", "alice", "i-2")), [Placement::Started(2)]);
        // Within the quiet window of the last event but past the maximum age of the first.
        assert_eq!(grouper.place(&modify("5", "2024-03-01T10:09:00Z", "alice", "i-1")), [Placement::Started(3)]);
        let groups = grouper.groups();
        assert_eq!(groups[seeded].event_ids, ["1", "2", "0"]);
        assert_eq!(
            (groups[seeded].first_time, groups[seeded].last_time),
            (at("2024-03-01T09:58:30Z"), at("2024-03-01T10:08:00Z"))
        );
        assert_eq!(groups[3].id, change_set_id(Some("i-1"), "5"));
        // An event earlier than the latest placed still finds the group it belongs to.
        assert_eq!(grouper.place(&modify("6", "2024-03-01T10:07:00Z", "alice", "i-1")), [Placement::Joined(seeded)]);
        // Without a maximum age (the file path) the burst goes on.
        let mut files = Grouper::new(JoinWindow { max_age: None, ..window });
        for (i, minute) in (0..=20).enumerate() {
            let placed =
                files.place(&modify(&format!("m{i}"), &format!("2024-03-01T10:{minute:02}:00Z"), "alice", "i-1"));
            assert_eq!(placed, [if i == 0 { Placement::Started(0) } else { Placement::Joined(0) }]);
        }
    }

    #[test]
    fn a_repeated_event_is_grouped_once() {
        let one = modify("1", "2024-03-01T10:00:00Z", "alice", "i-1");
        let alone = ev("2", "2024-03-01T10:00:00Z", "alice", "Mystery", json!({}));
        let sets = group(vec![one.clone(), alone.clone(), one, alone], &GroupConfig::default());
        assert_eq!(shape(&sets), [(Some("i-1"), vec!["1"]), (None, vec!["2"])]);
    }
}
