resource "aws_route53_zone" "main" {
  name = var.zone_name
}

resource "aws_route53_record" "a" {
  for_each = var.a_records

  zone_id = aws_route53_zone.main.zone_id
  name    = "${each.key}.${var.zone_name}"
  type    = "A"
  ttl     = 300
  records = each.value
}
