#!/usr/bin/env bash
# For `make test` only: the tests of `flowc view`'s page in Firefox and WebKit
# (tests/view/test_view_engines.py; Chromium's are scripts/deps/browser.sh's).
# Installs, each only if missing (no browser is downloaded from elsewhere):
#   - apt: firefox-esr         (driven over Marionette by the marionette-driver package)
#   - apt: webkit2gtk-driver   (WebKitWebDriver and WebKitGTK's MiniBrowser, driven by selenium)
#   - apt: xvfb                (the virtual display the MiniBrowser needs)
set -u
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh

missing=()
command -v firefox-esr >/dev/null 2>&1 || command -v firefox >/dev/null 2>&1 \
  || missing+=(firefox-esr)
command -v WebKitWebDriver >/dev/null 2>&1 || missing+=(webkit2gtk-driver)
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "Firefox, WebKit and a virtual display, for the view's browser tests" "${missing[@]}"
fi
exit 0
