package state

import (
	"crypto/rand"
	"fmt"
)

// NewID returns a fresh random ID for a job-side object (node, evaluation,
// allocation, deployment) or a token secret: an RFC 4122 version 4 UUID in
// its canonical text form. The leader calls it before proposing a write;
// Apply never does.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// IsID reports whether s has the form of an ID NewID makes: a UUID in its
// canonical text form, 8-4-4-4-12 hexadecimal digits (either case).
func IsID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
