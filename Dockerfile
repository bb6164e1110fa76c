# syntax=docker/dockerfile:1
# jwksverify: a static binary on distroless, running as an unprivileged user.
#   make image        # = docker build -t jwksverify:$(make -s version) with the two build args below
# or by hand, on a checkout of the release tag v0.2.0:
#   docker build -t jwksverify:v0.2.0 --build-arg VERSION=v0.2.0 --build-arg REVISION=$(git rev-parse HEAD) .
# Without the build args the image reports a development build of the release in
# cmd/jwksverify/internal/buildinfo/VERSION (.dockerignore drops .git, so there is no VCS stamp).
#   docker run -v $PWD/config.yaml:/etc/jwksverify/config.yaml:ro -p 8080:8080 -p 9001:9001 jwksverify:v0.2.0
# The config must listen on 0.0.0.0 (not the default 127.0.0.1) to be reachable from outside the
# container. See docs/DEPLOY.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
# `make build`: the Makefile's one set of link flags (static, no cgo, -trimpath, an empty build id,
# no symbol table, the version and revision with -X), the same as `make dist`'s.
RUN make build BIN=/out ${VERSION:+VERSION="$VERSION"} ${REVISION:+REVISION="$REVISION"}

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/jwksverify /jwksverify
USER nonroot
# 8080: HTTP (listen); 9001: Envoy ext_authz gRPC (grpc_listen).
EXPOSE 8080 9001
ENTRYPOINT ["/jwksverify","serve","--config","/etc/jwksverify/config.yaml"]
