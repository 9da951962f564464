#!/usr/bin/env bash
# Installs the Debian 12 packages Attention Lab builds, runs and tests with.
# Idempotent: installs only what is missing; uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libeigen3-dev nlohmann-json3-dev libcli11-dev catch2 libpcre2-dev
  libicu-dev
  libcurl4-openssl-dev libssl-dev
  libimgui-dev libstb-dev libfreetype-dev libglfw3-dev libepoxy-dev libegl-dev libegl-mesa0
  fonts-dejavu-core
  xvfb xauth libgl1-mesa-dri
  # The Debian package (packaging/): the manual page from --help, the PNG icons from the SVG;
  # cpack's Depends come from dpkg-shlibdeps (dpkg-dev, in build-essential).
  help2man librsvg2-bin
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "Installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
