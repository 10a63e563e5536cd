#!/usr/bin/env bash
# Applies .clang-format to every hand-written C and C++ file (lib/, include/, cli/,
# bench/, examples/, tests/, fuzz/); --check changes nothing and fails, naming the
# files, when one is not formatted. SWIG's generated wrappers (bindings/) are not ours
# to format; the bindings' own C (bindings/*/ext, native) keeps its own tools' style.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
command -v clang-format >/dev/null || { echo "format.sh: clang-format is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files -- 'lib/*' 'include/*' 'cli/*' 'bench/*' 'examples/*' 'tests/*' 'fuzz/*' |
    grep -E '\.(c|h|cpp|hpp)$')
if [[ "${1:-}" == --check ]]; then
    bad=()
    for f in "${files[@]}"; do
        clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
    done
    if ((${#bad[@]})); then
        printf 'format.sh: not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
else
    clang-format --style=file -i "${files[@]}"
    echo "format.sh: formatted ${#files[@]} files"
fi
