//! Values that must never be written into code: redacted by CloudTrail or secret by the provider's
//! schema; held for a person.

use serde_json::Value;

use driftback_terraform::{Address, AttrPath};

use super::model::{PlanError, REDACTED, SecretField};
use super::planner::Planner;

impl Planner<'_> {
    /// Whether `value` must never be written at `path` of `address` (a redacted value, a secret):
    /// then it is held in the plan's `secrets` and the caller leaves the field out.
    pub(super) fn held_secret(&mut self, address: &Address, path: &AttrPath, value: &Value) -> bool {
        match check_secret(&address.rtype, path, value) {
            Ok(()) => false,
            Err(e) => {
                let held = SecretField { address: address.clone(), path: path.clone(), reason: e.to_string() };
                if !self.plan.secrets.contains(&held) {
                    self.plan.secrets.push(held);
                }
                true
            }
        }
    }
}

/// Whether `value`, to be written at `path` of a `resource_type` resource, is a secret: an error
/// naming where when it is. Secrecy is decided by the two sources that know it, never by how an
/// attribute is named (`metadata_options.http_tokens` is the IMDSv2 setting, not a token):
/// - CloudTrail hid the value ([`REDACTED`]), anywhere in it;
/// - the provider's schema marks the attribute sensitive (`aws_db_instance.password`,
///   `aws_ssm_parameter.value`), or an attribute it lies inside, or one inside the value (a `user`
///   block of `aws_mq_broker` carries a `password`), in any bundled provider version;
/// - one narrow rule for documents, [`secret_inside`].
pub(super) fn check_secret(resource_type: &str, path: &AttrPath, value: &Value) -> Result<(), PlanError> {
    if contains_redacted(value) {
        return Err(PlanError::Secret { path: path.to_string() });
    }
    if let Some(inner) = sensitive_value(resource_type, path, value) {
        return Err(PlanError::Secret { path: inner });
    }
    if let Some(inner) = secret_inside(value) {
        return Err(PlanError::Secret { path: format!("{path} ({inner})") });
    }
    Ok(())
}

/// Where `value` holds something at an attribute the provider marks sensitive: `path` itself, or
/// `path.rest` for a sensitive member inside it. Any bundled provider version's mark counts (the
/// value is a secret whatever provider the repository runs). Empty values (null, "", [], {}) are
/// not secrets: clearing a password writes nothing secret. If the bundled schema cannot be read,
/// every value is held (the binary's own data is broken; nothing is guessed).
fn sensitive_value(resource_type: &str, path: &AttrPath, value: &Value) -> Option<String> {
    for version in driftback_terraform::Schema::bundled_versions() {
        let Ok(schema) = driftback_terraform::Schema::version(version) else {
            return holds_something(value).then(|| path.to_string());
        };
        for rest in schema.sensitive_within(resource_type, path) {
            let mut found = Vec::new();
            values_at(value, rest, &mut found);
            if found.iter().any(|v| holds_something(v)) {
                return Some(match rest.is_empty() {
                    true => path.to_string(),
                    false => format!("{path}.{}", rest.join(".")),
                });
            }
        }
    }
    None
}

/// Whether a value carries anything: not null, `""`, or a list or object of only those.
fn holds_something(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => items.iter().any(holds_something),
        Value::Object(members) => members.values().any(holds_something),
        _ => true,
    }
}

/// The values at the names `rest` below `value`, through the elements of lists and sets (a block
/// written several times); `value` itself when `rest` is empty.
fn values_at<'v>(value: &'v Value, rest: &[String], out: &mut Vec<&'v Value>) {
    match (value, rest.split_first()) {
        (_, None) => out.push(value),
        (Value::Array(items), Some(_)) => items.iter().for_each(|i| values_at(i, rest, out)),
        (Value::Object(members), Some((name, below))) => {
            if let Some(member) = members.get(name) {
                values_at(member, below, out);
            }
        }
        _ => {}
    }
}

