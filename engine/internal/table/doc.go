// Package table is one permuted table's blocks as the engine keeps them:
// Index, the in-memory directory of a table's blocks (their keys, sizes,
// pending counts and cache slots, with a radix index over the keys);
// Writer, which writes blocks with their directory entries (a flush's
// merge and a bulk load); Merge, a flush's changes to one table (most join
// a block's pending list unread, the rest rewrite their blocks); and the
// reading of a stored block and its pending list, checked against the
// directory (DecodeBlock, DecodeValue, ReadPending, MergePending). Every
// error about a block is a format.BlockError that names the table and the
// block.
package table
