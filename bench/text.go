package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"github.com/simhashdb/simhashdb/bench/quality"
	"github.com/simhashdb/simhashdb/simhash"
)

// textFingerprints returns n fingerprints of real text: the documents of
// the quality evaluation's corpora under dir (bench/quality/fetch.sh), then
// seeded variants of them, each one of quality.Edits applied to a document
// (a timestamp, a counter, an ad block, replaced words): the near-duplicate
// structure a crawler's table has. Fingerprints use simhash's default
// options; variant i depends on the seed and i only, so the set is the same
// on any number of cores.
func textFingerprints(dir string, n int, seed uint64) ([]uint64, error) {
	docs, err := quality.LoadCorpus(dir)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents under %s: run bench/quality/fetch.sh first", dir)
	}
	fpr, err := simhash.New(simhash.Options{})
	if err != nil {
		return nil, err
	}
	words := make([][]string, len(docs))
	var vocab []string
	for i, d := range docs {
		words[i] = strings.Fields(d.Text)
		vocab = append(vocab, words[i]...)
	}
	edits := quality.Edits()
	fps := make([]uint64, n)
	var wg sync.WaitGroup
	workers := runtime.NumCPU()
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				d := i % len(docs)
				if i < len(docs) {
					fps[i] = fpr.Text(docs[d].Text)
					continue
				}
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				out, _ := edits[r.IntN(len(edits))].Apply(words[d], r, vocab)
				fps[i] = fpr.Text(strings.Join(out, " "))
			}
		})
	}
	wg.Wait()
	return fps, nil
}
