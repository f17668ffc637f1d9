// Package pathid is the id a document named by a path (or any name) gets:
// the same name, the same id, in the command's add --text, the server's
// named documents and the Beam jobs' files. It holds no more than the hash,
// so that the Beam module takes it without the engine.
package pathid

import "github.com/cespare/xxhash/v2"

// Hash is the id a name gets unless another name took it first: 53 bits of
// its xxhash64, so that ids stay exact as JSON numbers, and never 0.
func Hash(name string) uint64 { return max(xxhash.Sum64String(name)&(1<<53-1), 1) }
