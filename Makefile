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
# The one version (docs/DECISIONS.md, "One version"): VERSION_FILE names the
# release this tree is or will become. A clean checkout of its tag builds that
# release; any other build is a development build of it, VERSION-dev+<rev>
# (".dirty" when modified; no git: VERSION-dev), as plain `go build` reports.
# The binary reports the result (jwksverify version, /healthz,
# jwksverify_build_info); the image is tagged with it (make image).
VERSION_FILE := cmd/jwksverify/internal/buildinfo/VERSION
RELEASE    := $(shell cat $(VERSION_FILE))
ifndef VERSION
VERSION    := $(shell \
  rev=$$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo "$(RELEASE)-dev"; exit 0; }; \
  if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo "$(RELEASE)-dev+$$rev.dirty"; \
  elif git tag --points-at HEAD | grep -qxF "$(RELEASE)"; then echo "$(RELEASE)"; \
  else echo "$(RELEASE)-dev+$$rev"; fi)
endif
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)
# The link flags of every build of the binary: make build, build-boring, dist
# and the Dockerfile (which runs make build). No symbol table or DWARF, an
# empty build id (with -trimpath: the same source gives the same bytes), and
# the version and revision.
LDFLAGS    := -s -w -buildid= \
              -X github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo.version=$(VERSION) \
              -X github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo.revision=$(REVISION)
# Container image tags cannot hold '+': a development build's tag uses '-'.
IMAGE      ?= jwksverify
IMAGE_TAG  ?= $(subst +,-,$(VERSION))
# make dist: the platforms, and the time every file in the archives carries
# (the last commit's, so that the same commit gives the same archives).
DIST       ?= dist
PLATFORMS  ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# nfpm builds the .deb (make deb); run from the module proxy at this version.
NFPM       ?= GOWORK=off $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0

.PHONY: all version build build-boring image dist deb test test-boring vet-boring bench-boring bench-compare clean

all: build

## version: the version a build of this checkout reports.
version:
	@echo $(VERSION)

## build: the pure-Go binary (no cgo), bin/jwksverify.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/jwksverify ./cmd/jwksverify

## build-boring: the BoringCrypto binary, bin/jwksverify-boring.
build-boring:
	$(BORING_ENV) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/jwksverify-boring ./cmd/jwksverify

## image: the container image, tagged $(IMAGE):$(IMAGE_TAG), built from the
## Dockerfile with this checkout's version and revision.
image:
	docker build -t $(IMAGE):$(IMAGE_TAG) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) .

## dist: release archives for PLATFORMS, $(DIST)/jwksverify_$(VERSION)_<os>_<arch>.tar.gz
## (the binary, LICENSE, NOTICE, README.md, CHANGELOG.md and the licenses of
## the modules it links), and $(DIST)/SHA256SUMS. Reproducible: -trimpath, an
## empty build id, no cgo, and every archived file owned by 0:0 with the last
## commit's time, in name order, gzip without a name or time. Needs GNU tar.
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=jwksverify_$(VERSION)_$${os}_$${arch}; dir=$(DIST)/$$name; \
		mkdir -p $$dir/licenses; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$dir/jwksverify ./cmd/jwksverify; \
		cp LICENSE NOTICE README.md CHANGELOG.md $$dir/; \
		cp "$$($(GO) env GOROOT)/LICENSE" $$dir/licenses/go.LICENSE; \
		GOOS=$$os GOARCH=$$arch $(GO) list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}' ./cmd/jwksverify | sort -u | \
		while read -r mod mdir; do \
			for f in "$$mdir"/LICENSE* "$$mdir"/COPYING* "$$mdir"/NOTICE*; do \
				[ -f "$$f" ] || continue; mkdir -p "$$dir/licenses/$$mod"; cp "$$f" "$$dir/licenses/$$mod/"; chmod 644 "$$dir/licenses/$$mod/$$(basename "$$f")"; \
			done; \
		done; \
		tar --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			--mode='u+rwX,go+rX,go-w' --format=gnu -C $(DIST) -cf - $$name | gzip -9n > $(DIST)/$$name.tar.gz; \
		rm -rf $$dir; \
	done
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS

## deb: a Debian package of the linux/amd64 (DEB_ARCH=arm64: linux/arm64)
## binary with a hardened systemd unit (packaging/nfpm.yaml), into $(DIST)/;
## the binary is staged in dist/deb/, where nfpm.yaml reads it.
DEB_ARCH ?= amd64
deb:
	mkdir -p dist/deb $(DIST)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(DEB_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/deb/jwksverify ./cmd/jwksverify
	VERSION=$(VERSION) DEB_ARCH=$(DEB_ARCH) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) \
		$(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/

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
	rm -rf $(BIN) $(DIST)
