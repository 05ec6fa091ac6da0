//! The documented-records corpus (`tests/corpus-records`, issue 30): CloudTrail records as AWS's
//! service guides print them and as public detection-rule fixtures record them, each against a
//! small project that manages the resource, with expectations written before the product ran.

#[path = "support/corpus.rs"]
mod corpus;

#[test]
fn the_documented_records_corpus_holds_its_passes_pages_nobody_for_noise_and_nothing_dangerous() {
    let run = corpus::eval_corpus::<&str, &str>("tests/corpus-records", &[], &[]);
    let (passed, failed, results) = (run.passed, run.failed, &run.results);
    assert_eq!(run.dangerous, 0, "{:#?}", run.dangers());
    // Raise this floor when more pass; docs/corpus.md lists the failures and their causes.
    assert!(passed >= RECORDS_CORPUS_FLOOR, "{passed} passed, {failed} failed");
    // Calls that change no configuration (reboots, snapshots, reads, data events, rotations, service
    // events) should page nobody: no change set of a noise scenario decided at all. The corpus
    // format cannot say this (`no_patch` lets an escalation pass), so it is counted here.
    let noise: Vec<&serde_json::Value> = results.iter().filter(|r| r["category"] == "noise").collect();
    let paged: Vec<(&serde_json::Value, &serde_json::Value)> = noise
        .iter()
        .filter(|r| r["decisions"].as_array().is_some_and(|d| !d.is_empty()))
        .map(|r| (&r["id"], &r["decisions"]))
        .collect();
    // Raise this floor too; docs/corpus.md names the calls that still page someone.
    assert!(noise.len() - paged.len() >= QUIET_NOISE_FLOOR, "noise that reached a decision: {paged:?}");
}

/// 120 of 122 (98.4%) after 29 more documented records (Step Functions, Kinesis, ECR, Resolver, EKS,
/// DAX, CloudFront's 2014 API, ...); issue 30 asks at least 97% (docs/corpus.md).
const RECORDS_CORPUS_FLOOR: usize = 120;

/// Noise scenarios in which no change set reached a decision, measured in the same session (15 of 19).
const QUIET_NOISE_FLOOR: usize = 15;
