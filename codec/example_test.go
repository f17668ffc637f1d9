package codec_test

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
)

// A sorted table compressed into the paper's blocks and one block read
// back by its key: each block keeps its last fingerprint as its key, so a
// search over the keys finds the one block a range lies in.
func Example() {
	r := rand.New(rand.NewPCG(1, 2))
	fps := make([]uint64, 10000)
	for i := range fps {
		fps[i] = r.Uint64()
	}
	slices.Sort(fps)
	code, err := codec.Train(fps)
	if err != nil {
		panic(err)
	}
	type block struct {
		key  uint64
		data []byte
	}
	var blocks []block
	size := 0
	err = codec.Encode(fps, code, 1, codec.DefaultBlockSize, func(key uint64, b []byte) error {
		blocks = append(blocks, block{key, bytes.Clone(b)}) // b is reused
		size += len(b)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d fingerprints in %d blocks, %.1f bits each\n", len(fps), len(blocks), float64(8*size)/float64(len(fps)))

	// The block that holds fps[5000]: the first whose key is at or above it.
	i, _ := slices.BinarySearchFunc(blocks, fps[5000], func(b block, fp uint64) int {
		return cmp.Compare(b.key, fp)
	})
	got, err := codec.Decode(nil, blocks[i].data, blocks[i].key, codec.CodeMap{1: code})
	if err != nil {
		panic(err)
	}
	_, found := slices.BinarySearch(got, fps[5000])
	fmt.Println("found in its block:", found, "; the block ends at its key:", got[len(got)-1] == blocks[i].key)
	// Output:
	// 10000 fingerprints in 64 blocks, 52.2 bits each
	// found in its block: true ; the block ends at its key: true
}

// The same blocks as a stream, for fingerprints that do not fit in memory
// sorted: written as they come in order, read back a block at a time.
func ExampleStreamWriter() {
	r := rand.New(rand.NewPCG(3, 4))
	fps := make([]uint64, 5000)
	for i := range fps {
		fps[i] = r.Uint64()
	}
	slices.Sort(fps)
	code, err := codec.Train(fps)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	w, err := codec.NewStreamWriter(&buf, code, codec.DefaultBlockSize)
	if err != nil {
		panic(err)
	}
	for _, fp := range fps {
		if err := w.Add(fp); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	sr, err := codec.NewStreamReader(&buf)
	if err != nil {
		panic(err)
	}
	var back, blk []uint64
	blocks := 0
	for {
		blk, err = sr.Next(blk) // the block's fingerprints, in blk's memory
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		back = append(back, blk...)
		blocks++
	}
	fmt.Println(len(back), "read back in", blocks, "blocks, the same:", slices.Equal(back, fps))
	// Output:
	// 5000 read back in 33 blocks, the same: true
}
