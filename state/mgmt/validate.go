package mgmt

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/schedhq/sched/state"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrForbidden: the caller is known and may see the target, but may not do
// what it asked (403). The management API uses it where spec §7 says 403;
// elsewhere an unauthorized caller gets ErrNotFound (404), so that it
// learns nothing about what exists.
var ErrForbidden = errors.New("forbidden")

// Forbiddenf returns an error wrapping ErrForbidden.
func Forbiddenf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrForbidden)
}

// Field paths of management-API validation errors are JSON pointers into the
// JSON:API request document, so the HTTP layer can put FieldError.Field
// into an error's source.pointer as it is.

// AttrPointer returns the JSON pointer of attribute name, e.g.
// "/data/attributes/name". Nested attributes use a slash:
// AttrPointer("workspace-access/runs").
func AttrPointer(name string) string { return "/data/attributes/" + name }

// RelPointer returns the JSON pointer of relationship name's id, e.g.
// "/data/relationships/project/data/id".
func RelPointer(name string) string { return "/data/relationships/" + name + "/data/id" }

// Limits of the management API (spec §2, §8 and TFE's documented rules).
const (
	ProjectNameMinLen      = 3
	ProjectNameMaxLen      = 40
	ProjectDescriptionMax  = 256
	WorkspaceNameMaxLen    = 90
	WorkspaceDescMax       = 1000
	OrganizationNameMaxLen = 90
	TeamNameMaxLen         = 90
	UsernameMaxLen         = 64
	EmailMaxLen            = 254
	TagKeyMaxLen           = 128
	TagValueMaxLen         = 256
	LockReasonMaxLen       = 1000
	RunMessageMaxLen       = 1000
	maxTagBindings         = 100
)

var (
	projectNameRE = regexp.MustCompile(`^[A-Za-z0-9 _-]+$`)
	// durationRE is auto-destroy-activity-duration: up to four digits,
	// greater than 0 (no leading zero), then d or h.
	durationRE = regexp.MustCompile(`^[1-9][0-9]{0,3}[dh]$`)
	// slugRE is the name of an organization, workspace or team: letters,
	// numbers, - and _.
	slugRE     = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	UsernameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	emailRE    = regexp.MustCompile(`^[^@\s]+@[^@\s]+$`)
	// versionRE is N.N.N or N.N.N-bundleName.
	versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z][0-9A-Za-z._-]*)?$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	platRE    = regexp.MustCompile(`^[a-z0-9_]+$`)
	// idRE is the part of an ID after its prefix.
	idRE = regexp.MustCompile(`^[A-Za-z0-9]+$`)
)

// ValidProjectName reports what is wrong with a project name, "" if
// nothing: 3 to 40 characters; letters, numbers, spaces, - and _; no
// leading or trailing space.
func ValidProjectName(name string) string {
	n := utf8.RuneCountInString(name)
	switch {
	case name == "":
		return "is required"
	case n < ProjectNameMinLen || n > ProjectNameMaxLen:
		return fmt.Sprintf("must be %d to %d characters long, got %d", ProjectNameMinLen, ProjectNameMaxLen, n)
	case !projectNameRE.MatchString(name):
		return "may only contain letters, numbers, spaces, '-', and '_'"
	case strings.TrimSpace(name) != name:
		return "must not start or end with a space"
	}
	return ""
}

// ValidAutoDestroyDuration reports what is wrong with an
// auto-destroy-activity-duration, "" if nothing: an integer of one to four
// digits greater than 0, then d (days) or h (hours). "0d", "12345h" and
// "5m" are invalid.
func ValidAutoDestroyDuration(s string) string {
	if durationRE.MatchString(s) {
		return ""
	}
	return fmt.Sprintf("%q is not a duration of 1 to 4 digits greater than 0 followed by d or h (e.g. 14d, 12h)", s)
}

