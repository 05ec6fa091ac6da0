//! An account's security and delivery services (KMS, CloudTrail, AWS Config, GuardDuty, IAM Access
//! Analyzer, ACM) and a few calls on S3, Lambda triggers and CloudWatch alarms: each call planned on
//! a request as CloudTrail logs it against a fixture state, the plan applied to the code, and the
//! effective configuration judged; what a recipe does not map is refused by name, never dropped.

mod support;

use std::path::{Path, PathBuf};
use support::{change_set, resource};

use driftback_recipes::{Catalog, Plan, PlanError, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_kms_key" "audit" {
  description         = "Encrypts the audit logs"
  enable_key_rotation = true
  tags = {
    Owner = "cloud-security"
    Stack = "baseline"
  }
}

resource "aws_cloudtrail" "this" {
  name                  = "audit"
  s3_bucket_name        = aws_s3_bucket.logs.id
  is_multi_region_trail = true
  tags = {
    Owner = "cloud-security"
  }

  insight_selector {
    insight_type = "ApiCallRateInsight"
  }
}

resource "aws_config_delivery_channel" "this" {
  name           = "default"
  s3_bucket_name = aws_s3_bucket.logs.id
  s3_key_prefix  = "config"

  snapshot_delivery_properties {
    delivery_frequency = "TwentyFour_Hours"
  }
}

resource "aws_guardduty_detector" "this" {
  enable                       = true
  finding_publishing_frequency = "SIX_HOURS"
}

resource "aws_guardduty_detector_feature" "eks" {
  detector_id = aws_guardduty_detector.this.id
  name        = "EKS_AUDIT_LOGS"
  status      = "DISABLED"
}

resource "aws_guardduty_detector_feature" "lambda" {
  detector_id = aws_guardduty_detector.this.id
  name        = "LAMBDA_NETWORK_LOGS"
  status      = "DISABLED"
}

resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
}

resource "aws_s3_bucket_lifecycle_configuration" "logs" {
  bucket = aws_s3_bucket.logs.id

  rule {
    id     = "expire"
    status = "Enabled"

    expiration {
      days = 365
    }
  }
}

resource "aws_s3_bucket" "site" {
  bucket = "acme-site"
}

resource "aws_s3_bucket_website_configuration" "site" {
  bucket = aws_s3_bucket.site.id

  index_document {
    suffix = "index.html"
  }

  error_document {
    key = "404.html"
  }
}

resource "aws_s3_bucket" "docs" {
  bucket = "acme-docs"
}

resource "aws_lambda_event_source_mapping" "scans" {
  event_source_arn                   = "arn:aws:sqs:us-east-1:123456789012:scans"
  function_name                      = "scan-ingest"
  batch_size                         = 25
  maximum_batching_window_in_seconds = 5
  function_response_types            = ["ReportBatchItemFailures"]
}

resource "aws_cloudwatch_metric_alarm" "cpu" {
  alarm_name          = "api-cpu-high"
  comparison_operator = "GreaterThanThreshold"
  evaluation_periods  = 3
  metric_name         = "CPUUtilization"
  namespace           = "AWS/EC2"
  period              = 60
  statistic           = "Average"
  threshold           = 80
}
"#;

const KEY_ID: &str = "3b8f2c6e-9a14-4d57-b0e2-7c5a1f9d8e43";
const KEY_ARN: &str = "arn:aws:kms:us-east-1:123456789012:key/3b8f2c6e-9a14-4d57-b0e2-7c5a1f9d8e43";
const TRAIL_ARN: &str = "arn:aws:cloudtrail:us-east-1:123456789012:trail/audit";
const DETECTOR: &str = "7ec7a3d5f1b24c8e9d0a6b5c4e3f2a18";
const ESM: &str = "a41f9c27-3e85-4b06-8d12-6c7e0f5b2a93";

