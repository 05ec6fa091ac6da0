# Optional: the daemon as an ECS Fargate service. One task is enough for most accounts; more tasks
# share the queue and the knowledge base (Postgres, which leases each change set to one task) safely,
# each with its own working clone on its own ephemeral storage (docs/operations.md, "Replicas").

locals {
  ecs_count = var.create_ecs_service ? 1 : 0
  container_environment = merge(var.environment, {
    DRIFTBACK_FEED__QUEUE_URL = aws_sqs_queue.events.url
    DRIFTBACK_FEED__REGION    = split(":", aws_sqs_queue.events.arn)[3]
    # The accounts whose changes are reconciled: this one and the members that forward to it. A
    # record from any other account on the queue is bad input, never a change set.
    DRIFTBACK_FEED__ACCOUNTS = join(",", distinct(concat([split(":", aws_sqs_queue.events.arn)[4]], var.forwarding_account_ids)))
    DRIFTBACK_SERVE__LISTEN  = "0.0.0.0:9464"
    # The GitHub webhook on its own port, the one a load balancer's target group reaches.
    DRIFTBACK_SERVE__WEBHOOK_LISTEN = "0.0.0.0:9465"
    DRIFTBACK_LOG_FORMAT            = "json"
    }, var.trail_bucket_name == null ? {} : {
    # The queue carries the rule's envelopes and the trail bucket's notifications.
    DRIFTBACK_FEED__CARRIES       = "both"
    DRIFTBACK_FEED__TRAIL_BUCKETS = var.trail_bucket_name
  })
}

resource "aws_cloudwatch_log_group" "daemon" {
  #checkov:skip=CKV_AWS_158:Encrypted with CloudWatch's own key unless log_kms_key_arn names one; the logs hold no secrets
  #checkov:skip=CKV_AWS_338:Retention is the operator's (log_retention_days); the audit record is the knowledge base
  count = local.ecs_count

  kms_key_id        = var.log_kms_key_arn
  name              = "/ecs/${var.name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

data "aws_iam_policy_document" "execution_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

# The execution role starts the task: pulls the image, writes its logs, reads its secrets.
resource "aws_iam_role" "execution" {
  count = local.ecs_count

  name               = "${var.name}-execution"
  assume_role_policy = data.aws_iam_policy_document.execution_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "execution" {
  count = local.ecs_count

  role       = aws_iam_role.execution[0].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
}

data "aws_iam_policy_document" "execution_secrets" {
  count = var.create_ecs_service && length(var.secrets) > 0 ? 1 : 0

  statement {
    sid       = "ReadTheDaemonsSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = sort(values(var.secrets))
  }
}

resource "aws_iam_role_policy" "execution_secrets" {
  count = var.create_ecs_service && length(var.secrets) > 0 ? 1 : 0

  name   = "${var.name}-secrets"
  role   = aws_iam_role.execution[0].id
  policy = data.aws_iam_policy_document.execution_secrets[0].json
}

resource "aws_ecs_task_definition" "daemon" {
  count = local.ecs_count

  family                   = var.name
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory
  execution_role_arn       = aws_iam_role.execution[0].arn
  task_role_arn            = aws_iam_role.daemon.arn

  container_definitions = jsonencode([{
    name         = "driftback"
    image        = var.image
    essential    = true
    command      = ["serve"]
    portMappings = [{ containerPort = 9464, protocol = "tcp" }, { containerPort = 9465, protocol = "tcp" }]
    environment  = [for k in sort(keys(local.container_environment)) : { name = k, value = local.container_environment[k] }]
    secrets      = [for k in sort(keys(var.secrets)) : { name = k, valueFrom = var.secrets[k] }]
    healthCheck = {
      command  = ["CMD", "driftback", "probe", "--url", "http://127.0.0.1:9464/healthz"]
      interval = 30
      timeout  = 5
      retries  = 3
      # The listener binds once the first clone is made: ECS's longest grace (5 minutes).
      startPeriod = 300
    }
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.daemon[0].name
        awslogs-region        = split(":", aws_sqs_queue.events.arn)[3]
        awslogs-stream-prefix = "driftback"
      }
    }
    readonlyRootFilesystem = true
    mountPoints = [
      { sourceVolume = "work", containerPath = "/var/lib/driftback" },
      { sourceVolume = "tmp", containerPath = "/tmp" },
    ]
  }])

  volume {
    name = "work"
  }

  volume {
    name = "tmp"
  }

  tags = var.tags
}

resource "aws_ecs_service" "daemon" {
  count = local.ecs_count

  name            = var.name
  cluster         = var.ecs_cluster_arn
  task_definition = aws_ecs_task_definition.daemon[0].arn
  desired_count   = var.desired_count
  launch_type     = "FARGATE"

  # Each task has its own working clone: a new task starts before an old one stops.
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = var.security_group_ids
    assign_public_ip = false
  }

  lifecycle {
    precondition {
      condition     = var.ecs_cluster_arn != null && length(var.subnet_ids) > 0
      error_message = "create_ecs_service needs ecs_cluster_arn and subnet_ids."
    }
  }

  tags = var.tags
}
