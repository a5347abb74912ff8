#!/bin/bash
# docs/screens/render.sh SVG PNG: a snapshot SVG (tests/console/__snapshots__) as a PNG, at its own size,
# through headless Chromium (Debian: apt-get install chromium). The README's pictures are made with it:
#   for each screen key k and name n: render.sh ".../test_small_screen[k].svg" docs/screens/n-80x24.png
#   (test_screen: 100x30, test_wide_screen: 160x45)
svg="$1"; png="$2"
read w h < <(python3 -c "import re,sys;t=open(sys.argv[1]).read();m=re.search(r'viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"',t);print(int(float(m[1])),int(float(m[2])))" "$svg")
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
  --window-size=$w,$h --screenshot="$png" "file://$(realpath "$svg")" >/dev/null 2>&1