fn state() -> State {
    let resources = vec![
        resource(
            "aws_kms_key",
            "audit",
            json!({"id": KEY_ID, "key_id": KEY_ID, "arn": KEY_ARN, "description": "Encrypts the audit logs",
                   "enable_key_rotation": true, "tags": {"Owner": "cloud-security", "Stack": "baseline"}}),
        ),
        resource(
            "aws_cloudtrail",
            "this",
            json!({"id": TRAIL_ARN, "arn": TRAIL_ARN, "name": "audit", "s3_bucket_name": "acme-logs",
                   "is_multi_region_trail": true, "tags": {"Owner": "cloud-security"},
                   "insight_selector": [{"insight_type": "ApiCallRateInsight"}]}),
        ),
        resource(
            "aws_config_delivery_channel",
            "this",
            json!({"id": "default", "name": "default", "s3_bucket_name": "acme-logs", "s3_key_prefix": "config",
                   "snapshot_delivery_properties": [{"delivery_frequency": "TwentyFour_Hours"}]}),
        ),
        resource(
            "aws_guardduty_detector",
            "this",
            json!({"id": DETECTOR, "arn": format!("arn:aws:guardduty:us-east-1:123456789012:detector/{DETECTOR}"),
                   "enable": true, "finding_publishing_frequency": "SIX_HOURS"}),
        ),
        resource(
            "aws_guardduty_detector_feature",
            "eks",
            json!({"id": format!("{DETECTOR}/EKS_AUDIT_LOGS"), "detector_id": DETECTOR, "name": "EKS_AUDIT_LOGS",
                   "status": "DISABLED"}),
        ),
        resource(
            "aws_guardduty_detector_feature",
            "lambda",
            json!({"id": format!("{DETECTOR}/LAMBDA_NETWORK_LOGS"), "detector_id": DETECTOR,
                   "name": "LAMBDA_NETWORK_LOGS", "status": "DISABLED"}),
        ),
        resource(
            "aws_s3_bucket",
            "logs",
            json!({"id": "acme-logs", "bucket": "acme-logs", "arn": "arn:aws:s3:::acme-logs"}),
        ),
        resource(
            "aws_s3_bucket_lifecycle_configuration",
            "logs",
            json!({"id": "acme-logs", "bucket": "acme-logs",
                   "rule": [{"id": "expire", "status": "Enabled", "expiration": [{"days": 365}]}]}),
        ),
        resource(
            "aws_s3_bucket",
            "site",
            json!({"id": "acme-site", "bucket": "acme-site", "arn": "arn:aws:s3:::acme-site"}),
        ),
        resource(
            "aws_s3_bucket_website_configuration",
            "site",
            json!({"id": "acme-site", "bucket": "acme-site", "index_document": [{"suffix": "index.html"}],
                   "error_document": [{"key": "404.html"}]}),
        ),
        resource(
            "aws_s3_bucket",
            "docs",
            json!({"id": "acme-docs", "bucket": "acme-docs", "arn": "arn:aws:s3:::acme-docs"}),
        ),
        resource(
            "aws_lambda_event_source_mapping",
            "scans",
            json!({"id": ESM, "uuid": ESM, "event_source_arn": "arn:aws:sqs:us-east-1:123456789012:scans",
                   "function_name": "arn:aws:lambda:us-east-1:123456789012:function:scan-ingest", "batch_size": 25,
                   "maximum_batching_window_in_seconds": 5, "function_response_types": ["ReportBatchItemFailures"]}),
        ),
        resource(
            "aws_cloudwatch_metric_alarm",
            "cpu",
            json!({"id": "api-cpu-high", "alarm_name": "api-cpu-high", "comparison_operator": "GreaterThanThreshold",
                   "evaluation_periods": 3, "metric_name": "CPUUtilization", "namespace": "AWS/EC2", "period": 60,
                   "statistic": "Average", "threshold": 80}),
        ),
    ];
    support::state_of(resources)
}

/// The fixture code before any call (`repo` names the patched copy in the tests).
fn fixture_repo() -> Repo {
    repo()
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect())
}

/// The call planned and applied: the patched code and the plan.
fn applied(source: &str, name: &str, request: Value, response: Value) -> Result<(Repo, Plan), PlanError> {
    let mut cs = change_set(source, name, request);
    cs.events[0].response = response;
    let mut repo = repo();
    let plan = plan(&Catalog::builtin(), &cs, &state(), &repo)?;
    for change in &plan.changes {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut repo, &change.address, op).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    Ok((repo, plan))
}

fn config(repo: &Repo, address: &str) -> Value {
    effective_config(repo, &Address::parse(address).unwrap()).unwrap()
}

/// The addresses the plan changes, with operations.
fn changed(plan: &Plan) -> Vec<String> {
    plan.changes.iter().filter(|c| !c.ops.is_empty()).map(|c| c.address.to_string()).collect()
}

/// The one resource the plan creates: its address and import id.
fn created(plan: &Plan) -> (String, String) {
    let [change] = plan.changes.as_slice() else { panic!("{plan:?}") };
    assert!(change.created, "{plan:?}");
    let [Op::CreateResource { import_id, .. }] = change.ops.as_slice() else { panic!("{plan:?}") };
    (change.address.to_string(), import_id.clone())
}

