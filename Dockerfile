# Builds the On The Map services into one small runtime image.
#   docker build -t onthemap .
FROM swift:6.1-bookworm AS build
WORKDIR /src
COPY Package.swift ./
COPY Shared Shared
COPY Services Services
COPY Tests Tests
RUN swift build -c release --product locations-service \
    && swift build -c release --product auth-gateway \
    && bin="$(swift build -c release --show-bin-path)" \
    && mkdir /out && cp "$bin/locations-service" "$bin/auth-gateway" /out/ \
    && cp -R "$bin"/*.resources /out/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libcurl4 libxml2 tzdata ca-certificates \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 onthemap
COPY --from=build /usr/lib/swift/linux/*.so /usr/lib/swift/linux/
# The binaries find their resource bundles (the OpenAPI document, the gazetteer) beside themselves.
COPY --from=build /out/ /usr/local/bin/
ENV LD_LIBRARY_PATH=/usr/lib/swift/linux
USER onthemap
EXPOSE 8080 8081
CMD ["auth-gateway", "serve"]
