//! HCL edits as before/after text.

use driftback_terraform::edit::{self, BlockSel};
use driftback_terraform::{AttrPath, AttrValue, BlockSpec};
use serde_json::json;

const MAIN: &str = r#"# Web tier
resource "aws_instance" "web" {
  ami           = "ami-0abc" # pinned
  instance_type = "t3.medium"

  tags = {
    Name = "web"
    Team = "platform"
  }

  root_block_device {
    volume_size = 20
  }
}

resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
}
"#;

fn web() -> BlockSel {
    BlockSel::resource("aws_instance", "web")
}

fn set(text: &str, sel: &BlockSel, path: &str, value: serde_json::Value) -> String {
    edit::set(text, Some(sel), &AttrPath::parse(path).unwrap(), &AttrValue::Literal(value)).unwrap()
}

/// `before` with `from` replaced by `to`, exactly once.
fn replaced(before: &str, from: &str, to: &str) -> String {
    assert_eq!(before.matches(from).count(), 1, "{from:?} must occur once");
    before.replacen(from, to, 1)
}

#[test]
fn replacing_a_literal_keeps_comments_and_alignment() {
    let out = set(MAIN, &web(), "instance_type", json!("t3.large"));
    assert_eq!(out, replaced(MAIN, "\"t3.medium\"", "\"t3.large\""));
    let out = set(MAIN, &web(), "ami", json!("ami-0def"));
    assert_eq!(out, replaced(MAIN, "\"ami-0abc\" # pinned", "\"ami-0def\" # pinned"));
}

#[test]
fn new_attributes_are_indented_and_aligned_like_their_neighbours() {
    let out = set(MAIN, &web(), "monitoring", json!(true));
    assert_eq!(out, replaced(MAIN, "\"t3.medium\"\n", "\"t3.medium\"\n  monitoring    = true\n"));
    let out = set(MAIN, &web(), "disable_api_termination", json!(true));
    assert_eq!(out, replaced(MAIN, "\"t3.medium\"\n", "\"t3.medium\"\n  disable_api_termination = true\n"));
}

#[test]
fn map_entries_are_replaced_added_and_removed() {
    let out = set(MAIN, &web(), "tags.Team", json!("data"));
    assert_eq!(out, replaced(MAIN, "Team = \"platform\"", "Team = \"data\""));
    let out = set(MAIN, &web(), "tags[\"cost center\"]", json!("42"));
    assert_eq!(
        out,
        replaced(MAIN, "    Team = \"platform\"\n", "    Team = \"platform\"\n    \"cost center\" = \"42\"\n")
    );
    let out = edit::remove(MAIN, Some(&web()), &AttrPath::parse("tags.Team").unwrap()).unwrap();
    assert_eq!(out, replaced(MAIN, "    Team = \"platform\"\n", ""));
    let unchanged = edit::remove(MAIN, Some(&web()), &AttrPath::parse("tags.Nope").unwrap()).unwrap();
    assert_eq!(unchanged, MAIN);
}

#[test]
fn inline_objects_and_missing_maps() {
    let text =
        "resource \"aws_vpc\" \"main\" {\n  cidr_block = \"10.0.0.0/16\"\n  tags       = { Name = \"main\" }\n}\n";
    let sel = BlockSel::resource("aws_vpc", "main");
    let out = set(text, &sel, "tags.Env", json!("prod"));
    assert_eq!(out, replaced(text, "{ Name = \"main\" }", "{ Name = \"main\", Env = \"prod\" }"));
    let out = edit::remove(text, Some(&sel), &AttrPath::parse("tags.Name").unwrap()).unwrap();
    assert_eq!(out, replaced(text, "{ Name = \"main\" }", "{  }"));

    let bare = "resource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"acme-logs\"\n}\n";
    let sel = BlockSel::resource("aws_s3_bucket", "logs");
    let out = set(bare, &sel, "tags[\"Owner\"]", json!("ops"));
    assert_eq!(
        out,
        "resource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"acme-logs\"\n  tags   = {\n    Owner = \"ops\"\n  }\n}\n"
    );
}

#[test]
fn nested_blocks_are_navigated_and_created() {
    let out = set(MAIN, &web(), "root_block_device.volume_size", json!(50));
    assert_eq!(out, replaced(MAIN, "volume_size = 20", "volume_size = 50"));
    let sel = BlockSel::resource("aws_s3_bucket", "logs");
    let out = set(MAIN, &sel, "versioning.enabled", json!(true));
    assert_eq!(
        out,
        replaced(
            MAIN,
            "  bucket = \"acme-logs\"\n}",
            "  bucket = \"acme-logs\"\n\n  versioning {\n    enabled = true\n  }\n}"
        )
    );
    let out = set(MAIN, &web(), "metadata_options.http_tokens", json!("required"));
    assert!(out.contains("  metadata_options {\n    http_tokens = \"required\"\n  }\n}"), "{out}");
}

