#!/usr/bin/env bash
# Fetches the release collections of the fingerprint quality evaluation into
# DIR (default: bench/quality/data/releases, which git ignores): manuals in
# two releases, from Debian's packages (apt-get download, no install), each
# unpacked as DIR/NAME/old and DIR/NAME/new.
#   - llvm: the LLVM manual, 15 and 16 (Sphinx HTML, with its sources as text);
#   - clang: the Clang manual, 15 and 16 (Sphinx HTML);
#   - libstdcxx: the GNU C++ library's manual and API reference, 11 and 12
#     (DocBook and Doxygen HTML: one page a class, template-heavy).
# Man pages, the Python and PostgreSQL manuals and the kernel's
# documentation are kept aside for judging the result elsewhere.
set -euo pipefail
dir=${1:-$(dirname "$0")/data/releases}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp" # apt-get download runs as _apt where it can

fetch() { # NAME OLD-PACKAGE OLD-ROOT NEW-PACKAGE NEW-ROOT
  local name=$1
  (cd "$tmp" && apt-get download -q "$2" "$4" >/dev/null)
  for side in old new; do
    local pkg root
    if [ $side = old ]; then pkg=$2 root=$3; else pkg=$4 root=$5; fi
    rm -rf "$tmp/x" && mkdir "$tmp/x"
    dpkg-deb -x "$tmp/${pkg}"_*.deb "$tmp/x"
    rm -rf "${dir:?}/$name/$side" && mkdir -p "$dir/$name"
    mv "$tmp/x/$root" "$dir/$name/$side"
  done
  echo "$name: $(find "$dir/$name/old" -type f | wc -l) and $(find "$dir/$name/new" -type f | wc -l) files"
}

fetch llvm llvm-15-doc usr/share/doc/llvm-15-doc/html llvm-16-doc usr/share/doc/llvm-16-doc/html
fetch clang clang-15-doc usr/share/doc/clang-15/html clang-16-doc usr/share/doc/clang-16/html
fetch libstdcxx libstdc++-11-doc usr/share/doc/gcc-11-base/libstdc++ libstdc++-12-doc usr/share/doc/gcc-12-base/libstdc++
