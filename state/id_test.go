package state

import "testing"

func TestNewIDIsAFreshVersion4UUID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !IsID(id) {
			t.Fatalf("NewID() = %q, not an ID", id)
		}
		if id[14] != '4' || !('8' <= id[19] && id[19] <= '9' || 'a' <= id[19] && id[19] <= 'b') {
			t.Fatalf("NewID() = %q: want version 4, variant 10", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestIsID(t *testing.T) {
	for s, want := range map[string]bool{
		"0b4c1b6e-3f0a-4c2e-9d1a-5e6f7a8b9c0d":  true,
		"0B4C1B6E-3F0A-4C2E-9D1A-5E6F7A8B9C0D":  true,
		"":                                      false,
		"0b4c1b6e3f0a4c2e9d1a5e6f7a8b9c0d":      false, // no dashes
		"0b4c1b6e-3f0a-4c2e-9d1a-5e6f7a8b9c0":   false, // short
		"0b4c1b6e-3f0a-4c2e-9d1a-5e6f7a8b9c0dd": false, // long
		"0b4c1b6e-3f0a-4c2e-9d1a_5e6f7a8b9c0d":  false, // wrong separator
		"0b4c1b6e-3f0a-4c2e-9d1a-5e6f7a8b9c0g":  false, // not hex
		"0b4c1b6e-3f0a-4c2e-9d1a-5e6f7a8b9cé":   false, // multi-byte rune
	} {
		if got := IsID(s); got != want {
			t.Errorf("IsID(%q) = %v, want %v", s, got, want)
		}
	}
}
