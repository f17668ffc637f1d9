#!/usr/bin/env bash
# Fetches the release collections of the fingerprint quality evaluation into
# DIR (default: bench/quality/data/releases, which git ignores): manuals in
# two releases, from Debian's packages (apt-get download, no install), each
# unpacked as DIR/NAME/old and DIR/NAME/new.
#   - llvm: the LLVM manual, 15 and 16 (Sphinx HTML, with its sources as text);
#   - clang: the Clang manual, 15 and 16 (Sphinx HTML);
#   - libstdcxx: the GNU C++ library's manual and API reference, 11 and 12
#     (DocBook and Doxygen HTML: one page a class, template-heavy);
#   - django: Django's documentation, 2.2 (bullseye) and 3.2 (bookworm)
#     (Sphinx HTML with navigation bars above and below every page);
#   - handbook-ja, handbook-zh: The Debian Administrator's Handbook in
#     Japanese and Simplified Chinese, 10 (bullseye) and 11 (bookworm)
#     (Publican HTML: CJK text, a navigation list on every page).
# Packages of one Debian suite come through apt-get download; those of
# another suite from the mirror's pool, as its Packages index names them.
# Man pages, the Python and PostgreSQL manuals and the kernel's
# documentation are kept aside for judging the result elsewhere.
set -euo pipefail
dir=${1:-$(dirname "$0")/data/releases}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp" # apt-get download runs as _apt where it can

mirror=http://deb.debian.org/debian

# pool PACKAGE SUITE: downloads the suite's PACKAGE (architecture all) into
# $tmp as PACKAGE-SUITE_all.deb.
pool() {
  local index="$tmp/Packages-$2"
  [ -s "$index" ] || curl -fsS "$mirror/dists/$2/main/binary-all/Packages.xz" | xz -d >"$index"
  local file
  file=$(awk -v p="$1" 'BEGIN { RS = "" } $0 ~ "^Package: " p "\n" { if (match($0, /\nFilename: [^\n]*/)) print substr($0, RSTART + 11, RLENGTH - 11) }' "$index")
  [ -n "$file" ] || { echo "no $1 in $2" >&2; return 1; }
  curl -fsS -o "$tmp/$1-$2_all.deb" "$mirror/$file"
}

# unpack DEB ROOT NAME SIDE: ROOT of DEB becomes DIR/NAME/SIDE.
unpack() {
  rm -rf "$tmp/x" && mkdir "$tmp/x"
  dpkg-deb -x "$1" "$tmp/x"
  rm -rf "${dir:?}/$3/$4" && mkdir -p "$dir/$3"
  mv "$tmp/x/$2" "$dir/$3/$4"
}

count() { echo "$1: $(find "$dir/$1/old" -type f | wc -l) and $(find "$dir/$1/new" -type f | wc -l) files"; }

# fetch_suites NAME PACKAGE OLD-SUITE NEW-SUITE ROOT: one package of two
# suites, ROOT of each.
fetch_suites() {
  pool "$2" "$3"
  pool "$2" "$4"
  unpack "$tmp/$2-$3_all.deb" "$5" "$1" old
  unpack "$tmp/$2-$4_all.deb" "$5" "$1" new
  count "$1"
}

fetch() { # NAME OLD-PACKAGE OLD-ROOT NEW-PACKAGE NEW-ROOT
  local name=$1
  (cd "$tmp" && apt-get download -q "$2" "$4" >/dev/null)
  for side in old new; do
    local pkg root
    if [ $side = old ]; then pkg=$2 root=$3; else pkg=$4 root=$5; fi
    unpack "$tmp/${pkg}"_*.deb "$root" "$name" $side
  done
  count "$name"
}

fetch llvm llvm-15-doc usr/share/doc/llvm-15-doc/html llvm-16-doc usr/share/doc/llvm-16-doc/html
fetch clang clang-15-doc usr/share/doc/clang-15/html clang-16-doc usr/share/doc/clang-16/html
fetch libstdcxx libstdc++-11-doc usr/share/doc/gcc-11-base/libstdc++ libstdc++-12-doc usr/share/doc/gcc-12-base/libstdc++
fetch_suites django python-django-doc bullseye bookworm usr/share/doc/python-django-doc/html
pool debian-handbook bullseye
pool debian-handbook bookworm
for lang in ja:ja-JP zh:zh-CN; do
  unpack "$tmp/debian-handbook-bullseye_all.deb" "usr/share/doc/debian-handbook/html/${lang#*:}" "handbook-${lang%%:*}" old
  unpack "$tmp/debian-handbook-bookworm_all.deb" "usr/share/doc/debian-handbook/html/${lang#*:}" "handbook-${lang%%:*}" new
  count "handbook-${lang%%:*}"
done
