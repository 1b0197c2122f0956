# The On The Map image: auth-gateway, locations-service and the onthemap CLI, with the web client's files
# and Leaflet, on Debian without a compiler, run as an unprivileged user.
#   docker build -t onthemap .          (docker compose builds it too)
# The base images are build arguments, so a machine that reaches no registry can build its own in their
# place (scripts/compose-test.sh does).
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The dependencies first, in a layer of their own: a change to our sources does not fetch them again.
COPY Package.swift Package.resolved* ./
# libbrotli's headers, for brotli answers (zlib's come with the image).
RUN [ -e /usr/include/brotli/encode.h ] || { apt-get update && apt-get install -y --no-install-recommends libbrotli-dev \
    && rm -rf /var/lib/apt/lists/*; }
RUN swift package resolve
COPY Shared Shared
COPY Services Services
COPY Clients Clients
COPY Fuzz Fuzz
COPY Tests Tests
# Package.swift names every target's folder, the benchmarks' own programs among them, though none is built here.
COPY bench/micro bench/micro
COPY bench/floor bench/floor
# As scripts/lib.sh's RELEASE_BUILD: optimised, the Swift runtime and Foundation linked in, so the runtime
# stage needs no Swift libraries, and exclusive access checked when compiling only. The resource bundles
# (the API document, the gazetteer, the web client) go beside the binaries, where they look for them.
RUN set -e; \
    for product in locations-service auth-gateway onthemap; do \
        swift build -c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked --product "$product"; \
    done; \
    bin=$(swift build -c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked --show-bin-path); \
    mkdir /out; \
    cp "$bin/locations-service" "$bin/auth-gateway" "$bin/onthemap" /out/; \
    strip /out/*; \
    cp -R "$bin"/*.resources /out/

FROM ${RUNTIME_IMAGE}
# Leaflet from Debian (the gateway serves it from /usr/share/javascript/leaflet, LEAFLET_DIR's default);
# libbrotli, which the services link for brotli answers.
# The secrets folder belongs to the service user, so a volume mounted there on first use does too.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata libjs-leaflet libbrotli1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 onthemap \
    && useradd --system --uid 10001 --gid onthemap --home-dir /nonexistent --shell /usr/sbin/nologin onthemap \
    && install -d -o onthemap -g onthemap -m 0700 /var/lib/onthemap/secrets /var/lib/onthemap/ledger
COPY --from=build /out/ /usr/local/bin/
USER onthemap
EXPOSE 8080 8081
# Both services drain in-flight requests on SIGTERM, then exit 0.
STOPSIGNAL SIGTERM
CMD ["auth-gateway", "serve"]
