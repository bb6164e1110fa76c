# jwksverify build, test and benchmark entry points.
#
# The default build is pure Go (CGO_ENABLED=0, Go's own FIPS 140-3 capable
# crypto). The *-boring targets build and test the opt-in BoringCrypto flavour
# (GOEXPERIMENT=boringcrypto, cgo, linux/amd64 or linux/arm64 only); see
# docs/BORINGCRYPTO.md for what it changes and when to choose it.

GO         ?= go
BIN        ?= bin
BORING_ENV := CGO_ENABLED=1 GOEXPERIMENT=boringcrypto
# The packages test-boring must pass; ./... runs everything else too.
BORING_PKGS ?= ./...
# Benchmarks compared between the two builds (the verify package's own).
BENCH      ?= BenchmarkVerify$$|BenchmarkVerifyCached|BenchmarkFloor
BENCHCOUNT ?= 6
BENCHTIME  ?= 1s
# The version and revision the binary reports (jwksverify version, /healthz,
# jwksverify_build_info): git's description of the checkout, else the release
# the tree carries (internal/buildinfo/VERSION).
VERSION    ?= $(shell git describe --tags --dirty 2>/dev/null || cat internal/buildinfo/VERSION)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS    := -X github.com/jwksverify/jwksverify/internal/buildinfo.version=$(VERSION) \
              -X github.com/jwksverify/jwksverify/internal/buildinfo.revision=$(REVISION)

.PHONY: all build build-boring test test-boring vet-boring bench-boring bench-compare clean

all: build

## build: the pure-Go binary (no cgo), bin/jwksverify.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/jwksverify ./cmd/jwksverify

## build-boring: the BoringCrypto binary, bin/jwksverify-boring.
build-boring:
	$(BORING_ENV) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/jwksverify-boring ./cmd/jwksverify

## test: every package's tests with the race detector: the library's module
## and the integration/ test module (go.work joins them), as the README says.
test:
	$(GO) test -race -count=1 ./... ./integration/...

## test-boring: the same tests built with BoringCrypto (includes
## verify's TestBoringCryptoEnabled, which proves the build really uses it).
test-boring:
	$(BORING_ENV) $(GO) test -race -count=1 $(BORING_PKGS)

## vet-boring: go vet and staticcheck with the boringcrypto build tag.
vet-boring:
	$(BORING_ENV) $(GO) vet ./...
	$(BORING_ENV) staticcheck ./...

## bench-boring: the verify benchmarks under BoringCrypto, into
## docs/benchmarks-boring.txt.
bench-boring:
	$(BORING_ENV) $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCHCOUNT) \
		-benchtime $(BENCHTIME) ./verify | tee docs/benchmarks-boring.txt

## bench-compare: the verify benchmarks with both builds, run alternately
## (one round of each, BENCHCOUNT times) so that both see the same machine
## noise, into bin/benchmarks-std.txt and docs/benchmarks-boring.txt, then
## benchstat. Needs benchstat (golang.org/x/perf/cmd/benchstat) on PATH.
bench-compare:
	mkdir -p $(BIN)
	$(GO) test -c -o $(BIN)/verify-std.test ./verify
	$(BORING_ENV) $(GO) test -c -o $(BIN)/verify-boring.test ./verify
	rm -f $(BIN)/benchmarks-std.txt docs/benchmarks-boring.txt
	cd verify && for i in $$(seq $(BENCHCOUNT)); do \
		../$(BIN)/verify-std.test -test.run '^$$' -test.bench '$(BENCH)' -test.benchmem \
			-test.benchtime $(BENCHTIME) >> ../$(BIN)/benchmarks-std.txt && \
		../$(BIN)/verify-boring.test -test.run '^$$' -test.bench '$(BENCH)' -test.benchmem \
			-test.benchtime $(BENCHTIME) >> ../docs/benchmarks-boring.txt || exit 1; \
	done
	benchstat $(BIN)/benchmarks-std.txt docs/benchmarks-boring.txt

clean:
	rm -rf $(BIN)
