environment = "prod"
domain_name = "acmeoutfitters.com"

price_class = "PriceClass_100"

cache_behaviors = [
  { path_pattern = "/assets/*" },
  { path_pattern = "/downloads/*", compress = false },
  { path_pattern = "*.html", cache_policy = "disabled" },
]

error_responses = {
  "403" = { response_code = 404, page_path = "/404.html" }
  "404" = { response_code = 404, page_path = "/404.html", caching_min_ttl = 60 }
  "503" = { response_code = 503, page_path = "/maintenance.html" }
}

cors_allowed_origins = [
  "https://acmeoutfitters.com",
  "https://www.acmeoutfitters.com",
]

log_retention_days = 90

enable_waf     = true
waf_rate_limit = 2000

dns_records = {
  status = {
    name    = "status"
    type    = "CNAME"
    records = ["stats.uptimerobot.com"]
  }
  docs = {
    name    = "docs"
    type    = "CNAME"
    records = ["hosting.gitbook.io"]
  }
  sendgrid_s1 = {
    name    = "s1._domainkey"
    type    = "CNAME"
    ttl     = 3600
    records = ["s1.domainkey.u4821937.wl188.sendgrid.net"]
  }
  dmarc = {
    name    = "_dmarc"
    type    = "TXT"
    ttl     = 3600
    records = ["v=DMARC1; p=none; rua=mailto:dmarc-reports@acmeoutfitters.com"]
  }
  apex_txt = {
    name = ""
    type = "TXT"
    records = [
      "google-site-verification=Wq3nX8vK2pL7rT1mZ5bY9cD4hF6jA0sE2uG8iO3kN7w",
      "v=spf1 include:sendgrid.net ~all",
    ]
  }
}

tags = {
  Owner      = "web-platform"
  CostCenter = "marketing-1042"
}
