#!/usr/bin/env bash
# The one list of what cuset needs from the system (Debian packages), by purpose; make,
# make test, make quickstart and .ci/run check it through this script.
#   bash test/deps.sh PURPOSE...     PURPOSE: build, test, cudabench, eval, report
#   bash test/deps.sh --hf-python    the Python that has the Hugging Face libraries (below)
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
python3-venv         | test           | py:ensurepip                                      | a venv for the Hugging Face libraries from PyPI
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

# The real Hugging Face libraries that test/test_gpt2.py checks data/gpt2.h against (the
# versions the README names), from PyPI into a venv in test/ that also sees Debian's torch
# and numpy. Without a network test_gpt2.py skips, saying what it needs.
hf_venv=$(cd "$(dirname "$0")" && pwd)/.hf-venv
hf_pkgs=(transformers==4.45.2 tokenizers==0.20.3 safetensors==0.8.0)
hf_ready() { # (found, not imported: importing transformers takes seconds)
    "$hf_venv/bin/python" -c "import importlib.util as u, sys
sys.exit(any(u.find_spec(m) is None for m in ('transformers', 'tokenizers', 'safetensors')))" \
        >/dev/null 2>&1
}
hf_install() {
    hf_ready && return 0
    echo "deps: installing ${hf_pkgs[*]} from PyPI into $hf_venv (test/test_gpt2.py compares with them)"
    local log
    log=$(mktemp /tmp/cuset_deps.XXXXXX)
    if ! { "$PYTHON" -m venv --system-site-packages "$hf_venv" && "$hf_venv/bin/pip" install -q --disable-pip-version-check \
            "${hf_pkgs[@]}"; } >"$log" 2>&1 || ! hf_ready; then
        echo "deps: could not install them (no network?): $(tail -2 "$log" | tr '\n' ' '); test_gpt2.py will skip" >&2
    fi
    rm -f "$log"
}
if [ "${1:-}" = --hf-python ]; then
    if hf_ready; then echo "$hf_venv/bin/python"; else echo "$PYTHON"; fi
    exit 0
fi

known=" $(awk -F'|' 'NF > 1 { print $2 }' <<<"$table" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd' ') "
[ $# -gt 0 ] || { echo "usage: test/deps.sh PURPOSE... (one of:$known)" >&2; exit 2; }
for purpose in "$@"; do
    [[ $known == *" $purpose "* ]] || { echo "deps.sh: unknown purpose '$purpose' (one of:$known)" >&2; exit 2; }
done
wanted=" build $* "
find_missing
if [ ${#missing[@]} -eq 0 ]; then
    [[ $wanted == *" test "* ]] && hf_install
    exit 0
fi

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
[[ $wanted == *" test "* ]] && hf_install
exit 0
