# robotgate: multi-stage build to a slim, non-root runtime image.
#
#   docker build -t robotgate .
#   docker run -p 8080:8080 -v "$PWD/conf:/etc/robotgate" robotgate
#
# The image reads /etc/robotgate/robotgate.yaml; mount your own conf/ there.
# Listen on 0.0.0.0 inside the container (the shipped config listens on
# 127.0.0.1, which is unreachable from outside a container).

FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so edits to the source reuse the cached layer.
COPY Cargo.toml Cargo.lock ./
# The workspace's nginx module (built apart, by nginx/build.sh) needs its manifest here.
COPY nginx/Cargo.toml nginx/
RUN mkdir -p src benches examples nginx/src \
 && echo 'fn main() {}' > src/main.rs && echo '' > src/lib.rs && echo '' > nginx/src/lib.rs \
 && for b in robots_match classify identity report accesslog; do echo 'fn main() {}' > benches/$b.rs; done \
 && echo 'fn main() {}' > examples/passthrough.rs \
 && cargo build --release --locked \
 && rm -rf src benches examples nginx/src
COPY . .
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --bin robotgate

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin robotgate \
 && mkdir -p /etc/robotgate /var/log/robotgate \
 && chown robotgate /var/log/robotgate
COPY --from=build /src/target/release/robotgate /usr/local/bin/robotgate
COPY --chown=robotgate conf/ /etc/robotgate/
RUN sed -i -e 's/127.0.0.1:8080/0.0.0.0:8080/' \
           -e 's#conf/#/etc/robotgate/#g' /etc/robotgate/robotgate.yaml
USER robotgate
WORKDIR /etc/robotgate
VOLUME ["/etc/robotgate", "/var/log/robotgate"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/robotgate", "health", "127.0.0.1:8080"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/robotgate"]
CMD ["serve", "--config", "/etc/robotgate/robotgate.yaml"]