const KMS: &str = "kms.amazonaws.com";

#[test]
fn a_keys_description_changes_whether_the_call_names_it_by_arn_or_id() {
    for key in [KEY_ARN, KEY_ID] {
        let (repo, plan) = applied(
            KMS,
            "UpdateKeyDescription",
            json!({"keyId": key, "description": "Audit logs (owner: cloud-security)"}),
            Value::Null,
        )
        .unwrap();
        assert_eq!(changed(&plan), ["aws_kms_key.audit"]);
        assert_eq!(plan.changes[0].recipes, ["kms-update-key-description"]);
        assert_eq!(config(&repo, "aws_kms_key.audit")["description"], "Audit logs (owner: cloud-security)");
    }
}

#[test]
fn a_keys_tags_given_as_tag_key_and_value_are_merged_and_removed() {
    let (repo, _) = applied(
        KMS,
        "TagResource",
        json!({"keyId": KEY_ID, "tags": [{"tagKey": "DataClassification", "tagValue": "restricted"}]}),
        Value::Null,
    )
    .unwrap();
    let tags = &config(&repo, "aws_kms_key.audit")["tags"];
    assert_eq!(tags["DataClassification"], "restricted", "{tags}");
    assert_eq!(tags["Owner"], "cloud-security");
    assert_eq!(tags["Stack"], "baseline");

    let (repo, _) =
        applied(KMS, "UntagResource", json!({"keyId": KEY_ARN, "tagKeys": ["Stack"]}), Value::Null).unwrap();
    let tags = &config(&repo, "aws_kms_key.audit")["tags"];
    assert!(tags.get("Stack").is_none(), "{tags}");
    assert_eq!(tags["Owner"], "cloud-security");
}

const CLOUDTRAIL: &str = "cloudtrail.amazonaws.com";

#[test]
fn a_trails_insight_selectors_are_written_again_from_the_call() {
    let (repo, plan) = applied(
        CLOUDTRAIL,
        "PutInsightSelectors",
        json!({"trailName": TRAIL_ARN, "insightSelectors": [
            {"insightType": "ApiCallRateInsight"}, {"insightType": "ApiErrorRateInsight"}]}),
        json!({"trailARN": TRAIL_ARN, "insightSelectors": [
            {"insightType": "ApiCallRateInsight"}, {"insightType": "ApiErrorRateInsight"}]}),
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_cloudtrail.this"]);
    let trail = config(&repo, "aws_cloudtrail.this");
    let types: Vec<&Value> = trail["insight_selector"].as_array().unwrap().iter().map(|s| &s["insight_type"]).collect();
    assert_eq!(types, [&json!("ApiCallRateInsight"), &json!("ApiErrorRateInsight")], "{trail}");
    assert_eq!(trail["is_multi_region_trail"], true);

    // By name too; a member of a selector no block attribute reads refuses the recipe.
    let err = applied(
        CLOUDTRAIL,
        "PutInsightSelectors",
        json!({"trailName": "audit", "insightSelectors": [{"insightType": "ApiCallRateInsight", "threshold": 3}]}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params.contains("threshold")), "{err}");
}

#[test]
fn a_trails_tags_from_a_tags_list_are_merged_and_removed() {
    let (repo, _) = applied(
        CLOUDTRAIL,
        "AddTags",
        json!({"resourceId": TRAIL_ARN, "tagsList": [{"key": "Compliance", "value": "cis-aws-1.4,soc2"}]}),
        Value::Null,
    )
    .unwrap();
    let tags = &config(&repo, "aws_cloudtrail.this")["tags"];
    assert_eq!(tags["Compliance"], "cis-aws-1.4,soc2", "{tags}");
    assert_eq!(tags["Owner"], "cloud-security");

    let (repo, _) = applied(
        CLOUDTRAIL,
        "RemoveTags",
        json!({"resourceId": TRAIL_ARN, "tagsList": [{"key": "Owner"}]}),
        Value::Null,
    )
    .unwrap();
    assert!(config(&repo, "aws_cloudtrail.this")["tags"].get("Owner").is_none_or(Value::is_null));
}

#[test]
fn a_delivery_channels_frequency_changes_and_values_it_resends_stay() {
    let channel = |extra: Value| {
        let mut c = json!({"name": "default", "s3BucketName": "acme-logs", "s3KeyPrefix": "config",
                           "configSnapshotDeliveryProperties": {"deliveryFrequency": "Six_Hours"}});
        if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), extra) {
            c.extend(extra);
        }
        json!({"deliveryChannel": c})
    };
    let (repo, plan) = applied("config.amazonaws.com", "PutDeliveryChannel", channel(json!({})), Value::Null).unwrap();
    assert_eq!(changed(&plan), ["aws_config_delivery_channel.this"]);
    // One change: the bucket the code takes from another resource and the prefix are re-sent as they are.
    assert_eq!(support::changing_ops(&plan, &fixture_repo()), 1, "{plan:?}");
    let ch = config(&repo, "aws_config_delivery_channel.this");
    assert_eq!(ch["snapshot_delivery_properties"][0]["delivery_frequency"], "Six_Hours", "{ch}");
    assert_eq!(ch["s3_key_prefix"], "config");
    assert!(repo.text(Path::new("main.tf")).unwrap().contains("s3_bucket_name = aws_s3_bucket.logs.id"));

    // A member of the channel no rule reads is refused by name.
    let err =
        applied("config.amazonaws.com", "PutDeliveryChannel", channel(json!({"futureSetting": "on"})), Value::Null)
            .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params.contains("futureSetting")), "{err}");
}

