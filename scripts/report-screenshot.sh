#!/usr/bin/env bash
# Renders a sinkhole report.html in headless Chromium and saves a screenshot,
# to check that the page renders (inline SVG and CSS, nothing fetched).
#
#   scripts/report-screenshot.sh results/<run-id>/report.html out.png [WIDTH,HEIGHT]
#
# Installs Debian's `chromium` with apt-get when it is missing. Screenshots
# are not kept in git (*.png is ignored).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 REPORT.html OUT.png [WIDTH,HEIGHT]" >&2
    exit 2
fi
report=$1
out=$2
size=${3:-1400,3000}
if [ ! -f "$report" ]; then
    echo "$0: $report: no such file" >&2
    exit 2
fi

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then
        browser=$b
        break
    fi
done
if [ -z "$browser" ]; then
    echo "$0: chromium is missing; installing it with apt-get" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo=sudo
    fi
    $sudo apt-get update >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium >&2
    browser=chromium
fi

abs_report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
abs_out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
rm -f "$abs_out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# No network: every flag that would make Chromium call home is off, and the
# page itself fetches nothing.
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --window-size="$size" \
    --screenshot="$abs_out" "file://$abs_report" >"$profile/chromium.log" 2>&1 || true

if [ ! -s "$abs_out" ]; then
    echo "$0: chromium wrote no screenshot to $abs_out; its output:" >&2
    cat "$profile/chromium.log" >&2
    exit 1
fi
echo "$abs_out"
