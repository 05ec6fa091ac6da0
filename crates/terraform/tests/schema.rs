//! The bundled AWS provider schema: facts about well-known resources, a difference between the
//! bundled 5.x and 6.x, version selection, and every resource block of the corpus projects checked
//! against it.

use driftback_terraform::gate::{paths, show};
use driftback_terraform::schema::{
    Fit, Found, Mode, Nesting, Schema, SchemaError, Step, ValueType, required_aws_version,
};
use driftback_terraform::{AttrPath, Repo};
use hcl_edit::structure::{BlockLabel, Body};

mod support;
use support::corpus_projects;

fn v5() -> &'static Schema {
    Schema::version("5.100.0").expect("bundled 5.100.0")
}

fn v6() -> &'static Schema {
    Schema::version("6.25.0").expect("bundled 6.25.0")
}

fn both() -> [&'static Schema; 2] {
    [v5(), v6()]
}

#[test]
fn bundled_versions_record_their_source() {
    assert_eq!(Schema::bundled_versions().collect::<Vec<_>>(), ["5.100.0", "6.25.0"]);
    assert_eq!(v5().source_package(), ("@cdktf/provider-aws", "20.1.0"));
    assert_eq!(v6().source_package(), ("@cdktf/provider-aws", "21.22.1"));
    assert_eq!(Schema::newest().unwrap().provider_version(), "6.25.0");
}

#[test]
fn every_version_has_the_whole_provider() {
    for s in both() {
        let resources = s.resource_types().count();
        let data = s.data_source_types().count();
        assert!(resources >= 1500, "{}: {resources} resource types", s.provider_version());
        assert!(data >= 600, "{}: {data} data sources", s.provider_version());
    }
    assert_eq!(v5().resource_types().count(), 1526);
    assert_eq!(v6().resource_types().count(), 1581);
    assert!(v6().data_source("aws_caller_identity").is_some());
}

#[test]
fn versioning_configuration_is_a_block_of_the_split_resource_not_of_the_bucket() {
    for s in both() {
        let bucket = s.resource("aws_s3_bucket").unwrap();
        assert!(bucket.block("versioning_configuration").is_none());
        assert!(bucket.argument("versioning_configuration").is_none());
        // The bucket's own (deprecated) inline block is still there.
        assert_eq!(bucket.block("versioning").unwrap().max_items(), Some(1));

        let split = s.resource("aws_s3_bucket_versioning").unwrap();
        let block = split.block("versioning_configuration").unwrap();
        assert_eq!(block.nesting(), Nesting::List);
        assert_eq!((block.min_items(), block.max_items()), (1, Some(1)));
        assert!(block.body().argument("status").unwrap().is_required());
        assert!(split.argument("bucket").unwrap().is_required());

        let err = s.check_body("aws_s3_bucket", &[Step::Block("versioning_configuration")]).unwrap_err();
        match &err {
            SchemaError::OtherResourceType { owners, .. } => {
                assert_eq!(owners, &["aws_s3_bucket_versioning".to_string()]);
            }
            other => panic!("expected OtherResourceType, got {other:?}"),
        }
        assert!(err.to_string().contains("`aws_s3_bucket_versioning`"), "{err}");
        s.check_body("aws_s3_bucket_versioning", &[Step::Block("versioning_configuration"), Step::Attribute("status")])
            .unwrap();
        assert!(matches!(
            s.check_body("aws_s3_bucket_versioning", &[Step::Attribute("versioning_configuration")]),
            Err(SchemaError::BlockAsAttribute { .. })
        ));
        assert!(matches!(
            s.check_body(
                "aws_s3_bucket_versioning",
                &[Step::Block("versioning_configuration"), Step::Attribute("enabled")]
            ),
            Err(SchemaError::UnknownArgument { path, .. }) if path == "versioning_configuration.enabled"
        ));
    }
}

#[test]
fn security_group_ingress_and_the_rule_resources() {
    for s in both() {
        let sg = s.resource("aws_security_group").unwrap();
        // `ingress` is an SDKv2 "attribute as blocks": a set of objects written as blocks.
        let ingress = sg.argument("ingress").unwrap();
        assert_eq!(ingress.value_type(), &ValueType::Set(Box::new(ValueType::Object)));
        assert!(ingress.takes_block_syntax());
        assert_eq!(ingress.fields().unwrap().argument("from_port").unwrap().value_type(), &ValueType::Number);
        s.check_body("aws_security_group", &[Step::Block("ingress"), Step::Attribute("from_port")]).unwrap();
        s.check_body("aws_security_group", &[Step::Attribute("ingress")]).unwrap();
        assert!(matches!(
            s.check_body("aws_security_group", &[Step::Block("ingress"), Step::Attribute("port")]),
            Err(SchemaError::UnknownArgument { .. })
        ));

        let rule = s.resource("aws_security_group_rule").unwrap();
        assert!(rule.argument("from_port").unwrap().is_required());
        assert!(rule.argument("security_group_id").unwrap().is_required());
        assert_eq!(rule.argument("type").unwrap().value_type(), &ValueType::String);
        assert!(rule.block("ingress").is_none() && rule.argument("ingress").is_none());

        let v = s.resource("aws_vpc_security_group_ingress_rule").unwrap();
        assert!(v.argument("security_group_id").is_some());
        assert!(v.argument("cidr_ipv4").is_some());
        assert!(v.is_computed_only("security_group_rule_id"));
    }
}