const GUARDDUTY: &str = "guardduty.amazonaws.com";

#[test]
fn a_guardduty_feature_turned_on_changes_that_features_resource_only() {
    let (repo, plan) = applied(
        GUARDDUTY,
        "UpdateDetector",
        json!({"detectorId": DETECTOR, "features": [{"name": "EKS_AUDIT_LOGS", "status": "ENABLED"}]}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_guardduty_detector_feature.eks"]);
    assert_eq!(config(&repo, "aws_guardduty_detector_feature.eks")["status"], "ENABLED");
    assert_eq!(config(&repo, "aws_guardduty_detector_feature.lambda")["status"], "DISABLED");

    // The detector's own settings go to the detector.
    let (repo, plan) = applied(
        GUARDDUTY,
        "UpdateDetector",
        json!({"detectorId": DETECTOR, "findingPublishingFrequency": "ONE_HOUR"}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_guardduty_detector.this"]);
    assert_eq!(config(&repo, "aws_guardduty_detector.this")["finding_publishing_frequency"], "ONE_HOUR");

    // Another detector's feature of the same name is not this one.
    let err = applied(
        GUARDDUTY,
        "UpdateDetector",
        json!({"detectorId": "0000aaaa1111bbbb2222cccc3333dddd", "features": [{"name": "EKS_AUDIT_LOGS", "status": "ENABLED"}]}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "{err}");
}

#[test]
fn a_guardduty_call_that_sets_the_detector_and_its_features_at_once_is_refused_whole() {
    for extra in
        [json!({"findingPublishingFrequency": "ONE_HOUR"}), json!({"dataSources": {"s3Logs": {"enable": true}}})]
    {
        let mut request =
            json!({"detectorId": DETECTOR, "features": [{"name": "EKS_AUDIT_LOGS", "status": "ENABLED"}]});
        request.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let err = applied(GUARDDUTY, "UpdateDetector", request, Value::Null).unwrap_err();
        assert!(
            matches!(&err, PlanError::Unmapped { params, .. } if params.contains("features") || params.contains("dataSources")),
            "{err}"
        );
    }
}

#[test]
fn an_access_analyzer_created_in_the_console_is_adopted_by_its_name() {
    let (repo, plan) = applied(
        "access-analyzer.amazonaws.com",
        "CreateAnalyzer",
        json!({"analyzerName": "acme-account-analyzer", "type": "ACCOUNT", "archiveRules": [],
               "tags": {"Owner": "cloud-security"}, "clientToken": "bae1c401-9222-481f-931d-7d1377d4765f"}),
        json!({"arn": "arn:aws:access-analyzer:us-east-1:123456789012:analyzer/acme-account-analyzer"}),
    )
    .unwrap();
    let (address, import_id) = created(&plan);
    assert_eq!(address, "aws_accessanalyzer_analyzer.acme_account_analyzer");
    assert_eq!(import_id, "acme-account-analyzer");
    let analyzer = config(&repo, &address);
    assert_eq!(analyzer["analyzer_name"], "acme-account-analyzer");
    assert_eq!(analyzer["type"], "ACCOUNT");
    assert_eq!(analyzer["tags"]["Owner"], "cloud-security");

    // Archive rules are resources of their own: not written, and the reviewer is told.
    let (_, plan) = applied(
        "access-analyzer.amazonaws.com",
        "CreateAnalyzer",
        json!({"analyzerName": "acme-org-analyzer", "type": "ORGANIZATION",
               "archiveRules": [{"ruleName": "trusted", "filter": {"principal.AWS": {"eq": ["210987654321"]}}}]}),
        json!({"arn": "arn:aws:access-analyzer:us-east-1:123456789012:analyzer/acme-org-analyzer"}),
    )
    .unwrap();
    assert!(plan.notes.iter().any(|n| n.contains("archiveRules")), "{:?}", plan.notes);
}

#[test]
fn a_requested_certificate_is_adopted_by_the_arn_of_the_response() {
    let arn = "arn:aws:acm:us-east-1:123456789012:certificate/3e7b1d94-6a2c-4f85-b0d3-9c18e4a75f21";
    let (repo, plan) = applied(
        "acm.amazonaws.com",
        "RequestCertificate",
        json!({"domainName": "shop.example.com", "validationMethod": "DNS", "idempotencyToken": "8b1d2f9e4c7a",
               "subjectAlternativeNames": ["shop.example.com", "www.shop.example.com"],
               "options": {"certificateTransparencyLoggingPreference": "ENABLED"}, "keyAlgorithm": "RSA_2048",
               "tags": [{"key": "Team", "value": "web"}]}),
        json!({"certificateArn": arn}),
    )
    .unwrap();
    let (address, import_id) = created(&plan);
    assert_eq!(address, "aws_acm_certificate.shop_example_com");
    assert_eq!(import_id, arn);
    let cert = config(&repo, &address);
    assert_eq!(cert["domain_name"], "shop.example.com");
    assert_eq!(cert["validation_method"], "DNS");
    assert_eq!(cert["subject_alternative_names"], json!(["shop.example.com", "www.shop.example.com"]));
    assert_eq!(cert["options"][0]["certificate_transparency_logging_preference"], "ENABLED");
    assert_eq!(cert["tags"]["Team"], "web");
}

const S3: &str = "s3.amazonaws.com";

#[test]
fn a_deleted_lifecycle_configuration_leaves_the_code_and_the_bucket_stays() {
    let (repo, plan) = applied(
        S3,
        "DeleteBucketLifecycle",
        json!({"bucketName": "acme-logs", "lifecycle": "", "Host": "acme-logs.s3.us-east-1.amazonaws.com"}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_s3_bucket_lifecycle_configuration.logs"]);
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("aws_s3_bucket_lifecycle_configuration"), "{text}");
    assert!(text.contains("resource \"aws_s3_bucket\" \"logs\""), "{text}");
}

fn website(config: Value) -> Value {
    let mut c = json!({"xmlns": "http://s3.amazonaws.com/doc/2006-03-01/"});
    c.as_object_mut().unwrap().extend(config.as_object().unwrap().clone());
    c
}

#[test]
fn a_websites_error_document_changes_and_routing_rules_are_refused() {
    let request = |bucket: &str, config: Value| {
        json!({"bucketName": bucket, "Host": format!("{bucket}.s3.us-east-1.amazonaws.com"), "website": "",
               "WebsiteConfiguration": website(config)})
    };
    let (repo, plan) = applied(
        S3,
        "PutBucketWebsite",
        request(
            "acme-site",
            json!({"IndexDocument": {"Suffix": "index.html"}, "ErrorDocument": {"Key": "errors/404.html"}}),
        ),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_s3_bucket_website_configuration.site"]);
    let site = config(&repo, "aws_s3_bucket_website_configuration.site");
    assert_eq!(site["error_document"][0]["key"], "errors/404.html", "{site}");
    assert_eq!(site["index_document"][0]["suffix"], "index.html");

    // A bucket without website hosting in the code gets the resource beside it.
    let (repo, plan) = applied(
        S3,
        "PutBucketWebsite",
        request("acme-docs", json!({"IndexDocument": {"Suffix": "index.html"}})),
        Value::Null,
    )
    .unwrap();
    let (address, import_id) = created(&plan);
    assert_eq!((address.as_str(), import_id.as_str()), ("aws_s3_bucket_website_configuration.docs", "acme-docs"));
    assert_eq!(config(&repo, &address)["index_document"][0]["suffix"], "index.html");
    assert!(repo.text(Path::new("main.tf")).unwrap().contains("bucket = aws_s3_bucket.docs.id"));

    // Routing rules are not mapped: refused, never written in part.
    let err = applied(
        S3,
        "PutBucketWebsite",
        request(
            "acme-site",
            json!({"IndexDocument": {"Suffix": "index.html"}, "RoutingRules": {"RoutingRule": [
            {"Condition": {"KeyPrefixEquals": "docs/"}, "Redirect": {"ReplaceKeyPrefixWith": "documents/"}}]}}),
        ),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params.contains("WebsiteConfiguration")), "{err}");
}

#[test]
fn a_triggers_concurrency_cap_and_batching_change_and_resent_settings_do_not() {
    let (repo, plan) = applied(
        "lambda.amazonaws.com",
        "UpdateEventSourceMapping",
        json!({"uUID": ESM, "batchSize": 50, "maximumBatchingWindowInSeconds": 10,
               "functionResponseTypes": ["ReportBatchItemFailures"], "scalingConfig": {"maximumConcurrency": 10}}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_lambda_event_source_mapping.scans"]);
    // Batch size, window and the new scaling block; the re-sent response types are no change.
    assert_eq!(support::changing_ops(&plan, &fixture_repo()), 3, "{plan:?}");
    let esm = config(&repo, "aws_lambda_event_source_mapping.scans");
    assert_eq!(esm["batch_size"], 50);
    assert_eq!(esm["maximum_batching_window_in_seconds"], 10);
    assert_eq!(esm["scaling_config"][0]["maximum_concurrency"], 10, "{esm}");
    assert_eq!(esm["function_response_types"], json!(["ReportBatchItemFailures"]));

    // A filter is not mapped: refused by name.
    let err = applied(
        "lambda.amazonaws.com",
        "UpdateEventSourceMapping",
        json!({"uUID": ESM, "filterCriteria": {"filters": [{"pattern": "{\"body\":{\"kind\":[\"scan\"]}}"}]}}),
        Value::Null,
    )
    .unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params.contains("filterCriteria")), "{err}");
}

#[test]
fn an_alarm_created_in_the_console_is_adopted_and_a_managed_one_is_changed() {
    let alarm = json!({"alarmName": "orders-replica-lag", "alarmDescription": "Readers lag the writer",
        "actionsEnabled": true, "alarmActions": ["arn:aws:sns:us-east-1:123456789012:alerts"],
        "insufficientDataActions": [], "metricName": "AuroraReplicaLagMaximum", "namespace": "AWS/RDS",
        "statistic": "Maximum", "dimensions": [{"name": "DBClusterIdentifier", "value": "orders"}], "period": 60,
        "evaluationPeriods": 5, "threshold": 1000.0, "comparisonOperator": "GreaterThanThreshold",
        "treatMissingData": "missing"});
    let (repo, plan) = applied("monitoring.amazonaws.com", "PutMetricAlarm", alarm, Value::Null).unwrap();
    let (address, import_id) = created(&plan);
    assert_eq!(address, "aws_cloudwatch_metric_alarm.orders_replica_lag");
    assert_eq!(import_id, "orders-replica-lag");
    let new = config(&repo, &address);
    assert_eq!(new["threshold"], 1000);
    assert_eq!(new["evaluation_periods"], 5);
    assert_eq!(new["alarm_actions"], json!(["arn:aws:sns:us-east-1:123456789012:alerts"]));
    // The dimensions are not written yet: the reviewer is told to look.
    assert!(plan.notes.iter().any(|n| n.contains("dimensions")), "{:?}", plan.notes);
    assert_eq!(plan.changes[0].recipes, ["cloudwatch-create-metric-alarm"]);

    // An alarm the state has is changed by the existing recipe, not adopted again.
    let (repo, plan) = applied(
        "monitoring.amazonaws.com",
        "PutMetricAlarm",
        json!({"alarmName": "api-cpu-high", "comparisonOperator": "GreaterThanThreshold", "evaluationPeriods": 3,
               "metricName": "CPUUtilization", "namespace": "AWS/EC2", "period": 60, "statistic": "Average",
               "threshold": 90.0}),
        Value::Null,
    )
    .unwrap();
    assert_eq!(changed(&plan), ["aws_cloudwatch_metric_alarm.cpu"]);
    assert_eq!(plan.changes[0].recipes, ["cloudwatch-put-metric-alarm"]);
    assert_eq!(config(&repo, "aws_cloudwatch_metric_alarm.cpu")["threshold"], 90);
}
