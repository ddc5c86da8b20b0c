// Every pinned version of the sandbox in one place. The Go modules under test/env/*/go.mod pin
// the same versions; the build cache is keyed by those go.mod/go.sum files.

export const versions = {
  /** Argo Rollouts release whose go.mod pins Kubernetes (v1.10.2 needs go >= 1.26.10). */
  argoRollouts: 'v1.10.1',
  kubernetes: 'v1.34.5',
  /** The etcd version Kubernetes v1.34.5 pins in its go.mod. */
  etcd: 'v3.6.4',
  /** Newest VictoriaMetrics whose go directive the local Go 1.26 toolchain accepts. */
  victoriaMetrics: 'v1.151.0',
  /** Debian bookworm's victoria-metrics package: the oldest version the sandbox offers. */
  victoriaMetricsDebian: 'v1.79.5',
  /** VictoriaLogs (victoria-logs, vlagent) for VictoriaLogs zones; its go directive (1.26.5) the local Go accepts. */
  victoriaLogs: 'v1.52.1',
  /** VictoriaMetrics operator release whose CRDs are installed (read from the Go module cache). */
  vmOperator: 'v0.74.1',
  /** go-containerregistry (crane, and the library under test/env/image/cmd/ociimage). */
  goContainerregistry: 'v0.22.1',
  /** Newest kustomize whose go directive the local Go 1.26 toolchain accepts (v5.8.3 needs go 1.27). */
  kustomize: 'v5.8.2',
  /**
   * Newest Argo CD that builds from the Go module proxy: v3.2.12 references an undefined function, v3.3.x needs a
   * gitops-engine revision that differs from the one served, v3.4+ keep gitops-engine in-repo (docs/gitops.md).
   */
  argoCd: 'v3.2.11',
} as const;
