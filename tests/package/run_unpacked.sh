#!/usr/bin/env bash
# Unpacks the package into a temporary root (dpkg-deb -x) and runs usr/bin/attnlab from there,
# from another folder and with a bare environment, as an installed copy runs: it must find its
# lessons and fonts beside itself, never in the source or build tree.
# Usage: run_unpacked.sh DEB SOURCE_DIR BUILD_DIR VERSION XVFB_SH
set -euo pipefail
deb="$1" source_dir="$2" build_dir="$3" version="$4" xvfb="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
dpkg-deb -x "$deb" "$root"
binary="$root/usr/bin/attnlab"
fail() { echo "FAIL: $*" >&2; exit 1; }

# What the package depends on for its fonts (fonts-dejavu-core, whose files its links name),
# put into the root as installing the package would.
mkdir -p "$root/usr/share/fonts/truetype/dejavu"
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf \
  "$root/usr/share/fonts/truetype/dejavu/"
for font in DejaVuSans.ttf DejaVuSansMono.ttf; do
  resolved="$(readlink -f "$root/usr/share/attnlab/fonts/$font")"
  [ "$resolved" = "$root/usr/share/fonts/truetype/dejavu/$font" ] || fail "usr/share/attnlab/fonts/$font resolves to $resolved, outside the root"
done

# Nothing fixed at build time: the binary names neither tree.
for tree in "$source_dir" "$build_dir"; do
  if grep -qaF "$tree" "$binary"; then fail "usr/bin/attnlab contains the path $tree"; fi
done

run() { (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" "$@"); }

# --version: the project's version and the commit of the source tree (when it is a checkout).
version_line="$(run "$binary" --version)"
echo "$version_line"
# A checkout of the source tree itself (app/version.cmake's rule), not a tarball inside another one.
commit=""
top_level="$(git -c safe.directory="$source_dir" -C "$source_dir" rev-parse --show-toplevel 2>/dev/null || true)"
if [ -n "$top_level" ] && [ "$(realpath "$top_level")" = "$(realpath "$source_dir")" ]; then
  commit="$(git -c safe.directory="$source_dir" -C "$source_dir" rev-parse --short=12 HEAD)"
fi
if [ -n "$commit" ]; then
  [[ "$version_line" =~ ^attnlab\ $version\ \(commit\ .*$commit.*\)$ ]] || fail "--version: expected 'attnlab $version (commit …$commit…)', the source tree's commit, got '$version_line' (a binary built before the last commit: build again)"
else
  [ "$version_line" = "attnlab $version (unknown commit)" ] || fail "--version: expected 'attnlab $version (unknown commit)', got '$version_line'"
fi

# --check-articles: the presets are inside the binary; the report is the build tree's, word for word.
run "$binary" --check-articles > "$work/articles.txt" || fail "--check-articles exited $?"
grep -Eq '^[0-9]+ of [0-9]+ printed quantities match' "$work/articles.txt" || fail "--check-articles printed no summary"
"$build_dir/app/attnlab" --check-articles > "$work/articles-build-tree.txt"
diff -u "$work/articles-build-tree.txt" "$work/articles.txt" || fail "--check-articles differs from the build tree's binary"

# A lesson found by name, in the root's usr/share/attnlab/lessons.
run "$binary" --lesson 03-masks --step 2 --print > "$work/lesson.txt" || fail "--lesson 03-masks --step 2 --print exited $?"

# A lesson step drawn with the package's fonts: a PNG, and no word of a missing font.
png="$work/lesson.png"
if ! run "$xvfb" "$binary" --lesson 03-masks --step 2 --size 1280x800 --screenshot "$png" 2> "$work/stderr.txt"; then
  cat "$work/stderr.txt" >&2
  fail "--lesson 03-masks --step 2 --screenshot exited non-zero"
fi
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png is not a PNG"
[ "$(stat -c %s "$png")" -gt 20000 ] || fail "$png is only $(stat -c %s "$png") bytes"
if grep -i "font" "$work/stderr.txt"; then fail "the screenshot's stderr speaks of fonts"; fi

# The same binary with the package's lessons taken away says where it looked: the root's
# folder, never the source tree's assets/lessons.
mv "$root/usr/share/attnlab/lessons" "$work/lessons-away"
if run "$binary" --lesson 03-masks --print > /dev/null 2> "$work/missing.txt"; then
  fail "--lesson 03-masks was found with usr/share/attnlab/lessons gone"
fi
cat "$work/missing.txt"
grep -qF "$root/usr/share/attnlab/lessons" "$work/missing.txt" || fail "the message does not name $root/usr/share/attnlab/lessons"
echo "the unpacked package runs from $root"
