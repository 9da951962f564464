#!/usr/bin/env bash
# desktop-file-validate on the menu entry and lintian on the whole package: no error and no
# warning (its informational tags are printed).
# Usage: lint_package.sh DEB
set -euo pipefail
deb="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work"
desktop-file-validate "$work/usr/share/applications/attnlab.desktop"
exec_command="$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$work/usr/share/applications/attnlab.desktop")"
[ -x "$work/usr/bin/$exec_command" ] || { echo "the menu entry runs '$exec_command', which the package does not install in /usr/bin" >&2; exit 1; }
icon="$(sed -n 's/^Icon=//p' "$work/usr/share/applications/attnlab.desktop")"
for file in scalable/apps/$icon.svg 256x256/apps/$icon.png 48x48/apps/$icon.png; do
  [ -s "$work/usr/share/icons/hicolor/$file" ] || { echo "no icon usr/share/icons/hicolor/$file" >&2; exit 1; }
done
# The manual page is --help: every option --help lists is in it.
manual="$(LANG=C.UTF-8 MANWIDTH=200 man --local-file "$work/usr/share/man/man1/attnlab.1.gz" 2>&1)"
options="$(env -i PATH=/usr/bin:/bin "$work/usr/bin/attnlab" --help | grep -oE -- '--[a-z0-9-]+' | sort -u)"
[ "$(wc -l <<< "$options")" -ge 30 ] || { echo "attnlab --help lists only: $options" >&2; exit 1; }
for option in $options; do
  grep -qF -- "$option" <<< "$manual" || { echo "the manual page lacks $option, which --help lists" >&2; exit 1; }
done
# lintian refuses to run as root without --allow-root (CI containers run as root).
lintian --allow-root --fail-on error,warning --info "$deb"
