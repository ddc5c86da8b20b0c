//go:build tools

// Keeps Argo CD's multi-call command in this module's dependency graph (go mod tidy would drop it otherwise).
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
