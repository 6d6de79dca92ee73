# syntax=docker/dockerfile:1
# Tollgate: build with dev dependencies, run with production ones only.
# Node 24 is an LTS line (supported to 2028-04); override with --build-arg NODE_VERSION=26.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json .prebuild-installrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

# Production dependencies, native modules compiled here (the full image has the toolchain).
FROM node:${NODE_VERSION}-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json .prebuild-installrc ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    TOLLGATE_HOST=0.0.0.0 \
    TOLLGATE_PORT=8787 \
    TOLLGATE_DB=/data/tollgate.db
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY lua ./lua
COPY drizzle ./drizzle
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TOLLGATE_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node itself is PID 1, so SIGTERM reaches Tollgate's graceful shutdown directly.
CMD ["node", "dist/cli/index.js", "serve"]
