#!/usr/bin/env bash
# Regenerates the seed corpora in fuzz/corpus/<target>/ with
# fuzz_corpus_generator (fuzz/GenerateCorpus.cpp), built in BUILD_DIR
# (default build/, configured by make). Files of the same name are replaced;
# others (regression inputs kept from fuzzing) are left alone.
#   bash fuzz/generate-corpus.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target fuzz_corpus_generator
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/fuzz/fuzz_corpus_generator" "$tmp"
for dir in "$tmp"/*/; do
  target=$(basename "$dir")
  mkdir -p "fuzz/corpus/$target"
  cp "$dir"/* "fuzz/corpus/$target/"
done
du -sh fuzz/corpus
