# The vmzones init-container image for those who build with Docker: the same files, entrypoint and user as
# `npm run image` (scripts/image.ts, built without a container engine; test/e2e/install checks that the two
# agree). Build it from the output of `npm run package`:
#   npm ci && npm run package && docker build -t vmzones-runtime:0.1.0 .
# Its init container copies the runtime into the emptyDir that the Argo Rollouts v1.10.1 controller (the
# version vmzones is tested with, quay.io/argoproj/argo-rollouts:v1.10.1) mounts at /opt/vmzones
# (manifests/kustomize, docs/deploy.md). No shell in the image: the runtime's own node does the copy.
FROM scratch
COPY dist/runtime/ /vmzones/
LABEL org.opencontainers.image.title="vmzones runtime (init container)" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 999
ENTRYPOINT ["/vmzones/lib/ld-linux-x86-64.so.2", "--library-path", "/vmzones/lib", "/vmzones/bin/node", "/vmzones/install.mjs"]
CMD ["/opt/vmzones"]
