# Everything for the flat web stack lives in this one file, with literal
# values. The VPC and subnets are owned by the network team and referenced
# by id.

# ---------------------------------------------------------------------------
# Security groups
# ---------------------------------------------------------------------------

resource "aws_security_group" "web" {
  name        = "flat-web"
  description = "Web tier ingress"
  vpc_id      = "vpc-0a12b34c56d78e9f0"

  ingress {
    description = "HTTPS from anywhere"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }

  ingress {
    description = "HTTP from anywhere (redirects to HTTPS)"
    from_port   = 80
    to_port     = 80
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }

  ingress {
    description = "SSH from the office VPN"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/16"]
  }

  egress {
    description = "All outbound"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = {
    Name = "flat-web"
    Team = "platform"
  }
}

resource "aws_security_group" "db" {
  name        = "flat-db"
  description = "Postgres from the web tier"
  vpc_id      = "vpc-0a12b34c56d78e9f0"

  ingress {
    description     = "Postgres from web servers"
    from_port       = 5432
    to_port         = 5432
    protocol        = "tcp"
    security_groups = [aws_security_group.web.id]
  }

  tags = {
    Name = "flat-db"
    Team = "data"
  }
}

# ---------------------------------------------------------------------------
# Compute
# ---------------------------------------------------------------------------

resource "aws_instance" "web" {
  ami                     = "ami-0c7217cdde317cfec"
  instance_type           = "t3.medium"
  subnet_id               = "subnet-0b1c2d3e4f5a60718"
  vpc_security_group_ids  = [aws_security_group.web.id]
  disable_api_termination = false
  monitoring              = true

  root_block_device {
    volume_type = "gp3"
    volume_size = 30
    encrypted   = true
  }

  tags = {
    Name        = "flat-web-1"
    Team        = "platform"
    Environment = "prod"
  }
}

resource "aws_instance" "worker" {
  ami                    = "ami-0c7217cdde317cfec"
  instance_type          = "t3.small"
  subnet_id              = "subnet-0c2d3e4f5a6b70829"
  vpc_security_group_ids = [aws_security_group.web.id]

  tags = {
    Name  = "flat-worker-1"
    Team  = "platform"
    Owner = "bob"
  }
}

resource "aws_launch_template" "app" {
  name                   = "flat-app"
  image_id               = "ami-0c7217cdde317cfec"
  instance_type          = "t3.small"
  vpc_security_group_ids = [aws_security_group.web.id]

  tag_specifications {
    resource_type = "instance"

    tags = {
      Name = "flat-app"
      Team = "platform"
    }
  }
}

resource "aws_autoscaling_group" "app" {
  name                      = "flat-app"
  min_size                  = 2
  max_size                  = 6
  desired_capacity          = 2
  health_check_type         = "EC2"
  health_check_grace_period = 300
  vpc_zone_identifier       = ["subnet-0b1c2d3e4f5a60718", "subnet-0c2d3e4f5a6b70829"]

  launch_template {
    id      = aws_launch_template.app.id
    version = "$Latest"
  }

  tag {
    key                 = "Team"
    value               = "platform"
    propagate_at_launch = true
  }
}

# ---------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------

resource "aws_s3_bucket" "assets" {
  bucket = "acme-flat-assets"

  versioning {
    enabled = false
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }

  tags = {
    Name      = "acme-flat-assets"
    Team      = "media"
    DataClass = "public"
  }
}

resource "aws_s3_bucket" "logs" {
  bucket = "acme-flat-logs"

  versioning {
    enabled = true
  }

  tags = {
    Name      = "acme-flat-logs"
    Team      = "platform"
    Retention = "90d"
  }
}

# ---------------------------------------------------------------------------
# Messaging
# ---------------------------------------------------------------------------

resource "aws_sqs_queue" "jobs_dlq" {
  name                      = "flat-jobs-dlq"
  message_retention_seconds = 1209600

  tags = {
    Team = "platform"
  }
}

resource "aws_sqs_queue" "jobs" {
  name                       = "flat-jobs"
  visibility_timeout_seconds = 30
  message_retention_seconds  = 345600
  delay_seconds              = 0
  receive_wait_time_seconds  = 10

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.jobs_dlq.arn
    maxReceiveCount     = 5
  })

  tags = {
    Team = "platform"
  }
}

