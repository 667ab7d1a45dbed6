#!/usr/bin/env bash
# Shared by scripts/deps/*.sh (sourced, not run): install Debian packages with apt-get,
# saying which packages and why before installing them.
#
#   apt_install "what they are for" PACKAGE...
#
# Runs apt-get as root, or through sudo; where neither works it says what to install by
# hand and returns 1. A package apt-get cannot install is reported, never fatal: one
# missing tool must not stop the others (the tests that need it say so when they run).

_apt_updated=""

apt_install() {
  local why="$1"
  shift
  local sudo=""
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: $* ($why) is missing and there is no apt-get here: install it with your package manager" >&2
    return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "note: $* ($why) is missing: run 'apt-get install $*' as root" >&2
      return 1
    fi
  fi
  echo "installing system packages with ${sudo:+sudo }apt-get: $* ($why)"
  if [ -z "$_apt_updated" ]; then
    $sudo apt-get update -qq >/dev/null || true
    _apt_updated=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
    || { echo "note: apt-get could not install $*" >&2; return 1; }
}
