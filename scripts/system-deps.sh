#!/usr/bin/env bash
# Installs the system tools flowc's tests use (Graphviz's `dot`), where this machine allows it.
set -u
need=()
command -v dot >/dev/null 2>&1 || need+=(graphviz)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} with apt-get"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo apt-get update -qq >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "note: could not install ${need[*]}; install Graphviz to render SVG/PNG (e.g. 'apt-get install graphviz' or 'brew install graphviz')" >&2
fi
exit 0
