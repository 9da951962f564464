#!/usr/bin/env bash
# Builds the Debian package from the build folder's Release binary with `cpack -G DEB`, into
# OUT_DIR (emptied first), and checks its name and its Depends.
# Usage: build_package.sh BUILD_DIR OUT_DIR VERSION
set -euo pipefail
build_dir="$1" out_dir="$2" version="$3"
rm -rf "$out_dir"
mkdir -p "$out_dir"
(cd "$build_dir" && cpack -G DEB -B "$out_dir" > "$out_dir/cpack.log") || { cat "$out_dir/cpack.log"; exit 1; }
arch="$(dpkg --print-architecture)"
deb="$out_dir/attnlab_${version}_${arch}.deb"
if [ ! -f "$deb" ]; then
  echo "no $deb; cpack wrote:" >&2
  ls "$out_dir" >&2
  exit 1
fi
depends="$(dpkg-deb --field "$deb" Depends)"
echo "Depends: $depends"
# dpkg-shlibdeps' part: the C library and the libraries the window links, each with a version.
for library in libc6 libglfw3 libepoxy0 libfreetype6; do
  if ! grep -Eq "(^|, )$library( \(>= [^)]+\))?(,|$)" <<< "$depends"; then
    echo "Depends has no $library: dpkg-shlibdeps did not run or did not see the binary's libraries" >&2
    exit 1
  fi
done
grep -q "fonts-dejavu-core" <<< "$depends" || { echo "Depends has no fonts-dejavu-core (the fonts' links point into it)" >&2; exit 1; }
# The GL libraries libepoxy opens with dlopen, invisible to dpkg-shlibdeps.
for library in libgl1 libegl1; do
  grep -Eq "(^|, )$library(,|$| )" <<< "$depends" || { echo "Depends has no $library (libepoxy opens it at run time)" >&2; exit 1; }
done
[ "$(dpkg-deb --field "$deb" Version)" = "$version" ] || { echo "package version is not the project's $version" >&2; exit 1; }
echo "$deb"