#[test]
fn computed_only_attributes_are_not_arguments() {
    for s in both() {
        let instance = s.resource("aws_instance").unwrap();
        assert!(instance.argument("arn").is_none());
        assert!(instance.is_computed_only("arn"));
        assert!(instance.is_computed_only("public_ip"));
        assert!(matches!(
            s.check_body("aws_instance", &[Step::Attribute("arn")]),
            Err(SchemaError::ComputedOnly { path, .. }) if path == "arn"
        ));
        let err = s.check_body("aws_instance", &[Step::Attribute("arn")]).unwrap_err();
        assert_eq!(err.to_string(), "`arn` of `aws_instance` is computed by the provider and cannot be set");
        s.check_body("aws_instance", &[Step::Attribute("instance_type")]).unwrap();
        // `tags` is a map: its keys are the user's.
        s.check_path("aws_instance", &AttrPath::parse("tags[\"Name\"]").unwrap()).unwrap();
        assert!(matches!(
            s.check_body("aws_instance", &[Step::Block("tags")]),
            Err(SchemaError::AttributeAsBlock { value_type, .. }) if value_type == "map(string)"
        ));
        assert!(matches!(
            s.check_body("aws_instance", &[Step::Attribute("ami"), Step::Attribute("id")]),
            Err(SchemaError::NoMembers { .. })
        ));
    }
}

#[test]
fn sqs_queue_encryption_arguments() {
    for s in both() {
        let q = s.resource("aws_sqs_queue").unwrap();
        let sse = q.argument("sqs_managed_sse_enabled").unwrap();
        assert_eq!(sse.value_type(), &ValueType::Bool);
        assert_eq!(sse.mode(), Mode::OptionalComputed);
        assert!(q.argument("kms_master_key_id").is_some());
        assert!(q.is_computed_only("arn") || q.argument("arn").is_none());
        assert!(ValueType::Bool.admits(&serde_json::json!(false)));
        assert!(ValueType::Bool.admits(&serde_json::json!("true")));
        assert!(!ValueType::Bool.admits(&serde_json::json!([true])));
    }
}

#[test]
fn lookup_answers_with_what_is_there() {
    let s = v6();
    match s.lookup("aws_s3_bucket_versioning", &[Step::Block("versioning_configuration")]).unwrap() {
        Found::Block(b) => assert_eq!(b.max_items(), Some(1)),
        other => panic!("{other:?}"),
    }
    match s.lookup("aws_sqs_queue", &[Step::Attribute("sqs_managed_sse_enabled")]).unwrap() {
        Found::Argument(a) => {
            assert!(a.value_type().admits(&serde_json::json!(false)));
            assert!(!a.value_type().admits(&serde_json::json!({"on": true})));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.lookup("aws_instance", &[Step::Attribute("count")]), Ok(Found::Meta)));
    assert!(matches!(
        s.lookup("aws_instance", &[Step::Block("lifecycle"), Step::Attribute("ignore_changes")]),
        Ok(Found::Meta)
    ));
    assert!(matches!(
        s.lookup("aws_instance", &[Step::Attribute("lifecycle")]),
        Err(SchemaError::BlockAsAttribute { .. })
    ));
    assert!(matches!(
        s.lookup("aws_instance", &[Step::Attribute("tags"), Step::Attribute("Name")]),
        Ok(Found::Free(_))
    ));
    assert!(matches!(s.lookup("aws_instance", &[]), Ok(Found::Body(_))));
    assert!(matches!(
        s.lookup_data("aws_iam_policy_document", &[Step::Block("statement"), Step::Attribute("actions")]),
        Ok(Found::Argument(_))
    ));
    assert!(matches!(
        s.lookup_data("aws_iam_policy_document", &[Step::Block("statement"), Step::Attribute("action")]),
        Err(SchemaError::UnknownArgument { .. })
    ));

    let path = |t: &str| AttrPath::parse(t).unwrap();
    s.check_path("aws_s3_bucket_versioning", &path("versioning_configuration.status")).unwrap();
    s.check_path("aws_security_group", &path("ingress[0].from_port")).unwrap();
    s.check_path("aws_lb_listener", &path("default_action[0].forward.target_group[1].arn")).unwrap();
    assert!(matches!(
        s.check_path("aws_s3_bucket", &path("versioning_configuration.status")),
        Err(SchemaError::OtherResourceType { .. })
    ));
    assert!(matches!(s.check_path("aws_instance", &path("arn")), Err(SchemaError::ComputedOnly { .. })));
}

