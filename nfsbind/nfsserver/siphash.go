//go:build linux

package nfsserver

import "math/bits"

// sipHash24 returns SipHash-2-4 of m under the 128-bit key k0, k1: the 64-bit keyed
// hash of J.-P. Aumasson and D. J. Bernstein, "SipHash: a fast short-input PRF"
// (INDOCRYPT 2012), with 2 compression rounds per 8-byte word and 4 finalization
// rounds. The key words are the little-endian halves of the paper's 16-byte key. To
// anyone who does not know the key its outputs look independent and uniformly
// random, however the messages were chosen, which is what a hash of names strangers
// choose must give (see cookieKey).
//
// It takes a string, not a []byte, so that hashing a directory entry's name copies
// nothing and allocates nothing.
func sipHash24(k0, k1 uint64, m string) uint64 {
	v0 := k0 ^ 0x736f6d6570736575 // "somepseu"
	v1 := k1 ^ 0x646f72616e646f6d // "dorandom"
	v2 := k0 ^ 0x6c7967656e657261 // "lygenera"
	v3 := k1 ^ 0x7465646279746573 // "tedbytes"
	n := len(m)
	for ; len(m) >= 8; m = m[8:] {
		w := uint64(m[0]) | uint64(m[1])<<8 | uint64(m[2])<<16 | uint64(m[3])<<24 |
			uint64(m[4])<<32 | uint64(m[5])<<40 | uint64(m[6])<<48 | uint64(m[7])<<56
		v3 ^= w
		v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
		v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
		v0 ^= w
	}
	// The last word: the remaining 0 to 7 bytes, and the message length mod 256 in
	// the top byte.
	w := uint64(n) << 56
	for i := len(m) - 1; i >= 0; i-- {
		w |= uint64(m[i]) << (8 * i)
	}
	v3 ^= w
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0 ^= w
	v2 ^= 0xff
	for range 4 {
		v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	}
	return v0 ^ v1 ^ v2 ^ v3
}

// sipRound is one SipRound.
func sipRound(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13)
	v1 ^= v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16)
	v3 ^= v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21)
	v3 ^= v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17)
	v1 ^= v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}
