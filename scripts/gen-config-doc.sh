#!/usr/bin/env bash
# Rewrite docs/configuration.md from the settings' own descriptions (tests/test_project.py checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
{ sed '/^| environment variable/,$d' docs/configuration.md; .venv/bin/assistant config --reference; } > docs/configuration.md.new
mv docs/configuration.md.new docs/configuration.md
