# The daemon's identity: exactly the AWS calls driftback makes, on the resources it makes them on.
# crates/driftback/tests/deploy.rs checks these actions against the SDK operations the code calls.

data "aws_iam_policy_document" "assume" {
  dynamic "statement" {
    for_each = var.ecs_task_role || var.create_ecs_service ? [1] : []
    content {
      sid     = "EcsTasks"
      actions = ["sts:AssumeRole"]
      principals {
        type        = "Service"
        identifiers = ["ecs-tasks.amazonaws.com"]
      }
    }
  }

  dynamic "statement" {
    for_each = var.oidc_provider_arn == null ? [] : [var.oidc_provider_arn]
    content {
      sid     = "KubernetesServiceAccount"
      actions = ["sts:AssumeRoleWithWebIdentity"]
      principals {
        type        = "Federated"
        identifiers = [statement.value]
      }
      condition {
        test     = "StringEquals"
        variable = "${replace(statement.value, "/^arn:[^:]+:iam::[0-9]+:oidc-provider\\//", "")}:sub"
        values   = ["system:serviceaccount:${var.kubernetes_namespace}:${var.kubernetes_service_account}"]
      }
      condition {
        test     = "StringEquals"
        variable = "${replace(statement.value, "/^arn:[^:]+:iam::[0-9]+:oidc-provider\\//", "")}:aud"
        values   = ["sts.amazonaws.com"]
      }
    }
  }
}

resource "aws_iam_role" "daemon" {
  name               = var.name
  description        = "driftback serve: reads CloudTrail events from its queue, backfills from CloudTrail"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags

  lifecycle {
    precondition {
      condition     = var.ecs_task_role || var.create_ecs_service || var.oidc_provider_arn != null
      error_message = "Nobody could assume the daemon's role: set ecs_task_role, create_ecs_service or oidc_provider_arn."
    }
  }
}

data "aws_iam_policy_document" "daemon" {
  statement {
    sid = "ConsumeTheQueue"
    actions = [
      "sqs:ChangeMessageVisibility",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:ReceiveMessage",
    ]
    resources = [aws_sqs_queue.events.arn]
  }

  statement {
    # LookupEvents has no resource-level permissions: "*" is the only resource it accepts.
    sid       = "BackfillFromCloudTrail"
    actions   = ["cloudtrail:LookupEvents"]
    resources = ["*"]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "ReadTheEncryptedQueue"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }

  # The organisation trail's log files, named by the bucket's notifications: objects under the
  # trail's prefix only (digest files are skipped by their key, never fetched).
  dynamic "statement" {
    for_each = var.trail_bucket_name == null ? [] : [var.trail_bucket_name]
    content {
      sid       = "ReadTheTrailLogFiles"
      actions   = ["s3:GetObject"]
      resources = ["arn:${data.aws_partition.current.partition}:s3:::${statement.value}/${var.trail_prefix}*"]
    }
  }

  # A trail that encrypts its log files with SSE-KMS: S3 decrypts them for the daemon with this key.
  dynamic "statement" {
    for_each = var.trail_bucket_name == null || var.trail_kms_key_arn == null ? [] : [var.trail_kms_key_arn]
    content {
      sid       = "DecryptTheTrailLogFiles"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }

  # Terraform states in S3 buckets (the S3 backend): read the states, list the workspaces.
  dynamic "statement" {
    for_each = length(var.state_bucket_names) == 0 ? [] : [1]
    content {
      sid       = "ReadTerraformStates"
      actions   = ["s3:GetObject"]
      resources = [for bucket in var.state_bucket_names : "arn:${data.aws_partition.current.partition}:s3:::${bucket}/*"]
    }
  }

  dynamic "statement" {
    for_each = length(var.state_bucket_names) == 0 ? [] : [1]
    content {
      sid       = "ListTerraformWorkspaces"
      actions   = ["s3:ListBucket"]
      resources = [for bucket in var.state_bucket_names : "arn:${data.aws_partition.current.partition}:s3:::${bucket}"]
    }
  }

  # States encrypted with SSE-KMS under customer keys: S3 decrypts them for the daemon with these
  # keys, and only through S3.
  dynamic "statement" {
    for_each = var.state_kms_key_arns
    content {
      sid       = "DecryptTerraformState${statement.key}"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
      condition {
        test     = "StringLike"
        variable = "kms:ViaService"
        values   = ["s3.*.amazonaws.com"]
      }
    }
  }

  # The roles S3 backends name in `assume_role` (states kept in other accounts): assumed before
  # the state is read.
  dynamic "statement" {
    for_each = length(var.state_role_arns) == 0 ? [] : [1]
    content {
      sid       = "AssumeStateRoles"
      actions   = ["sts:AssumeRole"]
      resources = var.state_role_arns
    }
  }
}

resource "aws_iam_role_policy" "daemon" {
  name   = "${var.name}-daemon"
  role   = aws_iam_role.daemon.id
  policy = data.aws_iam_policy_document.daemon.json
}