#[test]
fn blocks_are_added_and_removed() {
    let text = r#"resource "aws_security_group" "web" {
  name = "web"

  ingress {
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
"#;
    let sel = BlockSel::resource("aws_security_group", "web");
    let spec = BlockSpec {
        attrs: vec![
            ("from_port".into(), AttrValue::Literal(json!(22))),
            ("to_port".into(), AttrValue::Literal(json!(22))),
            ("protocol".into(), AttrValue::Literal(json!("tcp"))),
            ("cidr_blocks".into(), AttrValue::Literal(json!(["10.0.0.0/8"]))),
        ],
        blocks: vec![],
    };
    let out = edit::add_nested_block(text, &sel, "ingress", &spec).unwrap();
    let added = "\n  ingress {\n    from_port   = 22\n    to_port     = 22\n    protocol    = \"tcp\"\n    cidr_blocks = [\"10.0.0.0/8\"]\n  }\n";
    assert_eq!(out, replaced(text, "  }\n}", &format!("  }}\n{added}}}")));
    let back = edit::remove(&out, Some(&sel), &AttrPath::parse("ingress[1]").unwrap()).unwrap();
    assert_eq!(back, replaced(text, "  }\n}", "  }\n\n}"));
    let none = edit::remove(text, Some(&sel), &AttrPath::parse("ingress[0]").unwrap()).unwrap();
    assert_eq!(none, "resource \"aws_security_group\" \"web\" {\n  name = \"web\"\n\n}\n");
}

#[test]
fn top_level_blocks_are_appended_and_removed() {
    let spec = BlockSpec { attrs: vec![("bucket".into(), AttrValue::Literal(json!("acme-reports")))], blocks: vec![] };
    let out = edit::append_block(MAIN, "resource", &["aws_s3_bucket", "reports"], &spec).unwrap();
    assert_eq!(out, format!("{MAIN}\nresource \"aws_s3_bucket\" \"reports\" {{\n  bucket = \"acme-reports\"\n}}\n"));
    let back =
        edit::remove_block(&out, edit::block_index(&out, &BlockSel::resource("aws_s3_bucket", "reports")).unwrap())
            .unwrap();
    assert_eq!(back, MAIN);
    let without_web = edit::remove_block(MAIN, edit::block_index(MAIN, &web()).unwrap()).unwrap();
    assert_eq!(without_web, "resource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"acme-logs\"\n}\n");
}

#[test]
fn ignore_changes_is_added_once() {
    let text = "resource \"aws_autoscaling_group\" \"web\" {\n  desired_capacity = 2\n}\n";
    let sel = BlockSel::resource("aws_autoscaling_group", "web");
    let out = edit::add_ignore_changes(text, &sel, "desired_capacity").unwrap();
    assert_eq!(
        out,
        "resource \"aws_autoscaling_group\" \"web\" {\n  desired_capacity = 2\n\n  lifecycle {\n    ignore_changes = [desired_capacity]\n  }\n}\n"
    );
    assert_eq!(edit::add_ignore_changes(&out, &sel, "desired_capacity").unwrap(), out);
    let more = edit::add_ignore_changes(&out, &sel, "min_size").unwrap();
    assert!(more.contains("ignore_changes = [desired_capacity, min_size]"), "{more}");
}

#[test]
fn values_from_expressions_are_reported_not_overwritten() {
    let text = "resource \"aws_instance\" \"web\" {\n  instance_type = var.type\n  tags = merge(local.tags, { A = \"b\" })\n}\n";
    let sel = BlockSel::resource("aws_instance", "web");
    let err =
        edit::set(text, Some(&sel), &AttrPath::parse("tags.X").unwrap(), &AttrValue::Literal(json!("y"))).unwrap_err();
    assert!(matches!(err, edit::EditError::NotLiteral { .. }), "{err}");
    assert_eq!(
        edit::find(text, Some(&sel), &AttrPath::parse("instance_type").unwrap()).unwrap().map(|r| &text[r]),
        Some("var.type")
    );
}

#[test]
fn tfvars_edits_at_top_level() {
    let text = "# prod\ninstance_type = \"t3.small\"\ncount_web     = 2\n";
    let out = edit::set(text, None, &AttrPath::parse("instance_type").unwrap(), &AttrValue::Literal(json!("t3.large")))
        .unwrap();
    assert_eq!(out, replaced(text, "t3.small", "t3.large"));
    let out =
        edit::set(text, None, &AttrPath::parse("region").unwrap(), &AttrValue::Literal(json!("eu-west-1"))).unwrap();
    assert_eq!(out, format!("{text}region        = \"eu-west-1\"\n"));
}

#[test]
fn hostile_values_stay_data() {
    let out = set(MAIN, &web(), "tags.Note", json!("${file(\"/etc/passwd\")} \"} evil = {\""));
    let body: hcl::Body = hcl::from_str(&out).unwrap();
    let value: serde_json::Value = hcl::from_body(body).unwrap();
    let note = &value["resource"]["aws_instance"]["web"]["tags"]["Note"];
    assert_eq!(note, &json!("${file(\"/etc/passwd\")} \"} evil = {\""));
}
