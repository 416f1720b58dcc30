#!/bin/sh
# One fuzz target for a fixed time over its corpus (a test of the slow suite):
#   run.sh FUZZER SECONDS WORK_DIR SEED_CORPUS
# New inputs go to WORK_DIR; the seed corpus in the source tree is read and
# replayed first. An input that crashes the target is kept: copied into the
# seed corpus (crash-<sha1>), so that every later run replays it until the
# bug is fixed; commit it with the fix. The run then fails, naming the file.
set -u
fuzzer=$1 seconds=$2 work=$3 seeds=$4
art=$work.artifacts
mkdir -p "$work" "$art"
rm -f "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*
"$fuzzer" -max_total_time="$seconds" -timeout=10 -artifact_prefix="$art/" "$work" "$seeds"
rc=$?
found=0
for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
  [ -e "$f" ] || continue
  cp "$f" "$seeds/" && echo "run.sh: $(basename "$f") kept in $seeds: commit it with the fix"
  found=1
done
[ $rc -eq 0 ] && [ $found -eq 0 ]
