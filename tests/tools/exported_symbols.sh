#!/usr/bin/env bash
# exported_symbols.sh LIB: every symbol the library defines for others to
# link against carries one of the project's prefixes, so a host program
# (with its own flex scanner, say) links it without clashes. Symbols that
# begin with _ (the compiler's and sanitizers') are left out.
set -euo pipefail
lib=$1
syms=$(nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort -u)
if [ -z "$syms" ]; then
    echo "exported_symbols.sh: no symbols in $lib" >&2
    exit 1
fi
bad=$(printf '%s\n' "$syms" | grep -v '^_' |
      grep -Ev '^(shardc|su|ir|fe|pass|cg|rt|api)_' || true)
if [ -n "$bad" ]; then
    echo "exported_symbols.sh: $lib exports symbols without a project prefix:" >&2
    printf '  %s\n' $bad >&2
    exit 1
fi
echo "$(printf '%s\n' "$syms" | wc -l) symbols, all prefixed"
