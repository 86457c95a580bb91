#!/usr/bin/env bash
# The folders of src/ depend on one another in one direction only (issue 43):
# each may include from the folders listed for it, and from include/ (the
# public headers). A new include against the direction fails here, naming the
# file and the line:
#
#   common                       <- everything
#   parse <- rules <- pipeline   (the per-line path; pipeline adds correlate)
#   config <- source <- sink <- http
#
# So a source hands bytes to the pipeline and never reaches into the parser or
# the rules; loading a config pulls in no socket, HTTP or sink code.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
declare -A allowed=(
  [common]=""
  [parse]="common"
  [rules]="common parse"
  [correlate]="common"
  [pipeline]="common correlate parse rules"
  [config]="common"
  [source]="common config correlate"
  [sink]="common config correlate source"
  [http]="common config correlate parse sink source"
)
folders="${!allowed[*]}"
bad=0
for dir in "${!allowed[@]}"; do
  [ -d "$root/src/$dir" ] || { echo "layering.sh: no src/$dir" >&2; exit 2; }
  while IFS=: read -r file line text; do
    target=$(sed -E 's/^#include "([a-z_]+)\/.*/\1/' <<<"$text")
    [ "$target" = "$dir" ] && continue
    [[ " $folders " == *" $target "* ]] || continue  # include/fingerprintd, tests' own
    if [[ " ${allowed[$dir]} " != *" $target "* ]]; then
      echo "${file#$root/}:$line: src/$dir may not include src/$target: $text"
      bad=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$root/src/$dir" || true)
done
# The public headers stand alone.
if grep -rnE '^#include "(common|config|correlate|http|parse|pipeline|rules|sink|source)/' \
    "$root/include"; then
  echo "include/ may include only fingerprintd/ headers"
  bad=1
fi
[ "$bad" = 0 ] && echo "layering: every include of src/ points one way"
exit "$bad"
