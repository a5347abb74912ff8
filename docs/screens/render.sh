#!/bin/bash
# docs/screens/render.sh [SVG PNG]: the pictures in docs/screens, made from the console's snapshot SVGs
# (tests/console/__snapshots__), each at its own size, through headless Chromium (Debian: apt-get
# install chromium). With SVG and PNG: that one. With no arguments: every picture a snapshot makes
# (all but audit-live-100x30.png, a screen against a live agent). Run it after the snapshots change
# (pytest --snapshot-update), from anywhere.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
snaps="$here/../../tests/console/__snapshots__"

render() {
    local svg="$1" png="$2" w h
    read -r w h < <(python3 -c "import re,sys;t=open(sys.argv[1]).read();m=re.search(r'viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"',t);print(int(float(m[1])),int(float(m[2])))" "$svg")
    chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
        --window-size="$w,$h" --screenshot="$png" "file://$(realpath "$svg")" >/dev/null 2>&1
    [ -s "$png" ] || { echo "render.sh: no picture made from $svg" >&2; return 1; }
}

if [ $# -eq 2 ]; then
    render "$1" "$2"
    exit
fi
[ $# -eq 0 ] || { echo "usage: render.sh [SVG PNG]" >&2; exit 2; }

declare -A screen=([o]=overview [c]=controls [k]=kv [g]=gpus [l]=logs [b]=bench [h]=history [p]=profiles [a]=audit)
console="$snaps/test_console_snapshots"
for key in "${!screen[@]}"; do
    name="${screen[$key]}"
    render "$console/test_small_screen[$key].svg" "$here/$name-80x24.png"
    render "$console/test_screen[$key].svg" "$here/$name-100x30.png"
    render "$console/test_wide_screen[$key].svg" "$here/$name-160x45.png"
done
for theme in light high-contrast; do
    render "$console/test_themed_screen[o-$theme].svg" "$here/overview-$theme-100x30.png"
done
for size in 80x24 100x30; do
    render "$snaps/test_fleet_snapshots/test_fleet_screen[$size].svg" "$here/fleet-$size.png"
done
render "$snaps/test_fleet_snapshots/test_fleet_screen_where_the_router_and_the_agents_disagree.svg" \
    "$here/fleet-router-disagrees-100x30.png"
echo "render.sh: the pictures in $here made again"
