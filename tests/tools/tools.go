//go:build tools

// Go programs the tests run, pinned by this module's go.mod and go.sum (h2spec has no
// go.mod of its own, so `go install ...@latest` would pick whatever its dependencies are
// that day). test.sh installs them with `go install` into ~/.cache/weir-tools.
package tools

import (
	_ "github.com/summerwind/h2spec/cmd/h2spec"
)