/// The one rule that reads a name: an environment variable given in clear inside a document (a
/// container definition's `"environment": [{"name": "DB_PASSWORD", "value": "..."}]`, which AWS
/// Batch's and CodeBuild's documents share) whose name says it is a credential. Answers the name.
///
/// Why a name here and nowhere else: the document is one attribute to the provider
/// (`container_definitions` is a JSON string it does not mark sensitive), and ECS does not treat
/// environment values as sensitive, so CloudTrail logs them in clear; neither source can speak. The
/// name is the user's own label for the value, not a schema name whose meaning is known: `DB_PASSWORD`
/// is how people say "this is a password", and AWS's guidance for such values is the definition's
/// `secrets` (a Secrets Manager or Parameter Store reference), which this rule does not touch.
/// Writing one into code would copy a live credential into the repository's history for good;
/// holding a harmless one costs a person one look. The name is read by whole words
/// ([`credential_name`]): `PWD` (a working directory) and `TOKENIZER_PATH` are not credentials.
/// An entry with a `type` other than `PLAINTEXT` (CodeBuild's `PARAMETER_STORE`, `SECRETS_MANAGER`)
/// holds a reference, not the value.
fn secret_inside(value: &Value) -> Option<String> {
    match value {
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            let environment =
                matches!(key.to_ascii_lowercase().replace('_', "").as_str(), "environment" | "environmentvariables");
            let named = |entry: &Value| {
                let entry = entry.as_object()?;
                let name = entry.get("name")?.as_str()?;
                let given = entry.get("value")?.as_str().is_some_and(|v| !v.is_empty());
                let plain =
                    entry.get("type").and_then(Value::as_str).is_none_or(|t| t.eq_ignore_ascii_case("PLAINTEXT"));
                (given && plain && credential_name(name)).then(|| name.to_string())
            };
            match (environment, member) {
                (true, Value::Array(entries)) => entries.iter().find_map(named).or_else(|| secret_inside(member)),
                _ => secret_inside(member),
            }
        }),
        Value::Array(items) => items.iter().find_map(secret_inside),
        // A JSON document given as text.
        Value::String(text) if text.trim_start().starts_with(['{', '[']) => {
            serde_json::from_str::<Value>(text).ok().as_ref().and_then(secret_inside)
        }
        _ => None,
    }
}

/// Whether an environment variable's name says it holds a credential. The name is read as words
/// (split at `_`, `-`, `.` and lower-to-upper case changes), and its last word says what the value
/// is: PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL(S), APIKEY, or KEY after PRIVATE,
/// API, SECRET, SIGNING or ENCRYPTION (`SSH_PRIVATE_KEY`, `AWS_SECRET_ACCESS_KEY`). A name about a
/// credential that is not one is not: `SECRET_ARN`, `PASSWORD_MIN_LENGTH`, `DB_PASSWORD_FILE` (a
/// path), `AWS_ACCESS_KEY_ID`, `KMS_KEY`, and `PWD` or `TOKENIZER_PATH` share no word.
fn credential_name(name: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = matches!(c, '_' | '-' | '.') || (c.is_ascii_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_uppercase());
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    let Some((last, before)) = words.split_last() else { return false };
    let credential = ["PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "CREDENTIAL", "CREDENTIALS", "APIKEY"];
    credential.contains(&last.as_str())
        || (last == "KEY"
            && before.iter().any(|w| matches!(w.as_str(), "PRIVATE" | "API" | "SECRET" | "SIGNING" | "ENCRYPTION")))
}

fn contains_redacted(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(REDACTED),
        Value::Array(items) => items.iter().any(contains_redacted),
        Value::Object(map) => map.values().any(contains_redacted),
        _ => false,
    }
}

#[cfg(test)]
mod secret_tests {
    use serde_json::json;

    use super::*;

