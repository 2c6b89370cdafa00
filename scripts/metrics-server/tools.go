//go:build tools

// metrics-server v0.8.0, which scripts/k8s-node/up.sh builds and runs as a host process behind the
// API server's aggregation layer. A go.mod of its own: its k8s.io/* modules are 0.33, and sharing
// scripts/k8s-node/go.mod would lift them to that folder's 0.37.
package tools

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