#[test]
fn differences_between_5_and_6() {
    // `aws_eip.vpc` was removed in 6.0 (use `domain = "vpc"`).
    assert_eq!(v5().resource("aws_eip").unwrap().argument("vpc").unwrap().value_type(), &ValueType::Bool);
    assert!(v6().resource("aws_eip").unwrap().argument("vpc").is_none());
    assert!(matches!(v6().check_body("aws_eip", &[Step::Attribute("vpc")]), Err(SchemaError::UnknownArgument { .. })));
    assert!(v6().resource("aws_eip").unwrap().argument("domain").is_some());
    // `aws_instance.cpu_core_count` was removed in 6.0 (use `cpu_options`).
    assert!(v5().resource("aws_instance").unwrap().argument("cpu_core_count").is_some());
    assert!(v6().resource("aws_instance").unwrap().argument("cpu_core_count").is_none());
    // 6.0 added `region` to every regional resource.
    assert!(v5().resource("aws_sqs_queue").unwrap().argument("region").is_none());
    assert!(v6().resource("aws_sqs_queue").unwrap().argument("region").is_some());
    // OpsWorks resources were removed in 6.0.
    assert!(v5().resource("aws_opsworks_stack").is_some());
    assert!(v6().resource("aws_opsworks_stack").is_none());
    assert!(matches!(
        v6().check_body("aws_opsworks_stack", &[Step::Attribute("name")]),
        Err(SchemaError::UnknownResourceType { .. })
    ));
}

#[test]
fn selection_by_constraint_and_lock() {
    let pick = |c: Option<&str>, l: Option<&str>| {
        let (s, fit) = Schema::select(c, l).unwrap();
        (s.provider_version().to_string(), fit)
    };
    assert_eq!(Schema::for_constraint("~> 5.0").unwrap().provider_version(), "5.100.0");
    assert_eq!(Schema::for_constraint(">= 5.0").unwrap().provider_version(), "6.25.0");
    assert_eq!(Schema::for_constraint(">= 4.0, < 6.0").unwrap().provider_version(), "5.100.0");
    assert_eq!(Schema::for_constraint("~> 6.0").unwrap().provider_version(), "6.25.0");
    assert!(matches!(Schema::for_constraint("~> 5.31.0"), Err(SchemaError::NoVersion { .. })));
    assert!(matches!(Schema::for_constraint("about five"), Err(SchemaError::BadConstraint { .. })));

    assert_eq!(pick(None, None), ("6.25.0".into(), Fit::Newest));
    assert_eq!(pick(Some("~> 5.0"), None), ("5.100.0".into(), Fit::Exact));
    assert_eq!(pick(Some("~> 5.31.0"), None), ("5.100.0".into(), Fit::Nearest));
    assert_eq!(pick(Some("~> 4.0"), None), ("5.100.0".into(), Fit::Nearest));
    assert_eq!(pick(Some("~> 5.0"), Some("5.100.0")), ("5.100.0".into(), Fit::Exact));
    assert_eq!(pick(Some("~> 5.0"), Some("5.31.0")), ("5.100.0".into(), Fit::Nearest));
    assert_eq!(pick(None, Some("6.2.0")), ("6.25.0".into(), Fit::Nearest));
    assert_eq!(pick(Some("< 5.0"), None), ("5.100.0".into(), Fit::Nearest));
    assert_eq!(pick(Some(">= 7.0"), None), ("6.25.0".into(), Fit::Nearest));
}

// ---------- the corpus projects ----------

fn label(l: &BlockLabel) -> &str {
    match l {
        BlockLabel::Ident(i) => i.as_str(),
        BlockLabel::String(s) => s.as_str(),
    }
}

