// Package store is the engine's Pebble store and everything it takes to
// keep one safely: Open, which refuses a store whose MANIFEST is damaged
// before its end or that is not a simhashdb store and keeps the key order a
// store was made with (KeyOrder splits posting keys so that Pebble's bloom
// filters hold fingerprints); Commit, the one way the engine writes (its
// batches as one sstable, ingested, after a check that the disk keeps room
// for Pebble's MANIFEST), and LogRoom, the same check for the engine's
// write-ahead log; the handlers of Pebble's logs and events (damage is
// logged and remembered, never an exit); the lock, and read-only media;
// the map of a read-only store's data blocks, which reads many keys' blocks
// in one submission to the ring without Pebble's read path (GetMany); and
// the few file operations vfs.FS leaves to its callers, so that every byte
// goes through the index's vfs.FS.
package store
