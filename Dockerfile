# syntax=docker/dockerfile:1
# jwksverify: a static binary on distroless, running as an unprivileged user.
#   docker build -t jwksverify --build-arg VERSION=$(git describe --tags --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) .
# Without the build args the image reports the release in internal/buildinfo/VERSION (.dockerignore
# drops .git, so there is no VCS stamp).
#   docker run -v $PWD/config.yaml:/etc/jwksverify/config.yaml:ro -p 8080:8080 -p 9001:9001 jwksverify
# The config must listen on 0.0.0.0 (not the default 127.0.0.1) to be reachable from outside the
# container. See docs/DEPLOY.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
# Static (no cgo), reproducible paths, no symbol table; the version and revision set at link time.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
    -ldflags="-s -w -X github.com/jwksverify/jwksverify/internal/buildinfo.version=${VERSION} -X github.com/jwksverify/jwksverify/internal/buildinfo.revision=${REVISION}" \
    -o /out/jwksverify ./cmd/jwksverify

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/jwksverify /jwksverify
USER nonroot
# 8080: HTTP (listen); 9001: Envoy ext_authz gRPC (grpc_listen).
EXPOSE 8080 9001
ENTRYPOINT ["/jwksverify","serve","--config","/etc/jwksverify/config.yaml"]
