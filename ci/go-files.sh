#!/usr/bin/env bash
# Prints, NUL-separated, every .go file that is ours: not in dot-directories (.git, a local
# .cache, the lab's .lab), build output or testdata (which may hold deliberately odd Go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
find . -type f -name '*.go' -not -path './.*/*' -not -path './bin/*' -not -path '*/testdata/*' -print0
