//go:build tools

// Go programs the benchmark runs, pinned by this module's go.mod and go.sum:
// ghz (gRPC load, the grpc-unary scenario). `go install ...@latest` resolves ghz to
// an old release, so the version is pinned here. bench/run.sh installs it with
// `go install` into ~/.cache/weir-tools, again whenever go.sum changes.
package tools

import (
	_ "github.com/bojand/ghz/cmd/ghz"
)
