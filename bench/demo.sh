#!/usr/bin/env bash
# make demo: the main job on shipped data.
set -euo pipefail
build="${1:-build}"
profile=tests/data/resnet50.profile.pb.gz
echo "== deepum-inspect $profile"
"$build/tools/deepum-inspect" "$profile"
