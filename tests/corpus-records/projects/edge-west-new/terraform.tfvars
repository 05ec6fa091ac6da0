web_ingress = [
  { description = "HTTP from the load balancers", port = 80, cidr_blocks = ["10.40.0.0/16"] },
]
