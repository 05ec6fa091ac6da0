resource "aws_guardduty_detector" "this" {
  enable                       = true
  finding_publishing_frequency = var.guardduty_finding_frequency
}

resource "aws_guardduty_detector_feature" "this" {
  for_each = var.guardduty_features

  detector_id = aws_guardduty_detector.this.id
  name        = each.key
  status      = each.value
}
