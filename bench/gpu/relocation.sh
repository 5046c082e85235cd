#!/usr/bin/env bash
# Fails when a file of the bundle holds a path of the machine that built it:
# the build directory or the checkout. A bundle that passes runs from wherever
# it is carried.
#   bench/gpu/relocation.sh BUNDLE BUILD_DIR SOURCE_DIR
set -euo pipefail
bundle=$1
found=0
for dir in "$2" "$3"; do
  dir=${dir%/}
  # With the trailing slash: a path inside the directory.
  while read -r f; do
    echo "relocation: $f holds $dir/" >&2
    found=1
  done < <(grep -rlaF --exclude=MANIFEST -- "$dir/" "$bundle" || true)
done
if ((found)); then
  echo "relocation: the bundle is not relocatable" >&2
  exit 1
fi
echo "relocation: no build or source path in $bundle"
