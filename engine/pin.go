//go:build pin

package engine

// The engine's chosen storage and id-set libraries, pinned in go.mod before
// the engine imports them (go mod tidy reads files of every build tag). This
// file is built by no configuration and goes when the engine uses both.
import (
	_ "github.com/RoaringBitmap/roaring/v2/roaring64"
	_ "github.com/cockroachdb/pebble/v2"
)
