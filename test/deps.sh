#!/usr/bin/env bash
# The one list of what cuset needs from the system (Debian packages), by purpose; make,
# make test, make quickstart and .ci/run check it through this script.
#   bash test/deps.sh PURPOSE...     PURPOSE: build, test, cudabench, eval, report
# Silent when everything is there. Otherwise, as root, installs what is missing with
# apt-get and says in one line what and why; not as root, prints the apt-get line to run
# and exits 1 at once. Every purpose includes build. PYTHON (default /usr/bin/python3) is
# the interpreter whose modules are checked: the one the tests run.
set -euo pipefail
PYTHON=${PYTHON:-/usr/bin/python3}

# package            | purposes       | present when                                      | why
table='
build-essential      | build          | cmd:gcc cmd:g++ cmd:make                          | gcc, make, and g++ for the CUDA emulator
libstb-dev           | build          | header:stb/stb_ds.h                               | stb_ds maps and arrays: data/tokenizer.h, annotate.h
python3-numpy        | test cudabench | py:numpy                                          | the PyTorch oracle, CUDABench compare scripts
python3-torch        | test cudabench | py:torch                                          | the PyTorch oracle, CUDABench input generators
libopenblas0-pthread | test           | file:/usr/lib/*/openblas-pthread/libopenblas.so.0 | a threaded BLAS, the oracle 10x faster
python3-scipy        | test cudabench | py:scipy                                          | CUDABench input generators
python3-pil          | test cudabench | py:PIL                                            | CUDABench input generators
bubblewrap           | test eval      | cmd:bwrap                                         | the sandbox of generated programs (gen --eval)
chromium             | report         | cmd:chromium                                      | a screenshot of the experiment report
'

present() { # PROBE...: every probe holds
    local p
    for p in "$@"; do
        case "$p" in
            cmd:*) command -v "${p#cmd:}" >/dev/null 2>&1 ;;
            header:*) echo "#include <${p#header:}>" | "${CC:-gcc}" -E -x c - >/dev/null 2>&1 ;;
            py:*) "$PYTHON" -c "import ${p#py:}" >/dev/null 2>&1 ;;
            file:*) compgen -G "${p#file:}" >/dev/null ;;
        esac || return 1
    done
}

missing=() reasons=()
find_missing() { # fills missing (package names) and reasons ("package (why)") for the purposes in $wanted
    missing=() reasons=()
    local pkg purposes probes why purpose
    while IFS='|' read -r pkg purposes probes why; do
        read -r pkg <<<"$pkg"; read -r why <<<"$why"
        [ -n "$pkg" ] || continue
        for purpose in $purposes; do
            if [[ $wanted == *" $purpose "* ]]; then
                # shellcheck disable=SC2086 # the probes are words
                present $probes || { missing+=("$pkg"); reasons+=("$pkg ($why)"); }
                break
            fi
        done
    done <<<"$table"
}

known=" $(awk -F'|' 'NF > 1 { print $2 }' <<<"$table" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd' ') "
[ $# -gt 0 ] || { echo "usage: test/deps.sh PURPOSE... (one of:$known)" >&2; exit 2; }
for purpose in "$@"; do
    [[ $known == *" $purpose "* ]] || { echo "deps.sh: unknown purpose '$purpose' (one of:$known)" >&2; exit 2; }
done
wanted=" build $* "
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0

list() { local IFS=';'; echo "${reasons[*]}" | sed 's/;/, /g'; }
line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
    echo "cuset ($*) needs Debian packages that are missing: $(list)" >&2
    echo "install them as root:  $line" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null; then
    echo "cuset ($*) needs: $(list); this system has no apt-get: install their equivalents" >&2
    exit 1
fi
echo "deps: installing $(list), for '$*'"
log=$(mktemp /tmp/cuset_deps.XXXXXX)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
    echo "deps: '$line' failed (no network, or no such package here?): $(tail -2 "$log" | tr '\n' ' ')" >&2
    exit 1
fi
find_missing
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installed, but still not found: $(list) (PYTHON=$PYTHON, CC=${CC:-gcc})" >&2
    exit 1
fi
