#!/usr/bin/env bash
# run.sh - the project's interop suite against a real Linux kernel (siw, rxe, knfsd/svcrdma,
# the NFS client/xprtrdma) booted under qemu.  One guest boot per case.
#
# Usage: sudo interop/run.sh [options] [CASE|TAG ...]
#   CASE       a file cases/CASE.case (see --list); TAG selects every case whose TAGS
#              contain it (quick, go, lab, iwtest, provider, ...).  Default: every case.
#   --quick    same as the tag "quick"
#   --list     list the cases and their tags, then exit
#   --check    self-check without root or VM: shell syntax of every script, every case file
#              loads and names an existing guest test, and the Go harness compiles
#              (go vet -tags interop ./interop/...).  Meant for CI.
#   --no-build skip ./build.sh (the cached lab must exist)
# Builds the lab first if needed (cached in interop/.cache, ~3 min, ~270 MB downloaded and ~1.3 GB of disk the first time),
# builds the Go test binary of each package the cases name (GO_PKG), runs the cases, and ends with
# "N passed, N failed" (exit status 1 if any case failed).  Run folders: .cache/runs/.
# Env: GO (go binary, default: go in PATH or /usr/local/go/bin/go), CASE_TIMEOUT (s, default 400),
#      GO_BUILD_FLAGS (for the Go test binaries; default -race when a C compiler is present).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CACHE="$HERE/.cache"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export GUEST_IP=10.0.2.15 HOSTSVC_IP=10.0.2.100

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# load_case FILE: source a case definition into a clean set of variables (call in a subshell)
load_case() {
  DESC="" TAGS="" NET=netns GUEST="" HOST_READY="" HOST_BG="" HOST_BG_SERVICE="" HOST_TIMEOUT=300 GO_TEST="" GO_PKG=interop/iwtest BOOT_OPTS=""
  unset -f check 2>/dev/null
  # shellcheck disable=SC1090
  source "$1" || return 1
}

