# Option 2 of docs/design: an Argo Rollouts controller image on a Node 24 base, with the vmzones bundle inside.
# (Option 1, the default, keeps the stock distroless controller and copies a self-contained runtime in with an
# init container.) No Docker engine runs where this project is developed, so this file is not built in CI.
ARG ROLLOUTS_VERSION=v1.9.1

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM quay.io/argoproj/argo-rollouts:${ROLLOUTS_VERSION} AS controller

FROM node:24-bookworm-slim
COPY --from=controller /bin/rollouts-controller /bin/rollouts-controller
COPY --from=build /src/dist/vmzones.mjs /opt/vmzones/lib/vmzones.mjs
RUN mkdir -p /opt/vmzones/bin && ln -s "$(command -v node)" /opt/vmzones/bin/node
USER 999
WORKDIR /home/argo-rollouts
ENTRYPOINT ["/bin/rollouts-controller"]
