resource "aws_sns_topic" "security_alerts" {
  name              = "${local.name}-security-alerts"
  kms_master_key_id = "alias/aws/sns"
}

resource "aws_sns_topic_subscription" "security_team" {
  topic_arn = aws_sns_topic.security_alerts.arn
  protocol  = "email"
  endpoint  = var.security_team_email
}

# CIS AWS Foundations 4.x (Security Hub CloudWatch.1-14): a metric filter on the trail's log group
# and an alarm on it for each kind of sensitive activity.
locals {
  cis_alarms = {
    "root-usage" = {
      description = "CIS 4.3: the root user was used"
      pattern     = "{ $.userIdentity.type = \"Root\" && $.userIdentity.invokedBy NOT EXISTS && $.eventType != \"AwsServiceEvent\" }"
    }
    "unauthorized-api-calls" = {
      description = "CIS 4.1: unauthorized API calls"
      pattern     = "{ ($.errorCode = \"*UnauthorizedOperation\") || ($.errorCode = \"AccessDenied*\") && ($.sourceIPAddress != \"delivery.logs.amazonaws.com\") && ($.eventName != \"HeadBucket\") }"
    }
    "console-signin-without-mfa" = {
      description = "CIS 4.2: console sign-in without MFA"
      pattern     = "{ ($.eventName = \"ConsoleLogin\") && ($.additionalEventData.MFAUsed != \"Yes\") && ($.userIdentity.type = \"IAMUser\") && ($.responseElements.ConsoleLogin = \"Success\") }"
    }
    "iam-policy-changes" = {
      description = "CIS 4.4: IAM policy changes"
      pattern     = "{ ($.eventName = DeleteGroupPolicy) || ($.eventName = DeleteRolePolicy) || ($.eventName = DeleteUserPolicy) || ($.eventName = PutGroupPolicy) || ($.eventName = PutRolePolicy) || ($.eventName = PutUserPolicy) || ($.eventName = CreatePolicy) || ($.eventName = DeletePolicy) || ($.eventName = CreatePolicyVersion) || ($.eventName = DeletePolicyVersion) || ($.eventName = AttachRolePolicy) || ($.eventName = DetachRolePolicy) || ($.eventName = AttachUserPolicy) || ($.eventName = DetachUserPolicy) || ($.eventName = AttachGroupPolicy) || ($.eventName = DetachGroupPolicy) }"
    }
    "cloudtrail-config-changes" = {
      description = "CIS 4.5: CloudTrail configuration changes"
      pattern     = "{ ($.eventName = CreateTrail) || ($.eventName = UpdateTrail) || ($.eventName = DeleteTrail) || ($.eventName = StartLogging) || ($.eventName = StopLogging) }"
    }
    "console-signin-failures" = {
      description = "CIS 4.6: console authentication failures"
      pattern     = "{ ($.eventName = ConsoleLogin) && ($.errorMessage = \"Failed authentication\") }"
      threshold   = 3
    }
    "kms-key-deletion" = {
      description = "CIS 4.7: customer managed keys disabled or scheduled for deletion"
      pattern     = "{ ($.eventSource = kms.amazonaws.com) && (($.eventName = DisableKey) || ($.eventName = ScheduleKeyDeletion)) }"
    }
    "security-group-changes" = {
      description = "CIS 4.10: security group changes"
      pattern     = "{ ($.eventName = AuthorizeSecurityGroupIngress) || ($.eventName = AuthorizeSecurityGroupEgress) || ($.eventName = RevokeSecurityGroupIngress) || ($.eventName = RevokeSecurityGroupEgress) || ($.eventName = CreateSecurityGroup) || ($.eventName = DeleteSecurityGroup) }"
    }
  }
}

module "cis_alarm" {
  source   = "./modules/log-metric-alarm"
  for_each = local.cis_alarms

  name           = each.key
  name_prefix    = local.name
  log_group_name = aws_cloudwatch_log_group.trail.name
  pattern        = each.value.pattern
  description    = each.value.description
  threshold      = lookup(each.value, "threshold", 1)
  alarm_actions  = [aws_sns_topic.security_alerts.arn]
}

# Operations: the trail stopped delivering to CloudWatch Logs.
resource "aws_cloudwatch_metric_alarm" "trail_ingestion" {
  alarm_name          = "${local.name}-cloudtrail-no-events"
  alarm_description   = "No CloudTrail events reached ${local.trail_log_group} for an hour"
  namespace           = "AWS/Logs"
  metric_name         = "IncomingLogEvents"
  dimensions          = { LogGroupName = aws_cloudwatch_log_group.trail.name }
  statistic           = "Sum"
  period              = 3600
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  actions_enabled     = true
  alarm_actions       = [aws_sns_topic.security_alerts.arn]
  ok_actions          = [aws_sns_topic.security_alerts.arn]
}