/// The problems the schema finds in the `resource` blocks of parsed files, with how many resource
/// types and paths it checked.
fn problems_in(
    schema: &Schema,
    project: &str,
    files: &[(String, Body)],
    types: &mut std::collections::BTreeSet<String>,
    paths_checked: &mut usize,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (file, body) in files {
        for block in body.get_blocks("resource") {
            let Some(rtype) = block.labels.first().map(label) else { continue };
            let rname = block.labels.get(1).map(label).unwrap_or("?");
            if !rtype.starts_with("aws_") {
                continue;
            }
            types.insert(rtype.to_string());
            if schema.resource(rtype).is_none() {
                problems
                    .push(format!("{project}/{file}: resource type {rtype} is not in {}", schema.provider_version()));
                continue;
            }
            let paths = paths(&block.body);
            // Below a path that failed, its members fail for the same reason: one report each.
            let mut failed: Vec<Vec<Step<'_>>> = Vec::new();
            for path in paths {
                if failed.iter().any(|f| path.starts_with(f)) {
                    continue;
                }
                *paths_checked += 1;
                if let Err(e) = schema.check_body(rtype, &path) {
                    problems.push(format!("{project}/{file}: {rtype}.{rname} {}: {e}", show(&path)));
                    failed.push(path);
                }
            }
        }
    }
    problems
}

/// A corpus project's name, `required_providers` constraint and parsed `.tf` files.
type Project = (String, Option<String>, Vec<(String, Body)>);

/// Each corpus project.
fn corpus() -> Vec<Project> {
    let mut out = Vec::new();
    for project in corpus_projects() {
        let repo = Repo::load(&project).unwrap();
        let mut parsed = Vec::new();
        for (file, text) in repo.files() {
            if file.extension().is_none_or(|e| e != "tf") {
                continue;
            }
            let body: Body = text.parse().unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            parsed.push((file.display().to_string(), body));
        }
        let constraint = required_aws_version(parsed.iter().filter(|(f, _)| !f.contains("modules/")).map(|(_, b)| b));
        let name = project.file_name().unwrap().to_string_lossy().to_string();
        out.push((name, constraint, parsed));
    }
    out
}

#[test]
fn every_corpus_resource_block_passes_the_schema() {
    let mut problems = Vec::new();
    let mut types = std::collections::BTreeSet::new();
    let mut paths = 0usize;
    for (name, constraint, files) in corpus() {
        let (schema, fit) = Schema::select(constraint.as_deref(), None).unwrap();
        eprintln!("{name}: required {constraint:?}, checked against {} ({fit:?})", schema.provider_version());
        problems.extend(problems_in(schema, &name, &files, &mut types, &mut paths));
    }
    eprintln!("{} resource types, {paths} paths", types.len());
    assert!(types.len() >= 30, "{types:?}");
    assert!(paths >= 300, "{paths}");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The corpus is written for 5.x; under 6.x it must hold too (nothing it uses was removed).
#[test]
fn the_corpus_also_passes_the_6x_schema() {
    let mut problems = Vec::new();
    let (mut types, mut paths) = (std::collections::BTreeSet::new(), 0usize);
    for (name, _, files) in corpus() {
        problems.extend(problems_in(v6(), &name, &files, &mut types, &mut paths));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The corpus check finds what issue 20 saw go wrong, so its silence on the corpus means something.
#[test]
fn the_corpus_check_finds_invalid_blocks() {
    let text = r#"
resource "aws_s3_bucket" "b" {
  bucket = "x"
  versioning_configuration {
    status = "Enabled"
  }
  lifecycle {
    prevent_destroy = true
  }
}
resource "aws_instance" "i" {
  count         = 2
  ami           = "ami-1"
  instance_type = "t3.micro"
  arn           = "arn:aws:ec2:::instance/i-1"
  tags {
    Name = "x"
  }
  dynamic "ebs_block_device" {
    for_each = []
    content {
      device_name = "/dev/sdb"
      size_gb     = 10
    }
  }
}
resource "aws_eip" "e" {
  vpc = true
}
resource "aws_made_up" "m" {}
"#;
    let body: Body = text.parse().unwrap();
    let files = vec![("main.tf".to_string(), body)];
    let (mut types, mut paths) = (std::collections::BTreeSet::new(), 0usize);
    let found = problems_in(v5(), "synthetic", &files, &mut types, &mut paths);
    let expected = [
        "aws_s3_bucket.b versioning_configuration{}: `versioning_configuration` is not an argument or block of `aws_s3_bucket` but of `aws_s3_bucket_versioning`",
        "aws_instance.i arn: `arn` of `aws_instance` is computed by the provider",
        "aws_instance.i tags{}: `tags` of `aws_instance` is an attribute of type map(string), written as a block",
        "aws_instance.i ebs_block_device{}.size_gb: `ebs_block_device.size_gb` is not an argument or block of `aws_instance`",
        "resource type aws_made_up is not in 5.100.0",
    ];
    for e in expected {
        assert!(found.iter().any(|f| f.contains(e)), "missing {e:?} in:\n{}", found.join("\n"));
    }
    assert_eq!(found.len(), expected.len(), "{}", found.join("\n"));
    let under6 = problems_in(v6(), "synthetic", &files, &mut types, &mut paths);
    assert!(under6.iter().any(|f| f.contains("aws_eip.e vpc: `vpc` is not an argument or block of `aws_eip`")));
}
