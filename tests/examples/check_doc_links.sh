#!/usr/bin/env bash
# check_doc_links.sh SOURCE_DIR: every relative link of the Markdown files of the repository
# (README.md, docs/, the modules' READMEs) resolves: [text](path) names a file or folder that
# exists, relative to the linking file, and [text](path#anchor) or [text](#anchor) names a
# heading of that Markdown file (GitHub's anchors: lower case, punctuation dropped, spaces
# to hyphens). Links in code blocks and code spans, and http(s)/mailto links, are not checked.
set -euo pipefail
export LC_ALL=C
src="$1"
cd "$src"
# anchors FILE: the anchors of the headings of a Markdown file, one a line.
anchors() {
  awk '/^```/ { code = !code; next }
       !code && /^#+ / { h = $0; sub(/^#+ +/, "", h); h = tolower(h)
                         gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}
bad=0 n=0
files=$(git ls-files --cached --others --exclude-standard '*.md' 2>/dev/null || find . -name '*.md' -not -path './build*' | sed 's|^\./||')
[ -n "$files" ] || { echo "no Markdown files under $src"; exit 1; }
for f in $files; do
  dir=$(dirname "$f")
  # the links of f, one "line:target" a line, outside code blocks and code spans
  while IFS= read -r hit; do
    line="${hit%%:*}" target="${hit#*:}"
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    n=$((n + 1))
    path="${target%%#*}" anchor=""
    [[ "$target" == *"#"* ]] && anchor="${target#*#}"
    if [ -z "$path" ]; then dest="$f"; else dest="$dir/$path"; fi
    if [ ! -e "$dest" ]; then
      echo "$f:$line: broken link: $target ($dest does not exist)"; bad=1; continue
    fi
    if [ -n "$anchor" ]; then
      if [[ "$dest" != *.md ]] || ! anchors "$dest" | grep -qxF -- "$anchor"; then
        echo "$f:$line: broken link: $target (no heading '#$anchor' in $dest)"; bad=1
      fi
    fi
  done < <(awk '/^ *```/ { code = !code; next }
               !code { l = $0; gsub(/`[^`]*`/, "", l)
                       while (match(l, /\]\([^) ]+\)/)) {
                         print NR ":" substr(l, RSTART + 2, RLENGTH - 3)
                         l = substr(l, RSTART + RLENGTH) } }' "$f")
done
[ "$bad" -eq 0 ] && echo "ok: $n relative links of $(echo "$files" | wc -w) Markdown files resolve"
exit "$bad"
