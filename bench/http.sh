#!/usr/bin/env bash
# HTTP load comparison on one server core: the real jwksverify binary (with
# and without a policy, and with Go's collector defaults, GOGC=100), the absolute floor (http.ListenAndServe with a
# handler that only writes 200: no mux, no timeouts), a bare net/http handler
# and a golang-jwt + keyfunc forward-auth handler, and the binary with
# revocation: {store: memory} and 100 000 entries in its state_dir (none
# naming the load's token), each alone
# pinned to CPU 0, loaded by wrk pinned to CPU 1 over loopback, for RS256,
# ES256 and HS256, with one repeated token and with a pool of 10 000 distinct
# tokens. Then gRPC ext_authz Check: the binary against a bare gRPC server
# answering OK, loaded by a Go client speaking Envoy's protos. Then the RSS of
# the binary with 10 issuers and a full 100 000-entry token cache. Writes
# http-latest.json and regenerates docs/BENCHMARKS.md.
#
#   DURATION   wrk -d of each run (default 4s)
#   ROUNDS     runs of each of the 66 configurations, taken in turns (default 5;
#              the report keeps each one's median and pairs the rounds; ~30 min in all)
#   ALGS       algorithms (default RS256,ES256,HS256)
#   POOL       distinct tokens of the pool runs (default 10000)
#   ONLY       server names to run, comma-separated, over HTTP and gRPC (default
#              all but floor-no-store, the floor setting Cache-Control: no-store;
#              httpbench run -h lists them). A targeted run writes
#              http-only.json (not http-latest.json), skips the memory run,
#              leaves docs/BENCHMARKS.md alone and prints the paired ratios at
#              the end.
#   REVOCATIONS  entries of the jwksverify-revocation server (default 100000)
set -euo pipefail
cd "$(dirname "$0")"

DURATION=${DURATION:-4s}
ROUNDS=${ROUNDS:-5}
ALGS=${ALGS:-RS256,ES256,HS256}
POOL=${POOL:-10000}
ONLY=${ONLY:-}
REVOCATIONS=${REVOCATIONS:-100000}
out=http-latest.json
extra=()
if [ -n "$ONLY" ]; then out=http-only.json; extra=(-skip-memory); fi

for tool in wrk taskset; do
  command -v "$tool" >/dev/null || { echo "http.sh: $tool is required (apt-get install wrk util-linux)" >&2; exit 1; }
done
if [ "$(nproc)" -lt 2 ]; then echo "http.sh: needs 2 cores (one for the servers, one for wrk)" >&2; exit 1; fi

bin="$PWD/results/bin"
mkdir -p "$bin"
(cd .. && go build -o "$bin/jwksverify" ./cmd/jwksverify)
go build -o "$bin/httpbench" ./cmd/httpbench

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- .. 2>/dev/null; then commit="$commit-dirty"; fi

"$bin/httpbench" run -bin "$bin/jwksverify" -out "$out" -only "$ONLY" -revocations "$REVOCATIONS" \
  -d "$DURATION" -rounds "$ROUNDS" -c 32 -t 1 -algs "$ALGS" -pool "$POOL" -server-cpus 0 -client-cpus 1 \
  -commit "$commit" -go "$(go env GOVERSION)" "${extra[@]}" \
  -cpu "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"

if [ -n "$ONLY" ]; then
  echo "wrote $out (a targeted run: docs/BENCHMARKS.md left alone)" >&2
elif [ -f results-latest.txt ]; then
  stat=()
  [ -f benchstat-latest.txt ] && stat=(-benchstat benchstat-latest.txt)
  go run ./cmd/report -bench results-latest.txt -notes analysis.md -sections sections.md "${stat[@]}" -http http-latest.json \
    -out ../docs/BENCHMARKS.md -svg ../docs/benchmarks.svg
  echo "wrote http-latest.json and docs/BENCHMARKS.md" >&2
else
  echo "wrote http-latest.json; run ./run.sh to generate docs/BENCHMARKS.md" >&2
fi
