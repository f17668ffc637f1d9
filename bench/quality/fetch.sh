#!/usr/bin/env bash
# Fetches the real-text corpora of the fingerprint quality evaluation into DIR
# (default: bench/quality/data, which git ignores):
#   - the npm package spdx-license-list (CC0-1.0): full texts of the SPDX licenses;
#   - the Go module github.com/google/licenseclassifier/v2 (Apache-2.0): its
#     license and header variants under assets/.
# Both come from the package registries (npm, the Go module proxy), pinned.
set -euo pipefail
dir=${1:-$(dirname "$0")/data}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent spdx-license-list@6.12.0 >/dev/null)
rm -rf "$dir/spdx" && mkdir -p "$dir/spdx"
tar -xzf "$tmp"/spdx-license-list-6.12.0.tgz -C "$dir/spdx" --strip-components=1

mod=github.com/google/licenseclassifier/v2@v2.0.0
src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
rm -rf "$dir/licenseclassifier"
cp -r "$src/assets" "$dir/licenseclassifier"
chmod -R u+w "$dir/licenseclassifier"
find "$dir/licenseclassifier" -type f ! -name '*.txt' -delete # texts only: no Go files under ./...
echo "corpus in $dir: $(ls "$dir/spdx/licenses" | wc -l) SPDX texts, $(find "$dir/licenseclassifier" -name '*.txt' | wc -l) licenseclassifier texts"
