#!/usr/bin/env bash
# What the README's first command runs once the test bed is up: the Push-Pull
# paper's early- and late-receiver tests (section 5.3) with pp_pingpong, two
# ranks in namespaces ppn0 and ppn1, each on its own DPDK af_packet port and
# pinned to its own core, all three modes, 1000 iterations per point, every
# received byte checked. The table goes to stdout, a CSV to pp_pingpong.csv,
# and the figures (apps/pp_plot: one-way latency against size per mode,
# early and late receiver) next to it, as PNG and SVG; the last line says
# where.
# usage: main_job.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
"$build/apps/pprun" -n 2 --nodes 2 --dev-kind af_packet --timeout 900 -- \
  "$build/apps/pp_pingpong" --test early,late --mode all --sizes 16:64k:x4 \
  --iters 1000 --check --csv "$PWD/pp_pingpong.csv"
apps/pp_plot -q -o "$PWD" "$PWD/pp_pingpong.csv"
echo "main_job.sh: figures in $PWD: pp_pingpong-early-late.png and .svg"
