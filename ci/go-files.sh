#!/usr/bin/env bash
# Prints, NUL-separated, every .go file that is ours: not in dot-directories (.git, a local
# .cache, the lab's .lab), build output, testdata (which may hold deliberately odd Go) or
# third_party (vendored as its authors wrote it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
find . -type f -name '*.go' -not -path './.*/*' -not -path './bin/*' -not -path '*/testdata/*' -not -path './third_party/*' -print0
