package memtable

// prefixTable holds one table's permuted fingerprints for the memtable,
// found by their top bits: an open-addressing hash table (linear probing)
// keyed by the prefix, whose slots are the fingerprints themselves.
// Fingerprints that share a prefix lie in one probe run, so a look-up reads
// a few adjacent slots. It replaces a Go map of slices, which cost three
// times the memory and an allocation per new prefix, for every table.
type prefixTable struct {
	slots []uint64 // permuted fingerprints
	used  []uint64 // bit i: slots[i] holds one
	n     int
	shift uint // a fingerprint's prefix is fp >> shift
	bits  uint // len(slots) = 1 << bits
}

func newPrefixTable(prefixBits int) prefixTable {
	return prefixTable{shift: uint(64 - prefixBits)}
}

// prefixSlotBytes is the most memory a fingerprint takes in a prefixTable:
// its slot and used bit at the lowest load (a quarter, just after growing).
const prefixSlotBytes = 4 * (8 + 1)

// home is where a prefix's probe run starts (Fibonacci hashing).
func (p *prefixTable) home(prefix uint64) int {
	return int((prefix * 0x9E3779B97F4A7C15) >> (64 - p.bits))
}

func (p *prefixTable) isUsed(i int) bool { return p.used[i>>6]&(1<<(i&63)) != 0 }

// add adds permuted fingerprint v (several may be equal: the caller keeps
// them distinct).
func (p *prefixTable) add(v uint64) {
	if 2*(p.n+1) > len(p.slots) {
		p.grow()
	}
	mask := len(p.slots) - 1
	i := p.home(v >> p.shift)
	for p.isUsed(i) {
		i = (i + 1) & mask
	}
	p.slots[i] = v
	p.used[i>>6] |= 1 << (i & 63)
	p.n++
}

func (p *prefixTable) grow() {
	old, oldUsed := p.slots, p.used
	p.bits = max(p.bits+1, 6)
	p.slots = make([]uint64, 1<<p.bits)
	p.used = make([]uint64, len(p.slots)/64)
	p.n = 0
	for i, v := range old {
		if oldUsed[i>>6]&(1<<(i&63)) != 0 {
			p.add(v)
		}
	}
}

// each calls fn for every fingerprint whose prefix is prefix.
func (p *prefixTable) each(prefix uint64, fn func(v uint64)) {
	if p.n == 0 {
		return
	}
	mask := len(p.slots) - 1
	for i := p.home(prefix); p.isUsed(i); i = (i + 1) & mask {
		if p.slots[i]>>p.shift == prefix {
			fn(p.slots[i])
		}
	}
}
