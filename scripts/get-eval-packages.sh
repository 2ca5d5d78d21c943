#!/bin/sh
# Unpack the pinned source distributions of the packages the derived code questions are made from
# (evals/derive_questions.py) from the package registry into DEST, one folder per package, and print
# each tree's path. The measurement downloads them, never the product. Licences: BSD-3-Clause (Flask,
# Click, Werkzeug, Jinja2, itsdangerous, MarkupSafe), Apache-2.0 (Requests).
# Usage: get-eval-packages.sh DEST
set -eu
dest=${1:?usage: get-eval-packages.sh DEST}
mkdir -p "$dest/.sdists"  # the archives, kept out of the trees that are ingested
for pin in flask==3.1.3 click==8.1.8 werkzeug==3.1.3 jinja2==3.1.6 requests==2.32.3 itsdangerous==2.2.0 markupsafe==3.0.2; do
  name=${pin%%==*}
  version=${pin#*==}
  tree=$(find "$dest" -maxdepth 1 -type d -iname "$name-$version" | head -n 1)
  if [ -z "$tree" ]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: "$pin" -d "$dest/.sdists" >/dev/null 2>&1 \
      || { echo "could not download the $pin sdist from the package registry" >&2; exit 1; }
    archive=$(find "$dest/.sdists" -maxdepth 1 -type f -iname "$name-$version.tar.gz" | head -n 1)
    [ -n "$archive" ] || { echo "no $name-$version.tar.gz in $dest/.sdists" >&2; exit 1; }
    tar -xzf "$archive" -C "$dest"
    tree=$(find "$dest" -maxdepth 1 -type d -iname "$name-$version" | head -n 1)
  fi
  echo "$tree"
done