// ValidVersion reports what is wrong with a tool/policy version string, ""
// if nothing: N.N.N or N.N.N-bundleName.
func ValidVersion(s string) string {
	if s == "" {
		return "is required"
	}
	if versionRE.MatchString(s) {
		return ""
	}
	return fmt.Sprintf("%q is not a version of the form N.N.N or N.N.N-bundleName", s)
}

// ValidTimeout reports what is wrong with an organization apply or plan
// timeout, "" if nothing: a positive decimal number with a unit suffix
// (Go duration syntax, e.g. "24h", "90m", "1.5h").
func ValidTimeout(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Sprintf("%q is not a positive duration with a unit suffix (e.g. 24h, 90m)", s)
	}
	return ""
}

func validSHA(s string) string {
	switch {
	case s == "":
		return "is required"
	case !sha256RE.MatchString(s):
		return "must be a SHA-256 checksum: 64 hexadecimal characters"
	}
	return ""
}

func validURL(s string) string {
	if s == "" {
		return "is required"
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an absolute http or https URL", s)
	}
	return ""
}

// ValidSlug checks a name of letters, digits, - and _ of at most max
// characters; it returns the problem, or "" when name is valid.
func ValidSlug(name string, max int) string {
	n := len(name)
	switch {
	case name == "":
		return "is required"
	case n > max:
		return fmt.Sprintf("must be at most %d characters long, got %d", max, n)
	case !slugRE.MatchString(name):
		return "may contain only letters, numbers, - and _"
	}
	return ""
}

// ValidEmail checks an email address; it returns the problem, or "".
func ValidEmail(s string) string {
	switch {
	case s == "":
		return "is required"
	case len(s) > EmailMaxLen:
		return fmt.Sprintf("must be at most %d characters long", EmailMaxLen)
	case !emailRE.MatchString(s):
		return fmt.Sprintf("%q is not an e-mail address", s)
	}
	return ""
}

// CheckID adds a problem to v unless id is prefix followed by letters and
// digits. Apply checks the IDs the leader stamped, so that a malformed
// command cannot write a row no path can address.
func CheckID(v *state.ValidationError, field, prefix, id string) {
	if !strings.HasPrefix(id, prefix) || !idRE.MatchString(id[len(prefix):]) {
		v.Add(field, "%q is not an ID of the form %s<id>", id, prefix)
	}
}

// CheckMax adds a problem to v when s is longer than max characters.
func CheckMax(v *state.ValidationError, field, s string, max int) {
	if n := utf8.RuneCountInString(s); n > max {
		v.Add(field, "must be at most %d characters long, got %d", max, n)
	}
}

// idAlphabet is what IDs are written in: letters and digits without the
// look-alikes 0, O, I and l, as in TFE's IDs.
const idAlphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// NewID returns a fresh random ID with prefix, e.g. NewID(PrefixProject)
// gives "prj-…" with 16 random characters. The leader calls it (or
// FormatID, on bytes from its own ID source) before proposing a create;
// Apply never does.
func NewID(prefix string) string {
	var buf [16]byte
	if _, err := rand.Read(buf[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return FormatID(prefix, buf)
}

// IDFrom derives a management ID from an ID of the leader's ID source
// (a UUID, or a test's counter): the first 16 bytes of its SHA-256, so
// that any source gives IDs of one form, distinct source IDs give distinct
// IDs, and a test that injects the source knows the IDs in advance.
func IDFrom(prefix, source string) string {
	sum := sha256.Sum256([]byte(source))
	return FormatID(prefix, [16]byte(sum[:16]))
}

// FormatID writes 16 bytes as an ID with prefix: one character of the
// ID alphabet a byte.
func FormatID(prefix string, b [16]byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		// 256 % 57 introduces a bias far too small to matter for IDs,
		// which need uniqueness, not secrecy.
		out[i] = idAlphabet[int(c)%len(idAlphabet)]
	}
	return prefix + string(out)
}

// MgmtTime truncates t to the millisecond precision the management API
// shows, in UTC. The leader stamps times through it so that what is stored
// is exactly what is shown.
func Time(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
