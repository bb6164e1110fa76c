#!/usr/bin/env bash
# Runs the peer benchmarks (bench_test.go) and regenerates docs/BENCHMARKS.md
# and docs/benchmarks.svg from them.
#
#   COUNT      repetitions of each benchmark (default 6; benchstat wants >= 6)
#   BENCHTIME  -benchtime of each repetition (default 400ms: ~7 min on 2 idle cores)
#
# The raw output goes to results/ (not committed) and is copied to
# results-latest.txt, with benchstat's summary in benchstat-latest.txt: both
# are committed so the document can be regenerated without rerunning
# (go run ./cmd/report -bench results-latest.txt -notes analysis.md ...). The HTTP section is
# kept from http-latest.json (bench/http.sh).
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-400ms}
BENCHSTAT=${BENCHSTAT:-$(go env GOPATH)/bin/benchstat}

if [ ! -x "$BENCHSTAT" ]; then
  echo "installing benchstat" >&2
  go install golang.org/x/perf/cmd/benchstat@latest
fi

mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw="results/bench-$stamp.txt"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- .. 2>/dev/null; then commit="$commit-dirty"; fi
# Configuration lines in the Go benchmark format: benchstat and cmd/report read them.
{
  echo "cpu-model: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "nproc: $(nproc)"
  echo "go: $(go env GOVERSION)"
  echo "commit: $commit"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "benchtime: $BENCHTIME"
} >"$raw"

echo "running benchmarks: -count $COUNT -benchtime $BENCHTIME -> $raw" >&2
go test -run '^$' -bench . -count "$COUNT" -benchtime "$BENCHTIME" -timeout 60m . | tee -a "$raw"

cp "$raw" results-latest.txt
"$BENCHSTAT" -col /impl results-latest.txt >benchstat-latest.txt
go run ./cmd/report \
  -bench results-latest.txt -notes analysis.md -sections sections.md -benchstat benchstat-latest.txt -http http-latest.json \
  -out ../docs/BENCHMARKS.md -svg ../docs/benchmarks.svg
echo "wrote docs/BENCHMARKS.md and docs/benchmarks.svg" >&2
