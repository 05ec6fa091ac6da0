# ---------------------------------------------------------------------------
# Security groups with inline rules
# ---------------------------------------------------------------------------
resource "aws_security_group" "web" {
  name        = "core-web"
  description = "Public load balancer tier"
  vpc_id      = aws_vpc.main.id

  ingress {
    description = "HTTP from anywhere"
    from_port   = 80
    to_port     = 80
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }

  ingress {
    description = "HTTPS from anywhere"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }

  egress {
    description = "All outbound"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = {
    Name     = "core-web"
    Tier     = "web"
    LegacyId = "web-sg-2019"
  }
}

resource "aws_security_group" "app" {
  name        = "core-app"
  description = "Application tier"
  vpc_id      = aws_vpc.main.id

  ingress {
    description     = "App port from the web tier"
    from_port       = 8080
    to_port         = 8080
    protocol        = "tcp"
    security_groups = [aws_security_group.web.id]
  }

  egress {
    description = "All outbound"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = {
    Name = "core-app"
    Tier = "app"
  }
}

resource "aws_security_group" "monitoring" {
  name        = "core-monitoring"
  description = "Prometheus and Grafana"
  vpc_id      = aws_vpc.main.id

  ingress {
    description = "Prometheus UI from the VPC"
    from_port   = 9090
    to_port     = 9090
    protocol    = "tcp"
    cidr_blocks = [var.vpc_cidr]
  }

  ingress {
    description = "Grafana from the VPC"
    from_port   = 3000
    to_port     = 3000
    protocol    = "tcp"
    cidr_blocks = [var.vpc_cidr]
  }

  egress {
    description = "All outbound"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = {
    Name = "core-monitoring"
    Tier = "ops"
  }
}

# ---------------------------------------------------------------------------
# Security groups whose rules are separate resources
# ---------------------------------------------------------------------------
resource "aws_security_group" "db" {
  name        = "core-db"
  description = "PostgreSQL tier"
  vpc_id      = aws_vpc.main.id

  tags = {
    Name = "core-db"
    Tier = "data"
  }
}

resource "aws_vpc_security_group_ingress_rule" "db_postgres_from_app" {
  security_group_id            = aws_security_group.db.id
  description                  = "PostgreSQL from the app tier"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = aws_security_group.app.id
}

resource "aws_vpc_security_group_ingress_rule" "db_postgres_from_vpn" {
  security_group_id = aws_security_group.db.id
  description       = "PostgreSQL from client VPN"
  ip_protocol       = "tcp"
  from_port         = 5432
  to_port           = 5432
  cidr_ipv4         = var.vpn_cidr
}

resource "aws_vpc_security_group_egress_rule" "db_all" {
  security_group_id = aws_security_group.db.id
  description       = "All outbound"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_security_group" "bastion" {
  name        = "core-bastion"
  description = "SSH bastion"
  vpc_id      = aws_vpc.main.id

  tags = {
    Name = "core-bastion"
    Tier = "ops"
  }
}

resource "aws_vpc_security_group_ingress_rule" "bastion_ssh" {
  security_group_id = aws_security_group.bastion.id
  description       = "SSH from the office"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = var.admin_cidr
}

resource "aws_vpc_security_group_egress_rule" "bastion_all" {
  security_group_id = aws_security_group.bastion.id
  description       = "All outbound"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}
