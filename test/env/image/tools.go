//go:build tools

// Keeps crane in this module's dependency graph (go mod tidy would drop it otherwise).
package tools

import _ "github.com/google/go-containerregistry/cmd/crane"
