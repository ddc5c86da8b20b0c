//go:build tools

// Keeps the kustomize command in this module's dependency graph (go mod tidy would drop it otherwise).
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
