#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Formats every tracked C file in place with clang-format (.clang-format); scripts/test.sh's
# format stage checks that nothing is left to do. usage: scripts/format.sh [FILE...]
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"
if [ $# -gt 0 ]; then
    clang-format -i "$@"
else
    git ls-files -z '*.c' '*.h' | xargs -0 clang-format -i
fi
