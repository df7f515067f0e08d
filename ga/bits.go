package ga

import "math/bits"

// Bits is a set of host indexes, one bit per host.
type Bits []uint64

// NewBits returns an empty set able to hold hosts 0..m-1.
func NewBits(m int) Bits { return make(Bits, (m+63)/64) }

// Set adds host h.
func (b Bits) Set(h int) { b[h>>6] |= 1 << (uint(h) & 63) }

// Clear removes host h.
func (b Bits) Clear(h int) { b[h>>6] &^= 1 << (uint(h) & 63) }

// Flip toggles host h.
func (b Bits) Flip(h int) { b[h>>6] ^= 1 << (uint(h) & 63) }

// Has reports whether host h is in the set.
func (b Bits) Has(h int) bool { return b[h>>6]&(1<<(uint(h)&63)) != 0 }

// Count is the number of hosts in the set.
func (b Bits) Count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// Reset empties the set.
func (b Bits) Reset() {
	for i := range b {
		b[i] = 0
	}
}

// Clone returns a copy.
func (b Bits) Clone() Bits { return append(Bits(nil), b...) }

// Equal reports whether two sets hold the same hosts.
func (b Bits) Equal(o Bits) bool {
	if len(b) != len(o) {
		return false
	}
	for i := range b {
		if b[i] != o[i] {
			return false
		}
	}
	return true
}

// Hosts appends the host indexes in the set, ascending, to dst.
func (b Bits) Hosts(dst []int) []int {
	for i, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			dst = append(dst, i*64+t)
			w &= w - 1
		}
	}
	return dst
}

// Nth returns the index of the n-th host (0-based) in the set, or -1.
func (b Bits) Nth(n int) int {
	for i, w := range b {
		c := bits.OnesCount64(w)
		if n >= c {
			n -= c
			continue
		}
		for ; n > 0; n-- {
			w &= w - 1
		}
		return i*64 + bits.TrailingZeros64(w)
	}
	return -1
}
