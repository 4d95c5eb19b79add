# Orchard's container image, in the Hummingbird template's shape: a build stage with the Swift
# toolchain, then a slim Debian runtime holding the binary and the libraries it links.
#   docker build -t orchard .
#   docker run -v /etc/orchard:/etc/orchard:ro -v orchard-state:/var/lib/orchard -p 8080:8080 orchard
# The configuration must listen on all addresses ("server": {"host": "0.0.0.0"}) and keep its
# state in /var/lib/orchard ("stateDirectory": "/var/lib/orchard"). docs/operations.md#deploying.
# The build and runtime stages are both Debian bookworm: libcurl, SQLite and OpenSSL are linked
# dynamically, and the runtime's must be the ones the binary was built against.

# ================================
# Build image
# ================================
FROM swift:6.3-bookworm AS build

RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libsqlite3-dev libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /build

# The dependencies first, in a layer of their own that changes only with Package.swift.
COPY ./Package.* ./
RUN swift package resolve

COPY . .
RUN swift build -c release --product orchard --static-swift-stdlib \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/orchard" /staging/orchard

# ================================
# Run image
# ================================
FROM debian:bookworm-slim

# The libraries the binary links, the CA certificates for Apple and the processors, and curl
# for the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl libcurl4 libsqlite3-0 libssl3 \
    && rm -rf /var/lib/apt/lists/*

# A system user of its own (a fixed UID, for runAsNonRoot and volume ownership).
RUN groupadd --system --gid 10001 orchard \
    && useradd --system --uid 10001 --gid orchard --home-dir /var/lib/orchard --shell /usr/sbin/nologin orchard \
    && install -d -o orchard -g orchard -m 0700 /var/lib/orchard \
    && install -d -m 0755 /etc/orchard

COPY --from=build /staging/orchard /usr/local/bin/orchard

USER 10001:10001
WORKDIR /var/lib/orchard
VOLUME ["/var/lib/orchard"]
EXPOSE 8080

# /health answers 200 while the instance takes traffic (503 while starting, draining or without
# its store): docs/monitoring.md#health-and-readiness.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["curl", "--fail", "--silent", "--output", "/dev/null", "--max-time", "2", "http://127.0.0.1:8080/health"]

# SIGTERM drains (server.drainTimeoutSeconds, 25 s by default): give `docker stop` longer (-t 35).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/orchard"]
CMD ["serve", "--config", "/etc/orchard/orchard.json"]
