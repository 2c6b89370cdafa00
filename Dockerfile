# The volley binary as a container image, for `volley k8s manifest --image` (docs/kubernetes.md).
#   docker build -t volley:0.1.0 .
#   docker run --rm volley:0.1.0 run --url http://host.docker.internal:8080/ --vus 10 --duration 30s
# Build: the workspace compiled in Rust's Debian image (no network at build time beyond crates.io).
# Run: distroless "cc" (glibc + libgcc, which the binary links; no shell, no package manager),
# as the non-root user 65532 that the generated Job's securityContext also requires.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY examples examples
RUN cargo build --release --locked -p volley-cli && strip target/release/volley

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/volley /usr/local/bin/volley
USER 65532:65532
WORKDIR /runs
ENTRYPOINT ["/usr/local/bin/volley"]
CMD ["--help"]
