#!/usr/bin/env bash
# The main job: builds what is missing, then runs the example input with the built plugin.
# Until the engine lands (issue #4) this is the plugin smoke input; the diamond MD example
# with a shipped potential replaces it (issues #5, #6).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export EDGEFRAME_BUILD_DIR="${EDGEFRAME_BUILD_DIR:-$repo/build}"
"$repo/scripts/build.sh"
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"
cd "$repo"
lmp -in examples/smoke/in.plugin -log none -var plugin "$EDGEFRAME_BUILD_DIR/src/lammps/edgeframeplugin.so"
