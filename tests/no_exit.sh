#!/usr/bin/env bash
# no_exit.sh NM LIBRARY: the library never ends the process (STYLE.md:
# "the library never calls exit()"; errors travel back to the caller, who
# decides). Fails naming the object files of LIBRARY (a static archive)
# that call a function ending the process: exit, _exit, _Exit,
# quick_exit, or MPI_Abort. abort() stays allowed: it is how an internal
# invariant fails (su_unreachable, assert), a crash and not an exit.
if [ $# -ne 2 ]; then
    echo "usage: no_exit.sh NM LIBRARY" >&2
    exit 2
fi
syms=$("$1" -A -u "$2") || exit 1
bad=$(grep -wE 'exit|_exit|_Exit|quick_exit|MPI_Abort' <<< "$syms")
if [ -n "$bad" ]; then
    echo "no_exit.sh: the library calls a function that ends the process:" >&2
    echo "$bad" >&2
    exit 1
fi
echo "no_exit.sh: $(wc -l <<< "$syms") undefined symbols, none ends the process"