case_names() { for f in "$HERE"/cases/*.case; do basename "$f" .case; done; }

list_cases() {
  local n
  for n in $(case_names); do
    ( load_case "$HERE/cases/$n.case"; printf '%-22s [%s] %s\n' "$n" "$TAGS" "$DESC" )
  done
}

self_check() { # no root, no VM
  local bad=0 f n
  for f in "$HERE"/*.sh "$HERE"/guest/*.sh "$HERE"/guest/tests/*.sh "$HERE"/guest/lab-init "$HERE"/initramfs/init; do
    case $(head -1 "$f") in
      *bash*) bash -n "$f" || { echo "check: syntax error in $f"; bad=1; } ;;
      *) sh -n "$f" 2>/dev/null || bash -n "$f" || { echo "check: syntax error in $f"; bad=1; } ;;
    esac
  done
  for n in $(case_names); do
    bash -n "$HERE/cases/$n.case" || { echo "check: syntax error in cases/$n.case"; bad=1; continue; }
    ( load_case "$HERE/cases/$n.case" || exit 1
      [[ -n "$DESC" ]] || { echo "check: cases/$n.case: DESC is empty"; exit 1; }
      [[ -n "$GUEST" ]] || { echo "check: cases/$n.case: GUEST is empty"; exit 1; }
      set -- $GUEST
      [[ -f "$HERE/guest/tests/$1.sh" ]] || { echo "check: cases/$n.case: no guest/tests/$1.sh"; exit 1; }
      [[ "$NET" == netns || "$NET" == slirp ]] || { echo "check: cases/$n.case: NET=$NET (want netns or slirp)"; exit 1; }
      if [[ -n "$GO_TEST" ]]; then
        grep -qs "^func $GO_TEST(" "$REPO/$GO_PKG"/*_test.go || { echo "check: cases/$n.case: GO_TEST=$GO_TEST not found in $GO_PKG/"; exit 1; }
      fi
    ) || bad=1
  done
  (cd "$REPO" && "$GO" vet -tags interop ./interop/... && "$GO" vet ./interop/...) || { echo "check: go vet failed"; bad=1; }
  if [[ $bad == 0 ]]; then echo "interop self-check ok ($(case_names | wc -l) cases)"; fi
  return $bad
}

BUILD=1 SEL=()
for a in "$@"; do
  case $a in
    -h|--help) usage; exit 0 ;;
    --list) list_cases; exit 0 ;;
    --check) self_check; exit $? ;;
    --quick) SEL+=(quick) ;;
    --no-build) BUILD="" ;;
    -*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    *) SEL+=("$a") ;;
  esac
done

# expand the selection: case names stay, tags become their cases, in file order
CASES=()
if ((${#SEL[@]} == 0)); then
  mapfile -t CASES < <(case_names)
else
  for s in "${SEL[@]}"; do
    if [[ -f "$HERE/cases/$s.case" ]]; then CASES+=("$s"); continue; fi
    found=""
    for n in $(case_names); do
      g=$( load_case "$HERE/cases/$n.case"; echo " $TAGS " )
      if [[ "$g" == *" $s "* ]]; then CASES+=("$n"); found=1; fi
    done
    [[ -n "$found" ]] || { echo "run.sh: no case or tag named '$s' (see --list)" >&2; exit 2; }
  done
  # A case selected twice (two tags, or a tag and its name) runs once: its run folder
  # is per case, and a second run would read the first one's results.
  declare -A seen=()
  uniq=()
  for n in "${CASES[@]}"; do
    [[ -n "${seen[$n]:-}" ]] && continue
    seen[$n]=1
    uniq+=("$n")
  done
  CASES=("${uniq[@]}")
fi

[[ $(id -u) -eq 0 ]] || { echo "run.sh must run as root (qemu image build, network namespaces)" >&2; exit 2; }
if [[ -n "$BUILD" ]]; then
  # several runs may start at once (other engineers, CI): one build at a time
  mkdir -p "$CACHE"
  if command -v flock >/dev/null; then
    flock "$CACHE/build.lock" "$HERE/build.sh" || { echo "run.sh: build.sh failed" >&2; exit 2; }
  else
    "$HERE/build.sh" || { echo "run.sh: build.sh failed" >&2; exit 2; }
  fi
fi

RUNS="$CACHE/runs/suite-$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$RUNS/bin"
# Go test binaries: one per package named by the selected cases (GO_PKG), built once per run
GO_BUILD_FLAGS=${GO_BUILD_FLAGS-$(command -v cc >/dev/null && echo -race)}   # -race needs cgo (a C compiler)
GO_FAILED=""
declare -A built=()
for n in "${CASES[@]}"; do
  pkg=$( load_case "$HERE/cases/$n.case"; [[ -n "$GO_TEST" ]] && echo "$GO_PKG" )
  [[ -z "$pkg" || -n "${built[$pkg]:-}" ]] && continue
  built[$pkg]=1
  bin="$RUNS/bin/$(basename "$pkg").test"
  echo "=== building $pkg test binary ($bin, flags: ${GO_BUILD_FLAGS:-none})"
  # shellcheck disable=SC2086
  if ! (cd "$REPO" && "$GO" test -c -tags interop $GO_BUILD_FLAGS -o "$bin" "./$pkg") > "$RUNS/go-build-$(basename "$pkg").log" 2>&1; then
    GO_FAILED+=" $pkg"; echo "go build of $pkg failed:"; cat "$RUNS/go-build-$(basename "$pkg").log"
  fi
done

pass=0 fail=0 summary=()

# run_one NAME: one boot in a subshell (case variables and exports stay local); 0 = pass.
run_one() (
  name=$1 out="$RUNS/$1" ns="" rc=0 bgrc=0 why="" BGPID=""
  mkdir -p "$out"
  load_case "$HERE/cases/$name.case" || { echo "cannot load cases/$name.case" > "$out/why"; exit 1; }
  cleanup() {
    [[ -n "$BGPID" ]] && kill -- -"$BGPID" 2>/dev/null
    [[ -n "$ns" ]] && "$HERE/netns.sh" down "$ns"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  IWTEST="$RUNS/bin/$(basename "$GO_PKG").test"
  if [[ -n "$GO_TEST" && " $GO_FAILED " == *" $GO_PKG "* ]]; then echo "go build of $GO_PKG failed" > "$out/why"; exit 1; fi
  export LAB_OUT="$out" IWTEST INTEROP="$HERE" CASE="$name"
  export GO_RUN="$IWTEST -test.v -test.count=1 -test.timeout=${HOST_TIMEOUT}s -test.run ^${GO_TEST}\$"
  boot=(--quiet --timeout "${CASE_TIMEOUT:-400}" --out "$out") nsexec=()
  if [[ "$NET" == netns ]]; then
    ns="iop$$-$name"
    "$HERE/netns.sh" up "$ns"
    boot+=(--netns "$ns"); nsexec=(ip netns exec "$ns")
  fi
  # shellcheck disable=SC2206
  boot+=($BOOT_OPTS)
  [[ -n "$HOST_READY" ]] && boot+=(--ready-cmd "$HOST_READY")
  if [[ -n "$HOST_BG" ]]; then
    # a host program the guest connects to: started before the boot, must exit 0 by itself;
    # it may create $LAB_OUT/host.ready once it listens (we wait up to 10 s for that)
    rm -f "$out/host.ready"
    setsid "${nsexec[@]}" timeout "$HOST_TIMEOUT" bash -c "$HOST_BG" > "$out/host-bg.log" 2>&1 &
    BGPID=$!
    for _ in $(seq 1 100); do { [[ -e "$out/host.ready" ]] || ! kill -0 "$BGPID" 2>/dev/null; } && break; sleep 0.1; done
    # when it is done, tell the guest (out/stop, see guest/lib.sh wait_stop) so it can finish early
    if [[ -z "$HOST_BG_SERVICE" ]]; then
      ( while kill -0 "$BGPID" 2>/dev/null; do sleep 0.3; done; [[ -d "$out" ]] && : > "$out/stop" ) &
    fi
  fi
  # shellcheck disable=SC2086
  "$HERE/boot.sh" "${boot[@]}" $GUEST > "$out/boot.log" 2>&1 || { rc=1; why="guest test or ready-cmd failed (boot.log, console.log, host.log)"; }
  if [[ -n "$HOST_BG" && -n "$HOST_BG_SERVICE" ]]; then
    kill -- -"$BGPID" 2>/dev/null; wait "$BGPID"; BGPID=""     # a service: stopped, status ignored
  elif [[ -n "$HOST_BG" ]]; then
    for _ in $(seq 1 300); do kill -0 "$BGPID" 2>/dev/null || break; sleep 0.1; done
    kill -- -"$BGPID" 2>/dev/null
    wait "$BGPID"; bgrc=$?; BGPID=""
    [[ $bgrc == 0 ]] || { rc=1; why="${why:+$why; }host program exit $bgrc (host-bg.log)"; }
  fi
  if [[ $rc == 0 ]] && declare -F check >/dev/null; then
    ( cd "$out" && check ) > "$out/check.log" 2>&1 || { rc=1; why="check() failed (check.log)"; }
  fi
  echo "$why" > "$out/why"
  exit $rc
)

echo "=== interop suite: ${CASES[*]}"
echo "=== run folder: $RUNS"
for n in "${CASES[@]}"; do
  t0=$SECONDS
  if run_one "$n"; then
    pass=$((pass+1)); summary+=("PASS $n ($((SECONDS-t0))s)")
  else
    fail=$((fail+1)); summary+=("FAIL $n ($((SECONDS-t0))s): $(cat "$RUNS/$n/why" 2>/dev/null); see $RUNS/$n/")
  fi
  echo "${summary[-1]}"
done
echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
