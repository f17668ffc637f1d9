package sketch

// Words is the number of tokens in a shingle of a text: 5, the shingle of
// the quality bench's ground truth and of the MinHash it is compared with.
const Words = 5

// Text sketches a text's shingles of Words tokens from its tokens, given
// as hashes in order: the sketch a text index keeps. A text of fewer
// tokens is one shingle of all of them. The zero value is not ready: use
// NewText.
type Text struct {
	b    *Builder
	ring [8]uint64 // the last tokens, at n mod 8 (a power of two: a mask)
	n    int
}

// NewText returns a Text of no tokens.
func NewText() *Text { return &Text{b: New()} }

// Reset forgets every token.
func (t *Text) Reset() {
	t.b.Reset()
	t.n = 0
}

// Token adds the next token's hash.
func (t *Text) Token(h uint64) {
	t.ring[t.n&7] = h
	t.n++
	if t.n >= Words {
		t.b.Add(t.shingle(Words))
	}
}

// Tokens is the number of tokens since the last Reset.
func (t *Text) Tokens() int { return t.n }

// Sketch returns the sketch of the shingles of the tokens so far.
func (t *Text) Sketch() Sketch { return t.final().Sketch() }

// AppendRecord appends the record of the shingles of the tokens so far
// (Builder.AppendRecord) to dst.
func (t *Text) AppendRecord(dst []byte, l Layout) []byte { return t.final().AppendRecord(dst, l) }

// final is the builder of the shingles so far: a text of fewer tokens
// than a shingle is one shingle of all of them.
func (t *Text) final() *Builder {
	if t.n > 0 && t.n < Words {
		b := *t.b
		b.Add(t.shingle(t.n))
		return &b
	}
	return t.b
}

// shingle hashes the last m tokens, oldest first (order matters): a
// polynomial over the tokens' hashes, which Builder.Add's own mix spreads.
func (t *Text) shingle(m int) uint64 {
	x := uint64(m)
	for j := t.n - m; j < t.n; j++ {
		x = x*0x9e3779b97f4a7c15 + t.ring[j&7]
	}
	return x
}
