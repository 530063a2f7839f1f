#!/usr/bin/env bash
# Sets up this checkout: the system tools it needs, then .venv with choreo-kernel installed.
#
#   tools/setup.sh lab    JupyterLab and the kernel, to run the tutorials
#   tools/setup.sh test   the test tools too (the README's second command; CI runs it as well)
#
# As root on Debian or Ubuntu it installs what is missing with apt-get: Python's venv module,
# Graphviz (the graphs), g++ (device functions on the sim backend) and, for `test`, Chromium and libatomic (the browser test) and Node.js
# with npm (the JupyterLab extension's own tests). Node.js is never needed to use the extension:
# a prebuilt copy is committed (choreo_kernel/labextension). npm is installed only when Node.js,
# once there, has none: the nodejs package of NodeSource brings its own npm and conflicts with
# Debian's. Without root or apt-get it says what is missing and goes on; the tests that need a
# missing tool say they skip.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
    lab) extras="lab" ;;
    test) extras="test,browser" ;;
    *) echo "usage: tools/setup.sh lab|test" >&2; exit 2 ;;
esac

say() { echo "setup: $*" >&2; }

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# Debian's python3 has no ensurepip until python3-venv is installed, so `python3 -m venv` fails.
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
# The sim backend builds the C++ device functions that programs `call` with the system compiler.
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || missing+=(g++)
if [ "$mode" = test ]; then
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    # Playwright's own Node.js needs libatomic; Debian's nodejs pulls it in, NodeSource's does not.
    ldconfig -p 2>/dev/null | grep -q 'libatomic\.so\.1' || missing+=(libatomic1)
fi

can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

updated=""
install_packages() {
    say "installing $* with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    [ -n "$updated" ] || { apt-get update -qq || say "warning: apt-get update failed"; updated=yes; }
    apt-get install -y -qq "$@" >/dev/null \
        || say "warning: apt-get could not install $*; the tests that need them skip"
}

if [ "${#missing[@]}" -gt 0 ]; then
    if can_install; then
        install_packages "${missing[@]}"
    else
        say "warning: missing ${missing[*]} (as root: apt-get install ${missing[*]}); going on without"
    fi
fi
# Only now, with Node.js in place: NodeSource's nodejs (already there, or just installed from a
# NodeSource apt source) has npm, and Debian's npm package would conflict with it.
if [ "$mode" = test ] && command -v node >/dev/null 2>&1 && ! command -v npm >/dev/null 2>&1; then
    if can_install; then
        install_packages npm
    else
        say "warning: missing npm (as root: apt-get install npm); going on without"
    fi
fi

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
# The committed prebuilt extension is installed as it is; the hook's npm build is for changing it.
export HATCH_JUPYTER_BUILDER_SKIP_NPM=1
python -m pip install -q -e ".[$extras]"

# The extension's tests run its TypeScript under Node: compile it (to labextension/lib). The
# committed build is left as it is; tests/test_labextension.py checks that it matches its sources.
if [ "$mode" = test ]; then
    if command -v npm >/dev/null 2>&1; then
        (cd labextension && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build:lib) \
            || say "warning: the JupyterLab extension's TypeScript did not compile; its tests skip"
    else
        say "warning: no npm; the JupyterLab extension's tests skip"
    fi
fi

if [ -f .venv/share/jupyter/labextensions/choreo-kernel/package.json ]; then
    say "ready: . .venv/bin/activate (JupyterLab extension installed: Choreo cells are highlighted)"
else
    say "warning: the JupyterLab extension is not installed, so Choreo cells are not highlighted"
    exit 1
fi
