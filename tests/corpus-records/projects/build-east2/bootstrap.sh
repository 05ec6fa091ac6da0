#!/bin/bash
set -euo pipefail
dnf install -y docker git
systemctl enable --now docker
