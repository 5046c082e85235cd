#!/usr/bin/env bash
# The fuzz targets, one a line: the folders of fuzz/corpus.
cd "$(dirname "$0")/corpus" && ls -d fuzz_* | sort