# Still read by the old reporting cron; scheduled for removal.
resource "aws_sqs_queue" "legacy_events" {
  name                       = "flat-legacy-events"
  visibility_timeout_seconds = 60

  tags = {
    Team       = "platform"
    Deprecated = "true"
  }
}

resource "aws_sns_topic" "alerts" {
  name = "flat-alerts"

  tags = {
    Team = "platform"
  }
}

# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------

resource "aws_lambda_function" "thumbnailer" {
  function_name = "flat-thumbnailer"
  description   = "Creates thumbnails for uploaded images"
  role          = "arn:aws:iam::123456789012:role/flat-thumbnailer-lambda"
  runtime       = "python3.12"
  handler       = "app.handler"
  s3_bucket     = "acme-flat-artifacts"
  s3_key        = "thumbnailer/thumbnailer-1.4.2.zip"
  memory_size   = 256
  timeout       = 30

  environment {
    variables = {
      LOG_LEVEL     = "INFO"
      SOURCE_BUCKET = "acme-flat-assets"
      THUMB_WIDTH   = "320"
    }
  }

  tags = {
    Team = "media"
  }
}

# ---------------------------------------------------------------------------
# Database
# ---------------------------------------------------------------------------

resource "aws_db_instance" "main" {
  identifier                  = "flat-db"
  engine                      = "postgres"
  engine_version              = "16.1"
  instance_class              = "db.t3.medium"
  allocated_storage           = 20
  storage_type                = "gp3"
  storage_encrypted           = true
  db_name                     = "app"
  username                    = "appadmin"
  manage_master_user_password = true
  db_subnet_group_name        = "flat-db-subnets"
  vpc_security_group_ids      = [aws_security_group.db.id]
  backup_retention_period     = 7
  backup_window               = "03:00-04:00"
  maintenance_window          = "sun:05:00-sun:06:00"
  multi_az                    = false
  deletion_protection         = true
  skip_final_snapshot         = false
  final_snapshot_identifier   = "flat-db-final"

  tags = {
    Team = "data"
  }
}

# The reporting database keeps a self-managed master password, fed from the CI secret store.
resource "aws_db_instance" "reporting" {
  identifier              = "flat-reporting-db"
  engine                  = "postgres"
  engine_version          = "16.1"
  instance_class          = "db.t3.small"
  allocated_storage       = 50
  storage_type            = "gp3"
  storage_encrypted       = true
  db_name                 = "reporting"
  username                = "reporter"
  password                = var.reporting_db_password
  db_subnet_group_name    = "flat-db-subnets"
  vpc_security_group_ids  = [aws_security_group.db.id]
  backup_retention_period = 7
  backup_window           = "04:00-05:00"
  maintenance_window      = "sun:06:00-sun:07:00"
  multi_az                = false
  deletion_protection     = true
  skip_final_snapshot     = true

  tags = {
    Team = "analytics"
  }
}

# ---------------------------------------------------------------------------
# Monitoring
# ---------------------------------------------------------------------------

resource "aws_cloudwatch_metric_alarm" "web_cpu_high" {
  alarm_name          = "flat-web-cpu-high"
  alarm_description   = "Web server CPU is high"
  namespace           = "AWS/EC2"
  metric_name         = "CPUUtilization"
  statistic           = "Average"
  period              = 300
  evaluation_periods  = 2
  threshold           = 80
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "missing"
  alarm_actions       = [aws_sns_topic.alerts.arn]
  ok_actions          = [aws_sns_topic.alerts.arn]

  dimensions = {
    InstanceId = aws_instance.web.id
  }
}

resource "aws_cloudwatch_metric_alarm" "jobs_backlog" {
  alarm_name          = "flat-jobs-backlog"
  alarm_description   = "Background jobs are piling up"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 500
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alerts.arn]

  dimensions = {
    QueueName = aws_sqs_queue.jobs.name
  }
}
