#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages libvega needs that are not installed yet (apt-get, as root or
# through sudo). Idempotent: does nothing when everything is there.
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"
ensure_deps