    fn secret(resource_type: &str, path: &str, value: Value) -> Option<String> {
        match check_secret(resource_type, &AttrPath::parse(path).expect(path), &value) {
            Ok(()) => None,
            Err(PlanError::Secret { path }) => Some(path),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_provider_schema_decides_which_attributes_are_secrets() {
        let held = |t: &str, p: &str, v: Value| secret(t, p, v).is_some();
        assert!(held("aws_db_instance", "password", json!("hunter2-hunter2")));
        assert!(held("aws_ssm_parameter", "value", json!("on")));
        assert!(held("aws_rds_cluster", "master_password", json!("x")));
        assert!(held("aws_elasticache_replication_group", "auth_token", json!("a-long-token-value")));
        assert!(held("aws_vpn_connection", "tunnel1_preshared_key", json!("psk")));
        // Sensitive though nothing in the name says so.
        assert!(held("aws_api_gateway_api_key", "value", json!("k")));
        assert!(held("aws_transfer_server", "host_key", json!("-----BEGIN")));
        // A member of a sensitive map.
        assert!(held("aws_glue_connection", r#"connection_properties["PASSWORD"]"#, json!("p")));
        // Named like secrets; not secrets.
        assert!(!held("aws_instance", "metadata_options.http_tokens", json!("optional")));
        assert!(!held("aws_instance", "metadata_options[0].http_tokens", json!("required")));
        assert!(!held("aws_launch_template", "metadata_options.http_tokens", json!("optional")));
        assert!(!held("aws_cognito_user_pool_client", "access_token_validity", json!(60)));
        assert!(!held("aws_db_instance", "manage_master_user_password", json!(true)));
        assert!(!held("aws_secretsmanager_secret", "name", json!("prod/db/password")));
        assert!(!held("aws_secretsmanager_secret", "recovery_window_in_days", json!(7)));
        assert!(!held("aws_instance", r#"tags["api_token"]"#, json!("none")));
        assert!(!held("aws_lambda_function", r#"environment.variables["TOKEN_TTL"]"#, json!("60")));
        // Clearing a secret writes nothing secret.
        assert!(!held("aws_db_instance", "password", json!("")));
        assert!(!held("aws_db_instance", "password", Value::Null));
    }

    #[test]
    fn a_value_carrying_a_sensitive_member_is_held_at_that_member() {
        let user = json!([{"username": "admin", "password": "hunter2-hunter2", "console_access": true}]);
        assert_eq!(secret("aws_mq_broker", "user", user).as_deref(), Some("user.password"));
        assert_eq!(secret("aws_mq_broker", "user", json!([{"username": "admin", "groups": ["ops"]}])), None);
        assert_eq!(secret("aws_mq_broker", "user", json!([{"username": "admin", "password": ""}])), None);
        let options = json!({"master_user_options": {"master_user_name": "admin", "master_user_password": "pw"}});
        assert_eq!(
            secret("aws_opensearch_domain", "advanced_security_options", options).as_deref(),
            Some("advanced_security_options.master_user_options.master_user_password")
        );
        // A whole resource's values (a creation): its sensitive arguments among them.
        let props = json!({"USERNAME": "u", "PASSWORD": "p"});
        assert_eq!(
            secret("aws_glue_connection", "connection_properties", props).as_deref(),
            Some("connection_properties")
        );
    }

    #[test]
    fn a_value_cloudtrail_hid_is_held_wherever_it_is() {
        assert!(secret("aws_instance", r#"tags["Name"]"#, json!(REDACTED)).is_some());
        assert!(secret("aws_lambda_function", "environment.variables", json!({"A": "1", "KEY": REDACTED})).is_some());
        assert!(secret("aws_not_a_type", "anything", json!([{"x": REDACTED}])).is_some());
    }

    #[test]
    fn only_credential_named_environment_entries_in_clear_are_secrets_inside_documents() {
        let definitions = |environment: Value| {
            Value::String(json!([{"name": "api", "image": "api:1", "environment": environment}]).to_string())
        };
        let at = |v: Value| secret("aws_ecs_task_definition", "container_definitions", v);
        let held =
            at(definitions(json!([{"name": "LOG_LEVEL", "value": "info"}, {"name": "DB_PASSWORD", "value": "x"}])));
        assert_eq!(held.as_deref(), Some("container_definitions (DB_PASSWORD)"));
        // A name about a credential that is not one, and names that merely contain a word.
        for name in
            ["PWD", "TOKENIZER_PATH", "SECRET_ARN", "DB_PASSWORD_FILE", "PASSWORD_MIN_LENGTH", "AWS_ACCESS_KEY_ID"]
        {
            assert_eq!(at(definitions(json!([{"name": name, "value": "v"}]))), None, "{name}");
        }
        // The definition's `secrets` are references, a CodeBuild entry typed as one is too.
        let refs =
            json!([{"name": "api", "secrets": [{"name": "DB_PASSWORD", "valueFrom": "arn:aws:ssm:::parameter/db"}]}]);
        assert_eq!(at(refs), None);
        let codebuild = json!({"environmentVariables": [{"name": "GITHUB_TOKEN", "value": "/ci/github", "type": "PARAMETER_STORE"}]});
        assert_eq!(secret("aws_codebuild_project", "environment", codebuild), None);
        let plain = json!({"environmentVariables": [{"name": "GITHUB_TOKEN", "value": "ghp_x", "type": "PLAINTEXT"}]});
        assert!(secret("aws_codebuild_project", "environment", plain).is_some());
        // Members of other documents are names of things: a policy's condition key, a state machine's field.
        let policy = json!({"Statement": [{"Condition": {"StringEquals": {"secretsmanager:SecretId": "db"}}}]});
        assert_eq!(secret("aws_iam_policy", "policy", Value::String(policy.to_string())), None);
        assert_eq!(secret("aws_sfn_state_machine", "definition", json!({"States": {"A": {"apiToken": "t"}}})), None);
    }

    #[test]
    fn credential_names_are_read_by_their_last_word() {
        for name in ["DB_PASSWORD", "dbPassword", "STRIPE_API_KEY", "apiKey", "APIKEY", "GITHUB_TOKEN", "JWT_SECRET"] {
            assert!(credential_name(name), "{name}");
        }
        for name in ["SSH_PRIVATE_KEY", "AWS_SECRET_ACCESS_KEY", "signing-key", "db.passphrase", "GOOGLE_CREDENTIALS"] {
            assert!(credential_name(name), "{name}");
        }
        for name in ["PWD", "TOKENIZER_PATH", "HTTP_TOKENS", "KMS_KEY", "API_KEY_ID", "SECRET_NAME", "", "_"] {
            assert!(!credential_name(name), "{name}");
        }
    }
}
